"""List-then-watch caches: resume from the last version, re-list on 410, back off on errors."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from t9k_operator.cluster import ListResult, WatchEvent
from t9k_operator.informer import Informer, Store
from t9k_operator.workqueue import Backoff
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk._kube.resources import NODES, PODS, Resource


def pod(name: str, rv: str, owner_uid: str | None = None, namespace: str = "ns") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "resourceVersion": rv}
    if owner_uid:
        meta["ownerReferences"] = [{"uid": owner_uid, "controller": True, "kind": "GenericJob"}]
    return {"metadata": meta}


class Stream:
    def __init__(self, events: list[WatchEvent | ApiError]) -> None:
        self.events = events
        self.closed = False

    def __iter__(self) -> Iterator[WatchEvent]:
        for e in self.events:
            if isinstance(e, ApiError):
                raise e
            yield e

    def close(self) -> None:
        self.closed = True


@dataclass
class FakeSource:
    """Scripted API: each list/watch call takes the next entry; when the script ends, stop."""

    lists: list[ListResult | ApiError]
    watches: list[list[WatchEvent | ApiError] | ApiError]
    stop: threading.Event
    calls: list[tuple[str, str]] = field(default_factory=list)

    def list(
        self, resource: Resource, namespace: str | None = None, label_selector: str | None = None
    ) -> ListResult:
        self.calls.append(("list", ""))
        if not self.lists:
            self.stop.set()
            return ListResult([], "0")
        result = self.lists.pop(0)
        if isinstance(result, ApiError):
            raise result
        return result

    def watch(
        self,
        resource: Resource,
        namespace: str | None,
        resource_version: str,
        *,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
    ) -> Stream:
        self.calls.append(("watch", resource_version))
        if not self.watches:
            self.stop.set()
            return Stream([])
        script = self.watches.pop(0)
        if isinstance(script, ApiError):
            raise script
        return Stream(script)


def run(source: FakeSource, **kwargs: Any) -> tuple[Informer, list[tuple[str, str]]]:
    seen: list[tuple[str, str]] = []

    def handler(kind: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        obj = new if new is not None else old
        assert obj is not None
        seen.append((kind, obj["metadata"]["name"]))

    informer = Informer(
        source,
        PODS,
        handler=handler,
        backoff=Backoff(base=0.001, cap=0.01),
        min_watch_seconds=0.0,
        **kwargs,
    )
    thread = threading.Thread(target=informer.run, args=(source.stop,))
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "informer did not stop"
    return informer, seen


def test_lists_then_watches_from_the_lists_version_and_resumes_after_bookmarks() -> None:
    stop = threading.Event()
    source = FakeSource(
        lists=[ListResult([pod("a", "5")], "10")],
        watches=[
            [
                WatchEvent("ADDED", pod("b", "11")),
                WatchEvent("BOOKMARK", {"metadata": {"resourceVersion": "15"}}),
            ],
            [WatchEvent("MODIFIED", pod("a", "16")), WatchEvent("DELETED", pod("b", "17"))],
        ],
        stop=stop,
    )
    informer, seen = run(source)
    assert source.calls[:3] == [("list", ""), ("watch", "10"), ("watch", "15")]
    assert source.calls[3] == ("watch", "17")
    assert seen == [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    cached = informer.store.get("ns", "a")
    assert cached is not None
    assert cached["metadata"]["resourceVersion"] == "16"
    assert informer.store.get("ns", "b") is None
    assert informer.lists == 1


def test_watched_objects_get_their_api_version_and_kind() -> None:
    stop = threading.Event()
    source = FakeSource(
        lists=[ListResult([], "1")], watches=[[WatchEvent("ADDED", pod("a", "2"))]], stop=stop
    )
    informer, _ = run(source)
    cached = informer.store.get("ns", "a")
    assert cached is not None
    assert (cached["apiVersion"], cached["kind"]) == ("v1", "Pod")


def test_an_expired_version_as_an_error_event_lists_again_and_reports_what_changed() -> None:
    stop = threading.Event()
    gone = WatchEvent("ERROR", {"kind": "Status", "code": 410, "reason": "Expired"})
    source = FakeSource(
        lists=[
            ListResult([pod("a", "5"), pod("b", "6")], "10"),
            ListResult([pod("a", "5"), pod("c", "30")], "31"),
        ],
        watches=[[gone]],
        stop=stop,
    )
    informer, seen = run(source)
    assert source.calls[:4] == [("list", ""), ("watch", "10"), ("list", ""), ("watch", "31")]
    # a unchanged: no event; b vanished while we were not watching; c appeared.
    assert seen == [("ADDED", "a"), ("ADDED", "b"), ("DELETED", "b"), ("ADDED", "c")]
    assert informer.lists == 2


def test_an_expired_version_as_an_http_410_lists_again() -> None:
    stop = threading.Event()
    source = FakeSource(
        lists=[ListResult([], "10"), ListResult([], "20")],
        watches=[ApiError(410, "Gone", "too old resource version")],
        stop=stop,
    )
    run(source)
    assert source.calls[:4] == [("list", ""), ("watch", "10"), ("list", ""), ("watch", "20")]


def test_a_broken_watch_is_resumed_from_the_last_version_without_listing_again() -> None:
    stop = threading.Event()
    source = FakeSource(
        lists=[ListResult([], "10")],
        watches=[
            [WatchEvent("ADDED", pod("a", "12")), ApiError(0, "ProtocolError", "connection reset")]
        ],
        stop=stop,
    )
    informer, _ = run(source)
    assert source.calls[:3] == [("list", ""), ("watch", "10"), ("watch", "12")]
    assert informer.lists == 1


def test_errors_back_off_exponentially_instead_of_a_hot_loop() -> None:
    stop = threading.Event()
    waits: list[float] = []
    real_wait = stop.wait

    def recording_wait(timeout: float | None = None) -> bool:
        waits.append(timeout or 0.0)
        return real_wait(0)

    stop.wait = recording_wait  # type: ignore[method-assign]
    source = FakeSource(
        lists=[ApiError(500, "InternalError")] * 4 + [ListResult([], "1")], watches=[], stop=stop
    )
    informer = Informer(source, PODS, backoff=Backoff(base=1.0, cap=4.0))
    informer.run(stop)
    assert waits[:4] == [1.0, 2.0, 4.0, 4.0]
    assert informer.synced.is_set()


def test_a_resource_the_server_does_not_serve_counts_as_synced_and_empty() -> None:
    stop = threading.Event()
    source = FakeSource(lists=[ApiError(404, "NotFound")], watches=[], stop=stop)
    waits: list[float] = []

    def wait(timeout: float | None = None) -> bool:
        waits.append(timeout or 0.0)
        stop.set()
        return True

    stop.wait = wait  # type: ignore[method-assign]
    informer = Informer(source, PODS)
    informer.run(stop)
    assert informer.synced.is_set()
    assert not informer.served
    assert waits == [60.0]
    assert len(informer.store) == 0


def test_store_indexes_objects_by_their_controller_owner_uid() -> None:
    store = Store()
    store.put(pod("a", "1", owner_uid="u1"))
    store.put(pod("b", "1", owner_uid="u1"))
    store.put(pod("c", "1", owner_uid="u2"))
    store.put(pod("d", "1"))
    assert [p["metadata"]["name"] for p in store.owned_by("ns", "u1")] == ["a", "b"]
    store.put(pod("b", "2", owner_uid="u2"))  # adopted elsewhere
    store.remove(pod("a", "3"))
    assert store.owned_by("ns", "u1") == []
    assert [p["metadata"]["name"] for p in store.owned_by("ns", "u2")] == ["b", "c"]


def test_an_ownerreference_in_another_namespace_makes_no_child() -> None:
    """A tenant who knows another job's uid writes it into objects of their own namespace:
    they are not that job's children (its store lookup is by namespace and uid)."""
    store = Store()
    store.put(pod("victim-worker-0", "1", owner_uid="u1", namespace="team-a"))
    store.put(pod("victim-worker-0", "2", owner_uid="u1", namespace="tenant-b"))
    store.put(pod("victim-worker-1", "3", owner_uid="u1", namespace="tenant-b"))
    assert [o["metadata"]["namespace"] for o in store.owned_by("team-a", "u1")] == ["team-a"]
    assert len(store.owned_by("tenant-b", "u1")) == 2
    store.remove(pod("victim-worker-0", "4", namespace="tenant-b"))
    assert [o["metadata"]["name"] for o in store.owned_by("team-a", "u1")] == ["victim-worker-0"]


