"""What the controller remembers of each job between passes (client-go keeps the same).

* **Expectations**: the writes of a pass that the caches must show before the next pass of that
  job runs, so that a pass never acts on a view older than its own last writes; and the uids of
  children whose deletion the watches showed (a child created and deleted before the next pass
  meets its create's expectation).
* **Refused writes**: creates and updates the API server refused for good, shown to the core
  (`Observed.failures`) until the write goes through or the job no longer wants it.
* **Held creates**: refused creates held back until the job's backoff has passed, so that passes
  woken by other events (its pods' progress) do not send them again at once.
* **Foreign objects**: objects found under a child's name that the job does not control, kept as
  metadata only and shown to the core until they are gone.

One lock guards it all: workers of different jobs, and the watches, touch it at once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from t9k_operator.informer import Store, resource_version
from t9k_sdk import _objects as o
from t9k_sdk._kube.resources import Resource
from t9k_sdk.reconcile import ChildFailure, Manifest, Plan

__all__ = ["Expectations", "JobKey", "JobMemory", "job_key_str", "metadata_only"]

JobKey = tuple[str, str, str]
"""(kind, namespace, name) of a job."""

_GONE_REMEMBERED = 10_000
"""How many deleted children's uids the controller remembers (enough for any pass's creates)."""


def job_key_str(key: JobKey) -> str:
    return "/".join(key)


@dataclass
class Expectations:
    """Writes of a pass that the caches must show before the next pass of that job runs."""

    deadline: float
    present: list[tuple[Resource, str, str, str]] = field(default_factory=list)
    """(resource, namespace, name, resourceVersion written): cached version must differ from
    the version before (any version at all for creates)."""
    absent: list[tuple[Resource, str, str, str]] = field(default_factory=list)
    """(resource, namespace, name, uid) deleted: must leave the cache, change uid, or show its
    deletionTimestamp (a graceful deletion takes the object's grace period)."""
    created: list[tuple[Resource, str, str, str]] = field(default_factory=list)
    """(resource, namespace, name, uid) created: must be in the cache, or have come and gone
    already (someone deleted it at once: the watch showed its deletion). Without the second,
    a child deleted right after its create held its job until the deadline (client-go's
    expectations count the add event for the same reason)."""

    def __bool__(self) -> bool:
        return bool(self.present or self.absent or self.created)

    def shown(self, store: Callable[[Resource], Store], gone: Callable[[str], bool]) -> bool:
        """The caches (`store` of each resource) show every write; `gone`: a child's deletion
        was seen (by its uid)."""
        for resource, namespace, name, before in self.present:
            cached = store(resource).get(namespace, name)
            if cached is None or (before and resource_version(cached) == before):
                return False
        for resource, namespace, name, uid in self.created:
            if store(resource).get(namespace, name) is None and not gone(uid):
                return False
        for resource, namespace, name, uid in self.absent:
            meta = o.meta(store(resource).get(namespace, name) or {})
            if meta.uid == uid and not meta.deletion_timestamp:
                return False
        return True


def metadata_only(resource: Resource, obj: Mapping[str, Any]) -> Manifest:
    """A foreign object as the core needs it: never keep someone else's data or keys."""
    meta = o.meta(obj).raw
    keep = ("name", "namespace", "uid", "resourceVersion", "ownerReferences", "labels")
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {k: meta[k] for k in keep if k in meta},
    }


