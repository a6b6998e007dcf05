"""Raw pod dicts -> what the reconcile core needs to know about each replica (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from t9k_sdk.models import ContainerState, ReplicaPhase

__all__ = ["ContainerView", "PodView", "observe_pod"]

# Container waiting reasons that mean "this will not start by itself": surfaced in conditions.
STUCK_REASONS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)


@dataclass(frozen=True)
class ContainerView:
    """One container's state as the job status shows it."""

    name: str
    state: ContainerState
    exit_code: int | None = None
    reason: str | None = None
    message: str | None = None

    def wire(self) -> dict[str, Any]:
        """The `status.tasks[].replicas[].containers[]` entry."""
        out: dict[str, Any] = {"name": self.name, "state": self.state.value}
        if self.exit_code is not None:
            out["exitCode"] = self.exit_code
        if self.reason:
            out["reason"] = self.reason
        if self.message:
            out["message"] = self.message
        return out


@dataclass(frozen=True)
class PodView:
    """What the core knows about one pod."""

    name: str
    uid: str
    phase: ReplicaPhase
    """Pod phase, with Creating (not yet scheduled) and Deleted (being deleted)."""
    terminating: bool
    containers: tuple[ContainerView, ...]
    exit_code: int | None
    """Failed pods: the exit code of the first container that exited non-zero, if any."""
    failure_reason: str | None
    """Failed pods: the pod's or that container's reason (Evicted, OOMKilled, Error, ...)."""
    unschedulable: str | None
    """The scheduler's message while the pod cannot be scheduled."""
    stuck: tuple[str, str, str] | None
    """(container, reason, message) of a container that will not start by itself."""
    annotations: Mapping[str, str]

    @property
    def finished(self) -> bool:
        """Succeeded or Failed (and not being deleted)."""
        return not self.terminating and self.phase in (ReplicaPhase.SUCCEEDED, ReplicaPhase.FAILED)


def _container(status: Mapping[str, Any]) -> ContainerView:
    state = status.get("state") or {}
    name = str(status.get("name", ""))
    if "terminated" in state:
        t = state["terminated"] or {}
        return ContainerView(
            name,
            ContainerState.TERMINATED,
            exit_code=t.get("exitCode"),
            reason=t.get("reason"),
            message=t.get("message"),
        )
    if "running" in state:
        return ContainerView(name, ContainerState.RUNNING)
    if "waiting" in state:
        w = state["waiting"] or {}
        return ContainerView(
            name, ContainerState.WAITING, reason=w.get("reason"), message=w.get("message")
        )
    return ContainerView(name, ContainerState.UNKNOWN)


def observe_pod(pod: Mapping[str, Any]) -> PodView:
    """Summarise a raw pod."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    raw_phase = status.get("phase") or "Pending"
    terminating = meta.get("deletionTimestamp") is not None
    order = {c.get("name"): i for i, c in enumerate(spec.get("containers") or ())}
    statuses = sorted(
        status.get("containerStatuses") or (), key=lambda c: order.get(c.get("name"), len(order))
    )
    containers = tuple(_container(c) for c in statuses)
    if terminating:
        phase = ReplicaPhase.DELETED
    elif raw_phase == "Pending" and not spec.get("nodeName"):
        phase = ReplicaPhase.CREATING
    else:
        phase = (
            ReplicaPhase(raw_phase)
            if raw_phase in ReplicaPhase._value2member_map_
            else ReplicaPhase.UNKNOWN
        )
    exit_code = None
    failure_reason = None
    if raw_phase == "Failed":
        failure_reason = status.get("reason")
        for c in containers:
            if c.state == ContainerState.TERMINATED and c.exit_code not in (None, 0):
                exit_code = c.exit_code
                failure_reason = failure_reason or c.reason
                break
    unschedulable = None
    for cond in status.get("conditions") or ():
        if (
            cond.get("type") == "PodScheduled"
            and cond.get("status") == "False"
            and cond.get("reason") == "Unschedulable"
        ):
            unschedulable = str(cond.get("message") or "no node fits the pod")
    stuck = None
    for c in containers:
        if c.state == ContainerState.WAITING and c.reason in STUCK_REASONS:
            stuck = (c.name, c.reason or "", c.message or "")
            break
    return PodView(
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        phase=phase,
        terminating=terminating,
        containers=containers,
        exit_code=exit_code,
        failure_reason=failure_reason,
        unschedulable=unschedulable,
        stuck=stuck,
        annotations=meta.get("annotations") or {},
    )
