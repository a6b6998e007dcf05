"""The only module that talks to the API server.

`Cluster` wraps a `kubernetes.client.ApiClient` with a few typed methods over raw camelCase
dicts (the shape the pure core reads and writes):

    list / watch          jobs of the three kinds, and children by label selector
    get                   one object (the Lease)
    create                AlreadyExists is not an error (a previous pass created it)
    replace               an `Update`: the manifest carries its resourceVersion (409 -> ApiError)
    delete                with a uid precondition and a grace period (NotFound is not an error)
    replace_status        a job's status subresource, with the job's resourceVersion
    record_events         Events on a job; repeats are counted, not duplicated
    get/create/update_lease

Every request first takes a token from the rate limiter (`--qps`, `--burst`). Every failure is
raised as `errors.ApiError`; nothing else in the operator imports the client (an import-linter
contract in pyproject.toml says so).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from t9k_operator.errors import ApiError
from t9k_operator.ratelimit import TokenBucket
from t9k_operator.resources import EVENTS, LEASES, Resource, resource_for
from t9k_sdk import __version__ as _VERSION
from t9k_sdk._kube import send
from t9k_sdk.reconcile import Event, Manifest, names

__all__ = ["REPORTING_COMPONENT", "Cluster", "ListResult", "WatchEvent", "WatchStream"]

log = logging.getLogger(__name__)

REPORTING_COMPONENT = "t9k-operator"
"""`source.component` and `reportingComponent` of the Events the operator records."""

_JSON = "application/json"
_MERGE_PATCH = "application/merge-patch+json"
_PAGE_SIZE = 500
_EVENT_CACHE_SIZE = 4096
_EVENT_AGGREGATE_SECONDS = 600.0
"""A repeat of an Event within this time bumps the existing Event's count (as client-go does)."""


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


class WatchStream:
    """An open watch: iterate for events; `close()` (from any thread) ends the iteration."""

    def __init__(self, response: Any, what: str) -> None:
        self._response = response
        self._what = what
        self._closed = threading.Event()

    def __iter__(self) -> Iterator[WatchEvent]:
        buffer = b""
        try:
            for chunk in self._response.stream(amt=None, decode_content=False):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield _watch_event(line)
            if buffer.strip():
                yield _watch_event(buffer)
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as err:
            if self._closed.is_set():
                return
            raise ApiError(0, type(err).__name__, str(err), what=self._what) from err
        finally:
            self._release()

    def close(self) -> None:
        self._closed.set()
        try:
            self._response.shutdown()
        except Exception:  # best effort, maybe from another thread
            log.debug("closing %s", self._what, exc_info=True)
        self._release()

    def _release(self) -> None:
        try:
            self._response.release_conn()
        except Exception:  # best effort
            log.debug("releasing %s", self._what, exc_info=True)


def _watch_event(line: bytes) -> WatchEvent:
    data = json.loads(line)
    return WatchEvent(type=str(data.get("type", "")), object=dict(data.get("object") or {}))


