"""Batching: one pass plans at most a batch of pods, so its memory does not grow with the job.

One pass plans at most `POD_CREATES_PER_PASS` pods and about `PLAN_BYTES_PER_PASS` of pod
manifests (as the ReplicaSet controller creates at most 500 pods per sync). The slots left over
keep their status (a missing pod stays Creating, a restart stays pending) and the next pass,
woken by the new pods, plans them; it comes `NEXT_BATCH_SECONDS` later at the latest.

The pass takes its limits from `t9k_sdk.reconcile.core` (`PassState.pod_limit`, `byte_limit`),
where tests and the memory benchmark lower or lift them.
"""

from __future__ import annotations

import json

from t9k_sdk._conventions import Slot
from t9k_sdk.models import ReplicaPhase
from t9k_sdk.reconcile.kinds import Mode
from t9k_sdk.reconcile.state import PassState

__all__ = [
    "NEXT_BATCH_SECONDS",
    "PLAN_BYTES_PER_PASS",
    "POD_CREATES_PER_PASS",
    "full",
    "next_pass",
    "plan_pod",
]

POD_CREATES_PER_PASS = 500
"""Most pods one pass plans (Kubernetes' ReplicaSet controller: `burstReplicas`, 500)."""
PLAN_BYTES_PER_PASS = 16 * 1024 * 1024
"""About how many bytes of pod manifests (as JSON) one pass plans; at least one pod."""
NEXT_BATCH_SECONDS = 1.0
"""When a pass left pods for later: the next pass at the latest this much later (the new pods'
watch events usually wake it first)."""


def full(state: PassState) -> bool:
    """Whether this pass has planned as many pods as one pass may hold."""
    return state.pods_planned >= state.pod_limit or state.bytes_planned >= state.byte_limit


def plan_pod(state: PassState, slot: Slot, mode: Mode, why: str) -> None:
    """Plan the pod of `slot`, started in `mode`; its replica is Creating."""
    pod = state.rules.pod(slot, mode)
    size = state.pod_sizes.get(slot.replica_type)
    if size is None:  # pods of one replica type are alike: measure one of each
        size = state.pod_sizes[slot.replica_type] = len(json.dumps(pod, default=str))
    state.pods_planned += 1
    state.bytes_planned += size
    state.create.append(pod)
    state.entries[slot.name] = {"name": slot.name, "phase": ReplicaPhase.CREATING.value}
    state.notes.append(f"create pod {slot.name}: {why}")


def next_pass(state: PassState, requeue: float | None) -> float | None:
    """The requeue of a pass that left pods for a later one (and says so in its notes)."""
    if not state.deferred:
        return requeue
    state.notes.append(f"{state.deferred} more pods next pass (at most a batch per pass)")
    return min(requeue or NEXT_BATCH_SECONDS, NEXT_BATCH_SECONDS)
