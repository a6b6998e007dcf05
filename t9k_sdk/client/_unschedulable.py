"""Why the scheduler cannot place a pod, read from its message, and what to do about it (pure).

    unschedulable(pod) -> the scheduler's message, or None
    advice(message, asked, namespace) -> "its volume's PersistentVolumeClaim data does not exist..."
    held_back(pods) -> HeldBack(placed=2, waiting=1, held="nvidia.com/gpu=16", ...) or None
    requests(pod) -> "cpu=4, nvidia.com/gpu=8": what its containers ask for

kube-scheduler sums up, per node, why the pod does not fit: `0/4 nodes are available: 4
Insufficient nvidia.com/gpu.`, `persistentvolumeclaim "data" not found`, `1 node(s) had
untolerated taint {gpu: a100}`, `3 node(s) didn't match Pod's node affinity/selector`. The
advice follows the reason that no waiting cures first (a missing or unbound claim: no node
will ever do), then room (resources), then the nodes' labels and taints.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from t9k_sdk import _objects as o
from t9k_sdk._objects import condition

__all__ = ["HeldBack", "advice", "held_back", "insufficient", "requests", "unschedulable"]

_CLAIM_MISSING = re.compile(r'persistentvolumeclaim "([^"]+)" not found')
_CLAIM_DELETED = re.compile(r'persistentvolumeclaim "([^"]+)" is being deleted')
_UNBOUND = "unbound immediate PersistentVolumeClaims"
_INSUFFICIENT = re.compile(r"Insufficient ([A-Za-z0-9](?:[A-Za-z0-9./_-]*[A-Za-z0-9])?)")
_TOO_MANY_PODS = "Too many pods"
_SELECTOR = "didn't match Pod's node affinity/selector"
_TAINT = re.compile(r"untolerated taint(?:\(s\))?(?: (\{[^}]{0,200}\}))?")
"""The scheduler's words for taints (Kubernetes 1.34 names none: "had untolerated taint(s)")."""


def unschedulable(pod: Mapping[str, Any]) -> str | None:
    """The scheduler's message for a pod it could not place (PodScheduled False), else None."""
    c = condition(pod, "PodScheduled")
    if c is None or c.get("status") != "False":
        return None
    return str(c.get("message") or c.get("reason") or "not scheduled")


def insufficient(message: str) -> list[str]:
    """The resources the scheduler found no room for (`nvidia.com/gpu`, `pods`), in order."""
    found = _INSUFFICIENT.findall(message)
    if _TOO_MANY_PODS in message:
        found.append("pods")
    return list(dict.fromkeys(found))


def advice(message: str, asked: str, namespace: str) -> str:
    """What to do about a pod the scheduler cannot place; `asked`: its requests in words."""
    where = f" in namespace {namespace}" if namespace else ""
    if claim := _CLAIM_MISSING.search(message):
        return (
            f"its volume's PersistentVolumeClaim {claim.group(1)} does not exist{where}: create"
            " it, or fix claimName in the pod template; the pod waits until then"
        )
    if claim := _CLAIM_DELETED.search(message):
        return f"its PersistentVolumeClaim {claim.group(1)} is being deleted: create it again"
    if _UNBOUND in message:
        return (
            "its PersistentVolumeClaim is not bound to a volume: check the claim's"
            f" StorageClass and events (kubectl describe pvc{' -n ' + namespace if namespace else ''})"
        )
    if insufficient(message):
        if asked:
            return f"it asks for {asked}; lower the request, or wait until a node has room"
        return "no node has room for it now: wait, or free some of the cluster's resources"
    taint = _TAINT.search(message)
    if taint and _SELECTOR in message:
        return (
            "no node both matches its nodeSelector or node affinity and has only taints it"
            " tolerates: check both against the nodes (kubectl describe nodes shows their labels"
            " and taints), and add a toleration or fix the selector"
        )
    if taint:
        which = f" ({taint.group(1)})" if taint.group(1) else ""
        return (
            f"the nodes have taints it does not tolerate{which}: add a toleration to the pod"
            " template (kubectl describe nodes shows their taints), or use other nodes"
        )
    if _SELECTOR in message:
        return (
            "no node matches its nodeSelector or node affinity: check them against the nodes'"
            " labels (kubectl get nodes --show-labels)"
        )
    return "check its node selector, affinity and tolerations against the nodes"


@dataclass(frozen=True)
class HeldBack:
    """Some of a job's pods are placed and hold resources that the others wait for: without
    gang scheduling, the job cannot start and keeps what it holds (and two such jobs can wait
    on each other forever)."""

    placed: int
    """Pods on a node, not being deleted."""
    waiting: int
    """Pods the scheduler cannot place for lack of room."""
    short: tuple[str, ...]
    """The resources there is no room for (`nvidia.com/gpu`)."""
    held: str
    """What the placed pods hold of those: `nvidia.com/gpu=16`."""


def held_back(pods: Sequence[Mapping[str, Any]]) -> HeldBack | None:
    """Whether some pods hold what the others cannot get (see `HeldBack`), else None."""
    waiting = [
        lacking
        for p in pods
        if not o.node_name(p) and (lacking := insufficient(unschedulable(p) or ""))
    ]
    placed = [
        p
        for p in pods
        if o.node_name(p)
        and not o.meta(p).deletion_timestamp
        and (o.phase(p) or "Pending") in ("Pending", "Running")
    ]
    if not waiting or not placed:
        return None
    short = tuple(dict.fromkeys(r for names in waiting for r in names))
    held = ", ".join(f"{n}={total}" for n in short if (total := _total(placed, n)) not in ("", "0"))
    if not held:
        return None
    return HeldBack(placed=len(placed), waiting=len(waiting), short=short, held=held)


def requests(pod: Mapping[str, Any]) -> str:
    """`cpu=4, nvidia.com/gpu=99`: what the pod's containers ask for in all."""
    totals: dict[str, list[str]] = {}
    for key, value in _asked(pod):
        totals.setdefault(key, []).append(value)
    return ", ".join(f"{k}={'+'.join(v)}" for k, v in sorted(totals.items()))


def _asked(pod: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(resource, quantity) of each container: its requests, else its limits (a limit alone is
    the request, as the scheduler counts it)."""
    for c in o.spec(pod).get("containers") or ():
        resources = o.mapping(c.get("resources"))
        asked = {**o.mapping(resources.get("limits")), **o.mapping(resources.get("requests"))}
        for key, value in asked.items():
            yield str(key), str(value)


def _total(pods: Sequence[Mapping[str, Any]], resource: str) -> str:
    """What `pods` ask of `resource` in all: a sum for whole numbers, else the quantities
    joined by `+`; "" when none asks for it."""
    if resource == "pods":
        return str(len(pods))
    values = [value for pod in pods for key, value in _asked(pod) if key == resource]
    if all(v.isdigit() for v in values):
        return str(sum(int(v) for v in values)) if values else ""
    return "+".join(values)
