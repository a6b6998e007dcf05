"""Typed reads of Kubernetes objects held as raw camelCase dicts (the API server's JSON).

The operator's core, its shell and the client all handle objects as plain dicts: they come
straight off the wire and go straight back, and parsing every pod into a model would cost more
than the reconcile pass itself. These accessors are the one way to read the parts everyone
needs, so that "the name of this object" is one obvious call instead of
`(obj.get("metadata") or {}).get("name")` written out again:

    meta(obj).name, meta(obj).namespace, meta(obj).uid, meta(obj).labels, meta(obj).controller
    status(obj), phase(obj), conditions(obj), condition(obj, "Failed")
    key(obj) -> (namespace, name)

Every accessor tolerates a missing or wrongly-typed part (an object being created has no status;
a hostile object may have `labels: 3`) and answers with the empty value, never an exception.
Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "EMPTY",
    "Meta",
    "OwnerRef",
    "condition",
    "conditions",
    "key",
    "mapping",
    "meta",
    "phase",
    "spec",
    "status",
]

EMPTY: Final[Mapping[str, Any]] = {}


def mapping(value: object) -> Mapping[str, Any]:
    """`value` if it is a mapping, else an empty one (for reading optional JSON objects)."""
    return value if isinstance(value, Mapping) else EMPTY


def _str(value: object) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def _str_map(value: object) -> Mapping[str, str]:
    return value if isinstance(value, Mapping) else EMPTY


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
        return _str(self._meta.get("name"))

    @property
    def namespace(self) -> str:
        return _str(self._meta.get("namespace"))

    @property
    def uid(self) -> str:
        return _str(self._meta.get("uid"))

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
        return _str(self._meta.get("deletionTimestamp"))

    @property
    def labels(self) -> Mapping[str, str]:
        return _str_map(self._meta.get("labels"))

    @property
    def annotations(self) -> Mapping[str, str]:
        return _str_map(self._meta.get("annotations"))

    @property
    def finalizers(self) -> list[str]:
        value = self._meta.get("finalizers")
        return [_str(f) for f in value] if isinstance(value, list) else []

    @property
    def owner_references(self) -> list[OwnerRef]:
        value = self._meta.get("ownerReferences")
        if not isinstance(value, list):
            return []
        return [OwnerRef(ref) for ref in value if isinstance(ref, Mapping)]

    @property
    def controller(self) -> OwnerRef | None:
        """The owner reference with `controller: true`, if any."""
        for ref in self.owner_references:
            if ref.controller:
                return ref
        return None

    def __repr__(self) -> str:
        return f"Meta({self.namespace}/{self.name}, uid={self.uid!r})"


def meta(obj: Mapping[str, Any]) -> Meta:
    """The object's metadata, as a `Meta` view."""
    return Meta(mapping(obj.get("metadata")))


def key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name) of the object."""
    m = mapping(obj.get("metadata"))
    return _str(m.get("namespace")), _str(m.get("name"))


def spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The object's `spec` (empty if absent)."""
    return mapping(obj.get("spec"))


def status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The object's `status` (empty if absent)."""
    return mapping(obj.get("status"))


def phase(obj: Mapping[str, Any]) -> str:
    """`status.phase`, or "" when there is none yet."""
    return _str(status(obj).get("phase"))


def conditions(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """`status.conditions` (only the well-formed entries)."""
    value = status(obj).get("conditions")
    if not isinstance(value, list):
        return []
    return [c for c in value if isinstance(c, Mapping)]


def condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    """The condition of that `type` in `status.conditions`, if present."""
    for c in conditions(obj):
        if c.get("type") == type_:
            return c
    return None
