"""The controller: watches and caches, a work queue of job keys, workers that run reconcile passes.

    informers (jobs x3, children x5) --events--> queue of (kind, namespace, name) --> workers
    worker pass: job from the cache -> its children from the caches -> reconcile() -> execute plan

* Level-triggered: a pass looks at the whole cached state of one job, never at the event that
  woke it, so any number of coalesced events, a periodic resync and a restart all converge.
* Children are found through their controller owner reference (uid), events on them wake their
  owner (`names.owner_of`).
* A plan is carried out in the order status -> deletes -> updates -> creates -> events; Events
  are recorded only after the status write succeeded. Creates go out in client-go's slow-start
  batches (1, 2, 4, ... up to `Settings.parallel_creates`, on a pool shared by the workers): what
  the pods mount (config maps, secrets, the pod group) first, then the pods, then the services; a
  batch with a refused or blocked create is the last. Events are written by a background recorder (`t9k_operator.events`: a bounded
  queue and one thread, dropping on overflow), so a pass never waits for them.
* After a pass writes, the next pass of that job waits until the caches have seen those writes
  (client-go's "expectations"), so a pass never acts on a view older than its own last writes.
* Errors and stale writes (409) back off exponentially per job (never a hot loop).
* A create or update the server refuses for good (`ApiError.permanent`: 422 invalid, 403 quota
  or policy, ...) is remembered and shown to the core (`Observed.failures`), which puts it on the
  job; a create that finds a foreign object under the child's name (not controlled by this job's
  uid) stops the pass, and the object is shown to the core, which reports the conflict. Both back
  off and are tried again, so fixing the cause (editing the job, removing the object) recovers.
* Instrumentation (`ControllerMetrics`, optional): each pass's kind, result and duration, the work
  queue's adds, waits and retries, and each job's launch latency (creation to its first move from
  Pending to Running, seen in the status write that makes it). Timing stays here, in the shell.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from t9k_operator.errors import ApiError
from t9k_operator.events import EventRecorder
from t9k_operator.informer import WATCH_TIMEOUT, Informer, WatchSource, resource_version
from t9k_operator.logs import fields
from t9k_operator.sshkeys import generate_ssh_key
from t9k_operator.workqueue import Backoff, QueueMetrics, WorkQueue
from t9k_sdk import _objects as o
from t9k_sdk import models
from t9k_sdk._kube.resources import (
    CHILD_RESOURCES,
    CONFIG_MAPS,
    JOB_RESOURCES,
    POD_GROUPS,
    PODS,
    SECRETS,
    SERVICES,
    Resource,
    resource_for,
)
from t9k_sdk.reconcile import ChildFailure, Event, Manifest, Observed, Plan, names, ownership
from t9k_sdk.reconcile.observe import trim_config_map, trim_pod, trim_secret

__all__ = [
    "SSH_KINDS",
    "ClusterApi",
    "Controller",
    "ControllerMetrics",
    "JobKey",
    "PassResult",
    "ReconcileFn",
    "Settings",
]

log = logging.getLogger(__name__)

JobKey = tuple[str, str, str]
"""(kind, namespace, name) of a job."""

SSH_KINDS = frozenset({models.DeepSpeedJob.KIND, models.ColossalAIJob.KIND})
"""Kinds whose pods reach each other over SSH and so need a key pair in `<job>-ssh`."""


class ReconcileFn(Protocol):
    """`t9k_sdk.reconcile.reconcile`: the pure core."""

    def __call__(self, job: Mapping[str, Any], observed: Observed, /, *, now: datetime) -> Plan: ...


class ClusterApi(WatchSource, Protocol):
    """The API calls a controller makes (`cluster.Cluster` implements them)."""

    def create(self, manifest: Mapping[str, Any], namespace: str) -> Manifest | None: ...

    def replace(self, manifest: Mapping[str, Any], namespace: str) -> Manifest: ...

    def delete(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        *,
        uid: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> bool: ...

    def replace_status(self, job: Mapping[str, Any], status: Mapping[str, Any]) -> Manifest: ...

    def get(self, resource: Resource, namespace: str, name: str) -> Manifest | None: ...

    def record_events(self, job: Mapping[str, Any], events: Sequence[Event]) -> int: ...


class ControllerMetrics(QueueMetrics, Protocol):
    """What the controller reports (`t9k_operator.metrics.OperatorMetrics` implements it)."""

    def reconciled(self, kind: str, result: str, seconds: float) -> None:
        """One pass of a job of `kind` ended with `result` after `seconds`."""

    def launched(self, kind: str, seconds: float) -> None:
        """A job of `kind` reached Running `seconds` after its creation."""

    def events_dropped(self, count: int) -> None:
        """`count` Events were dropped: the background recorder's queue was full."""


