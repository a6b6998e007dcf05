"""Typed reads of Kubernetes objects held as raw camelCase dicts (the API server's JSON).

The operator's core, its shell and the client all handle objects as plain dicts: they come
straight off the wire and go straight back, and parsing every pod into a model would cost more
than the reconcile pass itself. These accessors are the one way to read the parts everyone
needs, so that "the name of this object" is one obvious call instead of
`(obj.get("metadata") or {}).get("name")` written out again:

    meta(obj).name, meta(obj).namespace, meta(obj).uid, meta(obj).labels, meta(obj).controller
    status(obj), phase(obj), conditions(obj), condition(obj, "Failed")
    key(obj) -> (namespace, name), kind(obj), api_version(obj)

Events: `involved_object(event)` (`.kind`, `.name`, `.uid`, like an owner reference).
Lists (the API server's `...List` responses): `items(page)`, `meta(page).resource_version`,
`meta(page).continue_token`.

Pods: `node_name(pod)`, `container_names(pod)`, `container_statuses(pod)` (each with `.state`
and `.last_state`: `.running`, `.waiting`/`.terminated` with `.reason`, `.message`,
`.exit_code`), `status_reason(pod)`. T9k jobs: `tasks(job)` (`.type`, `.restart_count`,
`.replicas`), `replicas(job)` (`.name`, `.uid`, `.phase`, `.containers`, `.exit_code`).
Times (`creationTimestamp`, `lastTransitionTime`, ...): `parse_time(value)`.

Every accessor tolerates a missing or wrongly-typed part (an object being created has no status;
a hostile object may have `labels: 3`) and answers with the empty value, never an exception.
Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, cast

from t9k_sdk._job_status import ContainerEntry, ReplicaEntry, TaskEntry

__all__ = [
    "EMPTY",
    "Meta",
    "OwnerRef",
    "PodContainer",
    "PodContainerState",
    "Replica",
    "ReplicaContainer",
    "StateDetail",
    "Task",
    "api_version",
    "condition",
    "conditions",
    "container_names",
    "container_statuses",
    "involved_object",
    "items",
    "key",
    "kind",
    "mapping",
    "meta",
    "node_name",
    "parse_time",
    "phase",
    "replicas",
    "spec",
    "status",
    "status_message",
    "status_reason",
    "tasks",
]

EMPTY: Final[Mapping[str, Any]] = {}


def mapping(value: object) -> Mapping[str, Any]:
    """`value` if it is a mapping, else an empty one (for reading optional JSON objects)."""
    # `type(...) is dict` first: the reconcile pass reads thousands of pods, and the ABC check
    # alone is slower than the rest of a read.
    if type(value) is dict or isinstance(value, Mapping):
        return value
    return EMPTY


def _is_mapping(value: object) -> bool:
    return type(value) is dict or isinstance(value, Mapping)


def _str(value: object) -> str:
    if type(value) is str:
        return value
    return "" if value is None else str(value)


def _str_map(value: object) -> Mapping[str, str]:
    return mapping(value)


class OwnerRef:
    """One entry of `metadata.ownerReferences`."""

    __slots__ = ("_ref",)

    def __init__(self, ref: Mapping[str, Any]) -> None:
        self._ref = ref

    @property
    def api_version(self) -> str:
        return _str(self._ref.get("apiVersion"))

    @property
    def kind(self) -> str:
        return _str(self._ref.get("kind"))

    @property
    def name(self) -> str:
        return _str(self._ref.get("name"))

    @property
    def uid(self) -> str:
        return _str(self._ref.get("uid"))

    @property
    def controller(self) -> bool:
        return self._ref.get("controller") is True

    def __repr__(self) -> str:
        return f"OwnerRef({self.kind}/{self.name}, uid={self.uid!r}, controller={self.controller})"


class Meta:
    """A read-only view of an object's `metadata` (see the module docstring)."""

    __slots__ = ("_meta",)

    def __init__(self, metadata: Mapping[str, Any]) -> None:
        self._meta = metadata

    @property
    def raw(self) -> Mapping[str, Any]:
        """The metadata mapping itself (empty if the object has none)."""
        return self._meta

    @property
    def name(self) -> str:
        value = self._meta.get("name")
        return value if type(value) is str else _str(value)

    @property
    def namespace(self) -> str:
        return _str(self._meta.get("namespace"))

    @property
    def uid(self) -> str:
        value = self._meta.get("uid")
        return value if type(value) is str else _str(value)

    @property
    def resource_version(self) -> str:
        return _str(self._meta.get("resourceVersion"))

    @property
    def generation(self) -> int:
        value = self._meta.get("generation")
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    @property
    def creation_timestamp(self) -> str:
        return _str(self._meta.get("creationTimestamp"))

    @property
    def deletion_timestamp(self) -> str:
        """Set (non-empty) once the object is being deleted."""
        value = self._meta.get("deletionTimestamp")
        return value if type(value) is str else _str(value)

    @property
    def continue_token(self) -> str:
        """A List's `metadata.continue`: non-empty when there is a next page."""
        return _str(self._meta.get("continue"))

    @property
    def labels(self) -> Mapping[str, str]:
        return _str_map(self._meta.get("labels"))

    @property
    def annotations(self) -> Mapping[str, str]:
        return mapping(self._meta.get("annotations"))

    @property
    def finalizers(self) -> list[str]:
        value = self._meta.get("finalizers")
        return [_str(f) for f in value] if isinstance(value, list) else []

    @property
    def owner_references(self) -> list[OwnerRef]:
        value = self._meta.get("ownerReferences")
        if not isinstance(value, list):
            return []
        return [OwnerRef(ref) for ref in value if _is_mapping(ref)]

    @property
    def controller(self) -> OwnerRef | None:
        """The owner reference with `controller: true`, if any."""
        value = self._meta.get("ownerReferences")
        if not isinstance(value, list):
            return None
        for ref in value:
            if _is_mapping(ref) and ref.get("controller") is True:
                return OwnerRef(ref)
        return None

    def __repr__(self) -> str:
        return f"Meta({self.namespace}/{self.name}, uid={self.uid!r})"


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 timestamp from the API server (`2026-01-02T03:04:05Z`), or None."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def meta(obj: Mapping[str, Any]) -> Meta:
    """The object's metadata, as a `Meta` view."""
    value = obj.get("metadata")
    return Meta(value if type(value) is dict else mapping(value))


