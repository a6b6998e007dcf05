"""The rest of a job's status: its tasks and replicas, the aggregate, `observedGeneration`, and
the status of a job whose spec cannot be read (pure)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

from t9k_sdk import _objects as o
from t9k_sdk._conventions import Slot
from t9k_sdk._job_status import ReplicaEntry, TaskEntry
from t9k_sdk.models import ConditionStatus, JobConditionType, JobPhase, ReplicaPhase
from t9k_sdk.reconcile.status.conditions import Conditions, kstatus_conditions

__all__ = ["aggregate", "invalid_spec_status", "tasks", "with_observed_generation"]


def tasks(
    types: Collection[str],
    slots: Collection[Slot],
    entries: Mapping[str, ReplicaEntry],
    restarts: Mapping[str, int],
) -> list[TaskEntry]:
    """`status.tasks`: per replica type (in `types`' order), its restart count and the entries
    of its replicas, in slot order."""
    out: list[TaskEntry] = []
    for replica_type in types:
        replicas = [
            entries[s.name] for s in slots if s.replica_type == replica_type and s.name in entries
        ]
        task: TaskEntry = {"type": replica_type, "restartCount": restarts.get(replica_type, 0)}
        if replicas:
            task["replicas"] = replicas
        out.append(task)
    return out


def aggregate(entries: Collection[ReplicaEntry]) -> dict[str, int]:
    """`status.aggregate`: how many replicas are in each phase."""
    out = {p.value.lower(): 0 for p in ReplicaPhase}
    for entry in entries:
        out[str(entry["phase"]).lower()] += 1
    return out


def with_observed_generation(
    job_manifest: Mapping[str, Any], status: dict[str, Any]
) -> dict[str, Any]:
    """`status` with `observedGeneration`: the generation of the spec this pass acted on.

    Whatever was there before (a foreign writer's number, however large) is replaced. A job
    without a generation (never the case on an API server) keeps no observedGeneration."""
    generation = o.meta(job_manifest).generation
    out = {k: v for k, v in status.items() if k != "observedGeneration"}
    if generation > 0:
        out = {"observedGeneration": generation, **out}
    return out


def invalid_spec_status(
    job_manifest: Mapping[str, Any], message: str, now: datetime
) -> dict[str, Any]:
    """The status of a job whose spec cannot be read: Failed, reason InvalidSpec, `message`."""
    prev = dict(o.status(job_manifest))
    conditions = Conditions(o.conditions(job_manifest), now)
    conditions.set(JobConditionType.INITIALIZED, ConditionStatus.FALSE, "InvalidSpec", message)
    conditions.set(JobConditionType.FAILED, ConditionStatus.TRUE, "InvalidSpec", message)
    conditions.set(JobConditionType.COMPLETED, ConditionStatus.TRUE, "InvalidSpec", message)
    kstatus_conditions(conditions, JobPhase.FAILED.value)
    return with_observed_generation(
        job_manifest, {**prev, "phase": JobPhase.FAILED.value, "conditions": conditions.wire()}
    )
