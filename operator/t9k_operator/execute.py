"""Carrying out a plan of the core: one step after the other, each a method of `PlanExecutor`.

    status -> deletes -> updates -> creates (slow start) -> events

* The status is written first; Events are recorded only after the status write succeeded, and
  then even if a child action fails (the next pass sees the new status and has no transition
  left to report). An Event that reports a create or delete only if that action was carried out.
* Creates start slowly, as client-go's slow start does (batches of 1, 2, 4, ... while smaller
  than `parallel_creates`), then the rest go out through a sliding window of `parallel_creates`
  requests in flight, on a pool shared by the workers: what the pods mount (config maps,
  secrets, the pod group) first, then the pods and the services (sent in that order, in one
  slow start). A refused or blocked create
  (or a transient error) ends the creates: nothing more is sent, what is in flight finishes.
* A create or update the server refuses for good (`ApiError.permanent`: 422 invalid, 403 quota
  or policy, ...) is remembered (`JobMemory`) for the core; a create that finds a foreign object
  under the child's name (not controlled by this job's uid) ends the creates, and the object is
  remembered for the core, which reports the conflict.
* Every write is remembered as an expectation: the next pass of the job waits until the caches
  show it.
* Events are queued on the background recorder (`t9k_operator.events`), never written here.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from t9k_operator.events import EventRecorder
from t9k_operator.informer import WatchSource, resource_version
from t9k_operator.logs import fields
from t9k_operator.memory import Expectations, JobKey, JobMemory, job_key_str
from t9k_sdk import _objects as o
from t9k_sdk import models
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk._kube.resources import PODS, SERVICES, Resource, resource_for
from t9k_sdk.reconcile import ChildFailure, Event, Manifest, Plan, ownership

__all__ = ["ClusterApi", "PassResult", "PlanExecutor", "launch_seconds"]

# The log lines keep the controller's name (`controller: create ...`): admins search for them.
log = logging.getLogger("t9k_operator.controller")


class ClusterApi(WatchSource, Protocol):
    """The API calls a controller makes (`cluster.Cluster` implements them)."""

    def create(self, manifest: Mapping[str, Any], namespace: str) -> Manifest | None: ...

    def replace(
        self, manifest: Mapping[str, Any], namespace: str, *, subresource: str | None = None
    ) -> Manifest: ...

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
class _Execution:
    """One plan being carried out: what it has done so far."""

    key: JobKey
    job: Manifest
    plan: Plan
    expect: Expectations
    actions: list[str] = field(default_factory=list)
    done: set[str] = field(default_factory=set)
    """The creates and deletes carried out, for the Events that report them."""
    conflicts: int = 0
    refused: bool = False
    holding: bool = False
    refused_now: dict[tuple[str, str], str] = field(default_factory=dict)

    @property
    def namespace(self) -> str:
        return self.key[1]

    def did(self, action: str, what: str, reason: str | None = None, **extra: Any) -> None:
        self.actions.append(f"{action} {what}")
        log.info(
            action, extra=fields(job=job_key_str(self.key), object=what, reason=reason, **extra)
        )

    def result(self) -> PassResult:
        outcome = (
            "refused"
            if self.refused
            else "conflict" if self.conflicts else "held" if self.holding else "done"
        )
        return PassResult(outcome, self.plan, tuple(self.actions), self.refused_now)


_CreateOutcome = tuple[str, "ApiError | Manifest | str | None"]


class PlanExecutor:
    """Carries out plans (see the module docstring); shared by the workers."""

    def __init__(
        self,
        cluster: ClusterApi,
        memory: JobMemory,
        events: EventRecorder,
        *,
        parallel_creates: int,
        expectation_timeout: float,
        clock: Callable[[], float],
        now: Callable[[], datetime],
        launched: Callable[[str, float], None] | None = None,
    ) -> None:
        self.cluster = cluster
        self.memory = memory
        self.events = events
        self.parallel_creates = parallel_creates
        self.expectation_timeout = expectation_timeout
        self._clock, self._now, self._launched = clock, now, launched
        self._pool = (
            ThreadPoolExecutor(parallel_creates, thread_name_prefix="create")
            if parallel_creates > 1
            else None
        )

    def shutdown(self) -> None:
        """Stop the pool of parallel creates (the workers are done)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def execute(self, key: JobKey, job: Manifest, plan: Plan) -> PassResult:
        """Carry out `plan`: status, deletes, updates, creates, then events."""
        run = _Execution(key, job, plan, Expectations(self._clock() + self.expectation_timeout))
        if plan.status is not None:
            stopped = self._write_status(run, plan.status)
            if stopped is not None:
                return stopped
        self.memory.prune_failures(key, plan)
        # Once the status is written, its transition Events must be recorded even if a child
        # action below fails: the next pass sees the new status and has no transition left.
        try:
            self._delete(run)
            self._update(run)
            self._create(run)
        finally:
            if run.expect:
                self.memory.expect(key, run.expect)
            self._record_events(run)
        return run.result()

    # --- the steps --------------------------------------------------------------------------

    def _write_status(self, run: _Execution, status: Mapping[str, Any]) -> PassResult | None:
        """Write the job's status; a PassResult when the plan goes no further."""
        key, job = run.key, run.job
        try:
            written = self.cluster.replace_status(job, status)
        except ApiError as err:
            if err.conflict:
                log.info("status write conflict; retrying", extra=fields(job=job_key_str(key)))
                return PassResult("conflict", run.plan, tuple(run.actions))
            if err.not_found:
                return PassResult("skipped", run.plan, tuple(run.actions))
            raise
        job_resource = _resource_of(job)
        run.expect.present.append((job_resource, run.namespace, key[2], resource_version(job)))
        self._observe_launch(key, job, status)
        run.did(
            "write status",
            f"{key[0]}/{key[2]}",
            phase=status.get("phase"),
            resourceVersion=resource_version(written),
        )
        return None

    def _delete(self, run: _Execution) -> None:
        for deletion in run.plan.delete:
            resource = resource_for(deletion.api_version, deletion.kind)
            deleted = self.cluster.delete(
                resource,
                run.namespace,
                deletion.name,
                uid=deletion.uid,
                grace_period_seconds=deletion.grace_period_seconds,
            )
            if deleted and deletion.uid:
                run.expect.absent.append((resource, run.namespace, deletion.name, deletion.uid))
            if deleted:
                run.done.add(f"delete {deletion.kind}/{deletion.name}")
            run.did(
                "delete" if deleted else "delete (already gone)",
                f"{deletion.kind}/{deletion.name}",
                deletion.reason,
                gracePeriodSeconds=deletion.grace_period_seconds,
            )

    def _update(self, run: _Execution) -> None:
        for update in run.plan.update:
            manifest = update.manifest
            resource = _resource_of(manifest)
            obj_name = o.meta(manifest).name
            try:
                self.cluster.replace(manifest, run.namespace, subresource=update.subresource)
            except ApiError as err:
                if err.permanent:
                    run.refused = True
                    self.memory.remember_failure(
                        run.key, _failure("update", resource, obj_name, err)
                    )
                    run.did("update refused", f"{resource.kind}/{obj_name}", err.message)
                    continue
                if not err.conflict:
                    raise
                run.conflicts += 1
                run.did("update conflict", f"{resource.kind}/{obj_name}", update.reason)
                continue
            self.memory.forget_failure(run.key, "update", resource.kind, obj_name)
            run.expect.present.append(
                (resource, run.namespace, obj_name, resource_version(manifest))
            )
            run.did("update", f"{resource.kind}/{obj_name}", update.reason)

    def _create(self, run: _Execution) -> None:
        """What the pods mount first, then the pods, then the services, each group in
        slow-start batches; the first create that is refused, or that finds someone else's
        object under the name, ends the creates after its batch."""
        held = self.memory.held_creates(run.key, self._clock())
        for group in _create_groups(run.plan.create):
            for batch in _slow_start(group, self.parallel_creates):
                waiting = [m for m in batch if held and (*_create_key(m), _digest(m)) in held]
                if waiting:  # refused before, as it is now: its backoff has not passed
                    run.holding = True
                    for manifest in waiting:
                        run.did("create held", f"{o.kind(manifest)}/{o.meta(manifest).name}")
                    return
                if not self._create_batch(run, batch):
                    return

    def _create_batch(self, run: _Execution, batch: Sequence[Manifest]) -> bool:
        """Send one batch of creates; whether the creates go on."""
        key, namespace = run.key, run.namespace
        outcomes = self._attempt_creates(namespace, o.meta(run.job).uid, batch)
        go_on = True
        error: ApiError | None = None
        for manifest, tried in zip(batch, outcomes, strict=True):
            if tried is None:  # not sent: an earlier create ended the creates
                go_on = False
                continue
            if isinstance(tried, ApiError):
                error = error or tried
                continue
            resource = _resource_of(manifest)
            obj_name = o.meta(manifest).name
            what = f"{resource.kind}/{obj_name}"
            result, detail = tried
            if result == "created":
                self.memory.forget_failure(key, "create", resource.kind, obj_name)
                uid = detail if isinstance(detail, str) else ""
                run.expect.created.append((resource, namespace, obj_name, uid))
                run.done.add(f"create {what}")
                run.did("create", what)
            elif result == "exists":
                run.did("create (exists)", what)
            elif result == "gone":  # deleted in between: look again next pass
                run.conflicts += 1
                go_on = False
                run.did("create (exists, then gone)", what)
            elif result == "refused":
                assert isinstance(detail, ApiError)
                run.refused = True
                go_on = False
                self.memory.remember_failure(key, _failure("create", resource, obj_name, detail))
                run.refused_now[(resource.kind, obj_name)] = _digest(manifest)
                run.did("create refused", what, detail.message, status=detail.status)
            else:  # "foreign"
                assert isinstance(detail, Mapping)
                run.refused = True
                go_on = False
                self.memory.remember_foreign(key, resource, obj_name, detail)
                run.did("create blocked", what, ownership.conflict_message(resource.kind, detail))
        if error is not None:
            raise error
        return go_on

    def _record_events(self, run: _Execution) -> None:
        # Only what happened: "Created pod x" needs the create of x to have gone through.
        events = [e for e in run.plan.events if e.after is None or e.after in run.done]
        if not events:
            return
        # Queued, not written here: Events are informative and never hold up the job.
        self.events.record(run.job, events)
        for event in events:
            run.actions.append(f"event {event.reason}")
            log.info(
                "event",
                extra=fields(
                    job=job_key_str(run.key),
                    type=event.type,
                    reason=event.reason,
                    message=event.message,
                ),
            )

    # --- creates ----------------------------------------------------------------------------

    def _attempt_creates(
        self, namespace: str, job_uid: str, batch: Sequence[Manifest]
    ) -> list[_CreateOutcome | ApiError | None]:
        """Send the creates of one batch, at most `parallel_creates` in flight (on the shared
        pool); their outcomes in order. A transient error is returned, not raised, so the batch's
        successes are still counted. Once a create ends the creates (refused, blocked, gone or an
        error), no more are sent: those not sent have the outcome None."""

        def attempt(manifest: Manifest) -> _CreateOutcome | ApiError:
            try:
                return self._attempt_create(namespace, job_uid, manifest)
            except ApiError as err:
                return err

        outcomes: list[_CreateOutcome | ApiError | None] = [None] * len(batch)
        pool = self._pool
        if pool is None or len(batch) == 1:
            for i, manifest in enumerate(batch):
                outcomes[i] = attempt(manifest)
                if _ends_creates(outcomes[i]):
                    break
            return outcomes
        in_flight: dict[Future[_CreateOutcome | ApiError], int] = {}
        sent, stop = 0, False
        while in_flight or (sent < len(batch) and not stop):
            while not stop and sent < len(batch) and len(in_flight) < self.parallel_creates:
                in_flight[pool.submit(attempt, batch[sent])] = sent
                sent += 1
            done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in done:
                outcomes[in_flight.pop(future)] = outcome = future.result()
                stop = stop or _ends_creates(outcome)
        return outcomes

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
        if self._launched is None or status.get("phase") != models.JobPhase.RUNNING:
            return
        if o.phase(job) not in ("", models.JobPhase.PENDING):
            return
        seconds = launch_seconds(job, self._now())
        if seconds is not None:
            self._launched(key[0], seconds)


