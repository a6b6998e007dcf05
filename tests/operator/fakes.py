"""A fake API for controller tests: records every write in order, fails on request."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from t9k_operator.cluster import ListResult
from t9k_sdk import models
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk._kube.resources import Resource
from t9k_sdk.reconcile import Event


def job(
    name: str = "demo",
    kind: str = "GenericJob",
    *,
    uid: str = "job-uid",
    rv: str = "100",
    namespace: str = "ns",
    deleting: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid, "resourceVersion": rv}
    if deleting:
        meta["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    return {
        "apiVersion": models.API_VERSION,
        "kind": kind,
        "metadata": meta,
        "spec": {},
    }


def child(
    kind: str,
    name: str,
    *,
    owner: str = "demo",
    owner_uid: str = "job-uid",
    rv: str = "1",
    uid: str = "",
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": uid or f"{name}-uid",
            "resourceVersion": rv,
            "ownerReferences": [
                {
                    "apiVersion": models.API_VERSION,
                    "kind": "GenericJob",
                    "name": owner,
                    "uid": owner_uid,
                    "controller": True,
                }
            ],
        },
    }


class FakeCluster:
    """Implements `controller.ClusterApi`; `fail` maps an action ("status", "create", ...) to
    the ApiError it raises."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.fail: dict[str, ApiError] = {}
        self.existing: set[str] = set()
        self.objects: dict[str, dict[str, Any]] = {}
        """What `get` finds, by "Kind/name": what was created, and what a test puts there."""
        self.events: list[Event] = []
        self.rv = 200

    def _maybe_fail(self, action: str) -> None:
        if action in self.fail:
            raise self.fail[action]

    def list(
        self, resource: Resource, namespace: str | None = None, label_selector: str | None = None
    ) -> ListResult:
        return ListResult([], "1")

    def watch(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("controller tests drive the caches directly")

    def replace_status(self, job: Mapping[str, Any], status: Mapping[str, Any]) -> dict[str, Any]:
        self.calls.append(("status", str(status.get("phase"))))
        self._maybe_fail("status")
        self.rv += 1
        return {
            **job,
            "status": dict(status),
            "metadata": {**job["metadata"], "resourceVersion": str(self.rv)},
        }

    def delete(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        *,
        uid: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> bool:
        self.calls.append(("delete", f"{resource.kind}/{name}"))
        self._maybe_fail("delete")
        return True

    def replace(
        self, manifest: Mapping[str, Any], namespace: str, *, subresource: str | None = None
    ) -> dict[str, Any]:
        what = "update" if subresource is None else f"update {subresource}"
        self.calls.append((what, f"{manifest['kind']}/{manifest['metadata']['name']}"))
        self._maybe_fail("update")
        return dict(manifest)

    def create(self, manifest: Mapping[str, Any], namespace: str) -> dict[str, Any] | None:
        name = f"{manifest['kind']}/{manifest['metadata']['name']}"
        self.calls.append(("create", name))
        self._maybe_fail("create")
        if name in self.existing or name in self.objects:
            return None
        self.existing.add(name)
        self.objects[name] = dict(manifest)
        return dict(manifest)

    def get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        self.calls.append(("get", f"{resource.kind}/{name}"))
        self._maybe_fail("get")
        return self.objects.get(f"{resource.kind}/{name}")

    def record_events(self, job: Mapping[str, Any], events: Sequence[Event]) -> int:
        self.calls.append(("events", ",".join(e.reason for e in events)))
        self._maybe_fail("events")
        self.events.extend(events)
        return len(events)
