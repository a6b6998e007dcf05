"""Reading a job's status (pure): wait targets, failure and stuck detection, counts, events.

Everything here works on manifest dicts as the API server returns them, so it applies to any
snapshot (a watch event, a `get`, a file) and needs no cluster to test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from t9k_sdk import _conventions as conventions
from t9k_sdk import _objects as o
from t9k_sdk import models
from t9k_sdk._objects import condition, parse_time
from t9k_sdk.codecs import AnyJob

__all__ = [
    "BARRIER_PREFIX",
    "STUCK_REASONS",
    "JobEvent",
    "Progress",
    "Stuck",
    "StuckClock",
    "Verdict",
    "WaitTarget",
    "barrier_failure",
    "condition",
    "evaluate",
    "event_from",
    "failure_of",
    "parse_time",
    "replica_counts",
    "reported",
    "restarts",
    "stuck_of",
]

STUCK_REASONS = frozenset({"Unschedulable", *conventions.STUCK_REASONS})
"""Reasons of a `Running=False` condition that mean "this will not start by itself"."""

BARRIER_PREFIX = "t9k bootstrap:"
"""How the launcher's readiness barrier starts its termination message when it gives up."""

TERMINAL_PHASES = frozenset({models.JobPhase.SUCCEEDED.value, models.JobPhase.FAILED.value})


_status = o.status


def reported(job: Mapping[str, Any]) -> bool:
    """Whether an operator has written the job's status. Until one does, the API server shows
    `status: {observedGeneration: 0}` (a default of the CRDs), or no status at all."""
    status = o.status(job)
    return any(k != "observedGeneration" or v for k, v in status.items())


def phase_of(job: Mapping[str, Any]) -> str | None:
    """The job's `status.phase`, or None when it has none yet."""
    return o.phase(job) or None


# -- failure and stuck -----------------------------------------------------------------------


def barrier_failure(job: Mapping[str, Any]) -> tuple[str, str] | None:
    """(pod, message) of a replica whose readiness barrier gave up, from the job's status."""
    for replica in o.replicas(job):
        for c in replica.containers:
            message = c.message.strip()
            if message.startswith(BARRIER_PREFIX):
                return replica.name, message
    return None


def failure_of(job: Mapping[str, Any]) -> tuple[str, str] | None:
    """(reason, message) when the job has failed; the barrier's message is added if it gave up."""
    failed = condition(job, models.JobConditionType.FAILED.value)
    is_failed = phase_of(job) == models.JobPhase.FAILED.value or (
        failed is not None and failed.get("status") == "True"
    )
    if not is_failed:
        return None
    reason = str((failed or {}).get("reason") or "Failed")
    message = str((failed or {}).get("message") or "the job failed")
    barrier = barrier_failure(job)
    if barrier is not None and barrier[1] not in message:
        message = f"{message} ({barrier[0]}: {barrier[1]})"
    return reason, message


@dataclass(frozen=True)
class Stuck:
    """Why a job cannot make progress by itself."""

    reason: str
    """`Unschedulable`, `ImagePullBackOff`, ..., or `BarrierTimeout`."""
    message: str
    """The operator's message (with the scheduler's or the kubelet's words)."""
    since: datetime | None
    """When the status says it began (the Running condition's last transition), if known."""
    immediate: bool = False
    """True when waiting longer cannot help (the barrier has already waited its timeout)."""


def stuck_of(job: Mapping[str, Any]) -> Stuck | None:
    """Whether the job is stuck, from its status alone (None when it is not, or has finished)."""
    if phase_of(job) in TERMINAL_PHASES:
        return None
    barrier = barrier_failure(job)
    if barrier is not None:
        pod, message = barrier
        return Stuck("BarrierTimeout", f"{pod}: {message}", None, immediate=True)
    running = condition(job, models.JobConditionType.RUNNING.value)
    if running is not None and running.get("status") == "False":
        reason = str(running.get("reason") or "")
        if reason in STUCK_REASONS:
            return Stuck(
                reason,
                str(running.get("message") or reason),
                parse_time(running.get("lastTransitionTime")),
            )
    # The operator's own verdict (t9k-sdk's kstatus conditions): something blocks the job, such
    # as an object of someone else's holding the name of one of its children.
    stalled = condition(job, models.JobConditionType.STALLED.value)
    if stalled is not None and stalled.get("status") == "True":
        reason = str(stalled.get("reason") or "Stalled")
        return Stuck(
            reason,
            str(stalled.get("message") or reason),
            parse_time(stalled.get("lastTransitionTime")),
        )
    return None


