"""The only module of the operator that talks to the API server.

`Cluster` is the operator's verbs over the shared transport (`t9k_sdk._kube`), on raw camelCase
dicts (the shape the pure core reads and writes):

    list / watch          jobs of the three kinds, and children by label selector
    get                   one object (the Lease)
    create                AlreadyExists is not an error (a previous pass created it)
    replace               an `Update`: the manifest carries its resourceVersion (409 -> ApiError)
    delete                with a uid precondition and a grace period (NotFound is not an error)
    replace_status        a job's status subresource, with the job's resourceVersion
    record_events         Events on a job; repeats are counted, not duplicated
    get/create/update_lease

Every request first takes a token from a rate limiter (`--qps`, `--burst`): the transport's
`before` hook. As in a client-go controller, where each client has a token bucket of its own, there
are three buckets of that size: one for reads and the children's writes, one for status writes (the
status client of controller-runtime), and one for Events (the event recorder's client). So a job's
status write never waits behind other jobs' pod creates, nor an Event behind either (`--qps 0`: no
buckets, no client-side limit). Every failure is raised as `ApiError`. Neither this module nor any
other of the operator imports the Kubernetes client: `t9k_sdk._kube` does (import-linter contracts
in pyproject.toml say so).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson

from t9k_operator.events import MESSAGE_LIMIT, aggregate
from t9k_operator.ratelimit import TokenBucket
from t9k_sdk import __version__ as _VERSION
from t9k_sdk import _conventions as names
from t9k_sdk._kube import config, listwatch
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk._kube.config import ConfigError
from t9k_sdk._kube.listwatch import ListResult, WatchEvent, WatchStream
from t9k_sdk._kube.resources import EVENTS, LEASES, Resource, resource_for
from t9k_sdk._kube.transport import MERGE_PATCH, Query, Transport
from t9k_sdk._objects import api_version, kind, meta
from t9k_sdk.reconcile import Event, Manifest

__all__ = [
    "REPORTING_COMPONENT",
    "Cluster",
    "ConfigError",
    "ListResult",
    "WatchEvent",
    "WatchStream",
]

log = logging.getLogger(__name__)

REPORTING_COMPONENT = "t9k-operator"
"""`source.component` and `reportingComponent` of the Events the operator records."""

_EVENT_CACHE_SIZE = 4096
_EVENT_AGGREGATE_SECONDS = 600.0
"""A repeat of an Event within this time bumps the existing Event's count (as client-go does)."""


