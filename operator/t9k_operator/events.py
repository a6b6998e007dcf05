"""Events recorded in the background, so a reconcile pass never waits for them.

A pass hands its Events to `EventRecorder.record`, which puts them on a bounded queue and returns
at once; one thread (started with the controller, so only on the leader) writes them through
`Cluster.record_events`. This is what client-go's event broadcaster does, and why: written
inline, the Events of one job of 2,000 replicas (one "Created pod" each) take the worker ~100 s
before it can write the job's Running status (docs/performance.md).

Events are aggregated, as client-go's correlator does, but without losing what they say:

* The thread collects what arrives within `window` seconds (1 s) of a batch of Events that
  report child actions ("Created pod: a") and merges the batches of each job, so the passes of
  one job's slow start are written together. An Event of a transition ("Running", "Failed",
  ...) is not held back: it and what was gathered with it are written at once.
* `aggregate` turns a job's Events into one per type and reason: identical ones are counted,
  similar ones ("Created pod: a", "Created pod: b") become one Event with their count whose
  message names them all, as far as an Event's 1,024 characters hold ("Created pod: a, b").
* `Cluster.record_events` patches the count of an Event of the same job, type and reason that
  it recorded in the last ten minutes, instead of writing another.

So a burst of 2,000 pod creates is a handful of Event writes, not 2,000 (docs/performance.md).

* The queue holds `capacity` batches (one batch: the Events of one pass). When it is full, a
  batch is dropped, never waited for: a warning is logged (with how many were dropped so far)
  and `on_drop` hears of it (the `t9k_operator_events_dropped_total` metric).
* `stop` writes what is still queued (up to a timeout), then ends the thread.
* Before `start` (and after `stop`), `record` writes inline: a controller driven by hand (tests,
  a one-off pass) sees its Events written when the pass returns.
* A failed write is logged and forgotten: Events are informative and never block a job.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from t9k_operator.logs import fields
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk._objects import kind, meta
from t9k_sdk.reconcile import Event

__all__ = ["DEFAULT_CAPACITY", "DEFAULT_WINDOW", "MESSAGE_LIMIT", "EventRecorder", "aggregate"]

log = logging.getLogger(__name__)

DEFAULT_CAPACITY = 1000
"""Batches (passes' worth of Events) waiting to be written before new ones are dropped."""

DEFAULT_WINDOW = 1.0
"""Seconds the writer waits after a batch for more, to write a job's Events together."""

MESSAGE_LIMIT = 1024
"""The longest Event message written (what client-go and kubectl keep)."""

_Batch = tuple[Mapping[str, Any], Sequence[Event]]


def aggregate(events: Sequence[Event]) -> list[tuple[Event, int]]:
    """One Event per type and reason, in the order first seen, with how many it stands for.

    Identical Events are counted. Similar ones, of the same type and reason but other messages,
    become one whose message lists theirs: "Created pod: a" and "Created pod: b" become "Created
    pod: a, b" when they share the part before ": ", else the messages joined with "; ". The
    message stops at `MESSAGE_LIMIT` characters with "and N more". Pure: no I/O.
    """
    groups: dict[tuple[str, str], list[Event]] = {}
    for event in events:
        groups.setdefault((event.type, event.reason), []).append(event)
    out: list[tuple[Event, int]] = []
    for group in groups.values():
        messages = list(dict.fromkeys(e.message for e in group))
        first = group[0]
        message = messages[0] if len(messages) == 1 else _combined(messages)
        out.append((Event(first.type, first.reason, message, first.after), len(group)))
    return out


def _combined(messages: Sequence[str]) -> str:
    head, colon, _ = messages[0].partition(": ")
    prefix = head + colon
    if colon and all(m.startswith(prefix) for m in messages):
        parts, sep = [m[len(prefix) :] for m in messages], ", "
    else:
        parts, sep, prefix = list(messages), "; ", ""
    reserve = len(f" and {len(parts)} more")
    text = prefix
    for i, part in enumerate(parts):
        piece = (sep if i else "") + part
        last = i == len(parts) - 1
        if i and len(text) + len(piece) + (0 if last else reserve) > MESSAGE_LIMIT:
            return f"{text} and {len(parts) - i} more"
        text += piece
    return text


class EventRecorder:
    """Writes Events from a thread of its own (see the module docstring)."""

    def __init__(
        self,
        write: Callable[[Mapping[str, Any], Sequence[Event]], int],
        *,
        capacity: int = DEFAULT_CAPACITY,
        window: float = DEFAULT_WINDOW,
        on_drop: Callable[[int], None] | None = None,
    ) -> None:
        self._write = write
        self._window = window
        self._on_drop = on_drop
        self._queue: queue.Queue[_Batch | None] = queue.Queue(maxsize=capacity)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.dropped = 0
        """Events dropped because the queue was full (since the start)."""

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="events", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Write what is queued (for at most `timeout` seconds), then end the thread."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is None:
            return
        deadline = time.monotonic() + timeout
        while thread.is_alive():
            try:
                self._queue.put(None, timeout=0.1)
                break
            except queue.Full:
                if time.monotonic() >= deadline:
                    break
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            log.warning("stopped before every queued Event was written")

    def record(self, job: Mapping[str, Any], events: Sequence[Event]) -> None:
        """Queue `events` on `job` for writing; never blocks (drops them if the queue is full)."""
        if not events:
            return
        batch = (job, tuple(events))
        if self._thread is None:
            self._write_batch(batch)
            return
        try:
            self._queue.put_nowait(batch)
        except queue.Full:
            with self._lock:
                self.dropped += len(batch[1])
                total = self.dropped
            log.warning(
                "event queue full; Events dropped",
                extra=fields(
                    job=f"{kind(job)}/{meta(job).namespace}/{meta(job).name}",
                    dropped=len(batch[1]),
                    dropped_total=total,
                ),
            )
            if self._on_drop is not None:
                self._on_drop(len(batch[1]))

    def __len__(self) -> int:
        """Batches waiting to be written."""
        return self._queue.qsize()

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batches, stopping = [first], False
            may_wait = _reports_actions_only(first)
            deadline = time.monotonic() + self._window
            while may_wait and (left := deadline - time.monotonic()) > 0:
                try:
                    batch = self._queue.get(timeout=left)
                except queue.Empty:
                    break
                if batch is None:
                    stopping = True
                    break
                batches.append(batch)
                may_wait = _reports_actions_only(batch)
            for merged in _by_job(batches):
                self._write_batch(merged)
            if stopping:
                return

    def _write_batch(self, batch: _Batch) -> None:
        """Write one job's Events; an error is logged, never raised."""
        job, events = batch
        try:
            self._write(job, events)
        except ApiError as err:  # informative only: never retried, never blocks the job
            log.warning(
                "recording events failed: %s",
                err,
                extra=fields(job=f"{kind(job)}/{meta(job).namespace}/{meta(job).name}"),
            )
        except Exception:  # the thread must outlive any one bad batch
            log.exception("recording events failed")


def _reports_actions_only(batch: _Batch) -> bool:
    """Whether every Event of `batch` reports a child's create or delete: those may wait for
    more; a transition ("Running", "Failed", ...) goes out at once, with what was gathered."""
    return all(event.after is not None for event in batch[1])


def _by_job(batches: Sequence[_Batch]) -> list[_Batch]:
    """The batches of each job as one (with the job as last seen), in the order first seen."""
    jobs: dict[str, tuple[Mapping[str, Any], list[Event]]] = {}
    for job, events in batches:
        key = meta(job).uid or f"{meta(job).namespace}/{meta(job).name}"
        merged = jobs[key][1] if key in jobs else []
        merged.extend(events)
        jobs[key] = (job, merged)
    return [(job, events) for job, events in jobs.values()]