class StuckClock:
    """When a stuck job should fail a wait: `grace` seconds after it became stuck.

    The grace period counts from the Running condition's last transition when the job was
    already stuck when the wait began, and from the moment the wait saw it otherwise (a change of
    reason starts it again). A barrier failure fails at once. `grace=0` fails at once too.
    """

    def __init__(self, grace: float) -> None:
        if grace < 0:
            raise ValueError(f"the grace period must be >= 0 seconds; got {grace}")
        self.grace = grace
        self._reason: str | None = None
        self._since: datetime | None = None
        self._first = True

    def deadline(self, stuck: Stuck | None, now: datetime) -> datetime | None:
        """The time at which `stuck` becomes an error; None when the job is not stuck."""
        first, self._first = self._first, False
        if stuck is None:
            self._reason = self._since = None
            return None
        if stuck.immediate:
            return now
        if stuck.reason != self._reason:
            self._reason = stuck.reason
            since = stuck.since if first and stuck.since is not None else now
            self._since = min(since, now)
        assert self._since is not None
        return datetime.fromtimestamp(self._since.timestamp() + self.grace, tz=UTC)


# -- wait targets ----------------------------------------------------------------------------

_PHASES = {p.value.lower(): p.value for p in models.JobPhase}
_CONDITIONS = {c.value.lower(): c.value for c in models.JobConditionType}


@dataclass(frozen=True)
class WaitTarget:
    """What `wait` waits for: a phase, or a condition with a status."""

    what: Literal["phase", "condition"]
    value: str
    """`Succeeded`, `Running`, ... or a condition type `Completed`, `Failed`, ..."""
    status: str = "True"
    """For a condition: `True` or `False`."""

    @classmethod
    def phase(cls, value: str) -> WaitTarget:
        canonical = _PHASES.get(value.strip().lower())
        if canonical is None:
            raise ValueError(
                f"unknown phase {value!r}: expected one of {', '.join(_PHASES.values())}"
            )
        return cls("phase", canonical)

    @classmethod
    def condition(cls, value: str, status: str | bool = True) -> WaitTarget:
        canonical = _CONDITIONS.get(value.strip().lower())
        if canonical is None:
            raise ValueError(
                f"unknown condition {value!r}: expected one of {', '.join(_CONDITIONS.values())}"
            )
        text = str(status).strip().lower()
        if text not in ("true", "false"):
            raise ValueError(f"a condition status is True or False; got {status!r}")
        return cls("condition", canonical, text.capitalize())

    @classmethod
    def parse(cls, text: str) -> WaitTarget:
        """`phase=Succeeded`, `condition=Completed`, `condition=Paused=False` (any case)."""
        what, sep, rest = text.partition("=")
        what = what.strip().lower()
        if not sep or not rest.strip():
            raise ValueError(
                f"expected phase=PHASE or condition=TYPE[=True|False]; got {text!r}"
                " (e.g. phase=Succeeded, condition=Completed)"
            )
        if what == "phase":
            return cls.phase(rest)
        if what == "condition":
            value, sep, status = rest.partition("=")
            return cls.condition(value, status if sep else True)
        raise ValueError(f"expected phase=... or condition=...; got {text!r}")

    def reached(self, job: Mapping[str, Any]) -> bool:
        if self.what == "phase":
            return phase_of(job) == self.value
        c = condition(job, self.value)
        return c is not None and c.get("status") == self.status

    def __str__(self) -> str:
        if self.what == "phase":
            return f"phase={self.value}"
        suffix = "" if self.status == "True" else f"={self.status}"
        return f"condition={self.value}{suffix}"


@dataclass(frozen=True)
class Verdict:
    """Where a job stands with respect to a wait target."""

    state: Literal["reached", "waiting", "failed", "stuck", "unreachable"]
    reason: str = ""
    message: str = ""
    stuck: Stuck | None = None


def evaluate(job: Mapping[str, Any], target: WaitTarget) -> Verdict:
    """Reached, still waiting, failed, stuck (not yet subject to the grace period) or unreachable."""
    if target.reached(job):
        return Verdict("reached")
    failure = failure_of(job)
    if failure is not None:
        return Verdict("failed", *failure)
    phase = phase_of(job)
    if phase == models.JobPhase.SUCCEEDED.value:
        return Verdict(
            "unreachable",
            "Succeeded",
            f"the job has succeeded, so {target} will not be reached",
        )
    stuck = stuck_of(job)
    if stuck is not None:
        return Verdict("stuck", stuck.reason, stuck.message, stuck)
    return Verdict("waiting")


