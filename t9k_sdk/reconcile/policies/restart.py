"""Restart: whether a replica that ended is started again, within which budget.

"Restart allowed" is the replica's policy (Always, OnFailure, Never, ExitCode: 128-255
retryable, 1-127 permanent) within its budget. The budget counts per replica (GenericJob:
`restartPolicy.limit`, the count in the replica's status entry), per replica type, or for the
whole job (DeepSpeedJob: `runPolicy.backoffLimit`, the status' `backoffCount`), as the kind's
rules say (`KindRules.budget`).

The restart scope (a t9k-sdk extension, the annotation `t9k-sdk.dev/restart-scope`) says what a
retryable failure restarts: `Replica` (T9k's behaviour, the default) the failed pod alone; `Job`
every replica together. A job restart is decided when a pod failed and may restart and no pod
failed for good; the first such replica (in slot order) is its cause and the only one counted,
against its own budget, whatever the other ranks do while they stop. No pod of a job restarting
as a whole is created until every old pod is gone, so no old rank is left running.

Restarts are counted when the replacement pod is planned, and the new status (with the count) is
written before anything is created; so a pass interrupted at any point never counts a restart
twice or loses one. Until then a decided restart is *pending*: it takes its place in the budget
of the pass (`PassState.pending_restarts`) without being counted.
"""

from __future__ import annotations

from typing import Final

from t9k_sdk import _objects as o
from t9k_sdk import models
from t9k_sdk._conventions import Slot
from t9k_sdk.models import ReplicaPhase
from t9k_sdk.reconcile.kinds import ReplicaGroup
from t9k_sdk.reconcile.state import PassState, asked_to_stop

__all__ = [
    "RESTARTING_JOB",
    "allowed",
    "count",
    "hold",
    "job_restart_cause",
    "restart_allowed",
    "restarting",
    "waits_for_old_ranks",
]

RESTARTING_JOB: Final = "RestartingJob"
"""The reason (Event, Running condition) of a job that restarts as a whole."""


def restart_allowed(group: ReplicaGroup, outcome: str, exit_code: int | None, used: int) -> bool:
    """Whether a replica that ended with `outcome` ("Succeeded"/"Failed") is restarted."""
    if used >= group.limit:
        return False
    policy = group.policy
    if policy == models.RestartPolicyType.ALWAYS:
        return True
    if outcome != ReplicaPhase.FAILED.value or policy == models.RestartPolicyType.NEVER:
        return False
    if policy == models.RestartPolicyType.EXIT_CODE:
        # 1-127: permanent error; 128-255: retryable. No exit code (evicted, node lost): retryable.
        return exit_code is None or 128 <= exit_code <= 255
    return True  # OnFailure


def _scope(state: PassState, slot: Slot) -> str:
    budget = state.rules.budget
    if budget == "job":
        return "job"
    return slot.name if budget == "replica" else f"type:{slot.replica_type}"


def _used(state: PassState, slot: Slot) -> int:
    budget = state.rules.budget
    if budget == "job":
        used = state.backoff
    elif budget == "replica":
        used = state.replica_restarts[slot.name]
    else:
        used = state.restarts[slot.replica_type]
    return used + state.pending_restarts[_scope(state, slot)]


def allowed(state: PassState, slot: Slot, outcome: str, exit_code: int | None) -> bool:
    """Whether the replica of `slot`, which ended with `outcome`, is restarted in this pass'
    budget (the restarts already decided in this pass included)."""
    group = state.rules.group(slot.replica_type)
    return restart_allowed(group, outcome, exit_code, _used(state, slot))


def hold(state: PassState, slot: Slot) -> None:
    """A restart decided but not planned yet (its pod is being deleted, or it waits): it takes
    its place in the budget of this pass, and is counted when its pod is planned."""
    state.pending_restarts[_scope(state, slot)] += 1


def count(state: PassState, slot: Slot) -> None:
    """Count a restart whose replacement pod this pass plans."""
    state.restarts[slot.replica_type] += 1
    state.replica_restarts[slot.name] += 1
    if state.rules.budget == "job":
        state.backoff += 1


def job_restart_cause(state: PassState) -> Slot | None:
    """Restart scope Job: the replica whose failure restarts the whole job in this pass (the
    first, in slot order, whose pod failed and may restart, or was ended by a disruption or
    force-deleted from a lost node in this pass, which need no budget), unless a pod failed
    for good (the job's rules then decide, as under scope Replica). None under scope Replica."""
    if state.restart_scope != "Job":
        return None
    cause: Slot | None = None
    running = o.condition(state.raw, models.JobConditionType.RUNNING.value) or {}
    ongoing = running.get("reason") == RESTARTING_JOB  # a lost rank of it restarts nothing new
    for slot in state.slots:
        if slot.name in state.lost:  # force-deleted in this pass: its node is lost
            cause = cause or (None if ongoing else slot)
            continue
        pod = state.pods.get(slot.name)
        if (
            pod is None
            or pod.terminating
            or pod.phase != ReplicaPhase.FAILED
            or asked_to_stop(state, slot, pod)
        ):
            continue
        if pod.disruption is None and not allowed(
            state, slot, ReplicaPhase.FAILED.value, pod.exit_code
        ):
            return None
        cause = cause or slot
    return cause


def waits_for_old_ranks(state: PassState) -> bool:
    """Restart scope Job: no pod is created while a pod of the job is still stopping."""
    if state.restart_scope != "Job":
        return False
    if state.old_ranks_stopping is None:  # once per pass: it is asked for each missing pod
        state.old_ranks_stopping = any(
            pod.terminating or asked_to_stop(state, slot, pod)
            for slot in state.slots
            if (pod := state.pods.get(slot.name)) is not None
        )
    return state.old_ranks_stopping


def restarting(state: PassState) -> tuple[str, str] | None:
    """(reason, message) of a job restart that has not recreated every replica yet: the one
    decided in this pass, or the last status' while old pods stop or new ones are missing."""
    if state.job_restart is not None or state.restart_scope != "Job":
        return state.job_restart
    running = o.condition(state.raw, models.JobConditionType.RUNNING.value)
    if running is None or running.get("reason") != RESTARTING_JOB:
        return None
    if waits_for_old_ranks(state) or any(s.name not in state.pods for s in state.slots):
        return RESTARTING_JOB, str(running.get("message") or "")
    return None
