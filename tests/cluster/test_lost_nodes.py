"""Lost nodes on kwok: a node stops heartbeating, a node is deleted, a node comes back.

Each test makes three nodes of its own (kwok runs their pods; a taint keeps every other test's
pods away) and a GenericJob of two workers, one per node (required anti-affinity), so the
replacement of a lost worker has a node to go to. What a user sees is asserted: the replica
Unknown and the Running condition NodeNotReady while the node is away, a NodeLost Event once
the pod is force-deleted, the replica Running again on another node with no restart counted,
and the other worker untouched. A node that comes back in time keeps its pod.

How a node stops heartbeating here: kwok plays the kubelet only of nodes labelled `type=kwok`,
so removing the label stops its heartbeats and leaves its pods to no kubelet, as a dead machine
does. The node-lifecycle controller would mark it Ready=Unknown after its grace period (40-50 s);
the test writes that condition itself, as that controller does, so as not to wait for it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import uuid
from collections.abc import Iterator
from typing import Any

from kubernetes import client

from t9k_sdk import models
from tests.cluster.e2e_helpers import Jobs, condition, replicas_of, restart_counts
from tools.kit import generic_job, replica, wait_for

TAINT = "t9k.dev/lost-node-test"


@contextlib.contextmanager
def three_nodes(core: client.CoreV1Api) -> Iterator[tuple[str, list[str]]]:
    """Three Ready kwok nodes with a test label and taint: (the label's value, their names)."""
    group = f"lost-{uuid.uuid4().hex[:6]}"
    names = [f"t9k-{group}-{i}" for i in range(3)]
    try:
        for name in names:
            add_node(core, name, group)
        yield group, names
    finally:
        for name in names:
            with contextlib.suppress(client.ApiException):
                core.delete_node(name)


def add_node(core: client.CoreV1Api, name: str, group: str) -> None:
    resources = {"cpu": "8", "memory": "32Gi", "pods": "20"}
    core.create_node(
        client.V1Node(
            metadata=client.V1ObjectMeta(
                name=name,
                labels={"type": "kwok", TAINT: group, "kubernetes.io/hostname": name},
                annotations={"kwok.x-k8s.io/node": "fake"},
            ),
            spec=client.V1NodeSpec(taints=[client.V1Taint(key=TAINT, effect="NoSchedule")]),
        )
    )
    core.patch_node_status(name, {"status": {"allocatable": resources, "capacity": resources}})
    wait_for(lambda: ready(core, name), lambda r: r == "True", f"node {name} Ready (kwok)", 30)


def ready(core: client.CoreV1Api, name: str) -> str | None:
    conditions = core.read_node(name).status.conditions or ()
    return next((c.status for c in conditions if c.type == "Ready"), None)


def stop_heartbeats(core: client.CoreV1Api, name: str) -> None:
    """kwok lets the node go; its Ready condition turns Unknown, as the node-lifecycle
    controller writes it when the heartbeats stop."""
    core.patch_node(name, {"metadata": {"labels": {"type": None}}})
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    unknown = {
        "type": "Ready",
        "status": "Unknown",
        "reason": "NodeStatusUnknown",
        "message": "Kubelet stopped posting node status.",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    core.patch_node_status(name, {"status": {"conditions": [unknown]}})
    assert ready(core, name) == "Unknown"


def job(name: str, group: str, lost_after: int | None) -> dict[str, Any]:
    manifest = generic_job(name, replica("worker", 2, restart=("Never", 0)))
    spec = manifest["spec"]["replicaSpecs"][0]["template"]
    spec.setdefault("metadata", {})["labels"] = {TAINT: name}
    spec["spec"]["tolerations"] = [{"key": TAINT, "operator": "Exists", "effect": "NoSchedule"}]
    spec["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": TAINT, "operator": "In", "values": [group]}]}
                ]
            }
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {TAINT: name}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        },
    }
    if lost_after is not None:
        annotations = {models.NODE_LOST_AFTER_ANNOTATION: str(lost_after)}
        manifest["metadata"]["annotations"] = annotations
    return manifest


def running(jobs: Jobs, name: str) -> dict[str, Any]:
    pods = jobs.wait_running(name, {f"{name}-worker-0", f"{name}-worker-1"})
    jobs.wait_phase(name, "Running")
    return pods


