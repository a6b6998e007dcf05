"""Names and labels of the objects a job owns.

Labels follow both vocabularies users meet: T9k's (`genericjob: <job>`,
`tensorstack.dev/owner-name`, the scheduler's `scheduler.tensorstack.dev/*`) and the KubeDL
common keys of seed 003 (`job-name`, `replica-type`, `replica-index`, `replica-name`,
`group-name`, `job-role`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from t9k_sdk import _objects as o
from t9k_sdk import models

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
    "T9K_SCHEDULER",
    "child_selector",
    "config_map_name",
    "owner_of",
    "pod_name",
    "ssh_secret_name",
]

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

T9K_SCHEDULER: Final = "t9k-scheduler"
PODGROUP_API_VERSION: Final = "scheduler.tensorstack.dev/v1beta1"

_KINDS: Final = tuple(kind.lower() for kind in models.JOB_KINDS)
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