def test_store_keeps_objects_without_managed_fields() -> None:
    store = Store()
    pod = {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "managedFields": [{"manager": "kwok"}]},
        "status": {"phase": "Running"},
    }
    store.put(pod)
    kept = store.get("ns", "p")
    assert kept == {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "status": {"phase": "Running"},
    }
    assert pod["metadata"]["managedFields"] == [{"manager": "kwok"}]  # the caller's is untouched


@pytest.mark.parametrize(
    ("status", "said"),
    [
        (404, "is not served by the API server (is its CRD installed?)"),
        (
            403,
            "may not be listed by the operator (its role does not allow it: see the install"
            " guide's RBAC)",
        ),
    ],
)
def test_an_optional_resource_it_may_not_list_says_so_not_that_a_crd_is_missing(
    status: int, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    stop = threading.Event()
    source = FakeSource(lists=[ApiError(status, "Forbidden")], watches=[], stop=stop)

    def wait(timeout: float | None = None) -> bool:
        stop.set()
        return True

    stop.wait = wait  # type: ignore[method-assign]
    informer = Informer(source, NODES, optional=True)
    with caplog.at_level(logging.WARNING):
        informer.run(stop)
    assert not informer.served
    assert [r.getMessage() for r in caplog.records] == [
        f"{informer} {said}; treating it as empty and retrying every 60s"
    ]
