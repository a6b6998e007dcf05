"""Raw pod dicts -> what the reconcile core needs to know about each replica (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from t9k_sdk import _objects as o
from t9k_sdk import models
from t9k_sdk._conventions import STUCK_REASONS
from t9k_sdk._job_status import ContainerEntry
from t9k_sdk.models import ContainerState, ReplicaPhase

__all__ = ["ContainerView", "PodView", "observe_pod", "trim_node", "trim_pod"]


@dataclass(frozen=True)
class ContainerView:
    """One container's state as the job status shows it."""

    name: str
    state: ContainerState
    exit_code: int | None = None
    reason: str | None = None
    message: str | None = None

    def wire(self) -> ContainerEntry:
        """The `status.tasks[].replicas[].containers[]` entry."""
        out: ContainerEntry = {"name": self.name, "state": self.state.value}
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
    node: str | None = None
    """The node the pod is bound to (`spec.nodeName`), None until it is scheduled."""
    node_issue: str | None = None
    """Why the pod's node cannot confirm what the pod does (set by `policies.lost_nodes`)."""
    disruption: tuple[str, str] | None = None
    """Failed pods the cluster ended, not their own code: (reason, message) of the pod's
    DisruptionTarget condition (`policies.disruptions`)."""

    @property
    def finished(self) -> bool:
        """Succeeded or Failed (and not being deleted)."""
        return not self.terminating and self.phase in (ReplicaPhase.SUCCEEDED, ReplicaPhase.FAILED)


def _container(c: o.PodContainer) -> ContainerView:
    state = c.state
    terminated = state.terminated
    if terminated is not None:
        return ContainerView(
            c.name,
            ContainerState.TERMINATED,
            exit_code=terminated.exit_code,
            reason=terminated.reason or None,
            message=terminated.message or None,
        )
    if state.running:
        return ContainerView(c.name, ContainerState.RUNNING)
    waiting = state.waiting
    if waiting is not None:
        return ContainerView(
            c.name,
            ContainerState.WAITING,
            reason=waiting.reason or None,
            message=waiting.message or None,
        )
    return ContainerView(c.name, ContainerState.UNKNOWN)


def observe_pod(pod: Mapping[str, Any]) -> PodView:
    """Summarise a raw pod."""
    meta = o.meta(pod)
    raw_phase = o.phase(pod) or "Pending"
    terminating = bool(meta.deletion_timestamp)
    statuses = o.container_statuses(pod)
    if len(statuses) > 1:  # in the order of spec.containers (most pods have one container)
        order = {name: i for i, name in enumerate(o.container_names(pod))}
        statuses.sort(key=lambda c: order.get(c.name, len(order)))
    containers = tuple(_container(c) for c in statuses)
    if terminating:
        phase = ReplicaPhase.DELETED
    elif raw_phase == "Pending" and not o.node_name(pod):
        phase = ReplicaPhase.CREATING
    else:
        phase = (
            ReplicaPhase(raw_phase)
            if raw_phase in ReplicaPhase._value2member_map_
            else ReplicaPhase.UNKNOWN
        )
    exit_code = None
    failure_reason = None
    disruption = None
    if raw_phase == "Failed":
        failure_reason = o.status_reason(pod) or None
        disruption = _disruption(pod)
        for c in containers:
            if c.state == ContainerState.TERMINATED and c.exit_code not in (None, 0):
                exit_code = c.exit_code
                failure_reason = failure_reason or c.reason
                break
    unschedulable = None
    scheduled = o.condition(pod, "PodScheduled")
    if (
        scheduled is not None
        and scheduled.get("status") == "False"
        and scheduled.get("reason") == "Unschedulable"
    ):
        unschedulable = str(scheduled.get("message") or "no node fits the pod")
    stuck = None
    for c in containers:
        if c.state == ContainerState.WAITING and c.reason in STUCK_REASONS:
            stuck = (c.name, c.reason or "", c.message or "")
            break
    return PodView(
        name=meta.name,
        uid=meta.uid,
        phase=phase,
        terminating=terminating,
        containers=containers,
        exit_code=exit_code,
        failure_reason=failure_reason,
        unschedulable=unschedulable,
        stuck=stuck,
        annotations=meta.annotations,
        node=o.node_name(pod) or None,
        disruption=disruption,
    )


