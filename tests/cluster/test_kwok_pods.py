"""Pods on kwok nodes: they run, finish as the sim.t9k.dev annotations say, and are scheduled."""

from __future__ import annotations

import ipaddress
import time
from typing import Any

import pytest
from kubernetes import client

from tools.kit import (
    EXIT_CODE,
    REASON,
    RUN_FOR,
    TERMINAL_PHASES,
    ControlPlane,
    pod,
    pod_gone,
    read_pod,
    wait_for,
    wait_phase,
)


def _terminated(p: Any) -> list[Any]:
    states = [cs.state.terminated for cs in p.status.container_statuses or []]
    assert all(s is not None for s in states), p.status.container_statuses
    return states


def test_fake_nodes_advertise_cpu_memory_and_gpus(
    core_v1: client.CoreV1Api, cluster: ControlPlane
) -> None:
    nodes = core_v1.list_node(label_selector="type=kwok").items
    assert sorted(n.metadata.name for n in nodes) == sorted(cluster.node_names)
    for node in nodes:
        ready = {c.type: c.status for c in node.status.conditions}
        assert ready.get("Ready") == "True", node.status.conditions
        alloc = node.status.allocatable
        assert alloc["nvidia.com/gpu"] == str(cluster.max_gpus_per_node)
        assert int(alloc["cpu"]) > 0
        assert alloc["memory"].endswith("Gi")
        assert int(alloc["pods"]) > 0
        assert not node.spec.taints, f"{node.metadata.name} is tainted: {node.spec.taints}"


def test_bare_pod_lands_on_a_kwok_node_and_runs(
    core_v1: client.CoreV1Api, namespace: str, cluster: ControlPlane
) -> None:
    core_v1.create_namespaced_pod(namespace, pod("bare", containers=("a", "b")))
    p = wait_phase(core_v1, namespace, "bare", ("Running",))
    assert p.spec.node_name in cluster.node_names
    assert p.status.host_ip == "127.0.0.1"
    assert ipaddress.ip_address(p.status.pod_ip) in ipaddress.ip_network("10.244.0.0/16")
    assert {cs.name for cs in p.status.container_statuses} == {"a", "b"}
    for cs in p.status.container_statuses:
        assert cs.ready
        assert cs.state.running is not None
        assert cs.state.running.started_at
    ready = {c.type: c.status for c in p.status.conditions}
    assert ready["Ready"] == "True"
    assert ready["PodScheduled"] == "True"