@dataclass(frozen=True)
class Settings:
    namespace: str | None = None
    """Watch only this namespace; None: all namespaces."""
    workers: int = 4
    resync_seconds: float = 300.0
    """Every job is reconciled at least this often, even without events."""
    backoff: Backoff = field(default_factory=lambda: Backoff(base=0.5, cap=300.0))
    """Delay before retrying a job whose pass failed: doubles per failure, up to the cap."""
    expectation_timeout: float = 30.0
    """How long a pass waits for the caches to show the previous pass's writes."""
    parallel_creates: int = 16
    """Most creates of one job sent at once (client-go's slow-start batches 1, 2, 4, ... up to
    this), on a pool of this many threads shared by the workers; 1: one at a time. The rate
    limiter (`--qps`) still bounds the total."""
    watch_timeout: tuple[int, int] = WATCH_TIMEOUT
    """The server ends each watch after a random number of seconds in this range."""


@dataclass(frozen=True)
class PassResult:
    """What one pass did (for logs and tests)."""

    outcome: str
    """"done", "skipped" (job gone or being deleted), "waiting" (caches behind our writes),
    "conflict" (a stale write; retried soon), "refused" (the server refused a child, or a
    foreign object holds its name; retried with backoff, and shown on the job next pass),
    "held" (only creates refused before, unchanged, whose backoff has not passed, were left)."""
    plan: Plan | None = None
    actions: tuple[str, ...] = ()
    refused: Mapping[tuple[str, str], str] = field(default_factory=dict)
    """(kind, name) -> manifest digest of the creates the server refused in this pass."""


@dataclass
class _Expectations:
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


def _utcnow() -> datetime:
    return datetime.now(UTC)


def job_key_str(key: JobKey) -> str:
    return "/".join(key)


