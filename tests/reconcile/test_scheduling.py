"""Scheduling, called directly: which scheduler places a job's pods, and the gang it places.

What a user sees: a job whose `spec.scheduler.t9kScheduler` names a queue gets a PodGroup named
after it (`scheduler.tensorstack.dev/v1beta1`: the gang's minMember, the queue, the priority,
0 when unset), and each of its pods is scheduled by `t9k-scheduler` and labelled with the group,
the queue and its replica type. The gang is every replica of the job, or an elastic
DeepSpeedJob's minReplicas. A job without one is scheduled by the cluster's default scheduler:
no PodGroup, no scheduler name, no scheduler labels.
"""

from __future__ import annotations

from typing import Any

import pytest

from t9k_sdk.codecs import AnyJob
from t9k_sdk.reconcile import scheduling
from tests.sdk.manifests import deepspeed_job, generic_job
from tests.sdk.manifests import pod as template

from .policy_kit import read, slot

GROUP = "scheduler.tensorstack.dev/group-name"
QUEUE = "scheduler.tensorstack.dev/queue"
ROLE = "scheduler.tensorstack.dev/role"


def gj(**spec: Any) -> dict[str, Any]:
    return generic_job(
        replicaSpecs=[
            {"type": "ps", "replicas": 1, "template": template()},
            {"type": "worker", "replicas": 3, "template": template()},
        ],
        **spec,
    )


def parsed(manifest: dict[str, Any]) -> AnyJob:
    return read(manifest).job


def queued(queue: str = "gpu-a100", **settings: Any) -> dict[str, Any]:
    return gj(scheduler={"t9kScheduler": {"queue": queue, **settings}})


def test_a_job_without_a_t9k_scheduler_is_left_to_the_default_scheduler() -> None:
    job = parsed(gj())
    assert scheduling.t9k_scheduler(job) is None
    assert scheduling.pod_labels(job, "worker") == {}
    spec: dict[str, Any] = {"containers": []}
    scheduling.place_pod(job, spec)
    assert spec == {"containers": []}
    assert scheduling.pod_group(job, 4, {"name": "demo"}) is None


def test_a_queued_job_gets_a_pod_group_in_its_queue() -> None:
    job = parsed(queued())
    meta = {"name": "demo", "namespace": "ns"}
    assert scheduling.pod_group(job, 4, meta) == {
        "apiVersion": "scheduler.tensorstack.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": meta,
        "spec": {"minMember": 4, "queue": "gpu-a100", "priority": 0},
    }


@pytest.mark.parametrize("priority", [0, 1, 100])
def test_the_pod_group_has_the_jobs_priority(priority: int) -> None:
    group = scheduling.pod_group(parsed(queued(priority=priority)), 4, {"name": "demo"})
    assert group is not None
    assert group["spec"]["priority"] == priority


def test_a_queued_jobs_pods_are_placed_by_the_t9k_scheduler() -> None:
    job = parsed(queued())
    spec: dict[str, Any] = {"containers": []}
    scheduling.place_pod(job, spec)
    assert spec["schedulerName"] == "t9k-scheduler"
    assert scheduling.pod_labels(job, "ps") == {GROUP: "demo", QUEUE: "gpu-a100", ROLE: "ps"}


def test_each_pod_carries_the_labels_of_its_replica_type_and_the_scheduler_name() -> None:
    state = read(queued())
    for name, role in [("demo-ps-0", "ps"), ("demo-worker-2", "worker")]:
        pod = state.rules.pod(slot(state, name), "immediate")
        assert pod["spec"]["schedulerName"] == "t9k-scheduler"
        labels = pod["metadata"]["labels"]
        assert (labels[GROUP], labels[QUEUE], labels[ROLE]) == ("demo", "gpu-a100", role)


def test_the_gang_is_every_replica_of_the_job() -> None:
    group = read(queued()).rules.pod_group()
    assert group is not None
    assert group["spec"]["minMember"] == 4  # 1 ps + 3 workers
    assert group["metadata"]["name"] == "demo"
    assert group["metadata"]["ownerReferences"][0]["uid"] == "job-uid"


@pytest.mark.parametrize(("elastic", "gang"), [(True, 2), (False, 5)])
def test_an_elastic_deepspeed_jobs_gang_is_its_min_replicas(elastic: bool, gang: int) -> None:
    job = deepspeed_job(
        worker={"replicas": 5, "template": template("worker")},
        elastic={"enabled": elastic, "minReplicas": 2, "maxReplicas": 5, "expectedReplicas": 5},
        scheduler={"t9kScheduler": {"queue": "default"}},
    )
    group = read(job).rules.pod_group()
    assert group is not None
    assert group["spec"]["minMember"] == gang
