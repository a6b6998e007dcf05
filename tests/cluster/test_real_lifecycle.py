"""Restart, finish, clean-up, deadline, pause and debug rules with real processes and real exits.

The pods run the base image (Debian with python3, OpenSSH and pdsh) or the training image on
the real node. A process "still runs" when some process on this machine is in the pod's cgroup
(kubelet's cgroupfs layout puts every container of a pod under `pod<uid>`): that is what a GPU
owner cares about, whatever the API says.
"""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from t9k_sdk import models
from tests.cluster.e2e_helpers import E2E, Jobs, replicas_of, restart_counts
from tests.cluster.real_helpers import (
    REAL_TIMEOUT,
    RealNode,
    kubectl,
    logs,
    real,
    scripts_configmap,
    train_container,
    with_scripts,
)
from tools.kit import wait_for

pytestmark = pytest.mark.realnode


@pytest.fixture(autouse=True, scope="module")
def _scripts(e2e: E2E, core_v1: client.CoreV1Api, real_node: RealNode) -> None:
    scripts_configmap(core_v1, e2e.namespace)


def pod_processes(uid: str) -> list[int]:
    """Pids of the processes in the pod's cgroup (any container of it, the sandbox too)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "cgroup").read_text()
        except OSError:
            continue
        if f"pod{uid}" in text:
            found.append(int(entry.name))
    return found


def main_process(uid: str, marker: str) -> int:
    """The pid of the pod's process whose command line holds `marker`."""

    def find() -> list[int]:
        out = []
        for pid in pod_processes(uid):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if marker.encode() in cmdline:
                out.append(pid)
        return out

    return int(wait_for(find, bool, f"a process with {marker!r} in pod {uid}", 60)[0])


def base_container(script: str, name: str = "worker") -> dict[str, Any]:
    return {
        "name": name,
        "image": "replaced-by-real()",
        "command": ["sh", "-c", script],
    }


def generic(name: str, *replicas: dict[str, Any], **spec: Any) -> dict[str, Any]:
    from tests.cluster.real_helpers import base_image

    manifest = real(
        {
            "apiVersion": models.API_VERSION,
            "kind": "GenericJob",
            "metadata": {"name": name},
            "spec": {**spec, "replicaSpecs": list(replicas)},
        }
    )
    for rs in manifest["spec"]["replicaSpecs"]:
        for c in rs["template"]["spec"]["containers"]:
            if c["image"] == "replaced-by-real()":
                c["image"] = base_image()
    return manifest


def rspec(
    type_: str, script: str, count: int = 1, restart: tuple[str, int] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": type_,
        "replicas": count,
        "template": {"spec": {"containers": [base_container(script)]}},
    }
    if restart is not None:
        out["restartPolicy"] = {"policy": restart[0], "limit": restart[1]}
    return out


KILLED_BY_SIGKILL = (
    "echo run; python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGKILL)'; exit $?"
)


def test_exitcode_policy_restarts_a_killed_process_and_fails_for_good_on_exit_1(
    jobs: Jobs,
) -> None:
    jobs.create(
        # a real SIGKILL of the training process: its shell exits 137, retryable, until the
        # limit of 2 restarts. (The container's PID 1 cannot SIGKILL itself: the kernel drops
        # signals to a namespace's init from inside it.)
        generic("sigkill", rspec("worker", KILLED_BY_SIGKILL, restart=("ExitCode", 2))),
        # exit 1: a permanent error, never restarted whatever the limit
        generic("exit1", rspec("worker", "echo run; exit 1", restart=("ExitCode", 3))),
    )
    killed = jobs.wait_final("sigkill", REAL_TIMEOUT)
    assert killed["phase"] == "Failed", killed
    assert restart_counts(killed) == {"worker": 2}
    wait_for(  # Events of child actions may come 1 s late
        lambda: set(jobs.reasons("sigkill")),
        lambda reasons: {"RestartingPod", "RestartedPod"} <= reasons,
        "the RestartingPod and RestartedPod Events",
        10,
    )
    assert len(jobs.history.uids("sigkill-worker-0")) == 3  # the first pod and two restarts
    failed = next(c for c in killed["conditions"] if c["type"] == "Failed")
    assert "exited with error code 137" in failed["message"], failed

    one = jobs.wait_final("exit1", REAL_TIMEOUT)
    assert one["phase"] == "Failed", one
    assert restart_counts(one) == {"worker": 0}
    assert len(jobs.history.uids("exit1-worker-0")) == 1
    assert (
        "exited with error code 1"
        in next(c for c in one["conditions"] if c["type"] == "Failed")["message"]
    )