class Controller:
    """Reconciles the jobs of the three kinds (see the module docstring)."""

    def __init__(
        self,
        cluster: ClusterApi,
        reconcile: ReconcileFn,
        settings: Settings = Settings(),
        *,
        ssh_keygen: Callable[[], tuple[str, str]] = generate_ssh_key,
        now: Callable[[], datetime] = _utcnow,
        clock: Callable[[], float] = time.monotonic,
        metrics: ControllerMetrics | None = None,
    ) -> None:
        self.cluster = cluster
        self.metrics = metrics
        self.reconcile_fn = reconcile
        self.settings = settings
        # What tests replace: key generation, the wall clock and the monotonic clock.
        self._ssh_keygen, self._now, self._clock = ssh_keygen, now, clock
        self.queue: WorkQueue[JobKey] = WorkQueue(settings.backoff, metrics=metrics)
        self.jobs: dict[str, Informer] = {
            r.kind: Informer(
                cluster,
                r,
                namespace=settings.namespace,
                handler=self._on_job,
                watch_timeout=settings.watch_timeout,
            )
            for r in JOB_RESOURCES
        }
        self.children: dict[str, Informer] = {
            r.kind: Informer(
                cluster,
                r,
                namespace=settings.namespace,
                label_selector=names.MANAGED_SELECTOR,
                handler=self._on_child,
                # Only what the core reads: a pod's spec is most of its bytes, a Secret's key
                # material is never read, and a ConfigMap no job controls is only reported.
                trim=_TRIMS.get(r.kind),
                watch_timeout=settings.watch_timeout,
            )
            for r in CHILD_RESOURCES
        }
        self._expect: dict[JobKey, _Expectations] = {}
        # uids of children whose deletion the watches showed, the newest last (bounded): a
        # child created and deleted before the next pass meets its create's expectation.
        self._gone: OrderedDict[str, None] = OrderedDict()
        # What the next passes must show the core: refused writes, and foreign objects found
        # under a child's name (kept as metadata only, re-read each pass until they are gone).
        self._failures: dict[JobKey, dict[tuple[str, str, str], ChildFailure]] = {}
        self._foreign: dict[JobKey, dict[tuple[str, str], tuple[Resource, Manifest]]] = {}
        # Creates the API server refused, held back until the job's backoff has passed, so that
        # passes woken by other events (its pods' progress) do not send them again at once. Keyed
        # by (kind, name) with the refused manifest's JSON: an edited spec is sent at once.
        self._held: dict[JobKey, dict[tuple[str, str], tuple[str, float]]] = {}
        self._expect_lock = threading.Lock()
        self._stop = threading.Event()
        self._working = threading.Event()
        self._threads: list[threading.Thread] = []
        self.passes = 0
        self._pool = (
            ThreadPoolExecutor(settings.parallel_creates, thread_name_prefix="create")
            if settings.parallel_creates > 1
            else None
        )
        self.events = EventRecorder(
            cluster.record_events, on_drop=metrics.events_dropped if metrics else None
        )

    # --- lifecycle --------------------------------------------------------------------------

    @property
    def informers(self) -> list[Informer]:
        return [*self.jobs.values(), *self.children.values()]

    def synced(self) -> bool:
        """Every cache holds its first list."""
        return all(i.synced.is_set() for i in self.informers)

    def start(self) -> None:
        """Start the watches, then (once every cache is synced) the workers and the resync."""
        for informer in self.informers:
            self._spawn(f"watch {informer.resource}", informer.run, self._stop)
        self._spawn("start-workers", self._start_workers)

    def working(self) -> bool:
        """The caches are synced and the workers take jobs (what readiness reports)."""
        return self._working.is_set()

    def _start_workers(self) -> None:
        for informer in self.informers:  # woken by each sync at once, checking for stop meanwhile
            while not informer.synced.wait(0.5):
                if self._stop.is_set():
                    return
        if self._stop.is_set():
            return
        log.info(
            "caches synced; starting workers",
            extra=fields(
                workers=self.settings.workers,
                jobs=sum(len(i.store) for i in self.jobs.values()),
                children=sum(len(i.store) for i in self.children.values()),
            ),
        )
        for informer in self.jobs.values():  # events before the sync already added most keys
            for job in informer.store.objects():
                self.queue.add(_job_key(job))
        self.events.start()
        for n in range(self.settings.workers):
            self._spawn(f"worker-{n}", self._work)
        self._spawn("resync", self._resync)
        self._working.set()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop taking work, let running passes finish (up to `timeout`), close the watches."""
        self._stop.set()
        self.queue.shut_down()
        for informer in self.informers:
            informer.stop()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            if thread.name.startswith("worker-"):
                thread.join(max(0.0, deadline - time.monotonic()))
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        # The workers are done: write the Events they queued (what is left of the timeout).
        self.events.stop(max(1.0, deadline - time.monotonic()))

    def _spawn(self, name: str, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _resync(self) -> None:
        while not self._stop.wait(self.settings.resync_seconds):
            keys = [_job_key(job) for i in self.jobs.values() for job in i.store.objects()]
            log.debug("resync", extra=fields(jobs=len(keys)))
            for key in keys:
                self.queue.add(key)

    def _work(self) -> None:
        while True:
            key = self.queue.get()
            if key is None:
                return
            try:
                self.process(key)
            finally:
                self.queue.done(key)

    # --- events -----------------------------------------------------------------------------

    def _on_job(self, _type: str, new: Manifest | None, old: Manifest | None) -> None:
        obj = new if new is not None else old
        if obj is not None:
            self.queue.add(_job_key(obj))

    def _on_child(self, _type: str, new: Manifest | None, old: Manifest | None) -> None:
        if new is None and old is not None and (uid := o.meta(old).uid):
            with self._expect_lock:
                self._gone[uid] = None
                while len(self._gone) > _GONE_REMEMBERED:
                    self._gone.popitem(last=False)
        keys = set()
        for obj in (new, old):
            if obj is None:
                continue
            owner = names.owner_of(obj)
            if owner is not None:
                keys.add((owner[0], o.meta(obj).namespace, owner[1]))
        for key in keys:
            self.queue.add(key)

    # --- one pass ---------------------------------------------------------------------------

    def process(self, key: JobKey) -> None:
        """One pass for `key` with error handling and requeueing (what a worker runs)."""
        if self.metrics is None:
            self._process(key)
            return
        started = self._clock()
        result = "error"
        try:
            result = self._process(key)
        finally:
            self.metrics.reconciled(key[0], result, max(0.0, self._clock() - started))

    def _process(self, key: JobKey) -> str:
        """`process`; returns the result as controller-runtime names it: success, error,
        requeue (retried with backoff) or requeue_after (comes back at a set time)."""
        job_ref = job_key_str(key)
        try:
            result = self.reconcile_key(key)
        except ApiError as err:
            delay = self.queue.add_rate_limited(key)
            log.warning(
                "pass failed: %s",
                err,
                extra=fields(job=job_ref, status=err.status, retry_in=round(delay, 2)),
            )
            return "error"
        except Exception:
            delay = self.queue.add_rate_limited(key)
            log.exception("pass crashed", extra=fields(job=job_ref, retry_in=round(delay, 2)))
            return "error"
        if result.outcome == "conflict":  # stale cache: the watch brings the news; back off a bit
            self.queue.add_rate_limited(key)
            return "requeue"
        if result.outcome == "refused":  # shown on the job by the next pass; tried again slowly
            delay = self.queue.add_rate_limited(key)
            self._hold(key, result.refused, self._clock() + delay)
            log.warning(
                "pass refused by the API server; the job shows why",
                extra=fields(job=job_ref, retry_in=round(delay, 2)),
            )
            return "requeue"
        if result.outcome == "waiting":  # woken by the watch, or at the expectation's deadline
            return "requeue_after"
        if result.outcome == "held":  # nothing new to send before the refusal's backoff ends
            self.queue.add_after(key, max(0.0, self._held_until(key) - self._clock()))
            return "requeue_after"
        self.queue.forget(key)
        plan = result.plan
        if plan is not None and plan.requeue_after is not None and not plan.finished:
            self.queue.add_after(key, plan.requeue_after)
            return "requeue_after"
        return "success"

    def reconcile_key(self, key: JobKey) -> PassResult:
        """Observe, call the core, carry out the plan. Raises ApiError on a failed write."""
        kind, namespace, name = key
        informer = self.jobs.get(kind)
        job = informer.store.get(namespace, name) if informer is not None else None
        if job is None or o.meta(job).deletion_timestamp:
            self._clear_expectations(key)
            with self._expect_lock:
                self._failures.pop(key, None)
                self._foreign.pop(key, None)
                self._held.pop(key, None)
            return PassResult("skipped")
        if not self._expectations_met(key):
            return PassResult("waiting")
        observed = self._observe(key, job)
        self.passes += 1
        plan = self.reconcile_fn(job, observed, now=self._now())
        for note in plan.notes:
            log.debug(note, extra=fields(job=job_key_str(key)))
        return self.execute(key, job, plan)

    def _observe(self, key: JobKey, job: Manifest) -> Observed:
        """The job's children from the caches (by namespace and controller uid, never by name or
        label), plus what the core must know about: refused writes, and foreign objects holding
        child names (read again from the API server, since the caches only hold objects with our
        labels)."""
        meta = o.meta(job)
        uid = meta.uid
        foreign = self._refresh_foreign(key, uid)

        def observed(resource: Resource) -> tuple[Manifest, ...]:
            mine = self.children[resource.kind].store.owned_by(key[1], uid)
            return (*mine, *foreign.get(resource.kind, ()))

        secrets = observed(SECRETS)
        ssh_key = None
        if job.get("kind") in SSH_KINDS:
            secret_name = names.ssh_secret_name(meta.name)
            held = any(o.meta(s).name == secret_name for s in secrets)
            if not held:  # only the job's own Secret (or a foreign one, reported) spares a key
                ssh_key = self._ssh_keygen()
        with self._expect_lock:
            failures = tuple((self._failures.get(key) or {}).values())
        return Observed(
            pods=observed(PODS),
            services=observed(SERVICES),
            config_maps=observed(CONFIG_MAPS),
            secrets=secrets,
            pod_groups=observed(POD_GROUPS),
            ssh_key=ssh_key,
            failures=failures,
        )

    def _refresh_foreign(self, key: JobKey, uid: str) -> dict[str, list[Manifest]]:
        """Re-read the foreign objects found under child names; forget those now gone or ours."""
        with self._expect_lock:
            known = dict(self._foreign.get(key) or {})
        by_kind: dict[str, list[Manifest]] = {}
        for (kind, name), (resource, _before) in known.items():
            current = self.cluster.get(resource, key[1], name)
            with self._expect_lock:
                entries = self._foreign.setdefault(key, {})
                if current is None or ownership.owned_by(current, uid):
                    entries.pop((kind, name), None)
                    continue
                entries[(kind, name)] = (resource, _metadata_only(resource, current))
            by_kind.setdefault(kind, []).append(_metadata_only(resource, current))
        with self._expect_lock:
            if not self._foreign.get(key):
                self._foreign.pop(key, None)
        return by_kind

    def _remember_failure(self, key: JobKey, failure: ChildFailure) -> None:
        with self._expect_lock:
            failures = self._failures.setdefault(key, {})
            failures[(failure.action, failure.kind, failure.name)] = failure

    def _prune_failures(self, key: JobKey, plan: Plan) -> None:
        """Forget refusals of writes the job no longer wants (its spec changed)."""
        planned = {("create", str(m.get("kind")), o.meta(m).name) for m in plan.create}
        planned |= {
            ("update", str(u.manifest.get("kind")), o.meta(u.manifest).name) for u in plan.update
        }
        with self._expect_lock:
            failures = self._failures.get(key)
            if failures is None:
                return
            for what in [w for w in failures if w not in planned]:
                del failures[what]
            if not failures:
                del self._failures[key]

    def _forget_failure(self, key: JobKey, action: str, kind: str, name: str) -> None:
        """The write went through: the job no longer shows its earlier refusal."""
        with self._expect_lock:
            failures = self._failures.get(key)
            if failures is not None:
                failures.pop((action, kind, name), None)
                if not failures:
                    del self._failures[key]

    def execute(self, key: JobKey, job: Manifest, plan: Plan) -> PassResult:
        """Carry out `plan`: status, deletes, updates, creates, then events."""
        namespace = key[1]
        job_ref = job_key_str(key)
        actions: list[str] = []
        expect = _Expectations(deadline=self._clock() + self.settings.expectation_timeout)

        def did(action: str, what: str, reason: str | None = None, **extra: Any) -> None:
            actions.append(f"{action} {what}")
            log.info(action, extra=fields(job=job_ref, object=what, reason=reason, **extra))

        if plan.status is not None:
            try:
                written = self.cluster.replace_status(job, plan.status)
            except ApiError as err:
                if err.conflict:
                    log.info("status write conflict; retrying", extra=fields(job=job_ref))
                    return PassResult("conflict", plan, tuple(actions))
                if err.not_found:
                    return PassResult("skipped", plan, tuple(actions))
                raise
            job_resource = _resource_of(job)
            expect.present.append((job_resource, namespace, key[2], resource_version(job)))
            self._observe_launch(key, job, plan.status)
            did(
                "write status",
                f"{key[0]}/{key[2]}",
                phase=(plan.status or {}).get("phase"),
                resourceVersion=resource_version(written),
            )

        self._prune_failures(key, plan)
        conflicts = 0
        refused = holding = False
        refused_now: dict[tuple[str, str], str] = {}
        done: set[str] = (
            set()
        )  # the creates and deletes carried out, for the Events that report them
        job_uid = o.meta(job).uid
        # Once the status is written, its transition Events must be recorded even if a child
        # action below fails: the next pass sees the new status and has no transition left.
        try:
            for deletion in plan.delete:
                resource = resource_for(deletion.api_version, deletion.kind)
                deleted = self.cluster.delete(
                    resource,
                    namespace,
                    deletion.name,
                    uid=deletion.uid,
                    grace_period_seconds=deletion.grace_period_seconds,
                )
                if deleted and deletion.uid:
                    expect.absent.append((resource, namespace, deletion.name, deletion.uid))
                if deleted:
                    done.add(f"delete {deletion.kind}/{deletion.name}")
                did(
                    "delete" if deleted else "delete (already gone)",
                    f"{deletion.kind}/{deletion.name}",
                    deletion.reason,
                    gracePeriodSeconds=deletion.grace_period_seconds,
                )

            for update in plan.update:
                manifest = update.manifest
                resource = _resource_of(manifest)
                obj_name = o.meta(manifest).name
                try:
                    self.cluster.replace(manifest, namespace)
                except ApiError as err:
                    if err.permanent:
                        refused = True
                        failure = _failure("update", resource, obj_name, err)
                        self._remember_failure(key, failure)
                        did("update refused", f"{resource.kind}/{obj_name}", err.message)
                        continue
                    if not err.conflict:
                        raise
                    conflicts += 1
                    did("update conflict", f"{resource.kind}/{obj_name}", update.reason)
                    continue
                self._forget_failure(key, "update", resource.kind, obj_name)
                expect.present.append((resource, namespace, obj_name, resource_version(manifest)))
                did("update", f"{resource.kind}/{obj_name}", update.reason)

            # What the pods mount first, then the pods, then the services, each group in
            # slow-start batches; the first create that is refused, or that finds someone else's
            # object under the name, ends the creates after its batch.
            held = self._held_creates(key)
            for group in _create_groups(plan.create):
                stop = False
                for batch in self._slow_start(group):
                    waiting = [m for m in batch if held and (*_create_key(m), _digest(m)) in held]
                    if waiting:  # refused before, as it is now: its backoff has not passed
                        holding = True
                        stop = True
                        for manifest in waiting:
                            did("create held", f"{o.kind(manifest)}/{o.meta(manifest).name}")
                        break
                    outcomes = self._attempt_creates(namespace, job_uid, batch)
                    error: ApiError | None = None
                    for manifest, tried in zip(batch, outcomes, strict=True):
                        if isinstance(tried, ApiError):
                            error = error or tried
                            continue
                        resource = _resource_of(manifest)
                        obj_name = o.meta(manifest).name
                        what = f"{resource.kind}/{obj_name}"
                        result, detail = tried
                        if result == "created":
                            self._forget_failure(key, "create", resource.kind, obj_name)
                            uid = detail if isinstance(detail, str) else ""
                            expect.created.append((resource, namespace, obj_name, uid))
                            done.add(f"create {what}")
                            did("create", what)
                        elif result == "exists":
                            did("create (exists)", what)
                        elif result == "gone":  # deleted in between: look again next pass
                            conflicts += 1
                            stop = True
                            did("create (exists, then gone)", what)
                        elif result == "refused":
                            assert isinstance(detail, ApiError)
                            refused = stop = True
                            self._remember_failure(
                                key, _failure("create", resource, obj_name, detail)
                            )
                            refused_now[(resource.kind, obj_name)] = _digest(manifest)
                            did("create refused", what, detail.message, status=detail.status)
                        else:  # "foreign"
                            assert isinstance(detail, Mapping)
                            refused = stop = True
                            with self._expect_lock:
                                self._foreign.setdefault(key, {})[(resource.kind, obj_name)] = (
                                    resource,
                                    _metadata_only(resource, detail),
                                )
                            did(
                                "create blocked",
                                what,
                                ownership.conflict_message(resource.kind, detail),
                            )
                    if error is not None:
                        raise error
                    if stop:
                        break
                if stop:
                    break
        finally:
            if expect.present or expect.absent or expect.created:
                with self._expect_lock:
                    self._expect[key] = expect

            # Only what happened: "Created pod x" needs the create of x to have gone through.
            events = [e for e in plan.events if e.after is None or e.after in done]
            if events:
                # Queued, not written here: Events are informative and never hold up the job.
                self.events.record(job, events)
                for event in events:
                    actions.append(f"event {event.reason}")
                    log.info(
                        "event",
                        extra=fields(
                            job=job_ref, type=event.type, reason=event.reason, message=event.message
                        ),
                    )

        outcome = (
            "refused" if refused else "conflict" if conflicts else "held" if holding else "done"
        )
        return PassResult(outcome, plan, tuple(actions), refused_now)

    def _hold(self, key: JobKey, refused: Mapping[tuple[str, str], str], until: float) -> None:
        """Hold back a pass's refused creates until `until` (monotonic)."""
        with self._expect_lock:
            entries = self._held.setdefault(key, {})
            for what, digest in refused.items():
                entries[what] = (digest, until)
            if not entries:
                del self._held[key]

    def _held_until(self, key: JobKey) -> float:
        with self._expect_lock:
            return max((until for _, until in (self._held.get(key) or {}).values()), default=0.0)

    def _held_creates(self, key: JobKey) -> set[tuple[str, str, str]]:
        """(kind, name, digest) of the refused creates still held back (expired ones go)."""
        now = self._clock()
        out: set[tuple[str, str, str]] = set()
        with self._expect_lock:
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

    def _slow_start(self, manifests: Sequence[Manifest]) -> Iterator[Sequence[Manifest]]:
        """client-go's slow start: batches of 1, 2, 4, ... up to `parallel_creates`."""
        size, start = 1, 0
        while start < len(manifests):
            yield manifests[start : start + size]
            start += size
            size = min(size * 2, max(1, self.settings.parallel_creates))

    def _attempt_creates(
        self, namespace: str, job_uid: str, batch: Sequence[Manifest]
    ) -> list[_CreateOutcome | ApiError]:
        """Send the creates of one batch at once (on the shared pool); their outcomes in order.
        A transient error is returned, not raised, so the batch's successes are still counted."""

        def attempt(manifest: Manifest) -> _CreateOutcome | ApiError:
            try:
                return self._attempt_create(namespace, job_uid, manifest)
            except ApiError as err:
                return err

        if self._pool is None or len(batch) == 1:
            return [attempt(m) for m in batch]
        return list(self._pool.map(attempt, batch))

    def _attempt_create(self, namespace: str, job_uid: str, manifest: Manifest) -> _CreateOutcome:
        """Create one child: "created" (with its uid), "exists" (ours already), "gone" (exists,
        then gone), "refused" (with the ApiError), "foreign" (with the object holding the name).
        """
        resource = _resource_of(manifest)
        obj_name = o.meta(manifest).name
        try:
            created = self.cluster.create(manifest, namespace)
        except ApiError as err:
            if not err.permanent:
                raise
            return ("refused", err)
        if created is not None:
            return ("created", o.meta(created).uid)
        existing = self.cluster.get(resource, namespace, obj_name)
        if existing is None:
            return ("gone", None)
        if not ownership.owned_by(existing, job_uid):
            return ("foreign", existing)
        return ("exists", None)

    def _observe_launch(self, key: JobKey, job: Manifest, status: Mapping[str, Any]) -> None:
        """The status just written moves the job from Pending (or no status) to Running: its
        replicas all run for the first time. Once per job: later passes see it Running."""
        if self.metrics is None or status.get("phase") != models.JobPhase.RUNNING:
            return
        if o.phase(job) not in ("", models.JobPhase.PENDING):
            return
        seconds = launch_seconds(job, self._now())
        if seconds is not None:
            self.metrics.launched(key[0], seconds)

    # --- expectations -----------------------------------------------------------------------

    def _expectations_met(self, key: JobKey) -> bool:
        with self._expect_lock:
            expect = self._expect.get(key)
        if expect is None:
            return True
        if self._clock() > expect.deadline:
            log.warning(
                "caches did not show this job's last writes in time; reconciling anyway",
                extra=fields(job=job_key_str(key)),
            )
            self._clear_expectations(key)
            return True
        for resource, namespace, name, before in expect.present:
            cached = self._store(resource).get(namespace, name)
            if cached is None or (before and resource_version(cached) == before):
                self._requeue_at_deadline(key, expect)
                return False
        for resource, namespace, name, uid in expect.created:
            cached = self._store(resource).get(namespace, name)
            if cached is None:
                with self._expect_lock:
                    gone = uid in self._gone
                if not gone:
                    self._requeue_at_deadline(key, expect)
                    return False
        for resource, namespace, name, uid in expect.absent:
            cached = self._store(resource).get(namespace, name)
            meta = o.meta(cached or {})
            if meta.uid == uid and not meta.deletion_timestamp:
                self._requeue_at_deadline(key, expect)
                return False
        self._clear_expectations(key)
        return True

    def _requeue_at_deadline(self, key: JobKey, expect: _Expectations) -> None:
        # The watch event that fulfils the expectation wakes the job; this is the safety net.
        self.queue.add_after(key, max(0.0, expect.deadline - self._clock()) + 0.01)

    def _clear_expectations(self, key: JobKey) -> None:
        with self._expect_lock:
            self._expect.pop(key, None)

    def _store(self, resource: Resource) -> Any:
        informer = self.jobs.get(resource.kind) or self.children[resource.kind]
        return informer.store