_DISRUPTION_MESSAGE_CHARS = 256


def _disruption(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """(reason, message) of the pod's DisruptionTarget condition, when it is True. Kubernetes
    sets it when the cluster, not the pod, ends the pod: a kubelet under node pressure or
    shutting down (TerminationByKubelet), the scheduler's preemption, the Eviction API, the taint
    manager, pod GC. An eviction for exceeding the pod's own limits (ephemeral storage, an
    emptyDir's size) sets none: that is the pod's failure."""
    target = o.condition(pod, "DisruptionTarget")
    if target is None or target.get("status") != "True":
        return None
    reason = target.get("reason")
    message = target.get("message")
    return (
        reason[:_DISRUPTION_MESSAGE_CHARS] if isinstance(reason, str) and reason else "Disrupted",
        message[:_DISRUPTION_MESSAGE_CHARS] if isinstance(message, str) else "",
    )


def trim_pod(pod: Mapping[str, Any]) -> dict[str, Any]:
    """`pod` with only the part of its `spec` the core reads (`nodeName`, the containers'
    names); metadata and status stay whole. What the operator's cache keeps of a pod: the rest
    of the spec (images, commands, environment, volumes, ...) is most of a pod's bytes, and the
    core's answer is the same on the trimmed pod (tests/reconcile/test_trim.py)."""
    spec = o.spec(pod)
    if not spec:
        return dict(pod)
    lean: dict[str, Any] = {}
    if "nodeName" in spec:
        lean["nodeName"] = spec["nodeName"]
    containers = spec.get("containers")
    if isinstance(containers, list):
        lean["containers"] = [
            {"name": c.get("name")} if isinstance(c, Mapping) and "name" in c else {}
            for c in containers
        ]
    return {**pod, "spec": lean}


def trim_node(node: Mapping[str, Any]) -> dict[str, Any]:
    """`node` with its metadata's name, uid and resourceVersion and its Ready condition alone:
    what `policies.lost_nodes` reads. A node's images, addresses and capacity are most of its
    bytes, and a cluster of thousands of nodes costs the operator's cache a few hundred each."""
    meta = o.meta(node)
    out: dict[str, Any] = {
        "metadata": {"name": meta.name, "uid": meta.uid, "resourceVersion": meta.resource_version}
    }
    ready = o.condition(node, "Ready")
    if ready is not None:
        keep = ("type", "status", "lastTransitionTime", "reason")
        out["status"] = {"conditions": [{k: ready[k] for k in keep if k in ready}]}
    return out


def trim_secret(secret: Mapping[str, Any]) -> dict[str, Any]:
    """`secret` without its values (the key names stay): the core never reads key material
    (it is generated once and never compared), so the operator's cache holds none of it."""
    out = {k: v for k, v in secret.items() if k not in ("data", "stringData")}
    data = secret.get("data")
    if isinstance(data, Mapping):
        out["data"] = dict.fromkeys(data, "")
    return out


def trim_config_map(config_map: Mapping[str, Any]) -> dict[str, Any]:
    """`config_map` whole if a job controls it (the core compares its data with the spec),
    else its metadata alone: a labelled ConfigMap of someone else's is only ever reported as
    holding a name, so 300 planted 1 MiB ConfigMaps cost the cache their metadata, not 300 MiB."""
    ref = o.meta(config_map).controller
    if ref is not None and (ref.api_version or "").startswith(f"{models.GROUP}/"):
        return dict(config_map)
    return {k: v for k, v in config_map.items() if k not in ("data", "binaryData")}
