"""List, watch, and the list-then-watch loop that both the client and the operator run.

    list_all(send, path)               every object, page by page (limit/continue); list items
                                       get their apiVersion and kind; + the collection's version
    watch(send, path, rv)              a `WatchStream` of (type, object) from a version, with
                                       bookmarks; the server ends it after `timeout_seconds`
    ListWatch(list, watch, policy)     LIST -> sync(items); WATCH from its version -> event(type,
                                       object); the watch ends -> WATCH again from the last
                                       version; 410 Gone (an HTTP status or an ERROR event) ->
                                       LIST again; any other failure -> ask the policy: wait and
                                       retry, or stop

The policy is the caller's: `t9k_operator.informer` retries for ever with back-off and caches;
`t9k_sdk.client._watch` gives up after a few failures and explains. This module does not import
the Kubernetes client (the transport does), so the operator's informer and its tests use it
without one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from t9k_sdk import _objects as o
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk._kube.resources import Resource

__all__ = [
    "PAGE_SIZE",
    "ListResult",
    "ListWatch",
    "Sender",
    "WatchEvent",
    "WatchStream",
    "list_all",
    "watch",
]

PAGE_SIZE = 500

Manifest = dict[str, Any]


@dataclass(frozen=True)
class ListResult:
    """The items of a list call and the collection's resourceVersion (where a watch starts)."""

    items: list[Manifest]
    resource_version: str


@dataclass(frozen=True)
class WatchEvent:
    """One watch event: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR (object is then a Status)."""

    type: str
    object: Manifest


class ResponseLike(Protocol):
    def json(self) -> dict[str, Any]: ...

    def objects(self) -> Iterator[dict[str, Any]]: ...

    def close(self) -> None: ...


Sender = Callable[..., ResponseLike]
"""Sends a request: `transport.Transport.send`, or a caller's wrapper of it (the same keywords:
query, timeout, stream, what)."""


class WatchStreamLike(Protocol):
    def __iter__(self) -> Iterator[WatchEvent]: ...

    def close(self) -> None: ...


def _version(obj: Mapping[str, Any]) -> str:
    return o.meta(obj).resource_version


def list_all(
    send: Sender,
    path: str,
    *,
    resource: Resource | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
    page_size: int = PAGE_SIZE,
    what: str = "",
) -> ListResult:
    """Every object of the collection at `path`, page by page. With `resource`, list items
    (which the server sends without them) get its apiVersion and kind: whole objects."""
    items: list[Manifest] = []
    token: str | None = None
    while True:
        query = {
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
            "limit": page_size,
            "continue": token,
        }
        page = send("GET", path, query=query, what=what or f"list {path}").json()
        for item in o.items(page):
            if resource is not None:
                item = {"apiVersion": resource.api_version, "kind": resource.kind, **item}
            items.append(dict(item))
        meta = o.meta(page)
        token = meta.continue_token or None
        if token is None:
            return ListResult(items, meta.resource_version)


class WatchStream:
    """An open watch: iterate for events; `close()` (from any thread) ends the iteration."""

    def __init__(self, response: ResponseLike) -> None:
        self._response = response

    def __iter__(self) -> Iterator[WatchEvent]:
        for data in self._response.objects():
            obj = data.get("object")
            yield WatchEvent(str(data.get("type", "")), dict(obj) if isinstance(obj, dict) else {})

    def close(self) -> None:
        self._response.close()


def watch(
    send: Sender,
    path: str,
    resource_version: str,
    *,
    label_selector: str | None = None,
    field_selector: str | None = None,
    timeout_seconds: int = 300,
    what: str = "",
) -> WatchStream:
    """Watch the collection at `path` from `resource_version`, with bookmarks. The server ends
    the watch after `timeout_seconds`; a connection silent for 30 s longer is dead and raises.
    A 410 answer raises `ApiError` (`.gone`)."""
    query = {
        "labelSelector": label_selector,
        "fieldSelector": field_selector,
        "watch": True,
        "allowWatchBookmarks": True,
        "resourceVersion": resource_version,
        "timeoutSeconds": timeout_seconds,
    }
    response = send(
        "GET",
        path,
        query=query,
        timeout=(10.0, timeout_seconds + 30.0),
        stream=True,
        what=what or f"watch {path}",
    )
    return WatchStream(response)


