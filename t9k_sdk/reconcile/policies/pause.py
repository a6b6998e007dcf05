"""Pause and debug: how a job's pods run, or whether they run at all.

A paused job (`runMode.pause.enabled`) has every pod deleted, gracefully (each gets its grace
period to save), and its replicas show Deleted. A resumed job's pods start with
`runMode.pause.resumeSpecs` (mode "resumed"); a debug job's with `runMode.debug`'s commands
(mode "debug"), and it never finishes by itself.
"""

from __future__ import annotations

from t9k_sdk import _objects as o
from t9k_sdk._conventions import Slot
from t9k_sdk.models import JobConditionType, JobPhase, ReplicaPhase
from t9k_sdk.reconcile.kinds import Mode
from t9k_sdk.reconcile.state import PassState, stop_pod

__all__ = ["mode", "pause_replica"]


def mode(state: PassState) -> Mode:
    """How the pods this pass creates start: debug, resumed (the job was paused before), or as
    written."""
    if state.run_mode.debug_enabled:
        return "debug"
    paused_before = o.condition(state.raw, JobConditionType.PAUSED.value) is not None or (
        state.prev_phase in (JobPhase.PAUSED.value, JobPhase.RESUMING.value)
    )
    return "resumed" if paused_before else "immediate"


def pause_replica(state: PassState, slot: Slot) -> None:
    """Delete the pod of `slot` (gracefully) while the job is paused; its replica is Deleted."""
    pod = state.pods.get(slot.name)
    prev = state.prev_entries.get(slot.name)
    deleted = ReplicaPhase.DELETED.value
    if pod is not None:
        stop_pod(state, slot, pod, "pause", "the job is paused")
    elif prev is not None:
        state.entries[slot.name] = {**prev.raw, "phase": deleted}
    else:
        state.entries[slot.name] = {"name": slot.name, "phase": deleted}
