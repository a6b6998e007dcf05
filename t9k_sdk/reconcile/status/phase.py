"""The phase of a job and its conditions, by the job's situation (pure).

`phase_and_conditions(view)` looks at where the job is and hands it to one function per
situation: finished before this pass (`_finished`), decided in this pass (`_decided`: it
succeeded, failed, or ran past its deadline), paused or pausing (`_paused`), or active
(`_active`: pending, resuming or running, maybe blocked or waiting). Each sets the T9k
conditions of that situation; the kstatus conditions follow from them (`conditions.py`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from t9k_sdk import _objects as o
from t9k_sdk.models import ConditionStatus, JobConditionType, JobPhase, ReplicaPhase
from t9k_sdk.reconcile.observe import PodView
from t9k_sdk.reconcile.status.conditions import (
    INITIALIZED,
    RUNNING_OK,
    SUCCEEDED,
    Conditions,
    kstatus_conditions,
)
from t9k_sdk.reconcile.types import Event

__all__ = ["JobView", "phase_and_conditions"]

_T, _F = ConditionStatus.TRUE, ConditionStatus.FALSE


@dataclass(frozen=True)
class JobView:
    """What the phase and the conditions are decided from."""

    prev: Mapping[str, Any]
    """The job's status before this pass."""
    entries: Sequence[Mapping[str, Any]]
    """The replica entries of the new status, in slot order."""
    pods: Mapping[str, PodView]
    final: Mapping[str, str]
    """Replica -> "Succeeded" | "Failed", for the replicas that finished for good."""
    outcome: tuple[str, str, str] | None
    """(phase, reason, message) when the job was decided in this pass."""
    terminal: bool
    paused: bool
    debug: bool
    now: datetime
    problem: tuple[str, str] | None = None
    """(reason, message) of what keeps the job from getting its children (a name held by a
    foreign object, a create the API server refused): Running=False with that reason, and a
    Warning Event when it first appears or changes."""
    waiting: tuple[str, str] | None = None
    """(reason, message) of a launcher held back until its workers run: the Running condition
    says so (a Normal Event when it first appears) unless a replica has a problem of its own."""
    queued: tuple[str, str] | None = None
    """(reason, message) while Kueue has not admitted the job (or evicted it): the job is
    Pending, its Running condition says why, with an Event when the reason first appears."""
    failure_is_the_jobs: bool = False
    """DeepSpeedJob: a failed job's ReplicaFailure is reason `Failed` with the job's failure
    message, as T9k writes it, followed by the failed pod's termination message when it has one
    (the launch barrier's reason, for example); Failed and Completed carry T9k's message as it
    is."""
    restarting: tuple[str, str] | None = None
    """(reason, message) while the whole job restarts (restart scope Job): the Running
    condition says which replica failed and why until every replica is recreated."""
    standby: Collection[str] = ()
    """Replicas the job runs without until they run (an elastic DeepSpeedJob's workers beyond
    its hostfile): not running, they keep the job neither Pending nor from being Running."""


