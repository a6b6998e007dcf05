"""The work queue: coalescing, one worker per key, delays and per-key backoff."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from t9k_operator.workqueue import Backoff, WorkQueue


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def drain(queue: WorkQueue[str]) -> list[str]:
    keys = []
    while (key := queue.get(timeout=0)) is not None:
        keys.append(key)
        queue.done(key)
    return keys


def test_repeated_adds_of_a_waiting_key_coalesce_into_one_pass() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for _ in range(5):
        queue.add("a")
    queue.add("b")
    assert drain(queue) == ["a", "b"]


def test_a_key_added_while_processed_is_handed_out_again_only_after_done() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    key = queue.get(timeout=0)
    queue.add("a")  # a change arrives during the pass
    queue.add("a")
    assert queue.get(timeout=0) is None  # not to a second worker
    assert key is not None
    queue.done(key)
    assert drain(queue) == ["a"]  # once, not twice, and not lost


def test_no_key_is_processed_by_two_workers_at_once() -> None:
    queue: WorkQueue[str] = WorkQueue()
    keys = [f"k{i % 5}" for i in range(400)]
    active: Counter[str] = Counter()
    overlaps: list[str] = []
    lock = threading.Lock()
    passes: Counter[str] = Counter()

    def worker() -> None:
        while (key := queue.get(timeout=2.0)) is not None:
            with lock:
                active[key] += 1
                if active[key] > 1:
                    overlaps.append(key)
                passes[key] += 1
            time.sleep(0.001)
            with lock:
                active[key] -= 1
            queue.done(key)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for key in keys:
        queue.add(key)
    deadline = time.monotonic() + 20
    while (len(queue) or queue.processing) and time.monotonic() < deadline:
        time.sleep(0.01)
    queue.shut_down()
    for t in threads:
        t.join(5)
    assert overlaps == []
    assert set(passes) == {f"k{i}" for i in range(5)}
    assert sum(passes.values()) < len(keys)  # adds coalesced


def test_add_after_hands_the_key_out_when_due_and_the_earliest_time_wins() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add_after("a", 10.0)
    queue.add_after("a", 3.0)
    queue.add_after("a", 20.0)
    assert queue.get(timeout=0) is None
    clock.now += 3.0
    assert drain(queue) == ["a"]
    clock.now += 30.0
    assert drain(queue) == []  # the superseded times do not fire again


def test_backoff_doubles_per_failure_up_to_the_cap_and_forget_resets_it() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(Backoff(base=0.5, cap=4.0), clock=clock)
    delays = [queue.add_rate_limited("a") for _ in range(6)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    queue.forget("a")
    assert queue.add_rate_limited("a") == 0.5
    assert queue.add_rate_limited("b") == 0.5  # per key


def test_a_failing_key_is_not_retried_before_its_backoff() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(Backoff(base=1.0, cap=60.0), clock=clock)
    queue.add_rate_limited("a")  # first failure: 1 s
    clock.now += 1.0
    key = queue.get(timeout=0)
    assert key == "a"
    queue.done(key)
    queue.add_rate_limited(key)  # the retry failed too: 2 s
    clock.now += 1.9
    assert queue.get(timeout=0) is None
    clock.now += 0.1
    assert queue.get(timeout=0) == "a"


def test_get_blocks_until_a_delayed_key_is_due_in_real_time() -> None:
    queue: WorkQueue[str] = WorkQueue()
    start = time.monotonic()
    queue.add_after("a", 0.2)
    assert queue.get(timeout=5) == "a"
    assert 0.15 <= time.monotonic() - start < 4


def test_shutdown_wakes_waiting_workers() -> None:
    queue: WorkQueue[str] = WorkQueue()
    got: list[str | None] = []
    thread = threading.Thread(target=lambda: got.append(queue.get()))
    thread.start()
    queue.shut_down()
    thread.join(5)
    assert got == [None]
    queue.add("a")
    assert queue.get(timeout=0) is None


@pytest.mark.parametrize(
    ("failures", "delay"), [(0, 0.0), (1, 0.5), (2, 1.0), (10, 256.0), (11, 300.0), (500, 300.0)]
)
def test_backoff_delays(failures: int, delay: float) -> None:
    assert Backoff(base=0.5, cap=300.0).delay(failures) == delay


def test_a_paced_key_waits_out_its_spacing_however_often_it_is_added() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add("big")
    assert queue.get(timeout=0) == "big"
    queue.pace("big", 0.4)  # its pass computed 0.1 s: the next one no sooner than 0.4 s
    for _ in range(100):  # a storm of pod events
        queue.add("big")
    queue.add("small")
    queue.done("big")
    assert drain(queue) == ["small"]  # other jobs go on meanwhile
    clock.now += 0.3
    assert drain(queue) == []
    clock.now += 0.1
    assert drain(queue) == ["big"]  # the storm coalesced into one pass
    assert drain(queue) == []


def test_pacing_never_loses_an_add_made_while_the_key_waits() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.pace("a", 1.0)
    queue.add("a")
    assert drain(queue) == []
    queue.add("a")
    clock.now += 1.0
    assert drain(queue) == ["a"]
    queue.add("a")  # spacing over: at once
    assert drain(queue) == ["a"]
