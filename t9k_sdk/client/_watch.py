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

import json
import queue
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import urllib3
from kubernetes.client.exceptions import ApiException

from t9k_sdk.client._api import Api, Response, abort, lines, request_error
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


class Watcher:
    """Watch `url` (a collection) with optional selectors; events go to `sink`.

    `start()` begins in a daemon thread; `close()` stops it from any thread, also while it is
    blocked reading the watch. `resource_version` starts watching from a known version instead of
    listing first (a version the server no longer has gives 410, which makes it list).
    """

    def __init__(
        self,
        api: Api,
        url: str,
        sink: queue.Queue[WatchEvent],
        *,
        source: str = "",
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        watch_seconds: int = WATCH_SECONDS,
        max_failures: int = 5,
    ) -> None:
        self.api = api
        self.url = url
        self.sink = sink
        self.source = source
        self.selectors = {"labelSelector": label_selector, "fieldSelector": field_selector}
        self.resource_version = resource_version
        self.watch_seconds = watch_seconds
        self.max_failures = max_failures
        self.relists = 0
        """How many times the collection was listed (1 + one per 410)."""
        self.rewatches = 0
        """How many watch requests were made."""
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._response: Response | None = None
        self._thread = threading.Thread(target=self._run, name=f"t9k-watch-{url}", daemon=True)

    def start(self) -> Watcher:
        self._thread.start()
        return self

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            response, self._response = self._response, None
        if response is not None:
            abort(response)

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    # -- the thread ------------------------------------------------------------------------------

    def _emit(self, event: WatchEvent) -> None:
        if not self._closed.is_set():
            self.sink.put(event)

    def _run(self) -> None:
        failures = 0
        while not self._closed.is_set():
            try:
                if self.resource_version is None:
                    self._list()
                self._watch()
                failures = 0
            except _Gone:
                self.resource_version = None
            except ClusterUnreachableError as exc:
                if self._closed.is_set():
                    return
                failures += 1
                if failures >= self.max_failures:
                    self._emit(WatchEvent("ERROR", self.source, error=exc))
                    return
                self._closed.wait(min(0.25 * 2**failures, 5.0))
            except ClientError as exc:
                self._emit(WatchEvent("ERROR", self.source, error=exc))
                return

    def _list(self) -> None:
        data = self.api.json("GET", self.url, query=self.selectors)
        self.relists += 1
        self.resource_version = str((data.get("metadata") or {}).get("resourceVersion") or "")
        items = [dict(i) for i in data.get("items") or ()]
        self._emit(WatchEvent("SYNC", self.source, objects=items))

    def _watch(self) -> None:
        query = {
            **self.selectors,
            "watch": True,
            "allowWatchBookmarks": True,
            "resourceVersion": self.resource_version,
            "timeoutSeconds": self.watch_seconds,
        }
        try:
            # The server ends the watch after `watch_seconds`; a connection silent for longer
            # than that is dead, and is renewed.
            response = self.api.call(
                "GET", self.url, query=query, read_timeout=self.watch_seconds + 30
            )
        except ApiException as exc:
            if exc.status == 410:
                raise _Gone() from None
            raise request_error(exc, self.api.server) from None
        self.rewatches += 1
        with self._lock:
            if self._closed.is_set():
                abort(response)
                return
            self._response = response
        try:
            for line in lines(response):
                if not line.strip():
                    continue
                self._handle(json.loads(line))
        except (_Gone, ClientError):
            raise
        except Exception as exc:
            if self._closed.is_set():
                return  # close() aborted the read: whatever it raised means nothing
            if not isinstance(exc, urllib3.exceptions.HTTPError | OSError | ValueError):
                raise
            raise ClusterUnreachableError(f"the watch of {self.url} broke off: {exc}") from None
        finally:
            with self._lock:
                self._response = None
            abort(response)

    def _handle(self, event: Mapping[str, Any]) -> None:
        kind = str(event.get("type", ""))
        obj = dict(event.get("object") or {})
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise _Gone()
            message = str(obj.get("message") or obj)
            raise ClientError(f"the watch of {self.url} failed: {message}")
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if version:
            self.resource_version = str(version)
        if kind == "BOOKMARK":
            return
        self._emit(WatchEvent(kind, self.source, obj=obj))


class _Gone(Exception):
    """The resource version is too old (410): list again."""


def drain(sink: queue.Queue[WatchEvent], timeout: float | None) -> WatchEvent | None:
    """The next event, or None when `timeout` seconds pass first."""
    try:
        return sink.get(timeout=None if timeout is None else max(0.0, timeout))
    except queue.Empty:
        return None


def monotonic() -> float:
    return time.monotonic()