def phase_and_conditions(view: JobView) -> tuple[str, list[dict[str, Any]], list[Event]]:
    """The new phase, the new conditions, and the events of the transitions."""
    conditions = Conditions(view.prev.get("conditions"), view.now)
    if view.terminal:
        phase = str(view.prev.get("phase"))
        kstatus_conditions(conditions, phase)
        return phase, conditions.wire(), []
    events: list[Event] = []
    replicas = [o.Replica(e) for e in view.entries]
    observed = bool(view.pods) or any(r.uid for r in replicas)  # a replica was created
    if view.problem is not None and not observed:
        # Initialized means the children were created (T9k): not while none could be
        conditions.set(JobConditionType.INITIALIZED, _F, *view.problem)
    else:
        conditions.set(JobConditionType.INITIALIZED, _T, "-", INITIALIZED)
    failure = _failure(replicas, view.pods)
    if view.outcome is not None:
        phase = _decided(view, view.outcome, conditions, replicas, failure)
        ok = phase == JobPhase.SUCCEEDED.value
        events.append(Event("Normal" if ok else "Warning", phase, view.outcome[2]))
        kstatus_conditions(conditions, phase)
        return phase, conditions.wire(), events
    if view.paused:
        phase = _paused(view, conditions)
    elif view.queued is not None:
        phase = _queued(view, view.queued, conditions, events)
    else:
        phase = _active(view, conditions, replicas, events)
    if observed:  # ReplicaFailure once a replica is observed
        if failure is not None:
            if conditions.set(JobConditionType.REPLICA_FAILURE, _T, *failure):
                events.append(Event("Warning", "ReplicaFailure", failure[1]))
        else:
            conditions.set(JobConditionType.REPLICA_FAILURE, _F, "-", RUNNING_OK)
    if view.debug and not view.paused:
        conditions.set(
            JobConditionType.COMPLETED,
            _F,
            "Debug",
            "The job runs in debug mode: it does not finish by itself.",
        )
    if phase != view.prev.get("phase"):
        events.append(Event("Normal", phase, f"The job is {phase.lower()}."))
    kstatus_conditions(conditions, phase, None if view.paused else view.problem)
    return phase, conditions.wire(), events


def _decided(
    view: JobView,
    outcome: tuple[str, str, str],
    conditions: Conditions,
    replicas: Sequence[o.Replica],
    failure: tuple[str, str] | None,
) -> str:
    """The job succeeded or failed in this pass: Running=False, Completed=True, Failed and
    ReplicaFailure as the outcome says. Returns the phase."""
    result, reason, message = outcome
    ok = result == JobPhase.SUCCEEDED.value
    conditions.set(JobConditionType.RUNNING, _F, reason, message)
    conditions.set(JobConditionType.FAILED, _F if ok else _T, reason, message)
    conditions.set(JobConditionType.COMPLETED, _T, reason, message)
    replica_failure = conditions.get(JobConditionType.REPLICA_FAILURE)
    if ok:
        conditions.set(JobConditionType.REPLICA_FAILURE, _F, "Finished", SUCCEEDED.rstrip("."))
    elif view.failure_is_the_jobs:  # T9k's DeepSpeedJob: reason Failed, the job's message
        detail = _termination_message(replicas, view.pods)
        conditions.set(
            JobConditionType.REPLICA_FAILURE,
            _T,
            reason,
            f"{message}: {detail}" if detail else message,
        )
    elif not (replica_failure and replica_failure.get("status") == _T.value):
        why, detail = failure or ("Failed", message)
        conditions.set(JobConditionType.REPLICA_FAILURE, _T, why, detail)
    return result


def _paused(view: JobView, conditions: Conditions) -> str:
    """The job is paused (every replica deleted or being deleted, as T9k says) or pausing."""
    gone = not any(not p.terminating for p in view.pods.values())
    if gone:
        conditions.set(JobConditionType.RUNNING, _F, "Paused", "The job is paused.")
        conditions.set(
            JobConditionType.PAUSED,
            _T,
            "Paused",
            "The job is paused: all replicas are deleted or being deleted.",
        )
        return JobPhase.PAUSED.value
    pausing = "The job is pausing: replicas are being deleted."
    conditions.set(JobConditionType.RUNNING, _F, "Pausing", pausing)
    # Only a pause that completed creates the condition: its lastTransitionTime marks the last
    # real resume, which the deadline's clock starts from.
    if conditions.get(JobConditionType.PAUSED) is not None:
        conditions.set(JobConditionType.PAUSED, _F, "Pausing", pausing)
    return JobPhase.PAUSED.value


