"""Disruptions on kwok: a pod the kubelet evicts under node pressure comes back, uncounted.

kwok plays the kubelet but never runs short of memory, so the test writes to the pod's status
what a kubelet's eviction manager writes when a node runs low on memory (the pod Failed, its
container killed with 137, the reason Evicted, and the condition DisruptionTarget with reason
TerminationByKubelet). kwok has no stage for a Failed pod, so nothing overwrites it. What a user
sees is asserted: a Warning Event PodDisrupted that says who ended the pod and why, the replica
back on a new pod although its restart policy is Never, no restart counted, the other worker
untouched, the job Running throughout.
"""

from __future__ import annotations

from kubernetes import client

from tests.cluster.e2e_helpers import Jobs, restart_counts
from tools.kit import generic_job, replica, request

PRESSURE = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 2Mi."


def evict(core: client.CoreV1Api, namespace: str, name: str) -> None:
    """Write the kubelet's eviction to the pod's status."""
    terminated = {"terminated": {"exitCode": 137, "reason": "Error"}}
    target = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "TerminationByKubelet",
        "message": PRESSURE,
    }
    request(
        core.api_client,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/{name}/status",
        headers={"Content-Type": "application/json-patch+json"},
        body=[
            {"op": "replace", "path": "/status/phase", "value": "Failed"},
            {"op": "add", "path": "/status/reason", "value": "Evicted"},
            {"op": "add", "path": "/status/message", "value": PRESSURE},
            {"op": "add", "path": "/status/conditions/-", "value": target},
            {"op": "replace", "path": "/status/containerStatuses/0/state", "value": terminated},
            {"op": "replace", "path": "/status/containerStatuses/0/ready", "value": False},
        ],
    )


def test_a_pod_evicted_under_node_pressure_is_recreated_without_counting_a_restart(
    jobs: Jobs, core_v1: client.CoreV1Api
) -> None:
    jobs.create(generic_job("evicted", replica("worker", 2, restart=("Never", 0))))
    pods = jobs.wait_running("evicted", {"evicted-worker-0", "evicted-worker-1"})
    jobs.wait_phase("evicted", "Running")
    lost, kept = pods["evicted-worker-1"], pods["evicted-worker-0"]
    evict(core_v1, jobs.namespace, lost.metadata.name)
    kind, _, event = jobs.wait_event("evicted", "PodDisrupted", timeout=30)
    assert kind == "Warning"
    assert event == (
        "Pod evicted-worker-1 was ended by the cluster, not by its own code"
        f" (TerminationByKubelet: {PRESSURE}); recreating it, not counted as a restart"
    )
    again = jobs.wait_pods(
        "evicted",
        lambda ps: "evicted-worker-1" in ps
        and ps["evicted-worker-1"].metadata.uid != lost.metadata.uid
        and ps["evicted-worker-1"].status.phase == "Running",
        "evicted-worker-1 recreated and running",
    )
    assert again["evicted-worker-0"].metadata.uid == kept.metadata.uid
    status = jobs.wait_phase("evicted", "Running")
    assert restart_counts(status) == {"worker": 0}  # restartPolicy Never, limit 0: not a failure