class JobMemory:
    """The per-job memory of the controller (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._expect: dict[JobKey, Expectations] = {}
        # uids of children whose deletion the watches showed, the newest last (bounded).
        self._gone: OrderedDict[str, None] = OrderedDict()
        self._failures: dict[JobKey, dict[tuple[str, str, str], ChildFailure]] = {}
        self._foreign: dict[JobKey, dict[tuple[str, str], tuple[Resource, Manifest]]] = {}
        # Keyed by (kind, name) with the refused manifest's digest: an edited spec is sent at once.
        self._held: dict[JobKey, dict[tuple[str, str], tuple[str, float]]] = {}

    def forget_job(self, key: JobKey) -> None:
        """The job is gone or being deleted: nothing of it is needed any more."""
        with self._lock:
            self._expect.pop(key, None)
            self._failures.pop(key, None)
            self._foreign.pop(key, None)
            self._held.pop(key, None)

    # --- expectations -----------------------------------------------------------------------

    def expect(self, key: JobKey, expectations: Expectations) -> None:
        with self._lock:
            self._expect[key] = expectations

    def expectations(self, key: JobKey) -> Expectations | None:
        with self._lock:
            return self._expect.get(key)

    def clear_expectations(self, key: JobKey) -> None:
        with self._lock:
            self._expect.pop(key, None)

    def child_gone(self, uid: str) -> None:
        """The watches showed the deletion of the child with this uid."""
        with self._lock:
            self._gone[uid] = None
            while len(self._gone) > _GONE_REMEMBERED:
                self._gone.popitem(last=False)

    def gone(self, uid: str) -> bool:
        with self._lock:
            return uid in self._gone

    # --- refused writes ---------------------------------------------------------------------

    def failures(self, key: JobKey) -> tuple[ChildFailure, ...]:
        with self._lock:
            return tuple((self._failures.get(key) or {}).values())

    def remember_failure(self, key: JobKey, failure: ChildFailure) -> None:
        with self._lock:
            failures = self._failures.setdefault(key, {})
            failures[(failure.action, failure.kind, failure.name)] = failure

    def prune_failures(self, key: JobKey, plan: Plan) -> None:
        """Forget refusals of writes the job no longer wants (its spec changed)."""
        planned = {("create", str(m.get("kind")), o.meta(m).name) for m in plan.create}
        planned |= {
            ("update", str(u.manifest.get("kind")), o.meta(u.manifest).name) for u in plan.update
        }
        with self._lock:
            failures = self._failures.get(key)
            if failures is None:
                return
            for what in [w for w in failures if w not in planned]:
                del failures[what]
            if not failures:
                del self._failures[key]

    def forget_failure(self, key: JobKey, action: str, kind: str, name: str) -> None:
        """The write went through: the job no longer shows its earlier refusal."""
        with self._lock:
            failures = self._failures.get(key)
            if failures is not None:
                failures.pop((action, kind, name), None)
                if not failures:
                    del self._failures[key]

    # --- held creates -----------------------------------------------------------------------

    def hold(self, key: JobKey, refused: Mapping[tuple[str, str], str], until: float) -> None:
        """Hold back a pass's refused creates ((kind, name) -> digest) until `until`
        (monotonic)."""
        with self._lock:
            entries = self._held.setdefault(key, {})
            for what, digest in refused.items():
                entries[what] = (digest, until)
            if not entries:
                del self._held[key]

    def held_until(self, key: JobKey) -> float:
        with self._lock:
            return max((until for _, until in (self._held.get(key) or {}).values()), default=0.0)

    def held_creates(self, key: JobKey, now: float) -> set[tuple[str, str, str]]:
        """(kind, name, digest) of the refused creates still held back (expired ones go)."""
        out: set[tuple[str, str, str]] = set()
        with self._lock:
            entries = self._held.get(key)
            if not entries:
                return out
            for what, (digest, until) in list(entries.items()):
                if until <= now:
                    del entries[what]
                else:
                    out.add((*what, digest))
            if not entries:
                del self._held[key]
        return out

    # --- foreign objects --------------------------------------------------------------------

    def foreign(self, key: JobKey) -> dict[tuple[str, str], Resource]:
        """(kind, name) -> resource of the foreign objects found under the job's child names."""
        with self._lock:
            return {
                what: resource for what, (resource, _) in (self._foreign.get(key) or {}).items()
            }

    def remember_foreign(
        self, key: JobKey, resource: Resource, name: str, obj: Mapping[str, Any]
    ) -> Manifest:
        """A foreign object holds the child name `name`; returns what is kept of it (metadata
        only)."""
        kept = metadata_only(resource, obj)
        with self._lock:
            self._foreign.setdefault(key, {})[(resource.kind, name)] = (resource, kept)
        return kept

    def forget_foreign(self, key: JobKey, kind: str, name: str) -> None:
        """The object is gone, or the job's own now."""
        with self._lock:
            entries = self._foreign.get(key)
            if entries is not None:
                entries.pop((kind, name), None)
                if not entries:
                    del self._foreign[key]