class Cluster:
    """Typed access to the API server (see the module docstring).

    `api_client` is a `kubernetes.client.ApiClient` (tests pass a recorder with the `call_api`
    of kubernetes <= 36; `t9k_sdk._kube.send` speaks both signatures). `identity` names this
    process in the Events it records.
    """

    def __init__(
        self,
        api_client: Any,
        *,
        limiter: TokenBucket | None = None,
        request_timeout: float = 30.0,
        identity: str = "",
    ) -> None:
        self._api = api_client
        self._limiter = limiter
        self._timeout = request_timeout
        self.identity = identity
        self._events: OrderedDict[tuple[str, ...], tuple[str, int, float]] = OrderedDict()
        self._events_lock = threading.Lock()

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
    ) -> Cluster:
        """Connect with a kubeconfig, or in-cluster when running in a pod without one."""
        configuration = k8s_client.Configuration()
        if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            k8s_config.load_incluster_config(client_configuration=configuration)
        else:
            k8s_config.load_kube_config(
                config_file=kubeconfig, context=context, client_configuration=configuration
            )
        configuration.connection_pool_maxsize = connections
        configuration.retries = False  # failures surface at once; callers back off themselves
        api = k8s_client.ApiClient(configuration)
        api.user_agent = f"{REPORTING_COMPONENT}/{_VERSION}"
        return cls(api, limiter=TokenBucket(qps, burst), identity=identity)

    @property
    def server(self) -> str:
        return str(getattr(getattr(self._api, "configuration", None), "host", ""))

    def close(self) -> None:
        close = getattr(self._api, "close", None)
        if close is not None:
            close()

    # --- requests -------------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        what: str,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = _JSON,
        timeout: float | tuple[float, float] | None = None,
    ) -> Any:
        """Send one request (after a rate-limit token); return the raw response."""
        if self._limiter is not None:
            self._limiter.take()
        try:
            return send(
                self._api,
                method,
                path,
                query=list(query),
                headers={"Accept": _JSON, "Content-Type": content_type},
                body=body,
                timeout=timeout if timeout is not None else self._timeout,
            )
        except ApiException as err:
            raise _api_error(err, what) from err
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise ApiError(0, type(err).__name__, str(err), what=what) from err

    def _json(self, method: str, path: str, *, what: str, **kwargs: Any) -> Manifest:
        response = self._request(method, path, what=what, **kwargs)
        data = json.loads(response.data or b"{}")
        return dict(data) if isinstance(data, dict) else {}

    # --- reads ----------------------------------------------------------------------------

    def list(
        self, resource: Resource, namespace: str | None = None, label_selector: str | None = None
    ) -> ListResult:
        """Every object of `resource` (in `namespace`, or all), page by page."""
        items: list[Manifest] = []
        token = ""
        while True:
            query = [("limit", str(_PAGE_SIZE))]
            if label_selector:
                query.append(("labelSelector", label_selector))
            if token:
                query.append(("continue", token))
            page = self._json("GET", resource.path(namespace), what=f"list {resource}", query=query)
            kind = resource.kind
            for item in page.get("items") or ():
                # List items carry no apiVersion/kind; the pure core expects whole objects.
                items.append({"apiVersion": resource.api_version, "kind": kind, **item})
            meta = page.get("metadata") or {}
            token = str(meta.get("continue") or "")
            if not token:
                return ListResult(items, str(meta.get("resourceVersion") or ""))

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
        query = [
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", resource_version),
            ("timeoutSeconds", str(timeout_seconds)),
        ]
        if label_selector:
            query.append(("labelSelector", label_selector))
        what = f"watch {resource}"
        response = self._request(
            "GET",
            resource.path(namespace),
            what=what,
            query=query,
            timeout=(10.0, timeout_seconds + 30.0),
        )
        return WatchStream(response, what)

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
        resource = resource_for(str(manifest.get("apiVersion")), str(manifest.get("kind")))
        body = dict(manifest)
        body["metadata"] = {**(manifest.get("metadata") or {}), "namespace": namespace}
        name = body["metadata"].get("name", "")
        try:
            return self._json(
                "POST",
                resource.path(namespace),
                what=f"create {resource} {namespace}/{name}",
                query=[("fieldManager", names.FIELD_MANAGER)],
                body=body,
            )
        except ApiError as err:
            if err.already_exists:
                return None
            raise

    def replace(self, manifest: Mapping[str, Any], namespace: str) -> Manifest:
        """Replace an object; its `metadata.resourceVersion` makes a stale write a 409."""
        resource = resource_for(str(manifest.get("apiVersion")), str(manifest.get("kind")))
        name = str((manifest.get("metadata") or {}).get("name", ""))
        body = dict(manifest)
        body["metadata"] = {**(manifest.get("metadata") or {}), "namespace": namespace}
        return self._json(
            "PUT",
            resource.path(namespace, name),
            what=f"replace {resource} {namespace}/{name}",
            query=[("fieldManager", names.FIELD_MANAGER)],
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
        resource = resource_for(str(job.get("apiVersion")), str(job.get("kind")))
        meta = job.get("metadata") or {}
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        body = {**job, "status": dict(status)}
        return self._json(
            "PUT",
            resource.path(namespace, name, "status"),
            what=f"update {resource}/status {namespace}/{name}",
            query=[("fieldManager", names.FIELD_MANAGER)],
            body=body,
        )

    def record_events(
        self, job: Mapping[str, Any], events: Sequence[Event], *, now: datetime | None = None
    ) -> int:
        """Record `events` on `job`; return how many API writes that took.

        Identical consecutive events in `events` become one Event with their count. An Event that
        repeats one recorded for the same job in the last ten minutes bumps that Event's `count`
        and `lastTimestamp` (a patch), as `kubectl describe` readers expect, instead of piling up.
        """
        meta = job.get("metadata") or {}
        namespace = str(meta.get("namespace", ""))
        uid = str(meta.get("uid", ""))
        runs: list[tuple[Event, int]] = []
        for event in events:
            if runs and runs[-1][0] == event:
                runs[-1] = (event, runs[-1][1] + 1)
            else:
                runs.append((event, 1))
        stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
        writes = 0
        for event, repeats in runs:
            key = (namespace, uid, event.type, event.reason, event.message)
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
                        body={"count": count + repeats, "lastTimestamp": stamp},
                        content_type=_MERGE_PATCH,
                    )
                    writes += 1
                    self._remember_event(key, name, count + repeats, mono)
                    continue
                except ApiError as err:
                    if not err.not_found:
                        raise
            name = f"{meta.get('name', 'job')}.{time.time_ns():x}"
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
        namespace = str((lease.get("metadata") or {}).get("namespace", ""))
        return self._json(
            "POST", LEASES.path(namespace), what=f"create lease {namespace}", body=dict(lease)
        )

    def update_lease(self, lease: Mapping[str, Any]) -> Manifest:
        """Replace a Lease; its resourceVersion makes a lost race a 409."""
        meta = lease.get("metadata") or {}
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        return self._json(
            "PUT",
            LEASES.path(namespace, name),
            what=f"update lease {namespace}/{name}",
            body=dict(lease),
        )


def _event_manifest(
    job: Mapping[str, Any], event: Event, name: str, count: int, stamp: str, instance: str
) -> Manifest:
    meta = job.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": meta.get("namespace")},
        "involvedObject": {
            "apiVersion": job.get("apiVersion"),
            "kind": job.get("kind"),
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "type": event.type,
        "reason": event.reason,
        "message": event.message[:1024],
        "count": count,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "source": {"component": REPORTING_COMPONENT},
        "reportingComponent": REPORTING_COMPONENT,
        "reportingInstance": instance[:128],
    }


def _api_error(err: ApiException, what: str) -> ApiError:
    status = int(err.status or 0)
    reason = str(err.reason or "")
    message = ""
    body = err.body
    if isinstance(body, bytes | bytearray):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str) and body:
        try:
            data = json.loads(body)
        except ValueError:
            message = body[:500]
        else:
            if isinstance(data, dict):
                reason = str(data.get("reason") or reason)
                message = str(data.get("message") or "")
    return ApiError(status, reason, message, what=what)
