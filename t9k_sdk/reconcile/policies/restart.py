"""Restart: whether a replica that ended is started again, within which budget.

"Restart allowed" is the replica's policy (Always, OnFailure, Never, ExitCode: 128-255
retryable, 1-127 permanent) within its budget. The budget counts per replica (GenericJob:
`restartPolicy.limit`, the count in the replica's status entry), per replica type, or for the
whole job (DeepSpeedJob: `runPolicy.backoffLimit`, the status' `backoffCount`), as the kind's
rules say (`KindRules.budget`).

Restarts are counted when the replacement pod is planned, and the new status (with the count) is
written before anything is created; so a pass interrupted at any point never counts a restart
twice or loses one. Until then a decided restart is *pending*: it takes its place in the budget
of the pass (`PassState.pending_restarts`) without being counted.
"""

from __future__ import annotations

from t9k_sdk import models
from t9k_sdk._conventions import Slot
from t9k_sdk.models import ReplicaPhase
from t9k_sdk.reconcile.kinds import ReplicaGroup
from t9k_sdk.reconcile.state import PassState

__all__ = ["allowed", "count", "hold", "restart_allowed"]


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