def _slow_start(manifests: Sequence[Manifest], most: int) -> Iterator[Sequence[Manifest]]:
    """client-go's slow start: batches of 1, 2, 4, ... while smaller than `most`, then the rest
    at once (sent through a window of `most` in flight, so no batch waits for its slowest)."""
    size, start = 1, 0
    while start < len(manifests):
        if size >= most:
            yield manifests[start:]
            return
        yield manifests[start : start + size]
        start += size
        size *= 2


def _ends_creates(outcome: _CreateOutcome | ApiError | None) -> bool:
    """Whether a create's outcome stops the creates that follow it."""
    return isinstance(outcome, ApiError) or (
        outcome is not None and outcome[0] in ("refused", "foreign", "gone")
    )


def _create_key(manifest: Manifest) -> tuple[str, str]:
    return (o.kind(manifest), o.meta(manifest).name)


def _digest(manifest: Manifest) -> str:
    """A hash of a manifest's content: the same create, or an edited one."""
    text = json.dumps(manifest, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _create_groups(creates: Sequence[Manifest]) -> list[Sequence[Manifest]]:
    """The plan's creates as [what the pods mount or are scheduled with (config maps, secrets,
    the pod group)], then [the pods, then the services], each in plan order: no pod goes out
    before what it mounts has been created, and the pods are sent before the services, as
    Kubeflow's operator sends them (the pods are scheduled and pull their images while their
    names are being created). The pods and services are one slow start: the services go on at
    the pods' pace instead of starting again at one (at 100 jobs of 8, three round trips less
    per job)."""
    services = [m for m in creates if o.kind(m) == SERVICES.kind]
    pods = [m for m in creates if o.kind(m) == PODS.kind]
    others = [m for m in creates if o.kind(m) not in (PODS.kind, SERVICES.kind)]
    return [group for group in (others, [*pods, *services]) if group]


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
