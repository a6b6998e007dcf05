"""Clean-up: the pods deleted once the job ended, and the pods its spec no longer has.

Once a job ended, its `runPolicy.cleanUpPolicy` (the kind's `KindRules.to_clean_up`) names the
pods to delete: all, the unfinished ones, or none. A job that ran past its deadline (a hard
stop) also loses every pod still pending or running, whatever the policy says. A pod whose slot
is no longer in the spec (a GenericJob scaled down) is deleted while the job runs.
"""

from __future__ import annotations

from t9k_sdk.models import ReplicaPhase
from t9k_sdk.reconcile.state import PassState
from t9k_sdk.reconcile.types import Deletion, Event

__all__ = ["clean_up", "delete_orphans"]


def clean_up(state: PassState, *, hard_stop: bool = False) -> None:
    """Delete the pods the clean-up policy names; with `hard_stop` (a deadline passed), also
    every pod still pending or running, whatever the policy says."""
    present = {s.name: state.pods[s.name] for s in state.slots if s.name in state.pods}
    finished = {
        name: pod.phase in (ReplicaPhase.SUCCEEDED, ReplicaPhase.FAILED)
        for name, pod in present.items()
        if not pod.terminating
    }
    already = {d.name for d in state.delete}
    doomed = state.rules.to_clean_up(finished)
    if hard_stop:
        doomed += [n for n, done in finished.items() if not done and n not in doomed]
    for name in doomed:
        if name in already:
            continue
        state.delete.append(Deletion("v1", "Pod", name, present[name].uid, "clean-up"))
        if hard_stop and not finished[name]:
            note = f"delete pod {name}: the job ran past its deadline"
            said = f"Deleted pod {name}: the job ran past runPolicy.activeDeadlineSeconds"
        else:
            note = f"delete pod {name}: clean-up after the job finished"
            said = f"Deleted pod {name} after the job finished"
        state.notes.append(note)
        state.events.append(Event("Normal", "CleanUpPod", said, after=f"delete Pod/{name}"))


def delete_orphans(state: PassState) -> None:
    """Delete the job's pods that no slot of its spec names (the job was scaled down)."""
    wanted = {s.name for s in state.slots}
    for name, pod in sorted(state.pods.items()):
        if name not in wanted and not pod.terminating:
            state.delete.append(Deletion("v1", "Pod", name, pod.uid, "not in the spec"))
            state.notes.append(f"delete pod {name}: no longer in the job's spec")
