"""Launch: a launcher is created only once every worker it starts the training on runs.

A job waiting for GPUs, images or a scheduler stays Pending, and no timeout in the launcher can
fail it or spend its restarts (a restart waits the same way). Which pods a launcher waits for is
the kind's (`KindRules.launch_waits_for`: DeepSpeedJob's worker-0, ColossalAIJob's launcher);
this module holds the launcher back, says why on the Running condition, and fails the job when
a worker it waits for failed for good.
"""

from __future__ import annotations

from t9k_sdk._conventions import Slot
from t9k_sdk._job_status import ReplicaEntry
from t9k_sdk.models import JobPhase, ReplicaPhase
from t9k_sdk.reconcile.state import PassState, ended

__all__ = ["hold_back", "outcome", "waiting_message"]


def hold_back(state: PassState, slot: Slot, waiting: list[str], entry: ReplicaEntry) -> None:
    """Hold the pod of `slot` back until the pods in `waiting` run; its replica's status entry
    is `entry` meanwhile (Pending for a first start; a restart keeps how it ended)."""
    state.held[slot.name] = waiting
    state.entries[slot.name] = entry


def outcome(state: PassState) -> tuple[str, str, str] | None:
    """A held launcher whose worker failed for good never starts: the job fails."""
    for launcher, waiting in state.held.items():
        for name in waiting:
            result = state.final.get(name)
            if result != ReplicaPhase.FAILED.value:
                continue
            how = ended(result, state.failed_codes.get(name))
            message = (
                f"{state.job.kind} {state.job.name} has failed: {name} {how} before the"
                f" launcher {launcher} could start, and is not restarted"
            )
            return JobPhase.FAILED.value, JobPhase.FAILED.value, message
    return None


def waiting_message(state: PassState) -> tuple[str, str] | None:
    """(reason, message) of the Running condition while a launcher is held back."""
    if not state.held:
        return None
    launcher, waiting = next(iter(state.held.items()))
    shown = ", ".join(waiting[:5]) + (f" and {len(waiting) - 5} more" if len(waiting) > 5 else "")
    return (
        "WaitingForWorkers",
        f"The launcher {launcher} starts once every worker it needs is running;"
        f" waiting for {shown}.",
    )
