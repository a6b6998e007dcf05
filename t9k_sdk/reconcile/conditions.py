"""Phase and conditions of a job, as T9k's real status dumps show them (pure).

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

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from t9k_sdk import _objects as o
from t9k_sdk.models import ConditionStatus, JobConditionType, JobPhase, ReplicaPhase
from t9k_sdk.models._base import _format_time
from t9k_sdk.reconcile.observe import PodView
from t9k_sdk.reconcile.types import Event

__all__ = ["KSTATUS_TYPES", "Conditions", "kstatus_conditions", "phase_and_conditions"]

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


def _issue(replicas: Sequence[o.Replica], pods: Mapping[str, PodView]) -> tuple[str, str] | None:
    """(reason, message) of the first replica that will not start by itself."""
    for replica in replicas:
        pod = pods.get(replica.name)
        if pod is None or pod.terminating:
            continue
        if pod.unschedulable:
            return "Unschedulable", f"Pod[{pod.name}] cannot be scheduled: {pod.unschedulable}"
        if pod.stuck:
            container, reason, message = pod.stuck
            detail = f": {message}" if message else ""
            return reason, f"Pod[{pod.name}] container {container} is waiting: {reason}{detail}"
    return None


def _termination_message(replicas: Sequence[o.Replica], pods: Mapping[str, PodView]) -> str:
    """The termination message of the first failed replica's failed container, if any."""
    for replica in replicas:
        if replica.phase != ReplicaPhase.FAILED.value:
            continue
        pod = pods.get(replica.name)
        code = pod.exit_code if pod else None
        for c in replica.containers:
            if c.message and c.message.strip() and (code is None or c.exit_code == code):
                return c.message.strip()
    return ""


def _failure(replicas: Sequence[o.Replica], pods: Mapping[str, PodView]) -> tuple[str, str] | None:
    for replica in replicas:
        if replica.phase != ReplicaPhase.FAILED.value:
            continue
        name = replica.name
        pod = pods.get(name)
        code = pod.exit_code if pod else None
        if code is None:
            code = next((c.exit_code for c in replica.containers if c.exit_code), None)
        if code is not None:
            detail = next(
                (
                    c.message.strip()
                    for c in replica.containers
                    if c.exit_code == code and c.message
                ),
                "",
            )
            suffix = f": {detail}" if detail else ""
            return "ErrorInPod", f"Pod[{name}] exited with error code {code}{suffix}"
        reason = pod.failure_reason if pod else None
        return "ErrorInPod", f"Pod[{name}] failed" + (f": {reason}" if reason else "")
    return None


