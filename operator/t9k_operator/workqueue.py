"""The work queue of job keys: coalescing, one worker per key, delays and error backoff.

The semantics are client-go's `workqueue`:

* `add(key)` while the key waits changes nothing (repeated adds coalesce into one pass);
* a key is handed to at most one worker at a time: `add(key)` while it is being processed
  marks it dirty, and `done(key)` puts it back in line, so the change is never lost;
* `add_after(key, delay)` adds it later (the earliest of several requested times wins);
* `add_rate_limited(key)` adds it after an exponential backoff per key, reset by `forget(key)`;
* `pace(key, seconds)` hands the key out again no sooner than `seconds` from now, however often
  it is added meanwhile (the adds still coalesce into one pass at the end).

An optional `QueueMetrics` hears of adds, retries, the time each key waited and the time each
pass took (client-go's workqueue metrics); `processing_ages()` gives the age of the passes in
progress, for gauges computed at scrape time.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

__all__ = ["Backoff", "QueueMetrics", "WorkQueue"]

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff: `base * 2**(failures-1)`, capped at `cap` seconds."""

    base: float = 0.5
    cap: float = 300.0

    def delay(self, failures: int) -> float:
        if failures <= 0:
            return 0.0
        return min(self.cap, self.base * 2.0 ** min(failures - 1, 62))


class QueueMetrics(Protocol):
    """What the queue reports (`t9k_operator.metrics.OperatorMetrics` implements it)."""

    def added(self) -> None:
        """A key entered the queue (an add of a key already waiting coalesces and is not one)."""

    def retried(self) -> None:
        """`add_rate_limited`: a key will be retried after its backoff."""

    def waited(self, seconds: float) -> None:
        """A worker took a key that had waited `seconds` since it was added."""

    def worked(self, seconds: float) -> None:
        """A worker finished a key it took `seconds` ago."""


class WorkQueue(Generic[K]):
    """A thread-safe queue of keys (see the module docstring). `get()` returns None on shutdown."""

    def __init__(
        self,
        backoff: Backoff | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        metrics: QueueMetrics | None = None,
    ) -> None:
        self.backoff = backoff or Backoff()
        self._clock = clock
        self._metrics = metrics
        self._added_at: dict[K, float] = {}
        self._started_at: dict[K, float] = {}
        self._cond = threading.Condition()
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._waiting: dict[K, float] = {}
        self._heap: list[tuple[float, int, K]] = []
        self._seq = itertools.count()
        self._failures: dict[K, int] = {}
        self._not_before: dict[K, float] = {}
        self._shutdown = False

    def add(self, key: K) -> None:
        with self._cond:
            self._add_locked(key)

    def _add_locked(self, key: K) -> None:
        if self._shutdown or key in self._dirty:
            return
        self._dirty.add(key)
        if self._metrics is not None:
            self._added_at.setdefault(key, self._clock())
            self._metrics.added()
        if key not in self._processing:
            self._queue.append(key)
            self._cond.notify()

    def add_after(self, key: K, delay: float) -> None:
        """Add `key` once `delay` seconds have passed (at once if `delay` <= 0)."""
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            if self._shutdown:
                return
            when = self._clock() + delay
            if key in self._waiting and self._waiting[key] <= when:
                return
            self._waiting[key] = when
            heapq.heappush(self._heap, (when, next(self._seq), key))
            self._cond.notify()

    def pace(self, key: K, seconds: float) -> None:
        """Hand `key` out again no sooner than `seconds` from now (adds meanwhile wait)."""
        if seconds <= 0:
            return
        with self._cond:
            now = self._clock()
            if len(self._not_before) > 4 * (len(self._dirty) + len(self._processing) + 64):
                self._not_before = {k: t for k, t in self._not_before.items() if t > now}
            self._not_before[key] = now + seconds

    def _defer_locked(self, key: K, when: float) -> None:
        """Take `key` out of line until `when` (the earliest requested time wins)."""
        self._dirty.discard(key)
        if key in self._waiting and self._waiting[key] <= when:
            return
        self._waiting[key] = when
        heapq.heappush(self._heap, (when, next(self._seq), key))

    def add_rate_limited(self, key: K) -> float:
        """Add `key` after its backoff delay (longer after each failure); return the delay."""
        with self._cond:
            failures = self._failures.get(key, 0) + 1
            self._failures[key] = failures
        if self._metrics is not None:
            self._metrics.retried()
        delay = self.backoff.delay(failures)
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """The key succeeded: its next failure starts the backoff from the beginning."""
        with self._cond:
            self._failures.pop(key, None)

    def failures(self, key: K) -> int:
        with self._cond:
            return self._failures.get(key, 0)

    def _promote_due_locked(self) -> float | None:
        """Move due delayed keys into the queue; return seconds until the next one is due."""
        now = self._clock()
        while self._heap:
            when, _, key = self._heap[0]
            if self._waiting.get(key) != when:  # superseded by an earlier add_after
                heapq.heappop(self._heap)
                continue
            if when > now:
                return when - now
            heapq.heappop(self._heap)
            del self._waiting[key]
            self._add_locked(key)
        return None

    def get(self, timeout: float | None = None) -> K | None:
        """The next key to process (the caller must call `done(key)` after); None on shutdown
        or when `timeout` seconds pass without one."""
        deadline = None if timeout is None else self._clock() + timeout
        with self._cond:
            while True:
                if self._shutdown:
                    return None
                next_due = self._promote_due_locked()
                if self._queue:
                    key = self._queue.popleft()
                    paced = self._not_before.pop(key, None)
                    if paced is not None and paced > self._clock():
                        self._not_before[key] = paced
                        self._defer_locked(key, paced)
                        continue
                    self._processing.add(key)
                    self._dirty.discard(key)
                    if self._metrics is not None:
                        now = self._clock()
                        self._started_at[key] = now
                        added = self._added_at.pop(key, now)
                        self._metrics.waited(max(0.0, now - added))
                    return key
                wait = next_due
                if deadline is not None:
                    left = deadline - self._clock()
                    if left <= 0:
                        return None
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(wait)

    def done(self, key: K) -> None:
        """Processing of `key` finished; if it was added meanwhile, it goes back in line."""
        with self._cond:
            self._processing.discard(key)
            started = self._started_at.pop(key, None)
            if started is not None and self._metrics is not None:
                self._metrics.worked(max(0.0, self._clock() - started))
            if key in self._dirty:
                self._queue.append(key)
                self._cond.notify()

    def shut_down(self) -> None:
        """Wake every `get()` with None; later adds are ignored."""
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()

    def __len__(self) -> int:
        """Keys ready to be handed out now (not counting delayed or in-process ones)."""
        with self._cond:
            return len(self._queue)

    def processing_ages(self) -> list[float]:
        """Seconds each pass in progress has been running (empty without `metrics`)."""
        with self._cond:
            now = self._clock()
            return [max(0.0, now - t) for t in self._started_at.values()]

    @property
    def processing(self) -> frozenset[K]:
        with self._cond:
            return frozenset(self._processing)
