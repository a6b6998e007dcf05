"""The conventions of a T9k job's children: their names, labels, selectors, and which replicas
a job has (its slots). Everyone who finds or names a job's objects reads them here: the
reconcile core that creates the objects, the client and the CLI that look them up, and the API
layer that watches them. A leaf: it imports nothing of the SDK but the wire models, the raw
object readers and the kind registry (itself a leaf on the wire models).

Labels follow both vocabularies users meet: T9k's (`genericjob: <job>`,
`tensorstack.dev/owner-name`, the scheduler's `scheduler.tensorstack.dev/*`) and the KubeDL
common keys of seed 003 (`job-name`, `replica-type`, `replica-index`, `replica-name`,
`group-name`, `job-role`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from t9k_sdk import _kinds, models
from t9k_sdk import _objects as o

__all__ = [
    "ANNOTATION_PREFIX",
    "COMPONENT",
    "COMPONENT_TYPE",
    "FIELD_MANAGER",
    "GROUP_NAME",
    "JOB_NAME",
    "JOB_ROLE",
    "MANAGED_SELECTOR",
    "OWNER_NAME",
    "PODGROUP_API_VERSION",
    "REPLICA_INDEX",
    "REPLICA_NAME",
    "REPLICA_TYPE",
    "SCHED_GROUP",
    "SCHED_QUEUE",
    "SCHED_ROLE",
    "STUCK_REASONS",
    "T9K_SCHEDULER",
    "Slot",
    "child_selector",
    "config_map_name",
    "owner_of",
    "pod_name",
    "replica_types",
    "slots",
    "ssh_secret_name",
]

_Job: TypeAlias = _kinds.AnyJob

GROUP: Final = models.GROUP
FIELD_MANAGER: Final = "t9k-operator"
ANNOTATION_PREFIX: Final = f"{models.GROUP}/"

# KubeDL common label keys (seed 003).
JOB_NAME: Final = "job-name"
REPLICA_TYPE: Final = "replica-type"
REPLICA_INDEX: Final = "replica-index"
REPLICA_NAME: Final = "replica-name"
GROUP_NAME: Final = "group-name"
JOB_ROLE: Final = "job-role"

# T9k label keys.
OWNER_NAME: Final = "tensorstack.dev/owner-name"
COMPONENT: Final = "tensorstack.dev/component"
COMPONENT_TYPE: Final = "tensorstack.dev/component-type"
SCHED_GROUP: Final = "scheduler.tensorstack.dev/group-name"
SCHED_QUEUE: Final = "scheduler.tensorstack.dev/queue"
SCHED_ROLE: Final = "scheduler.tensorstack.dev/role"

# Kueue (kueue.x-k8s.io): the labels a Kueue user puts on a job, and the Workload the operator
# creates for a job that names a LocalQueue (t9k_sdk/reconcile/policies/admission.py).
KUEUE_QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY_LABEL: Final = "kueue.x-k8s.io/priority-class"
KUEUE_API_VERSION: Final = "kueue.x-k8s.io/v1beta2"
KUEUE_NAME: Final = re.compile(r"[a-z0-9]([-.a-z0-9]{0,61}[a-z0-9])?")
"""A Kueue LocalQueue's or WorkloadPriorityClass' name as a label names it: an object name (a
DNS subdomain) that fits a label value (63 characters)."""
KUEUE_QUEUED: Final = "Queued"
"""Running condition reason of a job waiting for Kueue's admission."""
KUEUE_QUEUE_UNAVAILABLE: Final = "QueueUnavailable"
"""... of a job that names a queue on a cluster whose API server serves no Kueue Workloads."""
KUEUE_EVICTED: Final = "Evicted"
"""... of an admitted job Kueue evicted (preemption, `waitForPodsReady`, deactivation)."""
KUEUE_INADMISSIBLE: Final = "Inadmissible"
"""... of a job Kueue will not admit as it is (its queue does not exist, no flavour fits)."""

T9K_SCHEDULER: Final = "t9k-scheduler"
PODGROUP_API_VERSION: Final = "scheduler.tensorstack.dev/v1beta1"

_KINDS: Final = tuple(k.singular for k in _kinds.JOB_KINDS)
MANAGED_SELECTOR: Final = f"{COMPONENT} in ({','.join(_KINDS)}),{OWNER_NAME}"
"""Label selector matching every object any job owns (for the operator's watches)."""


def pod_name(job: str, replica_type: str, index: int | None) -> str:
    """`<job>-<type>-<index>`; the ColossalAIJob launcher has no index: `<job>-launcher`."""
    return f"{job}-{replica_type}" if index is None else f"{job}-{replica_type}-{index}"


def ssh_secret_name(job: str) -> str:
    """The Secret holding a job's SSH key pair."""
    return f"{job}-ssh"


def config_map_name(job: str) -> str:
    """The ConfigMap holding a job's hostfile and launch scripts."""
    return f"{job}-config"


def child_selector(kind: str, job: str) -> str:
    """Label selector of the objects owned by job `job` of `kind`."""
    return f"{COMPONENT}={kind.lower()},{OWNER_NAME}={job}"


def owner_of(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """(kind, name) of the T9k job that controls `obj`, from its controller owner reference."""
    ref = o.meta(obj).controller
    if ref is not None and ref.api_version.split("/")[0] == GROUP:
        return ref.kind, ref.name
    return None


# Container waiting reasons that mean "this will not start by itself": surfaced in conditions.
STUCK_REASONS: Final = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)


@dataclass(frozen=True)
class Slot:
    """One replica: a pod name that exists (or will) for the job."""

    replica_type: str
    index: int | None
    name: str

    @property
    def rank(self) -> int:
        """The replica's index within its type (0 for a single unindexed replica)."""
        return self.index or 0


def replica_types(job: _Job) -> list[tuple[str, int]]:
    """(replica type, replica count) of each replica type of `job`, in spec order. An elastic
    DeepSpeedJob has the workers of its expectedReplicas."""
    if isinstance(job, models.GenericJob):
        return [(r.type, r.replica_count) for r in job.spec.replica_specs]
    if isinstance(job, models.DeepSpeedJob):
        spec = job.spec
        elastic = spec.elastic
        if elastic and elastic.enabled and elastic.expected_replicas is not None:
            return [("worker", elastic.expected_replicas)]
        return [("worker", spec.worker.replica_count)]
    return [(r.type.value, r.replica_count) for r in job.spec.replica_specs]


def slots(job: _Job) -> list[Slot]:
    """Every replica of `job`, in order: by replica type, then index. A ColossalAIJob has one
    launcher, without an index (`<job>-launcher`)."""
    out: list[Slot] = []
    for type_, count in replica_types(job):
        if isinstance(job, models.ColossalAIJob) and type_ == models.ColossalAIReplicaType.LAUNCHER:
            out.append(Slot(type_, None, pod_name(job.name, type_, None)))
        else:
            out.extend(Slot(type_, i, pod_name(job.name, type_, i)) for i in range(count))
    return out