def phase_and_conditions(
    *,
    prev: Mapping[str, Any],
    entries: Sequence[Mapping[str, Any]],
    pods: Mapping[str, PodView],
    final: Mapping[str, str],
    outcome: tuple[str, str, str] | None,
    terminal: bool,
    paused: bool,
    debug: bool,
    now: datetime,
    problem: tuple[str, str] | None = None,
    waiting: tuple[str, str] | None = None,
    failure_is_the_jobs: bool = False,
    standby: Collection[str] = (),
) -> tuple[str, list[dict[str, Any]], list[Event]]:
    """The new phase, the new conditions, and the events of the transitions.

    `problem` is (reason, message) of what keeps the job from getting its children (a name held
    by a foreign object, a create the API server refused): it becomes `Running=False` with that
    reason and message, and a Warning Event when it first appears or changes. `waiting` is
    (reason, message) of a launcher held back until its workers run: the Running condition says
    so (a Normal Event when it first appears) unless a replica has a problem of its own.
    `failure_is_the_jobs` (DeepSpeedJob): a failed job's ReplicaFailure is reason `Failed` with
    the job's failure message, as T9k writes it, followed by the failed pod's termination
    message when it has one (the launch barrier's reason, for example); Failed and Completed
    carry T9k's message as it is. `standby`: replicas
    that the job runs without until they run (an elastic DeepSpeedJob's workers beyond its
    hostfile): not running, they keep the job neither Pending nor from being Running.
    """
    prev_phase = prev.get("phase")
    conditions = Conditions(prev.get("conditions"), now)
    events: list[Event] = []
    if terminal:
        kstatus_conditions(conditions, str(prev_phase))
        return str(prev_phase), conditions.wire(), events

    replicas = [o.Replica(e) for e in entries]
    observed = bool(pods) or any(r.uid for r in replicas)  # a replica was created
    if problem is not None and not observed:
        # Initialized means the children were created (T9k): not while none could be
        conditions.set(JobConditionType.INITIALIZED, ConditionStatus.FALSE, *problem)
    else:
        conditions.set(JobConditionType.INITIALIZED, ConditionStatus.TRUE, "-", INITIALIZED)
    failure = _failure(replicas, pods)
    if outcome is not None:
        result, reason, message = outcome
        phase = result
        ok = result == JobPhase.SUCCEEDED.value
        conditions.set(JobConditionType.RUNNING, ConditionStatus.FALSE, reason, message)
        conditions.set(
            JobConditionType.FAILED,
            ConditionStatus.FALSE if ok else ConditionStatus.TRUE,
            reason,
            message,
        )
        conditions.set(JobConditionType.COMPLETED, ConditionStatus.TRUE, reason, message)
        replica_failure = conditions.get(JobConditionType.REPLICA_FAILURE)
        if ok:
            conditions.set(
                JobConditionType.REPLICA_FAILURE,
                ConditionStatus.FALSE,
                "Finished",
                SUCCEEDED.rstrip("."),
            )
        elif failure_is_the_jobs:  # T9k's DeepSpeedJob: reason Failed, the job's message
            detail = _termination_message(replicas, pods)
            conditions.set(
                JobConditionType.REPLICA_FAILURE,
                ConditionStatus.TRUE,
                reason,
                f"{message}: {detail}" if detail else message,
            )
        elif not (replica_failure and replica_failure.get("status") == ConditionStatus.TRUE.value):
            reason, detail = failure or ("Failed", message)
            conditions.set(JobConditionType.REPLICA_FAILURE, ConditionStatus.TRUE, reason, detail)
        events.append(Event("Normal" if ok else "Warning", result, message))
        kstatus_conditions(conditions, phase)
        return phase, conditions.wire(), events

    active = [r for r in replicas if r.name not in final] if final else replicas
    issue = _issue(active, pods)
    late = [r.name for r in active if r.name in standby and r.phase != ReplicaPhase.RUNNING.value]
    active = [r for r in active if r.name not in late]
    running = [r for r in active if r.phase == ReplicaPhase.RUNNING.value]
    all_running = bool(active) and len(running) == len(active)
    if paused:
        phase = JobPhase.PAUSED.value
        # T9k: Paused means every replica is deleted or being deleted
        gone = not any(not p.terminating for p in pods.values())
        if gone:
            conditions.set(
                JobConditionType.RUNNING, ConditionStatus.FALSE, "Paused", "The job is paused."
            )
            conditions.set(
                JobConditionType.PAUSED,
                ConditionStatus.TRUE,
                "Paused",
                "The job is paused: all replicas are deleted or being deleted.",
            )
        else:
            pausing = "The job is pausing: replicas are being deleted."
            conditions.set(JobConditionType.RUNNING, ConditionStatus.FALSE, "Pausing", pausing)
            # Only a pause that completed creates the condition: its lastTransitionTime marks
            # the last real resume, which the deadline's clock starts from.
            if conditions.get(JobConditionType.PAUSED) is not None:
                conditions.set(JobConditionType.PAUSED, ConditionStatus.FALSE, "Pausing", pausing)
    else:
        if conditions.get(JobConditionType.PAUSED) is not None:
            conditions.set(
                JobConditionType.PAUSED, ConditionStatus.FALSE, "Resumed", "The job was resumed."
            )
        if all_running:
            phase = JobPhase.RUNNING.value
        elif prev_phase in (JobPhase.PAUSED.value, JobPhase.RESUMING.value):
            phase = JobPhase.RESUMING.value
        elif prev_phase == JobPhase.RUNNING.value:
            phase = JobPhase.RUNNING.value  # a replica restarting does not make the job pending
        else:
            phase = JobPhase.PENDING.value
        if problem is not None:
            conditions.set(JobConditionType.RUNNING, ConditionStatus.FALSE, *problem)
            if _running(prev) != problem:
                events.append(Event("Warning", *problem))
        elif all_running and late:
            detail = f": {issue[1]}" if issue is not None else ""
            conditions.set(
                JobConditionType.RUNNING,
                ConditionStatus.TRUE,
                "-",
                f"Training with {len(running)} of {len(running) + len(late)} workers (elastic);"
                f" {', '.join(late[:5])} joins once it runs{detail}",
            )
        elif all_running:
            conditions.set(JobConditionType.RUNNING, ConditionStatus.TRUE, "-", RUNNING_OK)
        elif issue is not None:
            conditions.set(JobConditionType.RUNNING, ConditionStatus.FALSE, *issue)
            if _reason(prev) != issue[0]:
                events.append(Event("Warning", issue[0], issue[1]))
        elif waiting is not None:
            conditions.set(JobConditionType.RUNNING, ConditionStatus.FALSE, *waiting)
            if _reason(prev) != waiting[0]:
                events.append(Event("Normal", *waiting))
        else:
            starting = len(active) - len(running)
            reason = "Resuming" if phase == JobPhase.RESUMING.value else "Pending"
            conditions.set(
                JobConditionType.RUNNING,
                ConditionStatus.FALSE,
                reason,
                f"Waiting for {starting} of {len(active)} replicas to start running.",
            )
    if observed:  # ReplicaFailure once a replica is observed
        if failure is not None:
            if conditions.set(JobConditionType.REPLICA_FAILURE, ConditionStatus.TRUE, *failure):
                events.append(Event("Warning", "ReplicaFailure", failure[1]))
        else:
            conditions.set(JobConditionType.REPLICA_FAILURE, ConditionStatus.FALSE, "-", RUNNING_OK)
    if debug and not paused:
        conditions.set(
            JobConditionType.COMPLETED,
            ConditionStatus.FALSE,
            "Debug",
            "The job runs in debug mode: it does not finish by itself.",
        )
    if phase != prev_phase:
        events.append(Event("Normal", phase, f"The job is {phase.lower()}."))
    kstatus_conditions(conditions, phase, None if paused else problem)
    return phase, conditions.wire(), events


def _running(status: Mapping[str, Any]) -> tuple[str, str] | None:
    """(reason, message) of the Running condition in `status` (a job's status, not the job)."""
    c = o.condition({"status": status}, JobConditionType.RUNNING.value)
    return (str(c.get("reason")), str(c.get("message"))) if c is not None else None


def _reason(status: Mapping[str, Any]) -> str | None:
    running = _running(status)
    return running[0] if running is not None else None
