"""Where a job waits in its Kueue LocalQueue, and the quota it needs against what is free (pure).

    standing(workload, workloads, local_queue, cluster_queue) -> QueueStanding(position=2, ...)
    standing_words(s) -> "2nd of 3 waiting in LocalQueue gpus ...; it needs nvidia.com/gpu 8 ..."

The position is counted among the pending Workloads of the job's LocalQueue, in the order
Kueue's StrictFIFO and BestEffortFIFO queues take them: higher priority first, then the earlier
time queued (creation, or the last requeue after an eviction). Workloads of other namespaces'
LocalQueues that feed the same ClusterQueue are not visible to a namespace's user and may come
first; the words say so. The quota is the ClusterQueue's nominal quota less its usage, per
flavour, for the resources the job asks for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from t9k_sdk import _objects as o
from t9k_sdk._quantity import format_quantity, parse_quantity

__all__ = ["Headroom", "QueueStanding", "standing", "standing_words", "workload_requests"]

_MAX_LISTED: Final = 4
"""Flavour-resource pairs named in the words at most (the rest are counted)."""


@dataclass(frozen=True)
class Headroom:
    """What one flavour of a ClusterQueue has left of one resource."""

    flavor: str
    resource: str
    free: Decimal
    """Nominal quota less usage, never below zero (usage above it is borrowed)."""
    nominal: Decimal


@dataclass(frozen=True)
class QueueStanding:
    """A job's Workload in its LocalQueue: its position and what it needs against what is free."""

    local_queue: str
    position: int | None
    """1 for the next Workload of the LocalQueue to be considered; None when it is not pending."""
    pending: int
    """Pending Workloads of the LocalQueue (the job's included when it is pending)."""
    needs: Mapping[str, Decimal]
    """Resource -> what all of the Workload's pods ask for."""
    cluster_queue: str | None = None
    cohort: str | None = None
    headroom: tuple[Headroom, ...] = field(default=())
    """For the resources the job needs, in the ClusterQueue's order."""
    unreadable: str | None = None
    """Why the ClusterQueue's quota is not shown (not allowed to read it, not there)."""


def workload_requests(workload: Mapping[str, Any]) -> dict[str, Decimal]:
    """What the Workload's pod sets ask for in all, as Kueue counts a pod: its containers'
    requests (a limit alone counts as the request) summed, or its largest init container's
    when that is larger."""
    total: dict[str, Decimal] = {}
    for pod_set in o.spec(workload).get("podSets") or ():
        if not isinstance(pod_set, Mapping):
            continue
        count = pod_set.get("count")
        pods = Decimal(count) if isinstance(count, int) and count > 0 else Decimal(0)
        spec = o.mapping(o.mapping(pod_set.get("template")).get("spec"))
        per_pod = _sum(_asked(c) for c in spec.get("containers") or ())
        for init in spec.get("initContainers") or ():
            for key, value in _asked(init).items():
                per_pod[key] = max(per_pod.get(key, Decimal(0)), value)
        for key, value in per_pod.items():
            total[key] = total.get(key, Decimal(0)) + value * pods
    return {k: v for k, v in sorted(total.items()) if v}


def _asked(container: object) -> dict[str, Decimal]:
    if not isinstance(container, Mapping):
        return {}
    resources = o.mapping(container.get("resources"))
    asked = {**o.mapping(resources.get("limits")), **o.mapping(resources.get("requests"))}
    out = {}
    for key, text in asked.items():
        value = parse_quantity(text)
        if value is not None and value > 0:
            out[str(key)] = value
    return out


def _sum(parts: Iterable[Mapping[str, Decimal]]) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    for part in parts:
        for key, value in part.items():
            out[key] = out.get(key, Decimal(0)) + value
    return out


