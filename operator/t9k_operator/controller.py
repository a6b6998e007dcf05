"""The controller: watches and caches, a work queue of job keys, workers that run reconcile passes.

    informers (jobs x3, children x5) --events--> queue of (kind, namespace, name) --> workers
    worker pass: job from the cache -> its children from the caches -> reconcile() -> execute plan

* Level-triggered: a pass looks at the whole cached state of one job, never at the event that
  woke it, so any number of coalesced events, a periodic resync and a restart all converge.
* Children are found through their controller owner reference (uid), events on them wake their
  owner (`names.owner_of`).
* The plan is carried out by `t9k_operator.execute` (status -> deletes -> updates -> creates in
  slow-start batches -> events); what a pass must remember for the next ones (expectations,
  refused writes, held creates, foreign objects) is `t9k_operator.memory`.
* After a pass writes, the next pass of that job waits until the caches have seen those writes
  (client-go's "expectations"), so a pass never acts on a view older than its own last writes.
* Errors and stale writes (409) back off exponentially per job (never a hot loop).
* A create or update the server refuses for good, or a foreign object under a child's name, is
  shown to the core (`Observed.failures`, the foreign object among the children), which puts it
  on the job. Both back off and are tried again, so fixing the cause (editing the job, removing
  the object) recovers; a refused create is held back until its backoff has passed.
* Instrumentation (`ControllerMetrics`, optional): each pass's kind, result and duration, the work
  queue's adds, waits and retries, and each job's launch latency (creation to its first move from
  Pending to Running, seen in the status write that makes it). Timing stays here, in the shell.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from t9k_operator.events import EventRecorder
from t9k_operator.execute import ClusterApi, PassResult, PlanExecutor
from t9k_operator.informer import WATCH_TIMEOUT, Informer, Store
from t9k_operator.logs import fields
from t9k_operator.memory import JobKey, JobMemory, job_key_str
from t9k_operator.sshkeys import generate_ssh_key
from t9k_operator.workqueue import Backoff, QueueMetrics, WorkQueue
from t9k_sdk import _conventions as names
from t9k_sdk import _kinds
from t9k_sdk import _objects as o
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk._kube.resources import (
    CHILD_RESOURCES,
    CONFIG_MAPS,
    JOB_RESOURCES,
    NODES,
    POD_GROUPS,
    PODS,
    RESOURCE_FLAVORS,
    SECRETS,
    SERVICES,
    WORKLOAD_PRIORITY_CLASSES,
    WORKLOADS,
    Resource,
)
from t9k_sdk.reconcile import Manifest, Observed, Plan, ownership
from t9k_sdk.reconcile.observe import trim_config_map, trim_node, trim_pod, trim_secret

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

SSH_KINDS = frozenset(_kinds.SSH_KINDS)
"""Kinds whose pods reach each other over SSH and so need a key pair in `<job>-ssh` (the kinds
registered with `ssh=True` in `t9k_sdk._kinds`)."""


class ReconcileFn(Protocol):
    """`t9k_sdk.reconcile.reconcile`: the pure core."""

    def __call__(self, job: Mapping[str, Any], observed: Observed, /, *, now: datetime) -> Plan: ...


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
    pass_spacing: float = 10.0
    """After a pass whose core took t seconds and that changed no child, the job's next pass
    waits at least this times t: a job of thousands of pods, whose every pod event asks for a
    pass while its pods start, keeps at most a tenth of a worker (and of the interpreter) busy
    recomputing its status, which still follows within a second (2,000 pods: a pass of about
    0.08 s). A pass that creates, updates or deletes children is never held back, and jobs of
    a few pods (t well under a millisecond) never wait."""
    node_lost_after: int = 300
    """Seconds a pod's node may be NotReady before its pod is force-deleted and replaced, for a
    job without the annotation `t9k-sdk.dev/node-lost-after` (`policies.lost_nodes`)."""


def _ready(node: Manifest) -> tuple[object, object]:
    """A node's Ready condition as the core reads it (status, since when)."""
    ready = o.condition(node, "Ready") or {}
    return ready.get("status"), ready.get("lastTransitionTime")


