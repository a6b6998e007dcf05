"""The client-side rate limit: a burst at once, then `qps` requests per second."""

from __future__ import annotations

import threading

import pytest

from t9k_operator.ratelimit import TokenBucket


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def test_a_burst_goes_out_at_once_then_requests_are_spaced_by_one_over_qps() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=10, burst=3, clock=t.clock, sleep=t.sleep)
    waits = [bucket.reserve() for _ in range(6)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3:] == pytest.approx([0.1, 0.2, 0.3])


def test_tokens_refill_with_time_but_never_beyond_the_burst() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=2, burst=2, clock=t.clock, sleep=t.sleep)
    assert [bucket.reserve() for _ in range(2)] == [0.0, 0.0]
    t.now += 100.0  # a long idle time refills only `burst` tokens
    assert [bucket.reserve() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.5])


def test_take_sleeps_for_the_reserved_wait() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=4, burst=1, clock=t.clock, sleep=t.sleep)
    bucket.take()
    bucket.take()
    assert t.slept == [0.25]


def test_concurrent_callers_each_get_their_own_slot() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=100, burst=1, clock=t.clock, sleep=t.sleep)
    waits: list[float] = []
    lock = threading.Lock()

    def call() -> None:
        w = bucket.reserve()
        with lock:
            waits.append(w)

    threads = [threading.Thread(target=call) for _ in range(50)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(waits) == pytest.approx([i / 100 for i in range(50)])


@pytest.mark.parametrize(("qps", "burst"), [(0, 1), (-1, 1), (1, 0)])
def test_nonsense_limits_are_rejected(qps: float, burst: int) -> None:
    with pytest.raises(ValueError, match="must be"):
        TokenBucket(qps, burst)