class Cluster:
    """Typed access to the API server (see the module docstring).

    `api_client` is a `kubernetes.client.ApiClient` (tests pass a recorder with the `call_api`
    of kubernetes <= 36; `t9k_sdk._kube.transport.send` speaks both signatures). `identity` names this
    process in the Events it records; `page_size` is the objects per page of a list
    (`--list-page-size`).
    """

    def __init__(
        self,
        api_client: Any,
        *,
        limiter: TokenBucket | None = None,
        event_limiter: TokenBucket | None = None,
        status_limiter: TokenBucket | None = None,
        request_timeout: float = 30.0,
        identity: str = "",
        observe: Callable[[str, int], None] | None = None,
        page_size: int = listwatch.PAGE_SIZE,
    ) -> None:
        self._limiter = limiter
        self._page_size = page_size
        # Events take their tokens from a bucket of their own (client-go's event recorder has its
        # own client and rate limiter), so recording them never holds back the writes of jobs.
        self._event_limiter = event_limiter
        # Status writes likewise (controller-runtime's status client has its own rate limiter).
        self._status_limiter = status_limiter
        self._recording = threading.local()
        self.transport = Transport(
            api_client,
            timeout=request_timeout,
            before=self._take_token if limiter or event_limiter or status_limiter else None,
            observe=observe,
            loads=orjson.loads,
        )
        self.identity = identity
        self._events: OrderedDict[tuple[str, ...], tuple[str, int, float]] = OrderedDict()
        self._events_lock = threading.Lock()

    def _take_token(self) -> None:
        bucket = self._limiter
        if getattr(self._recording, "events", False) and self._event_limiter:
            bucket = self._event_limiter
        elif getattr(self._recording, "status", False) and self._status_limiter:
            bucket = self._status_limiter
        if bucket is not None:
            bucket.take()

    @classmethod
    def connect(
        cls,
        *,
        kubeconfig: str | None = None,
        context: str | None = None,
        qps: float = 50.0,
        burst: int = 100,
        connections: int = 16,
        identity: str = "",
        observe: Callable[[str, int], None] | None = None,
        page_size: int | None = None,
    ) -> Cluster:
        """Connect with a kubeconfig, or in-cluster when running in a pod without one.
        `qps` and `burst` size each token bucket; `qps` 0: no client-side rate limit at all.
        `observe(method, status)` hears of every request (the metrics).

        Raises `ConfigError` when there is no usable configuration."""
        connection = config.connect(
            kubeconfig,
            context,
            in_cluster=kubeconfig is None and config.in_a_pod(),
            user_agent=f"{REPORTING_COMPONENT}/{_VERSION}",
            pool_size=connections,
        )

        def bucket() -> TokenBucket | None:
            return TokenBucket(qps, burst) if qps else None

        return cls(
            connection.api_client,
            limiter=bucket(),
            event_limiter=bucket(),
            status_limiter=bucket(),
            identity=identity,
            observe=observe,
            page_size=page_size or listwatch.PAGE_SIZE,
        )

    @property
    def server(self) -> str:
        return self.transport.server

    def close(self) -> None:
        self.transport.close()

    # --- requests -------------------------------------------------------------------------

    def _json(
        self,
        method: str,
        path: str,
        *,
        what: str,
        query: Query | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Manifest:
        """Send one request (after a rate-limit token); return its JSON answer."""
        return self.transport.request(
            method, path, what=what, query=query, body=body, content_type=content_type
        )

    # --- reads ----------------------------------------------------------------------------

    def list(
        self, resource: Resource, namespace: str | None = None, label_selector: str | None = None
    ) -> ListResult:
        """Every object of `resource` (in `namespace`, or all), page by page."""
        return listwatch.list_all(
            self.transport.send,
            resource.path(namespace),
            resource=resource,
            label_selector=label_selector,
            page_size=self._page_size,
            what=f"list {resource}",
        )

    def watch(
        self,
        resource: Resource,
        namespace: str | None,
        resource_version: str,
        *,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
    ) -> WatchStream:
        """Watch from `resource_version`, with bookmarks; the server ends it after the timeout."""
        return listwatch.watch(
            self.transport.send,
            resource.path(namespace),
            resource_version,
            label_selector=label_selector,
            timeout_seconds=timeout_seconds,
            what=f"watch {resource}",
        )

    def get(self, resource: Resource, namespace: str, name: str) -> Manifest | None:
        """One object, or None if it does not exist."""
        try:
            return self._json(
                "GET", resource.path(namespace, name), what=f"get {resource} {namespace}/{name}"
            )
        except ApiError as err:
            if err.not_found:
                return None
            raise

    # --- writes ---------------------------------------------------------------------------

    def create(self, manifest: Mapping[str, Any], namespace: str) -> Manifest | None:
        """Create `manifest` in `namespace`; None if an object of that name already exists."""
        resource = resource_for(api_version(manifest), kind(manifest))
        body = dict(manifest)
        body["metadata"] = {**meta(manifest).raw, "namespace": namespace}
        name = meta(manifest).name
        try:
            return self._json(
                "POST",
                resource.path(namespace),
                what=f"create {resource} {namespace}/{name}",
                query={"fieldManager": names.FIELD_MANAGER},
                body=body,
            )
        except ApiError as err:
            if err.already_exists:
                return None
            raise

    def replace(
        self, manifest: Mapping[str, Any], namespace: str, *, subresource: str | None = None
    ) -> Manifest:
        """Replace an object (or its `subresource`, "status"); its `metadata.resourceVersion`
        makes a stale write a 409."""
        resource = resource_for(api_version(manifest), kind(manifest))
        name = meta(manifest).name
        body = dict(manifest)
        body["metadata"] = {**meta(manifest).raw, "namespace": namespace}
        where = f"{subresource} of " if subresource else ""
        return self._json(
            "PUT",
            resource.path(namespace, name, subresource),
            what=f"replace {where}{resource} {namespace}/{name}",
            query={"fieldManager": names.FIELD_MANAGER},
            body=body,
        )

    def delete(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        *,
        uid: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> bool:
        """Delete one object; False if it was already gone (or replaced by one with another uid)."""
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "propagationPolicy": "Background",
        }
        if uid is not None:
            body["preconditions"] = {"uid": uid}
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        try:
            self._json(  # reads the body: a connection with an unread one must not be reused
                "DELETE",
                resource.path(namespace, name),
                what=f"delete {resource} {namespace}/{name}",
                body=body,
            )
        except ApiError as err:
            # 409 with a uid precondition: the object we meant is gone; a newer one has the name.
            if err.not_found or (uid is not None and err.status == 409):
                return False
            raise
        return True

    def replace_status(self, job: Mapping[str, Any], status: Mapping[str, Any]) -> Manifest:
        """Write a job's whole `status` through the status subresource, with the job's
        resourceVersion (optimistic concurrency: a job changed since it was read gives 409)."""
        resource = resource_for(api_version(job), kind(job))
        namespace, name = meta(job).namespace, meta(job).name
        body = {**job, "status": dict(status)}
        self._recording.status = True
        try:
            return self._json(
                "PUT",
                resource.path(namespace, name, "status"),
                what=f"update {resource}/status {namespace}/{name}",
                query={"fieldManager": names.FIELD_MANAGER},
                body=body,
            )
        finally:
            self._recording.status = False

    def record_events(
        self, job: Mapping[str, Any], events: Sequence[Event], *, now: datetime | None = None
    ) -> int:
        """Record `events` on `job`; return how many API writes that took.

        `events` become one Event per type and reason (`events.aggregate`). An Event of the same
        job, type and reason recorded in the last ten minutes gets the new count, message and
        `lastTimestamp` (a patch) instead of another Event, as `kubectl describe` readers expect.
        """
        self._recording.events = True
        try:
            return self._record_events(job, events, now)
        finally:
            self._recording.events = False

    def _record_events(
        self, job: Mapping[str, Any], events: Sequence[Event], now: datetime | None
    ) -> int:
        namespace, uid = meta(job).namespace, meta(job).uid
        stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
        writes = 0
        for event, repeats in aggregate(events):
            key = (namespace, uid, event.type, event.reason)
            with self._events_lock:
                known = self._events.get(key)
            mono = time.monotonic()
            if known is not None and mono - known[2] < _EVENT_AGGREGATE_SECONDS:
                name, count, _ = known
                try:
                    self._json(
                        "PATCH",
                        EVENTS.path(namespace, name),
                        what=f"patch event {namespace}/{name}",
                        body={
                            "count": count + repeats,
                            "lastTimestamp": stamp,
                            "message": event.message[:MESSAGE_LIMIT],
                        },
                        content_type=MERGE_PATCH,
                    )
                    writes += 1
                    self._remember_event(key, name, count + repeats, mono)
                    continue
                except ApiError as err:
                    if not err.not_found:
                        raise
            name = f"{meta(job).name or 'job'}.{time.time_ns():x}"
            self._json(
                "POST",
                EVENTS.path(namespace),
                what=f"create event {namespace}/{name}",
                body=_event_manifest(job, event, name, repeats, stamp, self.identity),
            )
            writes += 1
            self._remember_event(key, name, repeats, mono)
        return writes

    def _remember_event(self, key: tuple[str, ...], name: str, count: int, mono: float) -> None:
        with self._events_lock:
            self._events[key] = (name, count, mono)
            self._events.move_to_end(key)
            while len(self._events) > _EVENT_CACHE_SIZE:
                self._events.popitem(last=False)

    # --- leases ---------------------------------------------------------------------------

    def get_lease(self, namespace: str, name: str) -> Manifest | None:
        return self.get(LEASES, namespace, name)

    def create_lease(self, lease: Mapping[str, Any]) -> Manifest:
        """Create a Lease; raises ApiError (409 AlreadyExists) if someone else was first."""
        namespace = meta(lease).namespace
        return self._json(
            "POST", LEASES.path(namespace), what=f"create lease {namespace}", body=dict(lease)
        )

    def update_lease(self, lease: Mapping[str, Any]) -> Manifest:
        """Replace a Lease; its resourceVersion makes a lost race a 409."""
        namespace, name = meta(lease).namespace, meta(lease).name
        return self._json(
            "PUT",
            LEASES.path(namespace, name),
            what=f"update lease {namespace}/{name}",
            body=dict(lease),
        )


def _event_manifest(
    job: Mapping[str, Any], event: Event, name: str, count: int, stamp: str, instance: str
) -> Manifest:
    job_meta = meta(job)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": job_meta.namespace},
        "involvedObject": {
            "apiVersion": api_version(job),
            "kind": kind(job),
            "name": job_meta.name,
            "namespace": job_meta.namespace,
            "uid": job_meta.uid,
            "resourceVersion": job_meta.resource_version,
        },
        "type": event.type,
        "reason": event.reason,
        "message": event.message[:MESSAGE_LIMIT],
        "count": count,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "source": {"component": REPORTING_COMPONENT},
        "reportingComponent": REPORTING_COMPONENT,
        "reportingInstance": instance[:128],
    }
