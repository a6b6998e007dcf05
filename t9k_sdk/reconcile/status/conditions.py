"""The conditions of a job's status, as T9k's real status dumps show them (pure).

Conditions keep their `lastTransitionTime` unless their status flips (metav1 convention). The
five core types appear as in T9k's dumps: Initialized and Running from the start (Initialized is
False while a problem keeps the job from creating its children), ReplicaFailure once a replica is
observed, Completed and Failed once the job ends; Paused once a pause completed (every replica
deleted or being deleted).

Beside them, a t9k-sdk extension for GitOps tools (`kstatus_conditions`): Ready, Reconciling and
Stalled, derived from the phase and the T9k conditions alone, and `observedGeneration`:

| job state                       | Ready             | Reconciling       | Stalled           |
|---------------------------------|-------------------|-------------------|-------------------|
| Pending                         | False, Pending    | True, Pending     | False             |
| Resuming                        | False, Resuming   | True, Resuming    | False             |
| Running (a replica restarting)  | True, Running     | False             | False             |
| Succeeded                       | True, Succeeded   | False             | False             |
| Failed (any reason)             | False, <reason>   | False             | True, <reason>    |
| Paused                          | True, Paused      | False             | False             |
| pausing                         | False, Pausing    | True, Pausing     | False             |
| a problem blocks it             | False, <problem>  | False             | True, <problem>   |

kstatus (Flux, kpt) then reads Pending/Resuming/pausing as InProgress, Running/Succeeded/Paused
as Current, Failed or blocked as Failed. Paused is Ready=True: the job is as its spec asks, as a
suspended batch/v1 Job is Current to kstatus.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from t9k_sdk.models import ConditionStatus, JobConditionType, JobPhase
from t9k_sdk.models._base import _format_time

__all__ = [
    "INITIALIZED",
    "KSTATUS_TYPES",
    "RUNNING_OK",
    "SUCCEEDED",
    "Conditions",
    "kstatus_conditions",
]

T9K_TYPES = (
    JobConditionType.INITIALIZED,
    JobConditionType.RUNNING,
    JobConditionType.FAILED,
    JobConditionType.COMPLETED,
    JobConditionType.REPLICA_FAILURE,
    JobConditionType.PAUSED,
)
KSTATUS_TYPES = (
    JobConditionType.READY,
    JobConditionType.RECONCILING,
    JobConditionType.STALLED,
)
ORDER = (*T9K_TYPES, *KSTATUS_TYPES)
INITIALIZED = "The job has been initialized successfully."
RUNNING_OK = "All pods are running normally."
SUCCEEDED = "The job has finished successfully."


class Conditions:
    """The condition list of a status, updated by type."""

    def __init__(self, previous: Sequence[Mapping[str, Any]] | None, now: datetime) -> None:
        self._by_type: dict[str, dict[str, Any]] = {
            str(c["type"]): dict(c) for c in previous or () if c.get("type")
        }
        self._now = _format_time(now)

    def get(self, type: JobConditionType) -> Mapping[str, Any] | None:
        return self._by_type.get(type.value)

    def set(
        self, type: JobConditionType, status: ConditionStatus, reason: str, message: str
    ) -> bool:
        """Set a condition; returns True when its status changed (a transition)."""
        old = self._by_type.get(type.value)
        flipped = old is None or old.get("status") != status.value
        when = self._now if flipped or old is None else old.get("lastTransitionTime", self._now)
        self._by_type[type.value] = {
            "type": type.value,
            "status": status.value,
            "lastTransitionTime": when,
            "reason": reason,
            "message": message,
        }
        return flipped

    def wire(self) -> list[dict[str, Any]]:
        """The conditions in a fixed order. Types the operator does not write (a foreign
        writer's) are dropped: the status is the operator's own view."""
        return [self._by_type[t.value] for t in ORDER if t.value in self._by_type]


def _message(c: Mapping[str, Any] | None, default: str) -> str:
    text = c.get("message") if c is not None else None
    return text if isinstance(text, str) and text else default


def _reason_of(c: Mapping[str, Any] | None, default: str) -> str:
    text = c.get("reason") if c is not None else None
    return text if isinstance(text, str) and text and text != "-" else default


def kstatus_conditions(
    conditions: Conditions, phase: str, problem: tuple[str, str] | None = None
) -> None:
    """Set Ready, Reconciling and Stalled from the phase and the T9k conditions already set
    (see the table above). `problem`: (reason, message) of what blocks an unfinished job."""
    t, f = ConditionStatus.TRUE, ConditionStatus.FALSE
    ready = JobConditionType.READY
    reconciling = JobConditionType.RECONCILING
    stalled = JobConditionType.STALLED
    running = conditions.get(JobConditionType.RUNNING)
    paused = conditions.get(JobConditionType.PAUSED)
    if phase == JobPhase.FAILED.value:
        failed = conditions.get(JobConditionType.FAILED)
        reason = _reason_of(failed, "Failed")
        message = _message(failed, "The job failed.")
        conditions.set(ready, f, reason, message)
        conditions.set(reconciling, f, reason, "The job has finished: it failed.")
        conditions.set(stalled, t, reason, message)
        return
    if phase == JobPhase.SUCCEEDED.value:
        message = _message(conditions.get(JobConditionType.COMPLETED), SUCCEEDED)
        conditions.set(ready, t, "Succeeded", message)
        conditions.set(reconciling, f, "Succeeded", "The job has finished successfully.")
        conditions.set(stalled, f, "Succeeded", "The job has finished successfully.")
        return
    if phase == JobPhase.PAUSED.value:
        if paused is not None and paused.get("status") == t.value:
            message = _message(paused, "The job is paused.")
            conditions.set(ready, t, "Paused", message)
            conditions.set(reconciling, f, "Paused", message)
            conditions.set(stalled, f, "Paused", message)
        else:
            message = _message(paused, "The job is pausing: replicas are being deleted.")
            conditions.set(ready, f, "Pausing", message)
            conditions.set(reconciling, t, "Pausing", message)
            conditions.set(stalled, f, "Pausing", message)
        return
    if problem is not None:
        reason, message = problem
        conditions.set(ready, f, reason, message)
        conditions.set(reconciling, f, reason, f"The job is blocked: {message}")
        conditions.set(stalled, t, reason, message)
        return
    if phase == JobPhase.RUNNING.value:
        message = _message(running, RUNNING_OK)
        conditions.set(ready, t, "Running", message)
        conditions.set(reconciling, f, "Running", message)
        conditions.set(stalled, f, "Running", message)
        return
    reason = "Resuming" if phase == JobPhase.RESUMING.value else "Pending"
    message = _message(running, f"The job is {reason.lower()}.")
    conditions.set(ready, f, reason, message)
    conditions.set(reconciling, t, reason, message)
    conditions.set(stalled, f, reason, message)
