"""`Client`: T9k jobs on a cluster, with the official Kubernetes client underneath.

from t9k_sdk.client import Client
with Client(namespace="team-a") as c:
    c.apply(job)                                  # server-side apply, idempotent
    c.wait("gj", "mnist", for_phase="Succeeded")  # a watch; fails fast when stuck
    for line in c.logs("gj", "mnist", follow=True):
        print(line)                               # [worker-0] ...
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import queue
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Literal

from t9k_sdk import _conventions as conventions
from t9k_sdk import _objects as o
from t9k_sdk import codecs, models
from t9k_sdk._kube import config
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk._kube.resources import (
    CLUSTER_QUEUES,
    EVENTS,
    LOCAL_QUEUES,
    PODS,
    WORKLOADS,
    Resource,
)
from t9k_sdk._kube.transport import APPLY_PATCH, MERGE_PATCH, ApiClient
from t9k_sdk._objects import parse_time
from t9k_sdk.client._api import Api, client_error, job_from_server
from t9k_sdk.client._log_feed import ApiLogSource, JobPodFeed, replica_order
from t9k_sdk.client._queue import QueueStanding, standing
from t9k_sdk.client._wait import JobWait, wait_target
from t9k_sdk.client._watch import Watcher, WatchEvent
from t9k_sdk.client.diagnosis import Finding, PodInfo, diagnose, pod_info
from t9k_sdk.client.errors import (
    ApiRequestError,
    ClientError,
    JobFinishedError,
    JobNotFoundError,
    KindNotServedError,
    KubeconfigError,
    ScaleError,
    WaitTimeoutError,
)
from t9k_sdk.client.job_state import (
    TERMINAL_PHASES,
    JobEvent,
    Progress,
    WaitTarget,
    event_from,
    sort_events,
)
from t9k_sdk.client.kinds import KINDS, JobKind, KindLike, resolve_kind
from t9k_sdk.client.logs import LogLine, PodSnapshot, follow_logs
from t9k_sdk.codecs import AnyJob, Buildable
from t9k_sdk.errors import InvalidManifestError

__all__ = ["FIELD_MANAGER", "Applied", "Client", "Description", "JobLike", "JobRef"]

FIELD_MANAGER = "t9k-sdk"
"""The field manager of server-side apply, and of the patches of pause/resume/scale."""


JobLike = AnyJob | Buildable | Mapping[str, Any]
"""What `apply` accepts: a wire model, a builder, or a manifest dict."""

JobRef = KindLike | JobLike
"""How `get`, `wait`, `logs`, `describe`, `delete`, ... name a job: a kind (`"gj"`, a model
class) followed by the job's name, or the job itself, as given to `apply` (a builder, a wire
model or a manifest dict), without a name."""

_SERVER_FIELDS = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
)


@dataclass(frozen=True)
class Applied:
    """The outcome of applying one job."""

    job: AnyJob
    """The job as the API server stored it."""
    action: Literal["created", "configured", "unchanged"]
    dry_run: bool = False
    """A server-side dry run: the API server accepted the job but stored nothing."""

    def __str__(self) -> str:
        suffix = " (server dry run)" if self.dry_run else ""
        return f"{self.job.kind.lower()}/{self.job.metadata.name} {self.action}{suffix}"


@dataclass(frozen=True)
class Description:
    """Everything `describe` shows: the job, its pods, their events and the findings."""

    job: AnyJob
    pods: list[PodInfo]
    events: list[JobEvent]
    findings: list[Finding]


class Client:
    """T9k jobs on one cluster.

    Configuration, in order: `api_client` (an existing `kubernetes.client.ApiClient`); else the
    kubeconfig file `kubeconfig` (default: $KUBECONFIG, then ~/.kube/config) and its `context`
    (default: the current one); else, inside a pod, the service account (`in_cluster=True`
    forces this). `namespace` defaults to the context's namespace, the pod's namespace in a
    cluster, or `default`.

    Kinds are given as `gj`/`dj`/`caij`, kind names in any case, plurals, or the model classes.
    Every method raises `ClientError` subclasses with messages for people (see
    `t9k_sdk.client.errors`).
    """

    def __init__(
        self,
        kubeconfig: str | os.PathLike[str] | None = None,
        context: str | None = None,
        namespace: str | None = None,
        *,
        in_cluster: bool | None = None,
        api_client: ApiClient | None = None,
    ) -> None:
        default_namespace = "default"
        self._owns_client = api_client is None
        if api_client is None:
            try:
                connection = config.connect(
                    kubeconfig, context, in_cluster=in_cluster, pool_size=32, retries=True
                )
            except config.ConfigError as exc:
                raise KubeconfigError(str(exc)) from None
            api_client = connection.api_client
            default_namespace = connection.namespace or default_namespace
        self.api_client = api_client
        self._api = Api(api_client)
        self.namespace: str = namespace or default_namespace
        """The namespace of methods called without one."""

    # -- lifecycle ---------------------------------------------------------------------------------

    @property
    def server(self) -> str:
        """The API server's URL."""
        return self._api.server

    def close(self) -> None:
        """Release the connections (only those of a client this object created)."""
        if self._owns_client:
            self.api_client.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- URLs ----------------------------------------------------------------------------------

    def _ns(self, namespace: str | None) -> str:
        return namespace or self.namespace

    def _target(
        self, job: JobRef, name: str | None, namespace: str | None
    ) -> tuple[JobKind, str, str]:
        """(kind, name, namespace) of a job named as kind + name, or given as a job object.

        A job object's own namespace wins over the client's default; `namespace` must agree
        with it when both are given.
        """
        if isinstance(job, str | JobKind | type):
            if not name:
                raise ClientError(
                    f"a job name is needed after the kind {getattr(job, '__name__', str(job))!r}"
                    " (or pass the job object itself, as given to apply)"
                )
            return resolve_kind(job), name, self._ns(namespace)
        manifest = _apply_manifest(job)
        meta = manifest["metadata"]
        if name is not None and name != meta["name"]:
            raise ClientError(
                f"{manifest['kind']} {meta['name']!r} was given with the name {name!r};"
                " pass either the job object or a kind and a name, not both"
            )
        declared = o.meta(manifest).namespace
        if namespace and declared and namespace != declared:
            raise ClientError(
                f"{manifest['kind']} {meta['name']!r} declares namespace {declared!r} but"
                f" namespace {namespace!r} was asked for; remove one of them"
            )
        return resolve_kind(manifest["kind"]), meta["name"], declared or self._ns(namespace)

    @staticmethod
    def _jobs_url(kind: JobKind, namespace: str | None) -> str:
        return kind.resource.path(namespace)

    def _job_url(self, kind: JobKind, name: str, namespace: str) -> str:
        return kind.resource.path(namespace, name)

    @staticmethod
    def _core_url(namespace: str, resource: Resource) -> str:
        return resource.path(namespace)

    def _not_served(self, kind: JobKind) -> KindNotServedError:
        return KindNotServedError(
            f"the cluster at {self.server} does not serve {kind.kind}s ({models.API_VERSION}):"
            " its CustomResourceDefinition is not installed; install the CRDs with"
            " `t9k-sdk crds | kubectl apply --server-side -f -`",
            status=404,
            reason="NotFound",
        )

    def _error(self, exc: ApiError, kind: JobKind, name: str | None, namespace: str) -> ClientError:
        if exc.status == 404:
            details = exc.details
            if details.get("kind") == kind.plural and name is not None:
                return JobNotFoundError(kind.kind, name, namespace)
            if details.get("kind") == "namespaces":
                return ApiRequestError(
                    f"namespace {details.get('name')!r} does not exist",
                    status=404,
                    reason="NotFound",
                )
            if not details:
                return self._not_served(kind)
        return client_error(exc, self.server)

    def _request(
        self,
        method: str,
        url: str,
        kind: JobKind,
        name: str | None,
        namespace: str,
        **kwargs: Any,
    ) -> dict[str, Any]:
        try:
            return self._api.call(method, url, **kwargs).json()
        except ApiError as exc:
            raise self._error(exc, kind, name, namespace) from None

    # -- get / list ----------------------------------------------------------------------------

    def get_manifest(
        self, kind: JobRef, name: str | None = None, namespace: str | None = None
    ) -> dict[str, Any]:
        """The job as the API server returns it (a dict, with status)."""
        k, name, ns = self._target(kind, name, namespace)
        return self._request("GET", self._job_url(k, name, ns), k, name, ns)

    def get(self, kind: JobRef, name: str | None = None, namespace: str | None = None) -> AnyJob:
        """The job (a wire model, with `status`). Raises `JobNotFoundError`."""
        return job_from_server(self.get_manifest(kind, name, namespace))

    def list(
        self,
        kind: KindLike | None = None,
        namespace: str | None = None,
        *,
        all_namespaces: bool = False,
        label_selector: str | None = None,
    ) -> builtins.list[AnyJob]:
        """The jobs of one kind (or of all three), in a namespace or in all of them.

        Sorted by kind, namespace and name. With `kind=None` a kind the cluster does not serve is
        left out (its CRD is not installed); asking for it by name raises `KindNotServedError`.
        """
        kinds = [resolve_kind(kind)] if kind is not None else list(KINDS)
        ns = None if all_namespaces else self._ns(namespace)
        jobs: list[AnyJob] = []
        served = 0
        for k in kinds:
            try:
                data = self._request(
                    "GET",
                    self._jobs_url(k, ns),
                    k,
                    None,
                    ns or "",
                    query={"labelSelector": label_selector},
                )
            except KindNotServedError:
                if kind is not None:
                    raise
                continue
            except ApiRequestError as exc:
                if label_selector is not None and exc.status == 400:
                    raise ApiRequestError(
                        f"the label selector {label_selector!r} is invalid: {exc} (e.g."
                        " `team=nlp`, `team!=cv`, `team in (nlp,cv)`, `team`, `!team`)",
                        status=exc.status,
                        reason=exc.reason,
                    ) from None
                raise
            served += 1
            items = sorted(
                o.items(data),
                key=o.key,
            )
            jobs.extend(job_from_server({"kind": k.kind, **item}) for item in items)
        if not served:
            raise self._not_served(kinds[0])
        return jobs

    # -- apply / delete ------------------------------------------------------------------------

    def apply(self, job: JobLike, namespace: str | None = None, *, dry_run: bool = False) -> AnyJob:
        """Create or update a job with server-side apply (field manager `t9k-sdk`, forcing
        conflicts). Applying the same job again changes nothing. Returns the stored job.

        With `dry_run=True` the API server validates and merges the job as it would (its
        schema, CEL rules and admission) but stores nothing (`kubectl apply --dry-run=server`);
        the result is what it would have stored."""
        return self.apply_report(job, namespace, dry_run=dry_run).job

    def apply_report(
        self, job: JobLike, namespace: str | None = None, *, dry_run: bool = False
    ) -> Applied:
        """`apply`, and whether the job was created, configured (changed) or unchanged."""
        before, stored = self._apply(job, namespace, dry_run=dry_run)
        action: Literal["created", "configured", "unchanged"]
        if before is None:
            action = "created"
        elif _declared(before) == _declared(stored):
            action = "unchanged"
        else:
            action = "configured"
        return Applied(job_from_server(stored), action, dry_run=dry_run)

    def diff(
        self,
        job: JobLike,
        namespace: str | None = None,
        *,
        field_manager: str = FIELD_MANAGER,
    ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """(live, merged): the job as it is on the cluster (None if it does not exist) and as it
        would be after `apply`, both from the API server (a server-side dry run: nothing is
        stored), without `managedFields`. Equal when applying would change nothing.

        `field_manager`: apply as this field manager (`kustomize-controller` for Flux,
        `argocd-controller` for Argo CD's server-side apply). A field is removed from the merged
        object only if that manager set it before: diff as the tool that applies the jobs to see
        the fields a merge would remove."""
        before, stored = self._apply(job, namespace, dry_run=True, field_manager=field_manager)
        live = _comparable(before) if before is not None else None
        return live, _comparable(stored)

    def _apply(
        self,
        job: JobLike,
        namespace: str | None,
        *,
        dry_run: bool,
        field_manager: str = FIELD_MANAGER,
    ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """(before, after) of a server-side apply; `dry_run`: nothing is stored."""
        manifest = _apply_manifest(job)
        meta = manifest["metadata"]
        declared = o.meta(manifest).namespace
        if namespace and declared and namespace != declared:
            raise ClientError(
                f"{manifest['kind']} {meta['name']!r} declares namespace {declared!r} but"
                f" namespace {namespace!r} was asked for; remove one of them"
            )
        ns = declared or self._ns(namespace)
        meta["namespace"] = ns
        k = resolve_kind(manifest["kind"])
        url = self._job_url(k, meta["name"], ns)
        try:
            before: dict[str, Any] | None = self._request("GET", url, k, meta["name"], ns)
        except JobNotFoundError:
            before = None
        query: dict[str, Any] = {"fieldManager": field_manager, "force": True}
        if dry_run:
            query["dryRun"] = "All"
        stored = self._request(
            "PATCH",
            url,
            k,
            meta["name"],
            ns,
            query=query,
            body=manifest,
            content_type=APPLY_PATCH,
        )
        return before, stored

    def delete(
        self,
        kind: JobRef,
        name: str | None = None,
        namespace: str | None = None,
        *,
        wait: bool = False,
        timeout: float | None = 60.0,
    ) -> None:
        """Delete a job; its pods and other children go with it (garbage collection).

        With `wait`, return once the job is gone (watched, up to `timeout` seconds; then
        `WaitTimeoutError`). Raises `JobNotFoundError` if it does not exist.
        """
        k, name, ns = self._target(kind, name, namespace)
        self._request(
            "DELETE",
            self._job_url(k, name, ns),
            k,
            name,
            ns,
            body={"propagationPolicy": "Background"},
        )
        if not wait:
            return
        sink: queue.Queue[WatchEvent] = queue.Queue()
        watcher = Watcher(
            self._api, self._jobs_url(k, ns), sink, field_selector=f"metadata.name={name}"
        ).start()
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise WaitTimeoutError(
                        k.kind, name, ns, "Timeout", f"still exists after {timeout:g}s"
                    )
                try:
                    event = sink.get(timeout=remaining)
                except queue.Empty:
                    continue
                if event.type == "ERROR" and event.error is not None:
                    raise event.error
                if event.type == "DELETED" or (event.type == "SYNC" and not event.objects):
                    return
        finally:
            watcher.close()

    # -- pause / resume / scale ----------------------------------------------------------------

    def _patch(self, k: JobKind, name: str, ns: str, patch: dict[str, Any]) -> AnyJob:
        data = self._request(
            "PATCH",
            self._job_url(k, name, ns),
            k,
            name,
            ns,
            query={"fieldManager": FIELD_MANAGER},
            body=patch,
            content_type=MERGE_PATCH,
        )
        return job_from_server(data)

    def _set_pause(
        self, kind: JobRef, name: str | None, namespace: str | None, pause: bool
    ) -> AnyJob:
        k, name, ns = self._target(kind, name, namespace)
        current = self.get(k, name, ns)
        phase = current.status.phase.value if current.status and current.status.phase else None
        if phase in TERMINAL_PHASES:
            verb = "pausing" if pause else "resuming"
            raise JobFinishedError(
                f"{k.kind} {name!r} has already {phase.lower() if phase else 'finished'};"
                f" {verb} it would change nothing"
            )
        # No resourceVersion precondition: the operator writes the status all the time, and
        # setting one boolean needs no read-modify-write.
        return self._patch(k, name, ns, {"spec": {"runMode": {"pause": {"enabled": pause}}}})

    def pause(self, kind: JobRef, name: str | None = None, namespace: str | None = None) -> AnyJob:
        """Pause a job: set `spec.runMode.pause.enabled` (the operator deletes its pods; phase
        Paused). Pausing a paused job changes nothing; a finished one raises
        `JobFinishedError`."""
        return self._set_pause(kind, name, namespace, True)

    def resume(self, kind: JobRef, name: str | None = None, namespace: str | None = None) -> AnyJob:
        """Resume a paused job (phase Resuming, then Running; `resumeSpecs` apply)."""
        return self._set_pause(kind, name, namespace, False)

    def scale(
        self, name: str, expected_replicas: int, namespace: str | None = None
    ) -> models.DeepSpeedJob:
        """Set `spec.elastic.expectedReplicas` of an elastic DeepSpeedJob.

        Raises `ScaleError` when the job is not elastic or the number is outside
        `minReplicas..maxReplicas` (both fixed at creation).
        """
        k = resolve_kind("dj")
        ns = self._ns(namespace)
        job = self.get(k, name, ns)
        assert isinstance(job, models.DeepSpeedJob)
        elastic = job.spec.elastic
        if elastic is None or not elastic.enabled:
            raise ScaleError(
                f"DeepSpeedJob {name!r} is not elastic (spec.elastic.enabled is not true), so its"
                f" number of workers ({job.spec.worker.replicas or 1}) is fixed; create it with"
                " elastic min/max replicas to scale it"
            )
        low, high = elastic.min_replicas, elastic.max_replicas
        if (
            isinstance(expected_replicas, bool)
            or not isinstance(expected_replicas, int)
            or (low is not None and expected_replicas < low)
            or (high is not None and expected_replicas > high)
        ):
            raise ScaleError(
                f"DeepSpeedJob {name!r} can run on {low} to {high} workers"
                f" (spec.elastic.minReplicas..maxReplicas, fixed at creation);"
                f" {expected_replicas!r} is outside that range"
            )
        patch = {"spec": {"elastic": {"expectedReplicas": expected_replicas}}}
        scaled = self._patch(k, name, ns, patch)
        assert isinstance(scaled, models.DeepSpeedJob)
        return scaled

    # -- wait ----------------------------------------------------------------------------------

    def wait(
        self,
        kind: JobRef,
        name: str | None = None,
        namespace: str | None = None,
        *,
        target: WaitTarget | None = None,
        for_phase: str | None = None,
        for_condition: str | None = None,
        timeout: float | None = None,
        stuck_grace: float = 60.0,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> AnyJob:
        """Wait, through a watch, until the job reaches a phase or a condition; return it.

        `target`: a `WaitTarget` (`WaitTarget.parse("condition=Paused=False")`,
        `WaitTarget.phase("Running")`); default phase `Succeeded`. Or, for short, `for_phase`:
        `Succeeded`, `Running`, `Paused`, ...; `for_condition`: `Completed`, `Completed=True`,
        `Paused=False`, ... (one of the three). `timeout` in seconds (None: no limit).

        Fails fast instead of waiting in vain, raising:

        * `JobFailedError` (`InvalidSpecError`) when the job fails, with its reason and message;
        * a `JobStuckError` subclass when it cannot progress by itself for `stuck_grace` seconds:
          `UnschedulableError` (with the scheduler's message), `ImagePullError`,
          `CrashLoopError`, `ContainerConfigError`; `BarrierTimeoutError` at once; `0` fails at
          the first sight of any of them;
        * `TargetUnreachableError` when it finished in another state (Succeeded while waiting for
          Failed); `JobDeletedError`; `WaitTimeoutError`; `JobNotFoundError` at the start.

        `on_progress(progress)` is called with a `Progress` (the job, its phase, a one-line
        summary, whether it is stuck) for the first state and each change of phase, of the
        Running condition, or of the replica counts.
        """
        target = wait_target(target, for_phase, for_condition)
        k, name, ns = self._target(kind, name, namespace)
        return JobWait(
            self._api,
            k,
            name,
            ns,
            target,
            timeout=timeout,
            stuck_grace=stuck_grace,
            on_progress=on_progress,
            not_served=lambda: self._not_served(k),
        ).run()

    # -- watch (get -w) ------------------------------------------------------------------------

    def watch(
        self,
        kind: KindLike | None = None,
        name: str | None = None,
        namespace: str | None = None,
        *,
        all_namespaces: bool = False,
        timeout: float | None = None,
    ) -> Iterator[tuple[str, AnyJob]]:
        """("ADDED" | "MODIFIED" | "DELETED", job) for the current jobs, then for each change.

        Ends after `timeout` seconds (None: when the caller stops iterating).
        """
        kinds = [resolve_kind(kind)] if kind is not None else list(KINDS)
        ns = None if all_namespaces else self._ns(namespace)
        sink: queue.Queue[WatchEvent] = queue.Queue()
        selector = f"metadata.name={name}" if name else None
        watchers = [
            Watcher(self._api, self._jobs_url(k, ns), sink, source=k.kind, field_selector=selector)
            for k in kinds
        ]
        for w in watchers:
            w.start()
        known: dict[tuple[str, str, str], str] = {}
        live = len(watchers)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while live:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return
                try:
                    event = sink.get(timeout=remaining)
                except queue.Empty:
                    return
                k = resolve_kind(event.source)
                if event.type == "ERROR":
                    error = event.error
                    if isinstance(error, ApiRequestError) and error.status == 404:
                        if kind is not None:
                            raise self._not_served(k)
                        live -= 1
                        continue
                    assert error is not None
                    raise error
                if event.type == "SYNC":
                    present = set()
                    for obj in event.objects:
                        key = _key(k, obj)
                        present.add(key)
                        change = "MODIFIED" if key in known else "ADDED"
                        if known.get(key) != _version(obj):
                            known[key] = _version(obj)
                            yield change, job_from_server({"kind": k.kind, **obj})
                    for key in [x for x in known if x[0] == k.kind and x not in present]:
                        del known[key]
                    continue
                key = _key(k, event.obj)
                if event.type == "DELETED":
                    known.pop(key, None)
                else:
                    known[key] = _version(event.obj)
                yield event.type, job_from_server(event.obj)
        finally:
            for w in watchers:
                w.close()

    # -- pods, events, diagnosis ---------------------------------------------------------------

    def _pods(self, k: JobKind, name: str, ns: str) -> builtins.list[dict[str, Any]]:
        data = self._api.json(
            "GET",
            self._core_url(ns, PODS),
            query={"labelSelector": conventions.child_selector(k.kind, name)},
        )
        return sorted(
            (dict(p) for p in o.items(data)),
            key=lambda p: replica_order(p),
        )

    def pods(
        self, kind: JobRef, name: str | None = None, namespace: str | None = None
    ) -> builtins.list[PodInfo]:
        """The job's pods now (type, index, phase, node, restarts, container state)."""
        k, name, ns = self._target(kind, name, namespace)
        return [pod_info(p) for p in self._pods(k, name, ns)]

    def _events(
        self,
        k: JobKind,
        name: str,
        ns: str,
        job: Mapping[str, Any],
        pods: Sequence[Mapping[str, Any]],
    ) -> builtins.list[JobEvent]:
        url = self._core_url(ns, EVENTS)
        meta = o.meta(job)
        # Only this incarnation of the job: a job deleted and created again keeps its name.
        selector = f"involvedObject.kind={k.kind},involvedObject.name={name}"
        if meta.uid:
            selector += f",involvedObject.uid={meta.uid}"
        own = self._api.json("GET", url, query={"fieldSelector": selector})
        created = parse_time(meta.creation_timestamp)
        since = int(created.timestamp()) if created else 0
        pod_names = {o.meta(p).name for p in pods}
        uids = {o.meta(p).uid for p in pods}
        for replica in o.replicas(job):
            pod_names.add(replica.name)
            uids.add(replica.uid)
        with contextlib.suppress(InvalidManifestError):
            pod_names.update(s.name for s in conventions.slots(job_from_server(job)))
        found = [event_from(e) for e in o.items(own)]
        if pod_names:
            of_pods = self._api.json("GET", url, query={"fieldSelector": "involvedObject.kind=Pod"})
            for raw in o.items(of_pods):
                involved = o.involved_object(raw)
                if involved.name not in pod_names:
                    continue
                event = event_from(raw)
                # A pod of this job (also one replaced since); not one of an earlier job that
                # had the same name: event times have whole seconds, so an unknown pod counts
                # only from the second after the job was created.
                known = involved.uid in uids
                if known or (event.time is not None and int(event.time.timestamp()) > since):
                    found.append(event)
        return sort_events(found)

    def events(
        self, kind: JobRef, name: str | None = None, namespace: str | None = None
    ) -> builtins.list[JobEvent]:
        """Events of the job and of its pods (also of pods since replaced), oldest first."""
        k, name, ns = self._target(kind, name, namespace)
        job = self.get_manifest(k, name, ns)
        return self._events(k, name, ns, job, self._pods(k, name, ns))

    def describe(
        self, kind: JobRef, name: str | None = None, namespace: str | None = None
    ) -> Description:
        """The job, its pods, their events, and the findings of `diagnose`."""
        k, name, ns = self._target(kind, name, namespace)
        job = self.get_manifest(k, name, ns)
        pods = self._pods(k, name, ns)
        events = self._events(k, name, ns, job, pods)
        queue = self._queue_standing(k, name, ns, job)
        findings = diagnose(job, pods, events, datetime.now(UTC), queue)
        return Description(job_from_server(job), [pod_info(p) for p in pods], events, findings)

    def _queue_standing(
        self, k: JobKind, name: str, ns: str, job: Mapping[str, Any]
    ) -> QueueStanding | None:
        """Where a job that Kueue has not admitted stands in its LocalQueue; None when it
        names no queue, has ended, or its Workload cannot be read (Kueue absent, no right)."""
        queue = (o.meta(job).labels or {}).get(conventions.KUEUE_QUEUE_LABEL)
        if not queue or o.phase(job) in TERMINAL_PHASES:
            return None
        try:
            workload = self._api.json("GET", WORKLOADS.path(ns, f"{k.kind.lower()}-{name}"))
            owner = o.meta(workload).controller
            if owner is None or owner.uid != o.meta(job).uid:
                return None  # not the job's own Workload
            workloads = o.items(self._api.json("GET", WORKLOADS.path(ns)))
            local = self._api.json("GET", LOCAL_QUEUES.path(ns, queue))
        except ClientError:
            return None
        cluster_queue = str(o.spec(local).get("clusterQueue") or "")
        if not cluster_queue:
            return standing(workload, workloads, local, None)
        try:
            found = self._api.json("GET", CLUSTER_QUEUES.path(None, cluster_queue))
        except ClientError as err:
            status = err.status if isinstance(err, ApiRequestError) else 0
            why = {403: "not allowed to read", 404: "there is no"}.get(status, "cannot read")
            return standing(
                workload, workloads, local, None, f"{why} its ClusterQueue {cluster_queue}"
            )
        return standing(workload, workloads, local, found)

    def diagnose(
        self, kind: JobRef, name: str | None = None, namespace: str | None = None
    ) -> builtins.list[Finding]:
        """What stands in the job's way, most severe first: unschedulable pods with the
        scheduler's message, waiting containers (image pulls, crash loops), failed pods with exit
        codes and termination messages, restarts, an expired launcher barrier, no operator."""
        return self.describe(kind, name, namespace).findings

    # -- logs ----------------------------------------------------------------------------------

    def logs(
        self,
        kind: JobRef,
        name: str | None = None,
        namespace: str | None = None,
        *,
        replica_type: str | None = None,
        index: int | None = None,
        follow: bool = False,
        tail: int | None = None,
        container: str | None = None,
        timestamps: bool = False,
    ) -> Iterator[LogLine]:
        """Log lines of all the job's replicas (or of one type, or one type and index), each
        `str()`-ing to `[type-index] text`.

        Without `follow`: what the pods have logged so far (`ClientError` when the job has no
        pods). With `follow`: waits for pods that do not exist yet, reads each new incarnation of a replica from its start (a restarted pod has a new
        uid), and ends when the job has finished and its logs have been read. `tail`: the last
        lines of each log that exists when reading starts. `container`: default the pod's
        first (or `kubectl.kubernetes.io/default-container`).
        """
        if tail is not None and tail < 0:
            raise ValueError(f"tail must be >= 0; got {tail}")
        k, name, ns = self._target(kind, name, namespace)
        job = self.get_manifest(k, name, ns)
        _check_replica(k.kind, name, job_from_server(job), replica_type, index)
        source = ApiLogSource(self._api, ns)
        if o.phase(job) in TERMINAL_PHASES:
            follow = False  # nothing more will come: read what there is (or say why not)
        if follow:
            feed: JobPodFeed | list[PodSnapshot] = JobPodFeed(
                self._api, k, name, ns, lambda: self._pods(k, name, ns)
            )
        else:
            pods = self._pods(k, name, ns)
            feed = [PodSnapshot(pods, final=True)]
            if not pods:
                phase = o.phase(job) or "Pending"
                why = (
                    "they were deleted when it finished (cleanUpPolicy)"
                    if phase in TERMINAL_PHASES
                    else "none has been created yet; follow the log (`-f`, follow=True) to wait"
                    " for them"
                )
                raise ClientError(f"{k.kind} {name!r} has no pods ({phase}): {why}")
        return follow_logs(
            feed,
            source,
            follow=follow,
            tail=tail,
            replica_type=replica_type,
            index=index,
            container=container,
            timestamps=timestamps,
        )


# -- helpers -----------------------------------------------------------------------------------


def _version(obj: Mapping[str, Any]) -> str:
    return o.meta(obj).resource_version


def _comparable(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A stored object without the bookkeeping that changes on every write (for `diff`)."""
    data = json.loads(json.dumps(obj))
    meta = data.get("metadata") or {}
    for field in ("managedFields", "resourceVersion"):
        meta.pop(field, None)
    return dict(data)


def _declared(obj: Mapping[str, Any]) -> tuple[Any, ...]:
    """What apply can change: the spec (its generation), labels and annotations.

    Not the resourceVersion: the operator may write the status in between.
    """
    meta = o.meta(obj)
    return meta.generation, dict(meta.labels), dict(meta.annotations)


def _key(k: JobKind, obj: Mapping[str, Any]) -> tuple[str, str, str]:
    return (k.kind, *o.key(obj))


def _check_replica(
    kind: str, name: str, model: AnyJob, replica_type: str | None, index: int | None
) -> None:
    """Raise `ClientError` when the job has no replica of that type, or of that index."""
    slots = conventions.slots(model)
    types = sorted({s.replica_type for s in slots})
    if replica_type is not None and replica_type not in types:
        raise ClientError(
            f"{kind} {name!r} has no replica type {replica_type!r}; its types:"
            f" {', '.join(types)}"
        )
    if index is not None:
        indices = sorted(
            s.index
            for s in slots
            if s.index is not None and (replica_type is None or s.replica_type == replica_type)
        )
        if index not in indices:
            span = f"0..{indices[-1]}" if indices else "none"
            raise ClientError(
                f"{kind} {name!r} has no replica index {index}"
                f"{' of type ' + repr(replica_type) if replica_type else ''} (indices: {span})"
            )


def _apply_manifest(job: JobLike) -> dict[str, Any]:
    """The manifest to apply: validated by the SDK, server-set fields and status removed."""
    if isinstance(job, Mapping):
        model = codecs.from_manifest(job)
    elif isinstance(job, models.K8sModel):
        model = job
    else:
        model = job.build()
    manifest = codecs.to_manifest(model)
    manifest.pop("status", None)
    meta = manifest.setdefault("metadata", {})
    for field in _SERVER_FIELDS:
        meta.pop(field, None)
    if not o.meta(manifest).name:
        raise ClientError(f"{o.kind(manifest)} has no metadata.name; apply needs one")
    return manifest