def _queued(
    view: JobView, queued: tuple[str, str], conditions: Conditions, events: list[Event]
) -> str:
    """The job waits for Kueue's admission, or was evicted by it: Pending, and why."""
    reason, message = queued
    if conditions.get(JobConditionType.PAUSED) is not None:
        conditions.set(JobConditionType.PAUSED, _F, "Resumed", "The job was resumed.")
    conditions.set(JobConditionType.RUNNING, _F, reason, message)
    if _reason(view.prev) != reason:  # an Event per reason, not per change of Kueue's message
        events.append(Event("Normal" if reason == "Queued" else "Warning", reason, message))
    return JobPhase.PENDING.value


def _active(
    view: JobView, conditions: Conditions, replicas: Sequence[o.Replica], events: list[Event]
) -> str:
    """The job is pending, resuming or running: the phase, and the Running condition that says
    what it waits for (a problem, a replica that will not start, a held launcher)."""
    active = [r for r in replicas if r.name not in view.final] if view.final else list(replicas)
    issue = _issue(active, view.pods)
    late = [
        r.name for r in active if r.name in view.standby and r.phase != ReplicaPhase.RUNNING.value
    ]
    active = [r for r in active if r.name not in late]
    running = [r for r in active if r.phase == ReplicaPhase.RUNNING.value]
    all_running = bool(active) and len(running) == len(active)
    if conditions.get(JobConditionType.PAUSED) is not None:
        conditions.set(JobConditionType.PAUSED, _F, "Resumed", "The job was resumed.")
    prev_phase = view.prev.get("phase")
    if all_running:
        phase = JobPhase.RUNNING.value
    elif prev_phase in (JobPhase.PAUSED.value, JobPhase.RESUMING.value):
        phase = JobPhase.RESUMING.value
    elif prev_phase == JobPhase.RUNNING.value:
        phase = JobPhase.RUNNING.value  # a replica restarting does not make the job pending
    else:
        phase = JobPhase.PENDING.value
    running_condition = JobConditionType.RUNNING
    if view.problem is not None:
        conditions.set(running_condition, _F, *view.problem)
        if _running(view.prev) != view.problem:
            events.append(Event("Warning", *view.problem))
    elif view.restarting is not None:
        conditions.set(running_condition, _F, *view.restarting)
    elif all_running and late:
        detail = f": {issue[1]}" if issue is not None else ""
        conditions.set(
            running_condition,
            _T,
            "-",
            f"Training with {len(running)} of {len(running) + len(late)} workers (elastic);"
            f" {', '.join(late[:5])} joins once it runs{detail}",
        )
    elif all_running:
        conditions.set(running_condition, _T, "-", RUNNING_OK)
    elif issue is not None:
        conditions.set(running_condition, _F, *issue)
        if _reason(view.prev) != issue[0]:
            events.append(Event("Warning", issue[0], issue[1]))
    elif view.waiting is not None:
        conditions.set(running_condition, _F, *view.waiting)
        if _reason(view.prev) != view.waiting[0]:
            events.append(Event("Normal", *view.waiting))
    else:
        reason = "Resuming" if phase == JobPhase.RESUMING.value else "Pending"
        starting = len(active) - len(running)
        waiting_for = f"Waiting for {starting} of {len(active)} replicas to start running."
        conditions.set(running_condition, _F, reason, waiting_for)
    return phase


def _issue(replicas: Sequence[o.Replica], pods: Mapping[str, PodView]) -> tuple[str, str] | None:
    """(reason, message) of the first replica that will not start by itself."""
    for replica in replicas:
        pod = pods.get(replica.name)
        if pod is None or pod.terminating:
            continue
        if pod.node_issue:  # policies.lost_nodes: the pod's node is NotReady
            return "NodeNotReady", pod.node_issue
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


def _running(status: Mapping[str, Any]) -> tuple[str, str] | None:
    """(reason, message) of the Running condition in `status` (a job's status, not the job)."""
    c = o.condition({"status": status}, JobConditionType.RUNNING.value)
    return (str(c.get("reason")), str(c.get("message"))) if c is not None else None


def _reason(status: Mapping[str, Any]) -> str | None:
    running = _running(status)
    return running[0] if running is not None else None