def _backoff(failures: int) -> float:
    """0.5 s, 1 s, 2 s, 4 s, then 5 s."""
    return min(0.25 * 2.0**failures, 5.0)


class Policy(Protocol):
    """What a caller of `ListWatch` decides."""

    def on_sync(self, items: list[Manifest]) -> None:
        """After every LIST: the whole collection."""

    def on_event(self, type: str, obj: Manifest) -> None:
        """ADDED, MODIFIED or DELETED (bookmarks and errors are handled by the loop)."""

    def on_failure(self, error: Exception, failures: int, listing: bool) -> float | None:
        """A failure other than 410 (`failures` in a row; `listing`: the LIST failed):
        seconds to wait before trying again, or None to stop."""


@dataclass(eq=False)
class ListWatch:
    """List, then watch from the list's version, until stopped (see the module docstring).

    `list_()` returns a `ListResult`; `watch_(version)` opens a stream of `WatchEvent`s.
    `version` starts watching from a known version instead of listing first (a version the
    server no longer has gives 410, which makes it list). A watch that ends with no event in
    less than `min_watch_seconds` counts as a failure and waits `backoff(failures)`: a server
    that ends watches at once is no progress.
    """

    list_: Callable[[], ListResult]
    watch_: Callable[[str], WatchStreamLike]
    policy: Policy
    version: str | None = None
    """Where the next watch starts; None: list first."""
    backoff: Callable[[int], float] = _backoff
    min_watch_seconds: float = 0.0
    clock: Callable[[], float] = time.monotonic
    what: str = ""
    """Names the watch in errors (`watch pods`)."""
    lists: int = field(default=0, init=False)
    """How many times the collection was listed (1 + one per 410)."""
    watches: int = field(default=0, init=False)
    """How many watch requests were answered."""
    stop: threading.Event = field(default_factory=threading.Event, init=False)
    _stream: WatchStreamLike | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def run(self, stop: threading.Event | None = None) -> None:
        """Loop until `stop` (or `close()`) or until the policy gives up. Never raises."""
        if stop is not None:
            self.stop = stop
        stop = self.stop
        failures = 0
        while not stop.is_set():
            listing = self.version is None
            try:
                if self.version is None:
                    result = self.list_()
                    self.lists += 1
                    self.version = str(result.resource_version)
                    self.policy.on_sync(result.items)
                    listing = False
                started = self.clock()
                events = self._watch_once(self.version, stop)
                if (
                    events == 0
                    and self.version is not None
                    and self.clock() - started < self.min_watch_seconds
                ):
                    failures += 1
                    stop.wait(self.backoff(failures))
                else:
                    failures = 0
            except ApiError as err:
                if err.gone:
                    self.version = None
                    continue
                if stop.is_set():
                    return
                failures += 1
                if not self._retry(self.policy.on_failure(err, failures, listing), stop):
                    return
            except Exception as err:
                if stop.is_set():
                    return
                failures += 1
                if not self._retry(self.policy.on_failure(err, failures, listing), stop):
                    return

    @staticmethod
    def _retry(delay: float | None, stop: threading.Event) -> bool:
        if delay is None:
            return False
        stop.wait(delay)
        return True

    def close(self) -> None:
        """Stop `run()` from any thread: also wakes it from a blocked watch."""
        self.stop.set()
        with self._lock:
            stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()

    def _watch_once(self, version: str, stop: threading.Event) -> int:
        """One watch from `version`, keeping `self.version` at the last one seen (so a broken
        watch resumes there); returns how many events came. 410 raises `ApiError` (gone)."""
        stream = self.watch_(version)
        self.watches += 1
        with self._lock:
            if stop.is_set():
                stream.close()
                return 0
            self._stream = stream
        events = 0
        try:
            for event in stream:
                if stop.is_set():
                    break
                events += 1
                kind, obj = str(event.type), event.object
                if kind == "ERROR":
                    raise ApiError.from_status(obj, what=self.what or "watch")
                new_version = _version(obj) or self.version
                if kind != "BOOKMARK":
                    self.policy.on_event(kind, obj)
                self.version = new_version
        finally:
            with self._lock:
                self._stream = None
            stream.close()
        return events
