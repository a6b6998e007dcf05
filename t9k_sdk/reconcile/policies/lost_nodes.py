"""Lost nodes: a pod whose node is gone, or NotReady past a bound, is force-deleted and replaced.

No kubelet confirms the end of a pod on a node that is NotReady or gone: the pod shows what the
kubelet last wrote (Running, say) or stays Terminating forever, and a job that waits for it (a
restart of the whole job, a pause, a clean-up, a replica to recreate) waits forever while its
other pods hold their GPUs. The rule, for every pod of the job whose end is not confirmed (it
has not finished, or it is being deleted):

| the pod's node                       | what happens                                             |
|--------------------------------------|----------------------------------------------------------|
| Ready                                | nothing                                                  |
| NotReady (Ready False or Unknown)    | the replica's phase is Unknown (T9k: "the state of the   |
| for less than the bound              | pod cannot be obtained"), the Running condition says     |
|                                      | NodeNotReady, and the job is looked at again at the bound |
| NotReady for the bound or longer     | the pod is force-deleted, with a NodeLost Event saying   |
|                                      | that the node may still run it                           |
| gone (no Node object)                | the pod is force-deleted at once (NodeLost Event)        |

The bound is the job's annotation `t9k-sdk.dev/node-lost-after` (seconds, a t9k-sdk extension),
else the operator's `--node-lost-after` (`Observed.node_lost_after`). A node that comes back
Ready within it keeps its pods. A force-deleted pod is a disruption, not a failure of its
replica: once it is gone its replica is recreated as a missing pod is, and no restart is counted.
Under restart scope Job the whole job restarts with it, uncounted (`policies.restart`), since
the other ranks cannot go on without it.

A pod whose replica's template names the node itself (`spec.nodeName`) is not replaced: its
replacement would be bound to the same node, so deleting it would only loop; the Running
condition says so. Nodes not known (`Observed.nodes` is None: offline, or an operator that may not read nodes)
replace nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, Final

from t9k_sdk import _objects as o
from t9k_sdk import models
from t9k_sdk.models import ReplicaPhase
from t9k_sdk.reconcile.observe import PodView
from t9k_sdk.reconcile.state import PassState
from t9k_sdk.reconcile.types import Deletion, Event

__all__ = ["NODE_LOST", "replace_lost"]

NODE_LOST: Final = "NodeLost"
"""The reason of the Event of a pod force-deleted because its node is lost."""


def replace_lost(state: PassState) -> float | None:
    """Force-delete the job's pods on lost nodes, mark those on NotReady nodes Unknown (in
    `state.pods`, which the rest of the pass reads); the seconds until the next bound passes."""
    nodes = state.observed.nodes
    if nodes is None:
        return None
    annotated = models.node_lost_after_of(state.job.metadata)
    bound = annotated if annotated is not None else state.observed.node_lost_after
    where = (
        f"the job's annotation {models.NODE_LOST_AFTER_ANNOTATION}"
        if annotated is not None
        else "the operator's --node-lost-after"
    )
    soonest: float | None = None
    pinned = _pinned(state)
    for name, pod in list(state.pods.items()):
        if pod.node is None or pod.finished:
            continue
        node = nodes.get(pod.node)
        if pinned.get(name) == pod.node and not pod.terminating:
            _pinned_there(state, pod, node)
            continue
        if node is None:
            _force_delete(state, pod, f"its node {pod.node} no longer exists")
            continue
        since = _not_ready_since(node)
        if since is None:
            continue
        waited = max(0.0, (state.now - since).total_seconds())
        if waited >= bound:
            _force_delete(
                state,
                pod,
                f"its node {pod.node} has been NotReady for {waited:.0f}s, the bound {where}"
                f" sets ({bound}s); the node may still run it",
            )
            continue
        state.pods[name] = replace(
            pod,
            phase=pod.phase if pod.terminating else ReplicaPhase.UNKNOWN,
            node_issue=(
                f"Pod[{pod.name}]'s node {pod.node} is NotReady ({waited:.0f}s); the pod is"
                f" replaced after {bound}s ({where}) unless the node is Ready again"
            ),
        )
        soonest = bound - waited if soonest is None else min(soonest, bound - waited)
    return soonest


def _pinned(state: PassState) -> dict[str, str]:
    """Pod name -> the node its replica's template binds it to (`spec.nodeName`)."""
    nodes = {}
    for group in state.rules.groups():
        node = (group.template.get("spec") or {}).get("nodeName")
        if isinstance(node, str) and node:
            nodes[group.type] = node
    return {s.name: nodes[s.replica_type] for s in state.slots if s.replica_type in nodes}


def _pinned_there(state: PassState, pod: PodView, node: Mapping[str, Any] | None) -> None:
    """A pod its template binds to a lost node is not replaced: its replacement would be bound
    there too (deleting it would loop). The job says why it does not run."""
    if node is not None and _not_ready_since(node) is None:
        return
    how = "no longer exists" if node is None else "is NotReady"
    state.pods[pod.name] = replace(
        pod,
        phase=ReplicaPhase.UNKNOWN,
        node_issue=(
            f"Pod[{pod.name}]'s node {pod.node} {how}; the pod is not replaced because its"
            " template binds it to that node (spec.nodeName): a replacement would be bound"
            " there too"
        ),
    )


def _not_ready_since(node: Mapping[str, Any]) -> datetime | None:
    """When the node's Ready condition left True (None: it is Ready, or cannot tell)."""
    ready = o.condition(node, "Ready")
    if ready is None or ready.get("status") == "True":
        return None
    return o.parse_time(ready.get("lastTransitionTime"))


def _force_delete(state: PassState, pod: PodView, why: str) -> None:
    """Delete `pod` at once (grace 0: no kubelet would confirm a graceful end), with an Event
    once the delete went through; the rest of the pass sees it being deleted."""
    state.delete.append(Deletion("v1", "Pod", pod.name, pod.uid, "node-lost", 0))
    state.notes.append(f"force-delete pod {pod.name}: {why}")
    state.events.append(
        Event(
            "Warning",
            NODE_LOST,
            f"Force-deleted pod {pod.name}: {why}. A disruption, not counted as a restart",
            after=f"delete Pod/{pod.name}",
        )
    )
    state.pods[pod.name] = replace(
        pod, phase=ReplicaPhase.DELETED, terminating=True, node_issue=why
    )
    state.lost[pod.name] = why
