"""List-then-watch caches of one resource kind (client-go's reflector + store, in small).

The loop itself is `t9k_sdk._kube.listwatch.ListWatch`, shared with the client's watcher; the
informer is its policy (below) and its cache (`Store`).

An `Informer` lists its resource, fills its `Store`, then watches from the list's
resourceVersion with bookmarks, applying every event to the store and reporting it to a handler.
When the watch ends (server timeout) it watches again from the last resourceVersion seen; when
the API server says that version is gone (410, as an HTTP status or an ERROR event) it lists
again, reporting what changed meanwhile; on any other error it waits with exponential backoff
and tries again. A resource the server does not serve (404 on the list, e.g. no PodGroup CRD)
counts as synced and empty, and is retried every minute.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import KW_ONLY, InitVar, dataclass, field
from typing import Any, Final, Protocol

from t9k_operator.workqueue import Backoff
from t9k_sdk import _objects as o
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk._kube.listwatch import ListResult, ListWatch, WatchStreamLike
from t9k_sdk._kube.resources import Resource
from t9k_sdk.reconcile import Manifest

__all__ = ["Handler", "Informer", "ObjectKey", "Store", "WatchSource", "controller_uid"]

log = logging.getLogger(__name__)

ObjectKey = tuple[str, str]
"""(namespace, name)."""

Handler = Callable[[str, Manifest | None, Manifest | None], None]
"""handler(event type, new object or None if deleted, old object or None if new)."""

NOT_SERVED_RETRY_SECONDS = 60.0


class WatchSource(Protocol):
    """What an informer needs from the API (`cluster.Cluster` has it)."""

    def list(
        self, resource: Resource, namespace: str | None = None, label_selector: str | None = None
    ) -> Any: ...

    def watch(
        self,
        resource: Resource,
        namespace: str | None,
        resource_version: str,
        *,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
    ) -> WatchStreamLike: ...


def object_key(obj: Mapping[str, Any]) -> ObjectKey:
    return o.key(obj)


def resource_version(obj: Mapping[str, Any]) -> str:
    return o.meta(obj).resource_version


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    """The uid in the object's controller owner reference, if it has one."""
    ref = o.meta(obj).controller
    return ref.uid if ref is not None and ref.uid else None


class Store:
    """A thread-safe cache of objects by (namespace, name), indexed by (namespace, controller
    owner uid): an object counts as a job's child only in the job's own namespace, as
    controller-runtime and the batch/v1 Job controller list them. An ownerReference is written
    by whoever creates the object, so one in another namespace proves nothing."""

    def __init__(self, trim: Callable[[Manifest], Manifest] | None = None) -> None:
        self._trim = trim
        """Applied to each object before it is kept (the operator keeps only what it reads)."""
        self._lock = threading.Lock()
        self._objects: dict[ObjectKey, Manifest] = {}
        self._by_owner: dict[ObjectKey, set[ObjectKey]] = {}

    def get(self, namespace: str, name: str) -> Manifest | None:
        with self._lock:
            return self._objects.get((namespace, name))

    def owned_by(self, namespace: str, uid: str) -> list[Manifest]:
        """Objects in `namespace` whose controller owner reference has this uid."""
        with self._lock:
            return [self._objects[k] for k in sorted(self._by_owner.get((namespace, uid), ()))]

    def objects(self) -> list[Manifest]:
        with self._lock:
            return list(self._objects.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._objects)

    def put(self, obj: Manifest) -> Manifest | None:
        """Insert or replace; return the previous object of that key.

        The store keeps objects without `metadata.managedFields`: nothing in the operator reads
        them, and they are a third to a half of a pod's bytes once the scheduler and the kubelet
        have written its status (client-go informers drop them the same way). The keys of its
        mappings are shared with every other object: the operator decodes with orjson, whose
        key cache hands out one "metadata", "containers", ... for thousands of cached pods."""
        if self._trim is not None:
            obj = self._trim(obj)
        meta = obj.get("metadata")
        if isinstance(meta, dict) and "managedFields" in meta:
            obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
        key = object_key(obj)
        with self._lock:
            old = self._objects.get(key)
            self._unindex(key, old)
            self._objects[key] = obj
            uid = controller_uid(obj)
            if uid is not None:
                self._by_owner.setdefault((key[0], uid), set()).add(key)
            return old

    def remove(self, obj: Mapping[str, Any]) -> Manifest | None:
        key = object_key(obj)
        with self._lock:
            old = self._objects.pop(key, None)
            self._unindex(key, old)
            return old

    def _unindex(self, key: ObjectKey, old: Manifest | None) -> None:
        uid = controller_uid(old) if old is not None else None
        if uid is not None:
            keys = self._by_owner.get((key[0], uid))
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_owner[(key[0], uid)]

    def replace(
        self, items: Iterable[Manifest]
    ) -> list[tuple[str, Manifest | None, Manifest | None]]:
        """Make the store hold exactly `items`; return the changes as (type, new, old):
        ADDED for new keys, MODIFIED where the resourceVersion differs, DELETED for vanished ones.
        """
        changes: list[tuple[str, Manifest | None, Manifest | None]] = []
        fresh = {object_key(o): o for o in items}
        with self._lock:
            old_objects = dict(self._objects)
        for key, vanished in old_objects.items():
            if key not in fresh:
                self.remove(vanished)
                changes.append(("DELETED", None, vanished))
        for obj in fresh.values():
            previous = self.put(obj)
            if previous is None:
                changes.append(("ADDED", obj, None))
            elif resource_version(previous) != resource_version(obj):
                changes.append(("MODIFIED", obj, previous))
        return changes