def test_pod_without_annotations_keeps_running_while_an_annotated_one_finishes(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    core_v1.create_namespaced_pod(namespace, pod("plain"))
    core_v1.create_namespaced_pod(namespace, pod("timed", {RUN_FOR: "1s"}))
    wait_phase(core_v1, namespace, "timed", TERMINAL_PHASES)
    time.sleep(1)
    plain = read_pod(core_v1, namespace, "plain")
    assert plain.status.phase == "Running"
    assert plain.status.container_statuses[0].state.running is not None


@pytest.mark.parametrize(
    ("annotations", "phase", "code", "reason"),
    [
        ({RUN_FOR: "1s"}, "Succeeded", 0, "Completed"),
        ({EXIT_CODE: "0"}, "Succeeded", 0, "Completed"),
        ({EXIT_CODE: "137", RUN_FOR: "500ms"}, "Failed", 137, "Error"),
        ({EXIT_CODE: "137", REASON: "OOMKilled", RUN_FOR: "0s"}, "Failed", 137, "OOMKilled"),
        ({EXIT_CODE: "2"}, "Failed", 2, "Error"),
    ],
    ids=["run-for-only", "exit-0", "exit-137", "oomkilled", "exit-2"],
)
def test_annotated_pod_finishes_with_the_chosen_exit_code(
    core_v1: client.CoreV1Api,
    namespace: str,
    annotations: dict[str, str],
    phase: str,
    code: int,
    reason: str,
) -> None:
    core_v1.create_namespaced_pod(namespace, pod("job", annotations, containers=("main", "side")))
    p = wait_phase(core_v1, namespace, "job", TERMINAL_PHASES)
    assert p.status.phase == phase
    terminated = _terminated(p)
    assert [t.exit_code for t in terminated] == [code, code]
    assert {t.reason for t in terminated} == {reason}
    assert all(t.started_at <= t.finished_at for t in terminated)
    ready = {c.type: c.status for c in p.status.conditions}
    assert ready["Ready"] == "False"


def test_run_for_keeps_the_pod_running_that_long(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_pod(namespace, pod("slow", {RUN_FOR: "3s", EXIT_CODE: "0"}))
    wait_phase(core_v1, namespace, "slow", ("Running",))
    running_since = time.monotonic()
    p = wait_phase(core_v1, namespace, "slow", TERMINAL_PHASES)
    assert time.monotonic() - running_since >= 2.5
    (t,) = _terminated(p)
    # The container's startedAt is kept from when it began running (second resolution).
    assert (t.finished_at - t.started_at).total_seconds() >= 2


def test_annotating_a_running_pod_makes_it_exit(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_pod(namespace, pod("late"))
    wait_phase(core_v1, namespace, "late", ("Running",))
    core_v1.patch_namespaced_pod(
        "late", namespace, {"metadata": {"annotations": {EXIT_CODE: "3", RUN_FOR: "0s"}}}
    )
    p = wait_phase(core_v1, namespace, "late", TERMINAL_PHASES)
    assert p.status.phase == "Failed"
    assert [t.exit_code for t in _terminated(p)] == [3]


def test_init_containers_do_not_block(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_pod(namespace, pod("init", init_containers=("setup", "migrate")))
    p = wait_phase(core_v1, namespace, "init", ("Running",))
    init = p.status.init_container_statuses
    assert [s.name for s in init] == ["setup", "migrate"]
    assert all(s.state.terminated is not None and s.state.terminated.exit_code == 0 for s in init)


def test_deleting_a_running_pod_does_not_wait_for_the_grace_period(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    core_v1.create_namespaced_pod(namespace, pod("doomed"))
    wait_phase(core_v1, namespace, "doomed", ("Running",))
    core_v1.delete_namespaced_pod("doomed", namespace)  # default grace period: 30s
    wait_for(lambda: pod_gone(core_v1, namespace, "doomed"), bool, "the pod to be deleted", 10)


def test_pod_that_fits_a_node_gets_its_gpus(
    core_v1: client.CoreV1Api, namespace: str, cluster: ControlPlane
) -> None:
    gpus = {"nvidia.com/gpu": str(cluster.max_gpus_per_node)}
    core_v1.create_namespaced_pod(namespace, pod("gpu-fits", limits=gpus))
    p = wait_phase(core_v1, namespace, "gpu-fits", ("Running",))
    assert p.spec.node_name in cluster.node_names


def test_pod_asking_for_more_gpus_than_any_node_has_stays_pending(
    core_v1: client.CoreV1Api, namespace: str, cluster: ControlPlane
) -> None:
    gpus = {"nvidia.com/gpu": str(cluster.max_gpus_per_node + 1)}
    core_v1.create_namespaced_pod(namespace, pod("gpu-greedy", limits=gpus))

    def scheduled_condition(p: Any) -> Any:
        return next((c for c in p.status.conditions or [] if c.type == "PodScheduled"), None)

    p = wait_for(
        lambda: read_pod(core_v1, namespace, "gpu-greedy"),
        lambda p: scheduled_condition(p) is not None,
        "the scheduler to give up on the pod",
    )
    condition = scheduled_condition(p)
    assert condition.status == "False"
    assert condition.reason == "Unschedulable"
    assert "Insufficient nvidia.com/gpu" in condition.message
    assert p.status.phase == "Pending"
    assert p.spec.node_name is None
