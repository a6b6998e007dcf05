"""List-then-watch of one collection in a background thread, delivering events to a queue.

    LIST (resourceVersion R)  -> ("SYNC", every object)
    WATCH from R              -> ("ADDED" | "MODIFIED" | "DELETED", object), bookmarks move R
    the server ends the watch -> WATCH again from the last R (no events are lost)
    410 Gone / "too old"      -> LIST again (a new SYNC), then WATCH from its version
    an error that retrying cannot fix (403, 404, ...) -> ("ERROR", ClientError); the thread ends
    no answer                 -> retried with back-off; after `max_failures` in a row, ERROR

Nothing is polled: between changes the thread is blocked on the open watch.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import KW_ONLY, InitVar, dataclass, field
from typing import Any

from t9k_sdk._kube import listwatch
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk._kube.listwatch import ListResult, ListWatch, WatchStream
from t9k_sdk.client._api import Api, client_error
from t9k_sdk.client.errors import ClientError, ClusterUnreachableError

__all__ = ["WatchEvent", "Watcher"]

WATCH_SECONDS = 240
"""How long one watch request lasts on the server before it is renewed."""


@dataclass(frozen=True)
class WatchEvent:
    """SYNC (objects: the whole collection), ADDED, MODIFIED, DELETED (obj), or ERROR (error)."""

    type: str
    source: str = ""
    """The tag the watcher was created with (to tell several watchers apart on one queue)."""
    obj: dict[str, Any] = field(default_factory=dict)
    objects: list[dict[str, Any]] = field(default_factory=list)
    error: ClientError | None = None


@dataclass(eq=False)
class Watcher:
    """Watch `url` (a collection) with optional selectors; events go to `sink`.

    `start()` begins in a daemon thread; `close()` stops it from any thread, also while it is
    blocked reading the watch. `resource_version` starts watching from a known version instead of
    listing first (a version the server no longer has gives 410, which makes it list).

    The loop is the shared `t9k_sdk._kube.listwatch.ListWatch`; this class is the client's
    policy: deliver to a queue, give up (an ERROR event) on an error retrying cannot fix, and
    after `max_failures` failures in a row to reach the server.
    """

    api: Api
    url: str
    sink: queue.Queue[WatchEvent]
    _: KW_ONLY
    source: str = ""
    """The tag of this watcher's events (to tell several watchers apart on one queue)."""
    label_selector: str | None = None
    field_selector: str | None = None
    resource_version: InitVar[str | None] = None
    watch_seconds: int = WATCH_SECONDS
    max_failures: int = 5
    _loop: ListWatch = field(init=False)
    _thread: threading.Thread = field(init=False)

    def __post_init__(self, resource_version: str | None) -> None:
        self._loop = ListWatch(
            self._list, self._watch, self, version=resource_version, what=f"watch {self.url}"
        )
        self._thread = threading.Thread(
            target=self._loop.run, name=f"t9k-watch-{self.url}", daemon=True
        )

    @property
    def relists(self) -> int:
        """How many times the collection was listed (1 + one per 410)."""
        return self._loop.lists

    @property
    def rewatches(self) -> int:
        """How many watch requests were made."""
        return self._loop.watches

    def start(self) -> Watcher:
        self._thread.start()
        return self

    def close(self) -> None:
        self._loop.close()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    # -- requests --------------------------------------------------------------------------------

    def _list(self) -> ListResult:
        return listwatch.list_all(
            self.api.call,
            self.url,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            what=f"list {self.url}",
        )

    def _watch(self, version: str) -> WatchStream:
        # The server ends the watch after `watch_seconds`; a connection silent for longer
        # than that is dead, and is renewed.
        return listwatch.watch(
            self.api.call,
            self.url,
            version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=self.watch_seconds,
            what=f"watch {self.url}",
        )

    # -- the policy (listwatch.Policy) -----------------------------------------------------------

    def _emit(self, event: WatchEvent) -> None:
        if not self._loop.stop.is_set():
            self.sink.put(event)

    def on_sync(self, items: list[dict[str, Any]]) -> None:
        self._emit(WatchEvent("SYNC", self.source, objects=items))

    def on_event(self, type: str, obj: dict[str, Any]) -> None:
        self._emit(WatchEvent(type, self.source, obj=obj))

    def on_failure(self, error: Exception, failures: int, listing: bool) -> float | None:
        if isinstance(error, ApiError) and error.unreachable:
            if failures < self.max_failures:
                return min(0.25 * 2.0**failures, 5.0)
            if error.reason == "BrokenStream":
                problem: ClientError = ClusterUnreachableError(
                    f"the watch of {self.url} broke off: {error.message}"
                )
            else:
                problem = client_error(error, self.api.server)
        elif isinstance(error, ApiError):
            problem = client_error(error, self.api.server)
        else:
            problem = ClientError(f"the watch of {self.url} failed: {error}")
        self._emit(WatchEvent("ERROR", self.source, error=problem))
        return None


def drain(sink: queue.Queue[WatchEvent], timeout: float | None) -> WatchEvent | None:
    """The next event, or None when `timeout` seconds pass first."""
    try:
        return sink.get(timeout=None if timeout is None else max(0.0, timeout))
    except queue.Empty:
        return None


def monotonic() -> float:
    return time.monotonic()