def test_onfailure_restarts_up_to_its_limit(jobs: Jobs) -> None:
    jobs.create(generic("onf", rspec("worker", "echo attempt; exit 3", restart=("OnFailure", 1))))
    status = jobs.wait_final("onf", REAL_TIMEOUT)
    assert status["phase"] == "Failed", status
    assert restart_counts(status) == {"worker": 1}
    assert len(jobs.history.uids("onf-worker-0")) == 2


def test_success_rule_and_cleanup_stop_the_processes_that_still_run(jobs: Jobs) -> None:
    # the master finishes; the worker would run for an hour. The success rule names the master
    # only, and cleanUpPolicy Unfinished must stop the worker's process, not just its pod object
    jobs.create(
        generic(
            "rules",
            rspec("master", "echo master done; sleep 3; exit 0"),
            rspec("worker", "exec sleep 3601"),
            successRules=[{"master": [0]}],
            cleanUpPolicy="Unfinished",
        )
    )
    pods = jobs.wait_running("rules", {"rules-master-0", "rules-worker-0"}, REAL_TIMEOUT)
    worker_uid = pods["rules-worker-0"].metadata.uid
    main_process(worker_uid, "sleep 3601")
    status = jobs.wait_final("rules", REAL_TIMEOUT)
    assert status["phase"] == "Succeeded", status
    wait_for(
        lambda: pod_processes(worker_uid), lambda p: p == [], "the worker's processes to end", 60
    )
    status = jobs.status("rules")
    assert replicas_of(status)["rules-worker-0"]["phase"] == "Deleted", status


def test_failure_rule_fails_the_job_from_a_real_exit(jobs: Jobs) -> None:
    jobs.create(
        generic(
            "frule",
            rspec("master", "exec sleep 3602"),
            rspec("worker", "echo bad input >&2; exit 2"),
            successRules=[{"master": [0]}],
            failureRules=[{"worker": [0]}],
            cleanUpPolicy="All",
        )
    )
    status = jobs.wait_final("frule", REAL_TIMEOUT)
    assert status["phase"] == "Failed", status
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert failed["message"] == 'The job is failed with rule: {"worker":["0"]}', failed


def test_a_killed_worker_process_is_restarted_and_the_job_finishes(
    jobs: Jobs, core_v1: client.CoreV1Api
) -> None:
    jobs.create(
        generic(
            "victim",
            rspec("worker", "echo start; sleep 6 && echo done", restart=("ExitCode", 1)),
        )
    )
    pods = jobs.wait_running("victim", {"victim-worker-0"}, REAL_TIMEOUT)
    uid = pods["victim-worker-0"].metadata.uid
    # the fault: SIGKILL of the container's main process from outside (as the OOM killer does)
    import os

    os.kill(main_process(uid, "echo start"), signal.SIGKILL)
    status = jobs.wait_final("victim", REAL_TIMEOUT)
    assert status["phase"] == "Succeeded", status
    assert restart_counts(status) == {"worker": 1}
    assert "done" in logs(core_v1, jobs.namespace, "victim-worker-0")


def test_a_deleted_running_pod_is_recreated_without_counting_a_restart(jobs: Jobs) -> None:
    jobs.create(generic("gone", rspec("worker", "sleep 5; echo done", restart=("OnFailure", 0))))
    pods = jobs.wait_running("gone", {"gone-worker-0"}, REAL_TIMEOUT)
    first = pods["gone-worker-0"].metadata.uid
    jobs.core_v1.delete_namespaced_pod("gone-worker-0", jobs.namespace, grace_period_seconds=1)
    status = jobs.wait_final("gone", REAL_TIMEOUT)
    assert status["phase"] == "Succeeded", status
    assert restart_counts(status) == {"worker": 0}
    assert len(jobs.history.uids("gone-worker-0")) == 2
    wait_for(lambda: pod_processes(first), lambda p: p == [], "the deleted pod's processes", 60)