@dataclass(frozen=True)
class Progress:
    """One step of a wait as a progress display shows it, read once from the watched object.

    `Client.wait(on_progress=...)` passes one for the first state and each change of phase, of
    the Running condition, or of the replica counts.
    """

    job: AnyJob
    """The job as the watch saw it."""
    phase: str
    """Its phase (`Pending` before the operator reports one)."""
    line: str
    """`Running: All pods are running normally. (running 2)`: phase, message and counts."""
    stuck: Stuck | None
    """Why it cannot make progress by itself, if so (see `stuck_of`)."""

    @classmethod
    def of(cls, manifest: Mapping[str, Any], job: AnyJob) -> Progress:
        """The progress of `job`, whose manifest (as the API server sent it) is `manifest`."""
        return cls(
            job, phase_of(manifest) or "Pending", progress_line(manifest), stuck_of(manifest)
        )


def progress_key(job: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a progress display shows: phase, the Running condition, the replica counts."""
    running = condition(job, models.JobConditionType.RUNNING.value) or {}
    aggregate = _status(job).get("aggregate") or {}
    return (
        phase_of(job),
        running.get("status"),
        running.get("reason"),
        running.get("message"),
        tuple(sorted((k, v) for k, v in aggregate.items() if v)),
    )


def progress_line(job: Mapping[str, Any]) -> str:
    """`Running: All pods are running normally. (running 2)` for a progress display."""
    phase = phase_of(job) or "Pending"
    running = condition(job, models.JobConditionType.RUNNING.value) or {}
    failed = condition(job, models.JobConditionType.FAILED.value) or {}
    if phase in TERMINAL_PHASES:
        message = str(failed.get("message") or running.get("message") or "")
    elif not reported(job):
        message = "waiting for the operator to report on the job"
    else:
        message = str(running.get("message") or "")
    aggregate = o.mapping(o.status(job).get("aggregate"))
    counts = ", ".join(f"{k} {v}" for k, v in aggregate.items() if v)
    return f"{phase}: {message}" + (f" ({counts})" if counts else "")


# -- counts ----------------------------------------------------------------------------------


def replica_counts(job: AnyJob) -> tuple[int, int]:
    """(running, desired) replicas: running from the status, desired from the spec."""
    running = 0
    if job.status is not None and job.status.aggregate is not None:
        running = job.status.aggregate.running or 0
    return running, len(conventions.slots(job))


def restarts(job: AnyJob) -> int:
    """Replica restarts the operator has made (the sum of `status.tasks[].restartCount`)."""
    if job.status is None:
        return 0
    return sum(t.restart_count or 0 for t in job.status.tasks or ())


# -- events ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobEvent:
    """A Kubernetes Event about a job or one of its pods."""

    time: datetime | None
    """When it last happened."""
    type: str
    """`Normal` or `Warning`."""
    reason: str
    message: str
    object: str
    """`GenericJob/mnist` or `Pod/mnist-worker-0`."""
    count: int = 1
    source: str = ""
    """Who reported it: `t9k-operator`, `default-scheduler`, `kubelet`, ..."""
    sequence: int = 0
    """The Event's resourceVersion as a number (0 if not one): orders events recorded within
    the same second, since most Events carry times to the second only."""

    def __str__(self) -> str:
        when = self.time.isoformat() if self.time else "?"
        times = f" (x{self.count})" if self.count > 1 else ""
        return f"{when} {self.type} {self.reason} {self.object}: {self.message}{times}"


def event_from(raw: Mapping[str, Any]) -> JobEvent:
    """A core/v1 Event as a `JobEvent`."""
    meta = o.meta(raw)
    involved = o.mapping(raw.get("involvedObject"))
    series = o.mapping(raw.get("series"))
    time = (
        parse_time(raw.get("lastTimestamp"))
        or parse_time(series.get("lastObservedTime"))
        or parse_time(raw.get("eventTime"))
        or parse_time(raw.get("firstTimestamp"))
        or parse_time(meta.creation_timestamp)
    )
    source = o.mapping(raw.get("source")).get("component") or raw.get("reportingComponent") or ""
    count = int(raw.get("count") or series.get("count") or 1)
    version = meta.resource_version
    return JobEvent(
        time=time,
        type=str(raw.get("type") or "Normal"),
        reason=str(raw.get("reason") or ""),
        message=str(raw.get("message") or "").strip(),
        object=f"{involved.get('kind', '')}/{involved.get('name', '')}",
        count=count,
        source=str(source),
        sequence=int(version) if version.isdigit() else 0,
    )


def sort_events(events: Sequence[JobEvent]) -> list[JobEvent]:
    """Oldest first (to the second, then in the order the API server stored them); events
    without a time first."""
    return sorted(
        events, key=lambda e: (int(e.time.timestamp()) if e.time else 0, e.sequence, e.object)
    )