def _job_of(child: Manifest) -> JobKey | None:
    """The key of the job that owns `child` (its controller owner reference), if any."""
    owner = names.owner_of(child)
    return None if owner is None else (owner[0], o.meta(child).namespace, owner[1])


def _utcnow() -> datetime:
    return datetime.now(UTC)


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
        self.queue: WorkQueue[JobKey] = WorkQueue(settings.backoff, clock=clock, metrics=metrics)
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
        # Kueue's flavours and priority classes (cluster-scoped, a handful): what an admitted
        # job's pods get, and the priority its Workload carries. Not served (no Kueue) or not
        # readable (a namespace-scoped role cannot grant them) is an empty cache.
        self.flavors = Informer(
            cluster, RESOURCE_FLAVORS, watch_timeout=settings.watch_timeout, optional=True
        )
        self.priorities = Informer(
            cluster, WORKLOAD_PRIORITY_CLASSES, watch_timeout=settings.watch_timeout, optional=True
        )
        # Nodes (cluster-scoped, trimmed to their Ready condition): whether a pod's node is
        # NotReady or gone. A namespace-scoped install may not read them: then no pod is
        # replaced for its node (the core is told the nodes are not known).
        self.nodes = Informer(
            cluster,
            NODES,
            handler=self._on_node,
            trim=trim_node,
            watch_timeout=settings.watch_timeout,
            optional=True,
        )
        self.memory = JobMemory()
        self._stop = threading.Event()
        self._working = threading.Event()
        self._threads: list[threading.Thread] = []
        self.passes = 0
        self.events = EventRecorder(
            cluster.record_events, on_drop=metrics.events_dropped if metrics else None
        )
        self.executor = PlanExecutor(
            cluster,
            self.memory,
            self.events,
            parallel_creates=settings.parallel_creates,
            expectation_timeout=settings.expectation_timeout,
            clock=clock,
            now=now,
            launched=metrics.launched if metrics else None,
        )

    # --- lifecycle --------------------------------------------------------------------------

    @property
    def informers(self) -> list[Informer]:
        return [
            *self.jobs.values(),
            *self.children.values(),
            self.flavors,
            self.priorities,
            self.nodes,
        ]

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
        self.executor.shutdown()
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
            self.memory.child_gone(uid)
        for key in {k for obj in (new, old) if obj is not None and (k := _job_of(obj))}:
            self.queue.add(key)

    def _on_node(self, _type: str, new: Manifest | None, old: Manifest | None) -> None:
        """A node that changed readiness, appeared or went: its pods' jobs look again."""
        if new is not None and old is not None and _ready(new) == _ready(old):
            return  # a heartbeat, or a change the core does not read
        name = o.meta(new if new is not None else old or {}).name
        pods = self.children[PODS.kind].store.objects()
        for key in {k for pod in pods if o.node_name(pod) == name and (k := _job_of(pod))}:
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
            self.memory.hold(key, result.refused, self._clock() + delay)
            log.warning(
                "pass refused by the API server; the job shows why",
                extra=fields(job=job_ref, retry_in=round(delay, 2)),
            )
            return "requeue"
        if result.outcome == "waiting":  # woken by the watch, or at the expectation's deadline
            return "requeue_after"
        if result.outcome == "held":  # nothing new to send before the refusal's backoff ends
            self.queue.add_after(key, max(0.0, self.memory.held_until(key) - self._clock()))
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
            self.memory.forget_job(key)
            return PassResult("skipped")
        if not self._expectations_met(key):
            return PassResult("waiting")
        observed = self._observe(key, job)
        self.passes += 1
        started = self._clock()
        plan = self.reconcile_fn(job, observed, now=self._now())
        if not (plan.create or plan.delete or plan.update):  # only passes that wait and watch
            self.queue.pace(key, self.settings.pass_spacing * (self._clock() - started))
        for note in plan.notes:
            log.debug(note, extra=fields(job=job_key_str(key)))
        return self.executor.execute(key, job, plan)

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
        queued = self._names_queue(job)  # only then are Kueue's flavours and priorities read
        return Observed(
            pods=observed(PODS),
            services=observed(SERVICES),
            config_maps=observed(CONFIG_MAPS),
            secrets=secrets,
            pod_groups=observed(POD_GROUPS),
            workloads=observed(WORKLOADS),
            kueue=self.children[WORKLOADS.kind].served,
            flavors=self._flavors() if queued else {},
            priorities=self._priorities() if queued else None,
            ssh_key=ssh_key,
            failures=self.memory.failures(key),
            nodes=self._nodes_of(observed(PODS)),
            node_lost_after=self.settings.node_lost_after,
        )

    def _nodes_of(self, pods: tuple[Manifest, ...]) -> dict[str, Manifest] | None:
        """The nodes `pods` are bound to that exist (None: nodes cannot be read). A node the
        cache does not hold is asked of the API server before it is called gone: a pod can be
        bound to a node whose creation the watch has not delivered yet."""
        if not self.nodes.served:
            return None
        out: dict[str, Manifest] = {}
        for name in {n for pod in pods if (n := o.node_name(pod))}:
            node = self.nodes.store.get("", name)
            if node is None and (fresh := self.cluster.get(NODES, "", name)) is not None:
                node = trim_node(fresh)
            if node is not None:
                out[name] = node
        return out

    @staticmethod
    def _names_queue(job: Manifest) -> bool:
        """The job names a Kueue LocalQueue."""
        return bool(o.meta(job).labels.get(names.KUEUE_QUEUE_LABEL))

    def _flavors(self) -> dict[str, Mapping[str, Any]]:
        """Kueue ResourceFlavor name -> its spec."""
        return {o.meta(f).name: f.get("spec") or {} for f in self.flavors.store.objects()}

    def _priorities(self) -> dict[str, int] | None:
        """Kueue WorkloadPriorityClass name -> its value (None while they cannot be read)."""
        if not self.priorities.served:
            return None
        out = {}
        for item in self.priorities.store.objects():
            value = item.get("value")
            if isinstance(value, int) and not isinstance(value, bool):
                out[o.meta(item).name] = value
        return out

    def _refresh_foreign(self, key: JobKey, uid: str) -> dict[str, list[Manifest]]:
        """Re-read the foreign objects found under child names; forget those now gone or ours."""
        by_kind: dict[str, list[Manifest]] = {}
        for (kind, name), resource in self.memory.foreign(key).items():
            current = self.cluster.get(resource, key[1], name)
            if current is None or ownership.owned_by(current, uid):
                self.memory.forget_foreign(key, kind, name)
                continue
            by_kind.setdefault(kind, []).append(
                self.memory.remember_foreign(key, resource, name, current)
            )
        return by_kind

    # --- expectations -----------------------------------------------------------------------

    def _expectations_met(self, key: JobKey) -> bool:
        expect = self.memory.expectations(key)
        if expect is None:
            return True
        if self._clock() > expect.deadline:
            log.warning(
                "caches did not show this job's last writes in time; reconciling anyway",
                extra=fields(job=job_key_str(key)),
            )
            self.memory.clear_expectations(key)
            return True
        if not expect.shown(self._store, self.memory.gone):
            # The watch event that fulfils the expectation wakes the job; this is the safety net.
            self.queue.add_after(key, max(0.0, expect.deadline - self._clock()) + 0.01)
            return False
        self.memory.clear_expectations(key)
        return True

    def _store(self, resource: Resource) -> Store:
        informer = self.jobs.get(resource.kind) or self.children[resource.kind]
        return informer.store


_TRIMS: dict[str, Callable[[Manifest], Manifest]] = {
    PODS.kind: trim_pod,
    SECRETS.kind: trim_secret,
    CONFIG_MAPS.kind: trim_config_map,
}
"""What each child informer keeps of an object (t9k_sdk.reconcile.observe)."""


def _job_key(job: Mapping[str, Any]) -> JobKey:
    return (str(job.get("kind")), *o.key(job))
