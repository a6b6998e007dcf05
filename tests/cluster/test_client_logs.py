"""Logs of a job's replicas through the real API server.

What kwok cannot provide: kwok plays the kubelet only for pod *status*. It runs no containers
(so nothing ever writes a log line) and serves no kubelet API (its nodes advertise no kubelet
port, so the API server dials the default 10250 on the node's address, 127.0.0.1, and nothing
answers). Real logs of real containers, through a real kubelet, are read on the real node
(tests/cluster/test_real_training.py: `t9k-sdk logs` of a torchrun job); these tests keep what
only a controlled kubelet endpoint can show.

So these tests check two things on the real control plane:

1. what the API server answers for the log of a pod on a kwok node (500, "dial tcp ...
   connection refused"), and that `Client.logs()` and `t9k-sdk logs` turn it into a message
   naming the node's kubelet, not a traceback or silence;
2. the log path itself, API server included, with one extra node whose kubelet endpoint is a
   small TLS server the test controls (`FakeKubelet`): the operator creates the pods, kwok
   runs them, the API server authenticates our requests and streams
   `/api/v1/namespaces/NS/pods/POD/log?follow=...&tailLines=...` from that endpoint, and the
   follower waits for pods, picks up a recreated pod by its uid, and prefixes the lines.

tests/client/test_logs.py covers the follower line by line with a log source it controls.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from t9k_sdk.cli import main
from t9k_sdk.client import Client, ClientError
from t9k_sdk.client.logs import LogLine
from tests.cluster.client_helpers import (
    FAILS,
    LogNode,
    LogRequest,
    client_fixture,  # noqa: F401  (fixture `client`)
    generic_job,
    log_node_fixture,  # noqa: F401  (fixture `log_node`)
    operator_fixture,  # noqa: F401  (fixture `operator`)
)
from tools.kit import wait_for

pytestmark = pytest.mark.usefixtures("operator")


def test_the_api_server_cannot_fetch_logs_from_a_kwok_node(
    client: Client, core_v1: k8s.CoreV1Api, namespace: str
) -> None:
    client.apply(generic_job("kw", replicas=1))
    client.wait("gj", "kw", for_phase="Running", timeout=30)
    with pytest.raises(ApiException) as err:
        core_v1.read_namespaced_pod_log("kw-worker-0", namespace)
    assert err.value.status == 500
    assert "/containerLogs/" in str(err.value.body)
    assert "connection refused" in str(err.value.body)
    lines = list(client.logs("gj", "kw"))
    assert [(line.replica, line.notice) for line in lines] == [("worker-0", True)]
    assert lines[0].text.startswith(
        "t9k-sdk: cannot read the log of kw-worker-0: the API server could not reach the"
        " kubelet of the pod's node"
    )


def test_logs_without_pods_say_why(client: Client) -> None:
    paused = generic_job("later", replicas=1)
    paused["spec"]["runMode"] = {"pause": {"enabled": True}}
    client.apply(paused)
    with pytest.raises(ClientError, match=r"has no pods \(.*\): none has been created yet; follow"):
        list(client.logs("gj", "later"))
    with pytest.raises(ClientError, match="has no replica type 'ps'; its types: worker"):
        client.logs("gj", "later", replica_type="ps")
    with pytest.raises(
        ClientError, match=r"has no replica index 5 of type 'worker' \(indices: 0..0\)"
    ):
        client.logs("gj", "later", replica_type="worker", index=5)


def pod_uid(core_v1: k8s.CoreV1Api, namespace: str, pod: str) -> str:
    return str(core_v1.read_namespaced_pod(pod, namespace).metadata.uid)


def test_logs_of_every_replica_come_prefixed_through_the_api_server(
    client: Client, log_node: LogNode, core_v1: k8s.CoreV1Api, namespace: str
) -> None:
    def script(req: LogRequest) -> tuple[list[str], bool]:
        lines = [f"{req.pod} line {i}" for i in range(3)]
        tail = req.query.get("tailLines")
        return (lines[-int(tail) :] if tail else lines), False

    log_node.kubelet.script = script
    client.apply(generic_job("lg", replicas=2, node_name=log_node.name))
    client.wait("gj", "lg", for_phase="Running", timeout=30)
    lines = [str(line) for line in client.logs("gj", "lg")]
    assert sorted(lines) == sorted(
        f"[worker-{i}] lg-worker-{i} line {n}" for i in range(2) for n in range(3)
    )
    mine = [r for r in log_node.kubelet.requests if r.namespace == namespace]
    assert {(r.pod, r.container) for r in mine} == {
        ("lg-worker-0", "worker"),
        ("lg-worker-1", "worker"),
    }
    tailed = [str(line) for line in client.logs("gj", "lg", replica_type="worker", index=1, tail=1)]
    assert tailed == ["[worker-1] lg-worker-1 line 2"]
    assert log_node.kubelet.requests[-1].query.get("tailLines") == "1"


def test_following_waits_for_pods_and_picks_up_a_recreated_pod(
    client: Client, log_node: LogNode, core_v1: k8s.CoreV1Api, namespace: str
) -> None:
    """worker-0 fails, the operator recreates it (restart limit 1), it fails again, the job
    fails: the follower reads both incarnations under one prefix, then stops."""

    def script(req: LogRequest) -> tuple[list[str], bool]:
        uid = pod_uid(core_v1, namespace, req.pod)
        return [f"hello from {uid}"], False

    log_node.kubelet.script = script
    job = generic_job(
        "rs",
        replicas=1,
        node_name=log_node.name,
        annotations={**FAILS, "sim.t9k.dev/run-for": "2s"},
        restart={"policy": "OnFailure", "limit": 1},
    )
    job["spec"]["runMode"] = {"pause": {"enabled": True}}  # no pods until resumed
    client.apply(job)
    collected: list[LogLine] = []
    failures: list[BaseException] = []

    def follow() -> None:
        try:
            collected.extend(client.logs("gj", "rs", follow=True))
        except BaseException as exc:
            failures.append(exc)

    follower = threading.Thread(target=follow)
    follower.start()
    time.sleep(1.0)
    assert not collected  # nothing to read: the job has no pods yet
    client.resume("gj", "rs")
    uids: set[str] = set()

    def both_incarnations() -> set[str]:
        with_uid = core_v1.list_namespaced_pod(namespace, label_selector="job-name=rs").items
        uids.update(p.metadata.uid for p in with_uid)
        return uids

    wait_for(both_incarnations, lambda u: len(u) >= 2, "worker-0 to be recreated", 30)
    follower.join(45)
    assert not follower.is_alive(), "logs -f did not stop after the job failed"
    assert not failures
    texts = [str(line) for line in collected if not line.notice]
    assert len(texts) == 2
    assert all(t.startswith("[worker-0] hello from ") for t in texts)
    seen = {t.rsplit(" ", 1)[1] for t in texts}
    assert len(seen) == 2
    assert seen <= uids
    status = client.get("gj", "rs").status
    assert status is not None
    assert status.phase is not None
    assert status.phase.value == "Failed"


def test_following_a_running_replica_streams_until_the_job_ends(
    client: Client, log_node: LogNode, core_v1: k8s.CoreV1Api, namespace: str
) -> None:
    """A running container's log stays open (the kubelet holds the stream) and lines arrive as
    they are written; when the job finishes, `logs -f` ends."""
    log_node.kubelet.release.clear()

    def script(req: LogRequest) -> tuple[list[str], bool]:
        return [f"step {i}" for i in range(3)], req.query.get("follow") == "true"

    log_node.kubelet.script = script
    client.apply(generic_job("fl", replicas=1, node_name=log_node.name))
    client.wait("gj", "fl", for_phase="Running", timeout=30)
    arrived: queue.Queue[LogLine | None] = queue.Queue()

    def follow() -> None:
        try:
            for line in client.logs("gj", "fl", follow=True):
                arrived.put(line)
        finally:
            arrived.put(None)  # the iteration ended

    threading.Thread(target=follow, daemon=True).start()
    first = [str(arrived.get(timeout=20)) for _ in range(3)]
    assert first == ["[worker-0] step 0", "[worker-0] step 1", "[worker-0] step 2"]
    assert log_node.kubelet.requests[-1].query.get("follow") == "true"
    assert arrived.empty()  # the stream is still open: the container runs
    # The job ends (worker-0 told to exit 0): the follower stops by itself.
    core_v1.patch_namespaced_pod(
        "fl-worker-0", namespace, {"metadata": {"annotations": {"sim.t9k.dev/exit-code": "0"}}}
    )
    rest = []
    while (line := arrived.get(timeout=30)) is not None:
        rest.append(line)
    assert all(line.notice for line in rest)


def test_the_logs_command_prints_prefixed_lines_and_reports_kwok_nodes(
    client: Client,
    log_node: LogNode,
    kubeconfig: Any,
    namespace: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    log_node.kubelet.script = lambda req: ([f"{req.pod} says hi"], False)
    client.apply(generic_job("cl", replicas=2, node_name=log_node.name))
    client.apply(generic_job("kwok", replicas=1))
    client.wait("gj", "cl", for_phase="Running", timeout=30)
    client.wait("gj", "kwok", for_phase="Running", timeout=30)
    common = ["--kubeconfig", str(kubeconfig), "-n", namespace]
    assert main(["logs", "gj", "cl", *common]) == 0
    out, err = capsys.readouterr()
    assert sorted(out.splitlines()) == [
        "[worker-0] cl-worker-0 says hi",
        "[worker-1] cl-worker-1 says hi",
    ]
    assert err == ""
    assert main(["logs", "gj/cl", "--type", "worker", "--index", "1", *common]) == 0
    out, _ = capsys.readouterr()
    assert out == "[worker-1] cl-worker-1 says hi\n"
    # a process's terminal escapes are shown, not obeyed, unless --raw asks for the bytes
    log_node.kubelet.script = lambda req: (["\x1b]52;c;cHduZWQ=\x07 50%\r100%"], False)
    assert main(["logs", "gj/cl", "--type", "worker", "--index", "0", *common]) == 0
    out, _ = capsys.readouterr()
    assert out == "[worker-0] \\x1b]52;c;cHduZWQ=\\x07 50%\\x0d100%\n"
    assert main(["logs", "gj/cl", "--type", "worker", "--index", "0", "--raw", *common]) == 0
    out, _ = capsys.readouterr()
    assert out == "[worker-0] \x1b]52;c;cHduZWQ=\x07 50%\r100%\n"
    assert main(["logs", "gj", "kwok", *common]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert (
        "[worker-0] t9k-sdk: cannot read the log of kwok-worker-0: the API server could not reach the kubelet"
        in err
    )
    assert "no log of genericjob/kwok could be read" in err
