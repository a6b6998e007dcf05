"""Events recorded in the background, so a reconcile pass never waits for them.

A pass hands its Events to `EventRecorder.record`, which puts them on a bounded queue and returns
at once; one thread (started with the controller, so only on the leader) writes them through
`Cluster.record_events`, which aggregates repeats. This is what client-go's event broadcaster
does, and why: written inline, the Events of one job of 2,000 replicas (one "Created pod" each)
take the worker ~100 s before it can write the job's Running status (docs/performance.md).

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

__all__ = ["DEFAULT_CAPACITY", "EventRecorder"]

log = logging.getLogger(__name__)

DEFAULT_CAPACITY = 1000
"""Batches (passes' worth of Events) waiting to be written before new ones are dropped."""

_Batch = tuple[Mapping[str, Any], Sequence[Event]]


class EventRecorder:
    """Writes Events from a thread of its own (see the module docstring)."""

    def __init__(
        self,
        write: Callable[[Mapping[str, Any], Sequence[Event]], int],
        *,
        capacity: int = DEFAULT_CAPACITY,
        on_drop: Callable[[int], None] | None = None,
    ) -> None:
        self._write = write
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
            batch = self._queue.get()
            if batch is None:
                return
            self._write_batch(batch)

    def _write_batch(self, batch: _Batch) -> None:
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
