"""A token bucket: at most `burst` requests at once, refilled at `qps` per second."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["TokenBucket"]


class TokenBucket:
    """Client-side rate limit of API requests (client-go's `--qps` / `--burst`).

    `take()` blocks until a token is free. The bucket starts full, so a burst of `burst` requests
    goes out at once; after that requests are spaced `1/qps` seconds apart. Thread-safe; tokens
    are handed out first come, first served by reserving time slots, so no waiter starves.
    """

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if qps <= 0:
            raise ValueError(f"qps must be > 0, got {qps}")
        if burst < 1:
            raise ValueError(f"burst must be >= 1, got {burst}")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._stamp = clock()

    def reserve(self) -> float:
        """Take a token now or reserve the next one; return how long to wait for it (seconds)."""
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.qps)
            self._stamp = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def take(self) -> float:
        """Block until a token is ours; return the time waited."""
        wait = self.reserve()
        if wait > 0:
            self._sleep(wait)
        return wait
