"""`Client.wait`, one situation at a time.

A wait watches one job (a list, then a watch: no polling) and, at each event of the watch and
at each deadline of its own, asks where the job stands. Each situation is handled in one place:

* the watch: it fails (`_on_event`: a 404 means the kind is not served); the job is not there
  (`_gone`: not found at the start, deleted later); no job seen yet (`_on_no_answer`: only the
  timeout);
* the job, as `job_state.evaluate` reads it against the target (`_on_state`):
  - reached: the wait returns the job;
  - failed: `JobFailedError` (`InvalidSpecError` for an invalid spec) at once;
  - finished in another state (Succeeded while waiting for Failed): `TargetUnreachableError`;
  - blocked, unable to progress by itself (unschedulable, image pull, crash loop, an expired
    launcher barrier, ...): `_on_stuck`, a `JobStuckError` subclass once the grace period of
    `StuckClock` has passed;
  - anything else (pending, running, paused or resuming when that is not the target) is on
    its way: `_on_waiting`, which only minds the timeout.

`on_progress` sees the first state and each change that a progress display shows
(`_report`).
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from t9k_sdk import _objects as o
from t9k_sdk import models
from t9k_sdk.client._api import Api, job_from_server
from t9k_sdk.client._watch import Watcher, WatchEvent
from t9k_sdk.client.errors import (
    ApiRequestError,
    ClientError,
    InvalidSpecError,
    JobDeletedError,
    JobFailedError,
    JobNotFoundError,
    TargetUnreachableError,
    WaitError,
    WaitTimeoutError,
    stuck_error_class,
)
from t9k_sdk.client.format import human_age
from t9k_sdk.client.job_state import (
    Progress,
    StuckClock,
    Verdict,
    WaitTarget,
    evaluate,
    progress_key,
)
from t9k_sdk.client.kinds import JobKind
from t9k_sdk.codecs import AnyJob

__all__ = ["JobWait", "wait_target"]


def wait_target(
    target: WaitTarget | None, for_phase: str | None, for_condition: str | None
) -> WaitTarget:
    """The target of `Client.wait` from its three ways to name one (phase Succeeded if none)."""
    if sum(x is not None for x in (target, for_phase, for_condition)) > 1:
        raise ValueError("give one of target, for_phase and for_condition")
    if for_condition is not None:
        return WaitTarget.parse(f"condition={for_condition}")
    if for_phase is not None:
        return WaitTarget.phase(for_phase)
    if target is None:
        return WaitTarget.phase(models.JobPhase.SUCCEEDED.value)
    return target


class JobWait:
    """One wait for one job: `run()` returns the job once it reaches `target`, or raises."""

    def __init__(
        self,
        api: Api,
        kind: JobKind,
        name: str,
        namespace: str,
        target: WaitTarget,
        *,
        timeout: float | None,
        stuck_grace: float,
        on_progress: Callable[[Progress], None] | None,
        not_served: Callable[[], ClientError],
    ) -> None:
        self.kind = kind
        self.name = name
        self.namespace = namespace
        self.target = target
        self.timeout = timeout
        self._api = api
        self._on_progress = on_progress
        self._not_served = not_served
        self._clock = StuckClock(stuck_grace)
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._sink: queue.Queue[WatchEvent] = queue.Queue()
        self._current: dict[str, Any] | None = None
        """The job as last seen."""
        self._stuck_at: float | None = None
        """When a stuck job's grace period ends (monotonic), if it is stuck."""
        self._shown: tuple[Any, ...] | None = None

    def run(self) -> AnyJob:
        watcher = Watcher(
            self._api,
            self.kind.resource.path(self.namespace),
            self._sink,
            field_selector=f"metadata.name={self.name}",
        ).start()
        try:
            while True:
                event = self._next_event()
                if event is not None:
                    self._on_event(event)
                if self._current is None:
                    self._on_no_answer()
                    continue
                job = self._on_state(self._current)
                if job is not None:
                    return job
        finally:
            watcher.close()

    def _next_event(self) -> WatchEvent | None:
        """The next event of the watch; None when the timeout or the grace period ends first."""
        waits = [t for t in (self._deadline, self._stuck_at) if t is not None]
        remaining = min(waits) - time.monotonic() if waits else None
        if remaining is not None and remaining <= 0:
            return None
        try:
            return self._sink.get(timeout=remaining)
        except queue.Empty:
            return None

    def _fail(self, cls: type[WaitError], reason: str, message: str) -> WaitError:
        job = job_from_server(self._current) if self._current else None
        return cls(self.kind.kind, self.name, self.namespace, reason, message, job)

    # -- the watch -----------------------------------------------------------------------------

    def _on_event(self, event: WatchEvent) -> None:
        """Keep the job of the event; raise when the watch failed or the job is not there."""
        if event.type == "ERROR" and event.error is not None:
            if isinstance(event.error, ApiRequestError) and event.error.status == 404:
                raise self._not_served()
            raise event.error
        if event.type == "SYNC":
            if not event.objects:
                raise self._gone()
            self._current = event.objects[0]
        elif event.type == "DELETED":
            raise self._fail(JobDeletedError, "Deleted", "the job was deleted")
        else:
            self._current = event.obj

    def _gone(self) -> ClientError:
        """The list has no job: it never existed (nothing seen yet), or it was deleted."""
        if self._current is None:
            return JobNotFoundError(self.kind.kind, self.name, self.namespace)
        return self._fail(JobDeletedError, "Deleted", "the job was deleted")

    def _on_no_answer(self) -> None:
        """No job seen yet: wait for the list, up to the timeout."""
        if self._deadline is not None and time.monotonic() >= self._deadline:
            raise WaitTimeoutError(
                self.kind.kind,
                self.name,
                self.namespace,
                "Timeout",
                f"no answer within {self.timeout:g}s",
            )

    # -- the job -------------------------------------------------------------------------------

    def _on_state(self, current: dict[str, Any]) -> AnyJob | None:
        """The job when it reached the target; raises when it never will; None: wait on."""
        self._report(current)
        verdict = evaluate(current, self.target)
        if verdict.state == "reached":
            return job_from_server(current)
        if verdict.state == "failed":
            cls = InvalidSpecError if verdict.reason == "InvalidSpec" else JobFailedError
            raise self._fail(cls, verdict.reason, verdict.message)
        if verdict.state == "unreachable":
            raise self._fail(TargetUnreachableError, verdict.reason, verdict.message)
        self._on_stuck(verdict)
        self._on_waiting(current)
        return None

    def _report(self, current: Mapping[str, Any]) -> None:
        """Tell `on_progress` about the first state and each change it shows."""
        key = progress_key(current)
        if self._on_progress is not None and key != self._shown:
            self._shown = key
            self._on_progress(Progress.of(current, job_from_server(current)))

    def _on_stuck(self, verdict: Verdict) -> None:
        """A blocked job fails the wait once its grace period is over; until then the wait
        wakes up when it ends. A job that is not (or no longer) stuck stops the clock."""
        now = datetime.now(UTC)
        due = self._clock.deadline(verdict.stuck, now)
        self._stuck_at = None
        if due is None or verdict.stuck is None:
            return
        left = (due - now).total_seconds()
        if left <= 0:
            raise self._fail(stuck_error_class(verdict.reason), verdict.reason, verdict.message)
        self._stuck_at = time.monotonic() + left

    def _on_waiting(self, current: Mapping[str, Any]) -> None:
        """A job on its way (pending, running, paused, ...): wait on, up to the timeout."""
        if self._deadline is not None and time.monotonic() >= self._deadline:
            phase = o.phase(current) or "Pending"
            raise self._fail(
                WaitTimeoutError,
                "Timeout",
                f"{self.target} not reached within {human_age(self.timeout or 0)};"
                f" the job is {phase}",
            )