def test_a_node_that_stops_heartbeating_has_its_pod_replaced_after_the_bound(
    jobs: Jobs, core_v1: client.CoreV1Api
) -> None:
    with three_nodes(core_v1) as (group, _):
        jobs.create(job("hb", group, lost_after=20))
        pods = running(jobs, "hb")
        lost, kept = pods["hb-worker-1"], pods["hb-worker-0"]
        stop_heartbeats(core_v1, lost.spec.node_name)
        status = jobs.wait_status(
            "hb",
            lambda s: condition(s, "Running").get("reason") == "NodeNotReady",
            "Running condition NodeNotReady",
        )
        assert replicas_of(status)["hb-worker-1"]["phase"] == "Unknown"
        assert replicas_of(status)["hb-worker-0"]["phase"] == "Running"
        message = condition(status, "Running")["message"]
        assert f"node {lost.spec.node_name} is NotReady" in message
        assert (
            f"replaced after 20s (the job's annotation {models.NODE_LOST_AFTER_ANNOTATION})"
            in message
        )
        _, _, event = jobs.wait_event("hb", "NodeLost", timeout=60)
        assert (
            f"Force-deleted pod hb-worker-1: its node {lost.spec.node_name} has been NotReady"
            in event
        )
        assert "the node may still run it" in event
        again = jobs.wait_pods(
            "hb",
            lambda ps: "hb-worker-1" in ps
            and ps["hb-worker-1"].metadata.uid != lost.metadata.uid
            and ps["hb-worker-1"].status.phase == "Running",
            "hb-worker-1 recreated and running",
        )
        assert again["hb-worker-1"].spec.node_name not in (lost.spec.node_name, kept.spec.node_name)
        assert again["hb-worker-0"].metadata.uid == kept.metadata.uid  # the other rank untouched
        status = jobs.wait_status(
            "hb", lambda s: condition(s, "Running").get("status") == "True", "Running again"
        )
        assert restart_counts(status) == {"worker": 0}  # restartPolicy Never: not a failure
        assert status["phase"] == "Running"


def test_a_deleted_node_has_its_pod_replaced_at_once(jobs: Jobs, core_v1: client.CoreV1Api) -> None:
    with three_nodes(core_v1) as (group, _):
        jobs.create(job("gone", group, lost_after=None))  # the operator's bound: 300 s
        pods = running(jobs, "gone")
        lost = pods["gone-worker-1"]
        core_v1.delete_node(lost.spec.node_name)
        # before kube-controller-manager's PodGC, which waits 40 s before it deletes the pods
        # of a node that is gone
        _, _, event = jobs.wait_event("gone", "NodeLost", timeout=30)
        assert f"its node {lost.spec.node_name} no longer exists" in event
        again = jobs.wait_pods(
            "gone",
            lambda ps: "gone-worker-1" in ps
            and ps["gone-worker-1"].metadata.uid != lost.metadata.uid
            and ps["gone-worker-1"].status.phase == "Running",
            "gone-worker-1 recreated and running",
        )
        assert again["gone-worker-0"].metadata.uid == pods["gone-worker-0"].metadata.uid
        status = jobs.wait_phase("gone", "Running")
        assert restart_counts(status) == {"worker": 0}


def test_a_node_that_comes_back_within_the_bound_keeps_its_pod(
    jobs: Jobs, core_v1: client.CoreV1Api
) -> None:
    with three_nodes(core_v1) as (group, _):
        jobs.create(job("back", group, lost_after=600))
        pods = running(jobs, "back")
        lost = pods["back-worker-1"]
        stop_heartbeats(core_v1, lost.spec.node_name)
        jobs.wait_status(
            "back",
            lambda s: condition(s, "Running").get("reason") == "NodeNotReady",
            "Running condition NodeNotReady",
        )
        core_v1.patch_node(lost.spec.node_name, {"metadata": {"labels": {"type": "kwok"}}})
        status = jobs.wait_status(
            "back",
            lambda s: condition(s, "Running").get("status") == "True",
            "Running again once kwok marks the node Ready",
        )
        assert replicas_of(status)["back-worker-1"]["phase"] == "Running"
        assert jobs.pod("back-worker-1").metadata.uid == lost.metadata.uid
        assert "NodeLost" not in jobs.reasons("back")