def standing(
    workload: Mapping[str, Any],
    workloads: Sequence[Mapping[str, Any]],
    local_queue: Mapping[str, Any] | None,
    cluster_queue: Mapping[str, Any] | None,
    unreadable: str | None = None,
) -> QueueStanding:
    """The job's standing, from its Workload, the namespace's Workloads, its LocalQueue and
    that queue's ClusterQueue (None when it could not be read: `unreadable` says why)."""
    queue = str(o.spec(workload).get("queueName") or "")
    pending = sorted(
        (w for w in workloads if _pending(w) and o.spec(w).get("queueName") == queue),
        key=_queue_order,
    )
    uid = o.meta(workload).uid
    position = next((n for n, w in enumerate(pending, 1) if o.meta(w).uid == uid), None)
    needs = workload_requests(workload)
    cq_name = str(o.spec(local_queue).get("clusterQueue") or "") if local_queue else ""
    if cluster_queue is None:
        return QueueStanding(
            queue, position, len(pending), needs, cq_name or None, unreadable=unreadable
        )
    cohort = o.spec(cluster_queue).get("cohortName") or o.spec(cluster_queue).get("cohort")
    return QueueStanding(
        local_queue=queue,
        position=position,
        pending=len(pending),
        needs=needs,
        cluster_queue=o.meta(cluster_queue).name or cq_name or None,
        cohort=str(cohort) if cohort else None,
        headroom=_headroom(cluster_queue, needs),
    )


def _pending(workload: Mapping[str, Any]) -> bool:
    """Waiting for quota: active, not holding a reservation, not finished."""
    if o.spec(workload).get("active") is False:
        return False
    return not any(
        o.condition(workload, t) is not None
        and o.mapping(o.condition(workload, t)).get("status") == "True"
        for t in ("QuotaReserved", "Finished")
    )


def _queue_order(workload: Mapping[str, Any]) -> tuple[int, str, str]:
    """Kueue's order within a queue: higher priority first, then the earlier time queued."""
    priority = o.spec(workload).get("priority")
    rank = -priority if isinstance(priority, int) and not isinstance(priority, bool) else 0
    queued = str(o.meta(workload).creation_timestamp or "")
    requeued = o.condition(workload, "Requeued")
    if requeued is not None and requeued.get("status") == "True":
        queued = max(queued, str(requeued.get("lastTransitionTime") or ""))
    return rank, queued, o.meta(workload).name


def _headroom(
    cluster_queue: Mapping[str, Any], needs: Mapping[str, Decimal]
) -> tuple[Headroom, ...]:
    used: dict[tuple[str, str], Decimal] = {}
    for flavor in o.mapping(cluster_queue.get("status")).get("flavorsUsage") or ():
        for r in o.mapping(flavor).get("resources") or ():
            key = (str(o.mapping(flavor).get("name")), str(o.mapping(r).get("name")))
            used[key] = parse_quantity(o.mapping(r).get("total")) or Decimal(0)
    out = []
    for group in o.spec(cluster_queue).get("resourceGroups") or ():
        for flavor in o.mapping(group).get("flavors") or ():
            flavor_name = str(o.mapping(flavor).get("name"))
            for r in o.mapping(flavor).get("resources") or ():
                resource = str(o.mapping(r).get("name"))
                nominal = parse_quantity(o.mapping(r).get("nominalQuota"))
                if resource not in needs or nominal is None:
                    continue
                free = max(nominal - used.get((flavor_name, resource), Decimal(0)), Decimal(0))
                out.append(Headroom(flavor_name, resource, free, nominal))
    return tuple(out)


def standing_words(s: QueueStanding) -> str:
    """The standing in one sentence, for a finding."""
    parts = []
    if s.position is not None:
        parts.append(
            f"{_ordinal(s.position)} of {s.pending} waiting in LocalQueue {s.local_queue} (Kueue"
            " takes higher priority first, then the earlier queued; Workloads of other"
            " namespaces' queues may come before it)"
        )
    if s.needs:
        parts.append(
            "it needs " + ", ".join(f"{k} {format_quantity(v)}" for k, v in s.needs.items())
        )
    if s.headroom:
        listed = [
            f"{h.resource} {format_quantity(h.free)} of {format_quantity(h.nominal)}"
            f" (flavour {h.flavor})"
            for h in s.headroom[:_MAX_LISTED]
        ]
        more = len(s.headroom) - _MAX_LISTED
        lend = f", and may borrow from cohort {s.cohort}" if s.cohort else ""
        parts.append(
            f"ClusterQueue {s.cluster_queue} has free {', '.join(listed)}"
            + (f" and {more} more" if more > 0 else "")
            + lend
        )
    elif s.unreadable:
        parts.append(s.unreadable)
    return "; ".join(parts)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