def key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name) of the object."""
    m = mapping(obj.get("metadata"))
    return _str(m.get("namespace")), _str(m.get("name"))


def kind(obj: Mapping[str, Any]) -> str:
    """The object's `kind` ("" if absent)."""
    return _str(obj.get("kind"))


def api_version(obj: Mapping[str, Any]) -> str:
    """The object's `apiVersion` ("" if absent)."""
    return _str(obj.get("apiVersion"))


def involved_object(event: Mapping[str, Any]) -> OwnerRef:
    """An Event's `involvedObject`: the object it is about (`.kind`, `.name`, `.uid`)."""
    return OwnerRef(mapping(event.get("involvedObject")))


def items(page: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A List's `items` (only the well-formed entries)."""
    value = page.get("items")
    if not isinstance(value, list):
        return []
    return [i for i in value if type(i) is dict or _is_mapping(i)]


def spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The object's `spec` (empty if absent)."""
    value = obj.get("spec")
    return value if type(value) is dict else mapping(value)


def status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The object's `status` (empty if absent)."""
    value = obj.get("status")
    return value if type(value) is dict else mapping(value)


def phase(obj: Mapping[str, Any]) -> str:
    """`status.phase`, or "" when there is none yet."""
    value = status(obj).get("phase")
    return value if type(value) is str else _str(value)


def conditions(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """`status.conditions` (only the well-formed entries)."""
    value = status(obj).get("conditions")
    if not isinstance(value, list):
        return []
    return [c for c in value if type(c) is dict or _is_mapping(c)]


def condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    """The condition of that `type` in `status.conditions`, if present."""
    value = status(obj).get("conditions")
    if not isinstance(value, list):
        return None
    for c in value:
        if (type(c) is dict or _is_mapping(c)) and c.get("type") == type_:
            return c  # type: ignore[no-any-return]
    return None


# -- pods: spec.nodeName, spec.containers, status.containerStatuses ------------------------------


def node_name(pod: Mapping[str, Any]) -> str:
    """`spec.nodeName`: the node the pod is bound to ("" until it is scheduled)."""
    return _str(spec(pod).get("nodeName"))


def container_names(pod: Mapping[str, Any]) -> list[str]:
    """The names of the pod's `spec.containers`, in order."""
    value = spec(pod).get("containers")
    if not isinstance(value, list):
        return []
    return [_str(c.get("name")) for c in value if type(c) is dict or _is_mapping(c)]


def status_reason(obj: Mapping[str, Any]) -> str:
    """`status.reason` (a pod's `Evicted`, ...), or ""."""
    return _str(status(obj).get("reason"))


def status_message(obj: Mapping[str, Any]) -> str:
    """`status.message`, or ""."""
    return _str(status(obj).get("message"))


def _int_or_none(value: object) -> int | None:
    return value if type(value) is int else None


class StateDetail:
    """`state.waiting` or `state.terminated` of a container: its reason, message, exit code."""

    __slots__ = ("_detail",)

    def __init__(self, detail: Mapping[str, Any]) -> None:
        self._detail = detail

    @property
    def raw(self) -> Mapping[str, Any]:
        return self._detail

    @property
    def reason(self) -> str:
        return _str(self._detail.get("reason"))

    @property
    def message(self) -> str:
        return _str(self._detail.get("message"))

    @property
    def exit_code(self) -> int | None:
        """A terminated container's exit code (None when there is none, or it is not a number)."""
        return _int_or_none(self._detail.get("exitCode"))

    def __repr__(self) -> str:
        return f"StateDetail(reason={self.reason!r}, exit_code={self.exit_code!r})"


class PodContainerState:
    """A container's `state` or `lastState`: running, waiting and/or terminated.

    The API server sets exactly one of the three; a part that is present but empty (or null)
    still counts as present, as the key says."""

    __slots__ = ("_state",)

    def __init__(self, state: Mapping[str, Any]) -> None:
        self._state = state

    @property
    def running(self) -> bool:
        return "running" in self._state

    @property
    def waiting(self) -> StateDetail | None:
        return StateDetail(mapping(self._state["waiting"])) if "waiting" in self._state else None

    @property
    def terminated(self) -> StateDetail | None:
        if "terminated" not in self._state:
            return None
        return StateDetail(mapping(self._state["terminated"]))

    def __repr__(self) -> str:
        parts = [k for k in ("running", "waiting", "terminated") if k in self._state]
        return f"PodContainerState({'/'.join(parts) or 'unknown'})"


class PodContainer:
    """One entry of a pod's `status.containerStatuses`."""

    __slots__ = ("_status",)

    def __init__(self, container_status: Mapping[str, Any]) -> None:
        self._status = container_status

    @property
    def raw(self) -> Mapping[str, Any]:
        return self._status

    @property
    def name(self) -> str:
        value = self._status.get("name")
        return value if type(value) is str else _str(value)

    @property
    def ready(self) -> bool:
        return self._status.get("ready") is True

    @property
    def restart_count(self) -> int:
        return _int_or_none(self._status.get("restartCount")) or 0

    @property
    def state(self) -> PodContainerState:
        value = self._status.get("state")
        return PodContainerState(value if type(value) is dict else mapping(value))

    @property
    def last_state(self) -> PodContainerState:
        """The previous incarnation's state (`lastState`), after a restart."""
        return PodContainerState(mapping(self._status.get("lastState")))

    def __repr__(self) -> str:
        return f"PodContainer({self.name}, {self.state!r}, restarts={self.restart_count})"


def container_statuses(pod: Mapping[str, Any]) -> list[PodContainer]:
    """The pod's `status.containerStatuses` (only the well-formed entries)."""
    value = status(pod).get("containerStatuses")
    if not isinstance(value, list):
        return []
    return [PodContainer(c) for c in value if type(c) is dict or _is_mapping(c)]


# -- T9k jobs: status.tasks[].replicas[].containers[] --------------------------------------------


class ReplicaContainer:
    """One entry of `status.tasks[].replicas[].containers[]` (as the operator writes it)."""

    __slots__ = ("_c",)

    def __init__(self, entry: Mapping[str, Any]) -> None:
        self._c = cast(ContainerEntry, entry)

    @property
    def name(self) -> str:
        return _str(self._c.get("name"))

    @property
    def state(self) -> str:
        """`Running`, `Waiting`, `Terminated` or `Unknown` ("" if absent)."""
        return _str(self._c.get("state"))

    @property
    def exit_code(self) -> int | None:
        return _int_or_none(self._c.get("exitCode"))

    @property
    def reason(self) -> str:
        return _str(self._c.get("reason"))

    @property
    def message(self) -> str:
        return _str(self._c.get("message"))


class Replica:
    """One entry of `status.tasks[].replicas[]`: a replica slot and what its pod did."""

    __slots__ = ("_r",)

    def __init__(self, entry: Mapping[str, Any]) -> None:
        self._r = cast(ReplicaEntry, entry)

    @property
    def raw(self) -> ReplicaEntry:
        return self._r

    @property
    def name(self) -> str:
        value = self._r.get("name")
        return value if type(value) is str else _str(value)

    @property
    def uid(self) -> str:
        value = self._r.get("uid")
        return value if type(value) is str else _str(value)

    @property
    def phase(self) -> str:
        value = self._r.get("phase")
        return value if type(value) is str else _str(value)

    @property
    def containers(self) -> list[ReplicaContainer]:
        value = self._r.get("containers")
        if not isinstance(value, list):
            return []
        return [ReplicaContainer(c) for c in value if type(c) is dict or _is_mapping(c)]

    @property
    def exit_code(self) -> int | None:
        """The exit code of the first container that terminated with a non-zero one, if any."""
        for c in self.containers:
            code = c.exit_code
            if c.state == "Terminated" and code:
                return code
        return None

    def __repr__(self) -> str:
        return f"Replica({self.name}, {self.phase})"


class Task:
    """One entry of a T9k job's `status.tasks`: a replica type, its restarts and replicas."""

    __slots__ = ("_t",)

    def __init__(self, entry: Mapping[str, Any]) -> None:
        self._t = cast(TaskEntry, entry)

    @property
    def type(self) -> str:
        return _str(self._t.get("type"))

    @property
    def restart_count(self) -> int:
        return _int_or_none(self._t.get("restartCount")) or 0

    @property
    def replicas(self) -> list[Replica]:
        value = self._t.get("replicas")
        if not isinstance(value, list):
            return []
        return [Replica(r) for r in value if type(r) is dict or _is_mapping(r)]

    def __repr__(self) -> str:
        return f"Task({self.type}, restarts={self.restart_count})"


def tasks(job: Mapping[str, Any]) -> list[Task]:
    """A T9k job's `status.tasks` (only the well-formed entries)."""
    value = status(job).get("tasks")
    if not isinstance(value, list):
        return []
    return [Task(t) for t in value if type(t) is dict or _is_mapping(t)]


def replicas(job: Mapping[str, Any]) -> list[Replica]:
    """Every `status.tasks[].replicas[]` entry of a T9k job, task by task."""
    value = status(job).get("tasks")
    if not isinstance(value, list):
        return []
    out = []
    for t in value:
        entries = t.get("replicas") if type(t) is dict or _is_mapping(t) else None
        if isinstance(entries, list):
            out += [Replica(r) for r in entries if type(r) is dict or _is_mapping(r)]
    return out