_CreateOutcome = tuple[str, "ApiError | Manifest | str | None"]
_TRIMS: dict[str, Callable[[Manifest], Manifest]] = {
    PODS.kind: trim_pod,
    SECRETS.kind: trim_secret,
    CONFIG_MAPS.kind: trim_config_map,
}
"""What each child informer keeps of an object (t9k_sdk.reconcile.observe)."""
_GONE_REMEMBERED = 10_000
"""How many deleted children's uids the controller remembers (enough for any pass's creates)."""


def _create_key(manifest: Manifest) -> tuple[str, str]:
    return (o.kind(manifest), o.meta(manifest).name)


def _digest(manifest: Manifest) -> str:
    """A hash of a manifest's content: the same create, or an edited one."""
    text = json.dumps(manifest, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _create_groups(creates: Sequence[Manifest]) -> list[Sequence[Manifest]]:
    """The plan's creates as [what the pods mount or are scheduled with (config maps, secrets,
    the pod group), the pods, the services], each in plan order: no pod goes out before what it
    mounts, and the pods go out before the services, as Kubeflow's operator sends them (the pods
    are scheduled and pull their images while their names are being created)."""
    services = [m for m in creates if o.kind(m) == SERVICES.kind]
    pods = [m for m in creates if o.kind(m) == PODS.kind]
    others = [m for m in creates if o.kind(m) not in (PODS.kind, SERVICES.kind)]
    return [group for group in (others, pods, services) if group]


def _failure(action: str, resource: Resource, name: str, err: ApiError) -> ChildFailure:
    return ChildFailure(
        "create" if action == "create" else "update",
        resource.kind,
        name,
        err.status,
        err.reason,
        err.message,
    )


def _resource_of(obj: Mapping[str, Any]) -> Resource:
    """The resource of an object, from its apiVersion and kind."""
    return resource_for(str(obj.get("apiVersion")), str(obj.get("kind")))


def launch_seconds(job: Mapping[str, Any], now: datetime) -> float | None:
    """Seconds from the job's creationTimestamp to `now`; None when it has no readable one."""
    created = o.meta(job).creation_timestamp
    try:
        start = datetime.fromisoformat(created)
    except ValueError:
        return None
    if start.tzinfo is None:
        return None
    return max(0.0, (now - start).total_seconds())


def _metadata_only(resource: Resource, obj: Mapping[str, Any]) -> Manifest:
    """A foreign object as the core needs it: never keep someone else's data or keys."""
    meta = o.meta(obj).raw
    keep = ("name", "namespace", "uid", "resourceVersion", "ownerReferences", "labels")
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {k: meta[k] for k in keep if k in meta},
    }


def _job_key(job: Mapping[str, Any]) -> JobKey:
    return (str(job.get("kind")), *o.key(job))
