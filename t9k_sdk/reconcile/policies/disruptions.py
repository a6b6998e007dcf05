"""Disruptions: a pod the cluster ended, not its own code, is replaced without counting a restart.

Kubernetes marks a pod it ends for the cluster's sake with the pod condition `DisruptionTarget`
(True), whose reason says who: `TerminationByKubelet` (node pressure, a node shutting down),
`PreemptionByScheduler`, `EvictionByEvictionAPI` (a drain), `DeletionByTaintManager`,
`DeletionByPodGC`. An eviction for exceeding the pod's own limits (ephemeral storage, an
emptyDir's `sizeLimit`) sets none: that is a failure of the pod, counted as any other.

| how the disrupted pod ends          | what happens                                               |
|-------------------------------------|------------------------------------------------------------|
| deleted (drain, preemption, taints) | recreated once it is gone, as a missing pod is             |
| Failed, not deleted (the kubelet)   | deleted at once, with a Warning Event `PodDisrupted`, and  |
|                                     | recreated once it is gone                                  |
| Failed, restart scope Job           | the whole job restarts (`policies.restart`), not counted   |

In every case no restart is counted, under every restart policy (`Never` included): the
replica did not fail, the cluster took its pod away. This is Kubernetes Job's
`podFailurePolicy` rule `{action: Ignore, onPodConditions: [{type: DisruptionTarget}]}`,
always on. The replica's entry is Deleted with the pod's uid (as for a pod the operator
stopped), which is what tells the next pass that its end was not its own.
"""

from __future__ import annotations

from typing import Final

from t9k_sdk._conventions import Slot
from t9k_sdk.models import ReplicaPhase
from t9k_sdk.reconcile.observe import PodView
from t9k_sdk.reconcile.state import PassState, entry_of
from t9k_sdk.reconcile.types import Deletion, Event

__all__ = ["DISRUPTED", "disrupted", "how", "replace_disrupted"]

DISRUPTED: Final = "PodDisrupted"
"""The reason of the Event of a failed pod deleted because the cluster, not its code, ended it."""


def disrupted(pod: PodView) -> bool:
    """Whether `pod` failed because the cluster ended it (and is not being deleted yet)."""
    return pod.finished and pod.disruption is not None


def how(pod: PodView) -> str:
    """What happened to `pod`, as Events and conditions say it: `was ended by the cluster, not
    by its own code (TerminationByKubelet: The node was low on resource: memory. ...)`."""
    reason, message = pod.disruption or ("Disrupted", "")
    detail = f": {message}" if message else ""
    return f"was ended by the cluster, not by its own code ({reason}{detail})"


def replace_disrupted(state: PassState, slot: Slot, pod: PodView, *, event: bool = True) -> None:
    """Delete the disrupted pod of `slot` (grace 0: its containers have stopped) and mark its
    replica Deleted, so that it is recreated as a missing pod and no restart is counted."""
    state.delete.append(Deletion("v1", "Pod", pod.name, pod.uid, "disruption", 0))
    state.notes.append(f"delete pod {pod.name}: it {how(pod)}; not counted as a restart")
    entry = entry_of(slot, pod)
    entry["phase"] = ReplicaPhase.DELETED.value
    state.entries[slot.name] = entry
    if event:
        state.events.append(
            Event(
                "Warning",
                DISRUPTED,
                f"Pod {pod.name} {how(pod)}; recreating it, not counted as a restart",
                after=f"delete Pod/{pod.name}",
            )
        )