WATCH_TIMEOUT: Final = (300, 600)
"""Seconds after which the server ends a watch, a random number in this range (client-go's
reflector asks for 5-10 minutes); `--watch-timeout-seconds` sets another."""


@dataclass(eq=False)
class Informer:
    """List-then-watch one resource into a `Store` (see the module docstring): the operator's
    policy (cache, retry for ever with back-off, a resource not served counts as empty) over
    the shared loop `t9k_sdk._kube.listwatch.ListWatch`."""

    source: WatchSource
    resource: Resource
    _: KW_ONLY
    namespace: str | None = None
    label_selector: str | None = None
    handler: Handler | None = None
    backoff: Backoff = field(default_factory=lambda: Backoff(base=0.5, cap=30.0))
    trim: Callable[[Manifest], Manifest] | None = None
    """What the store keeps of each object (e.g. `t9k_sdk.reconcile.observe.trim_pod`)."""
    watch_timeout: tuple[int, int] = WATCH_TIMEOUT
    """The server ends each watch after a random number of seconds in this range."""
    optional: bool = False
    """A list the operator is not allowed (403) counts as not served too: for a read it may
    lack without harm (Kueue's cluster-scoped flavours, under a namespace's Role)."""
    min_watch_seconds: InitVar[float] = 1.0
    clock: InitVar[Callable[[], float]] = time.monotonic
    store: Store = field(default_factory=lambda: Store(), init=False)
    synced: threading.Event = field(default_factory=threading.Event, init=False)
    """Set once the first list is in the store (or the resource turned out not to be served)."""
    served: bool = field(default=True, init=False)
    """False while the API server answers 404 for this resource."""
    _loop: ListWatch = field(init=False)

    def __post_init__(self, min_watch_seconds: float, clock: Callable[[], float]) -> None:
        if self.trim is not None:
            self.store = Store(self.trim)
        self._loop = ListWatch(
            self._list,
            self._watch,
            self,
            backoff=self.backoff.delay,
            min_watch_seconds=min_watch_seconds,
            clock=clock,
            what=f"watch {self.resource}",
        )

    def __str__(self) -> str:
        where = self.namespace or "all namespaces"
        return f"{self.resource} ({where})"

    @property
    def lists(self) -> int:
        """How many times the informer listed (1 + re-lists)."""
        return self._loop.lists

    @property
    def version(self) -> str | None:
        """Where the next watch starts; None: list first."""
        return self._loop.version

    def run(self, stop: threading.Event | None = None) -> None:
        """List and watch until `stop` (or `self.stop()`) is set. Never raises."""
        self._loop.version = None
        self._loop.run(stop)

    def stop(self) -> None:
        """Stop `run()` soon: closes the open watch."""
        self._loop.close()

    # -- the source ------------------------------------------------------------------------------

    def _list(self) -> ListResult:
        result: ListResult = self.source.list(self.resource, self.namespace, self.label_selector)
        return result

    def _watch(self, version: str) -> WatchStreamLike:
        low, high = self.watch_timeout
        return self.source.watch(
            self.resource,
            self.namespace,
            version,
            label_selector=self.label_selector,
            timeout_seconds=random.randint(low, high),
        )

    # -- the policy (listwatch.Policy) -----------------------------------------------------------

    def on_sync(self, items: list[Manifest]) -> None:
        changes = self.store.replace(items)
        if not self.served:
            log.info("%s is served again", self)
        self.served = True
        self.synced.set()
        for change in changes:
            self._notify(*change)

    def on_event(self, type: str, obj: Manifest) -> None:
        if type in ("ADDED", "MODIFIED"):
            obj = {"apiVersion": self.resource.api_version, "kind": self.resource.kind, **obj}
            old = self.store.put(obj)
            self._notify(type, obj, old)
        elif type == "DELETED":
            old = self.store.remove(obj)
            self._notify(type, None, old or obj)

    def on_failure(self, error: Exception, failures: int, listing: bool) -> float | None:
        if isinstance(error, ApiError):
            if listing and (error.not_found or (self.optional and error.status == 403)):
                if self.served:
                    why = (
                        "is not served by the API server (is its CRD installed?)"
                        if error.not_found
                        else "may not be listed by the operator (its role does not allow it:"
                        " see the install guide's RBAC)"
                    )
                    log.warning(
                        "%s %s; treating it as empty and retrying every %.0fs",
                        self,
                        why,
                        NOT_SERVED_RETRY_SECONDS,
                    )
                self.served = False
                self.synced.set()
                return NOT_SERVED_RETRY_SECONDS
            delay = self.backoff.delay(failures)
            log.warning("%s: %s; retrying in %.1fs", self, error, delay)
            return delay
        delay = self.backoff.delay(failures)
        log.error("%s: unexpected error; retrying in %.1fs", self, delay, exc_info=error)
        return delay

    def _notify(self, kind: str, new: Manifest | None, old: Manifest | None) -> None:
        if self.handler is None:
            return
        try:
            self.handler(kind, new, old)
        except Exception:
            log.exception("%s: event handler failed", self)