def test_pause_stops_the_processes_and_resume_restarts_with_resume_specs(
    jobs: Jobs, core_v1: client.CoreV1Api
) -> None:
    jobs.create(
        generic(
            "pz",
            rspec("worker", "echo first run; exec sleep 3603"),
            runMode={
                "pause": {
                    "enabled": False,
                    "resumeSpecs": [
                        {"type": "worker", "command": ["sh", "-c", "echo resumed; exit 0"]}
                    ],
                }
            },
        )
    )
    pods = jobs.wait_running("pz", {"pz-worker-0"}, REAL_TIMEOUT)
    uid = pods["pz-worker-0"].metadata.uid
    main_process(uid, "sleep 3603")
    jobs.patch("pz", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    jobs.wait_phase("pz", "Paused", REAL_TIMEOUT)
    wait_for(lambda: pod_processes(uid), lambda p: p == [], "the paused pod's processes", 60)
    jobs.patch("pz", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    status = jobs.wait_final("pz", REAL_TIMEOUT)
    assert status["phase"] == "Succeeded", status
    assert logs(core_v1, jobs.namespace, "pz-worker-0").strip() == "resumed"


def test_active_deadline_kills_the_running_processes(jobs: Jobs) -> None:
    job = with_scripts(
        real(
            {
                "apiVersion": models.API_VERSION,
                "kind": "DeepSpeedJob",
                "metadata": {"name": "late"},
                "spec": {
                    "runPolicy": {"activeDeadlineSeconds": 25},
                    "runMode": {"debug": {"enabled": True}},
                    "config": {"slotsPerWorker": 1, "run": {"python": []}},
                    "worker": {
                        "replicas": 1,
                        "template": {"spec": {"containers": [train_container()]}},
                    },
                },
            }
        )
    )
    jobs.create(job)
    pods = jobs.wait_running("late", {"late-worker-0"}, REAL_TIMEOUT)
    uid = pods["late-worker-0"].metadata.uid
    main_process(uid, "sshd")  # debug mode: the worker serves sshd and never ends by itself
    status = jobs.wait_final("late", REAL_TIMEOUT)
    assert status["phase"] == "Failed", status
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "DeadlineExceeded", failed
    wait_for(lambda: pod_processes(uid), lambda p: p == [], "the worker's processes to end", 60)


def test_debug_mode_lets_a_user_start_deepspeed_by_hand_over_ssh(
    jobs: Jobs, kubeconfig: Path
) -> None:
    job = with_scripts(
        real(
            {
                "apiVersion": models.API_VERSION,
                "kind": "DeepSpeedJob",
                "metadata": {"name": "dbg"},
                "spec": {
                    "runMode": {"debug": {"enabled": True}},
                    "config": {"slotsPerWorker": 1, "run": {"python": []}},
                    "worker": {
                        "replicas": 2,
                        "template": {"spec": {"containers": [train_container()]}},
                    },
                },
            }
        )
    )
    jobs.create(job)
    jobs.wait_running("dbg", {"dbg-worker-0", "dbg-worker-1"}, REAL_TIMEOUT)
    # as the docs say: kubectl exec into worker-0 and run the launcher by hand
    argv = [
        "deepspeed", "--hostfile", "/t9k/hostfile", "--master_addr", "dbg-worker-0.dbg",
        "deepspeed_train.py", "--steps=5",
    ]  # fmt: skip
    deadline = time.monotonic() + REAL_TIMEOUT
    while True:  # worker-1's sshd may still be starting: retry as a user would
        proc = kubectl(
            kubeconfig, "exec", "-n", jobs.namespace, "dbg-worker-0", "--", *argv, timeout=300
        )
        if proc.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(3)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert set(re.findall(r"rank=(\d) world_size=2", proc.stdout)) == {"0", "1"}, proc.stdout
    assert jobs.status("dbg")["phase"] not in ("Succeeded", "Failed")
