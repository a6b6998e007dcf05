"""Faults with real processes: an elastic DeepSpeedJob resized while it trains, and the operator
restarted while a launch is under way. What counts is what runs on the machine: a rank is a
process whose command line names the training script, found in a pod's cgroup."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from t9k_sdk import models
from tests.cluster.real_helpers import (
    REAL_TIMEOUT,
    RealNode,
    base_image,
    logs,
    placement,
    real,
    scripts_configmap,
    train_container,
    with_scripts,
)
from tests.cluster.test_real_lifecycle import pod_processes
from tools import realnode
from tools.kit import Operator, create_job, job_pods, job_status, wait_for, wait_job_phase

pytestmark = pytest.mark.realnode
SCRIPT = "deepspeed_train.py"


def ranks_in(uid: str) -> list[int]:
    """Pids of the training processes (ranks) running in the pod with this uid."""
    out = []
    for pid in pod_processes(uid):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        # a rank runs `python3 -u deepspeed_train.py --local_rank=N ...`; the launchers above it
        # (launch.py, the pdsh session's shell) name the script in one long argument, or later
        if len(argv) > 2 and argv[2] == SCRIPT.encode():
            out.append(pid)
    return out


def deepspeed(name: str, spec: dict[str, Any], workers: int, args: list[str]) -> dict[str, Any]:
    return with_scripts(
        real(
            {
                "apiVersion": models.API_VERSION,
                "kind": "DeepSpeedJob",
                "metadata": {"name": name},
                "spec": {
                    "config": {"slotsPerWorker": 1, "run": {"python": [SCRIPT, *args]}},
                    **spec,
                    "worker": {
                        "replicas": workers,
                        "template": {"spec": {"containers": [train_container()]}},
                    },
                },
            }
        )
    )


def test_an_elastic_resize_relaunches_and_no_rank_of_the_old_launch_survives(
    real_node: RealNode,
    core_v1: client.CoreV1Api,
    custom: client.CustomObjectsApi,
    namespace: str,
    start_operator: Any,
) -> None:
    scripts_configmap(core_v1, namespace)
    start_operator().wait_ready("leader")
    elastic = {"enabled": True, "minReplicas": 1, "maxReplicas": 3, "expectedReplicas": 2}
    job = deepspeed("el", {"elastic": elastic}, 2, ["--steps=100000", "--step-seconds=0.5"])
    create_job(custom, namespace, job)

    def uids() -> dict[str, str]:
        return job_pods(core_v1, namespace, "el")

    first = wait_for(uids, lambda u: len(u) == 2, "2 workers", REAL_TIMEOUT)
    # both workers train: one rank each (slotsPerWorker 1)
    wait_for(
        lambda: [len(ranks_in(u)) for u in first.values()],
        lambda n: n == [1, 1],
        "a rank on each worker",
        REAL_TIMEOUT,
    )
    old_ranks = {pid for u in first.values() for pid in ranks_in(u)}

    plural = models.JOB_KINDS["DeepSpeedJob"].PLURAL
    custom.patch_namespaced_custom_object(
        models.GROUP,
        models.VERSION,
        namespace,
        plural,
        "el",
        {"spec": {"elastic": {"expectedReplicas": 3}}},
    )
    # worker-0 is relaunched with the new hostfile; worker-2 joins
    after = wait_for(
        uids,
        lambda u: len(u) == 3 and u.get("el-worker-0") != first["el-worker-0"],
        "3 workers and a new worker-0",
        REAL_TIMEOUT,
    )
    assert after["el-worker-1"] == first["el-worker-1"]  # worker-1's pod is kept
    wait_for(
        lambda: [len(ranks_in(u)) for u in after.values()],
        lambda n: n == [1, 1, 1],
        "one rank on each of the 3 workers (the new launch)",
        REAL_TIMEOUT,
    )
    survivors = old_ranks & {pid for u in after.values() for pid in ranks_in(u)}
    assert survivors == set(), f"ranks of the old launch still run: {survivors}"
    # the new launch trains with all three: every rank reports world_size=3 in worker-0's log
    wait_for(
        lambda: set(re.findall(r"rank=(\d) world_size=3", logs(core_v1, namespace, "el-worker-0"))),
        lambda ranks: ranks == {"0", "1", "2"},
        "the 3 ranks of the new launch",
        REAL_TIMEOUT,
    )
    status = job_status(custom, namespace, "el", "DeepSpeedJob")
    assert int(status.get("backoffCount") or 0) == 0  # a resize is not a restart


def test_the_operator_restarted_mid_launch_finishes_the_job_once(
    real_node: RealNode,
    core_v1: client.CoreV1Api,
    custom: client.CustomObjectsApi,
    namespace: str,
    start_operator: Any,
) -> None:
    scripts_configmap(core_v1, namespace)
    first: Operator = start_operator()
    first.wait_ready("leader")
    create_job(custom, namespace, deepspeed("mid", {}, 2, ["--steps=20"]))
    pods = wait_for(
        lambda: job_pods(core_v1, namespace, "mid"),
        lambda u: len(u) == 2,
        "2 workers",
        REAL_TIMEOUT,
    )
    # kill the operator while worker-0 waits at the barrier or launches
    wait_for(
        lambda: core_v1.read_namespaced_pod("mid-worker-0", namespace).status.phase,
        lambda phase: phase == "Running",
        "worker-0 running",
        REAL_TIMEOUT,
    )
    first.stop(sig=9)
    time.sleep(2)
    second = start_operator()
    second.wait_ready("leader", timeout=REAL_TIMEOUT)
    status = wait_job_phase(custom, namespace, "mid", "Succeeded", REAL_TIMEOUT, "DeepSpeedJob")
    assert job_pods(core_v1, namespace, "mid") == pods  # the same pods: nothing created twice
    assert int(status.get("backoffCount") or 0) == 0
    assert "loss fell from" in logs(core_v1, namespace, "mid-worker-0")


def dns_relay(core_v1: client.CoreV1Api, namespace: str, launcher_prefix: str) -> str:
    """Start tests/cluster/dns_once.py in a pod of the real node; return its address."""
    source = (Path(__file__).parent / "dns_once.py").read_text()
    core_v1.create_namespaced_config_map(
        namespace,
        client.V1ConfigMap(metadata=client.V1ObjectMeta(name="dns-once"), data={"relay": source}),
    )
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "dns-once"},
        "spec": {
            **placement(),
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "relay",
                    "image": base_image(),
                    "imagePullPolicy": "Never",
                    "command": [
                        "python3",
                        "-u",
                        "/relay/relay",
                        realnode.BRIDGE_IP,
                        launcher_prefix,
                    ],
                    "volumeMounts": [{"name": "relay", "mountPath": "/relay"}],
                }
            ],
            "volumes": [{"name": "relay", "configMap": {"name": "dns-once"}}],
        },
    }
    core_v1.create_namespaced_pod(namespace, body)
    pod = wait_for(
        lambda: core_v1.read_namespaced_pod("dns-once", namespace),
        lambda p: p.status.phase == "Running"
        and "relaying" in logs(core_v1, namespace, "dns-once"),
        "the DNS relay running",
        REAL_TIMEOUT,
    )
    return str(pod.status.pod_ip)


def test_a_launch_whose_dns_stops_answering_after_the_barrier_trains_without_a_restart(
    real_node: RealNode,
    core_v1: client.CoreV1Api,
    custom: client.CustomObjectsApi,
    namespace: str,
    start_operator: Any,
) -> None:
    """The launcher's DNS answers each question once, as a DNS that goes quiet right after the
    barrier would: the barrier pins what it looked up, so DeepSpeed's own ssh check, pdsh and
    the training find every worker without asking again, and no restart is spent."""
    scripts_configmap(core_v1, namespace)
    relay = dns_relay(core_v1, namespace, "dark-worker-0.")
    start_operator().wait_ready("leader")
    job = deepspeed("dark", {}, 2, ["--steps=5"])
    job["spec"]["worker"]["template"]["spec"].update(
        {
            "dnsPolicy": "None",
            "dnsConfig": {
                "nameservers": [relay],
                "searches": [
                    f"{namespace}.svc.cluster.local",
                    "svc.cluster.local",
                    "cluster.local",
                ],
                "options": [{"name": "ndots", "value": "5"}],
            },
        }
    )
    create_job(custom, namespace, job)
    status = wait_job_phase(custom, namespace, "dark", "Succeeded", REAL_TIMEOUT, "DeepSpeedJob")
    assert int(status.get("backoffCount") or 0) == 0
    launcher = logs(core_v1, namespace, "dark-worker-0")
    assert "t9k: pinned the workers' addresses in /etc/hosts" in launcher
    assert "loss fell from" in launcher
    # the launcher's lookups went through the relay: it answered the barrier's, once each
    relayed = logs(core_v1, namespace, "dns-once")
    assert re.search(r"answered dark-worker-0\.\S+ dark-worker-1\.dark\.", relayed), relayed
