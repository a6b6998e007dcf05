"""No job starves: a job whose events never stop, or one that keeps failing, does not hold back
the others (issue 14, item 5). The queue is FIFO per key: a key waits at most once in line, and
a key added again while it is processed goes to the back of the line when it is done."""

from __future__ import annotations

from t9k_operator.workqueue import Backoff, WorkQueue


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_job_whose_events_never_stop_does_not_starve_the_others() -> None:
    queue: WorkQueue[str] = WorkQueue()
    others = [f"job-{n}" for n in range(50)]
    queue.add("hot")
    for key in others:
        queue.add(key)
    served: list[str] = []
    waiting = set(others)
    # One worker; every pass of "hot" brings new events for it (re-added while processed, and
    # again while waiting): the others must still all be served, in the order they came.
    while waiting:
        got = queue.get(timeout=0)
        assert got is not None, f"the queue ran dry with {sorted(waiting)} never handed out"
        key = got
        if key == "hot":
            queue.add("hot")  # while processed: dirty, back in line after done
        served.append(key)
        queue.done(key)
        queue.add("hot")  # while waiting: coalesces
        waiting.discard(key)
        assert len(served) <= 2 * len(others) + 2, "some jobs starve behind the hot one"
    assert [k for k in served if k != "hot"] == others
    # between two passes of any job, "hot" had at most one pass
    assert served.count("hot") <= len(others) + 1


def test_a_failing_job_backs_off_while_the_others_go_on() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(Backoff(base=0.5, cap=300.0), clock=clock)
    queue.add("broken")
    for n in range(20):
        queue.add(f"job-{n}")
    served = []
    for _ in range(21):
        key = queue.get(timeout=0)
        assert key is not None
        served.append(key)
        if key == "broken":
            queue.add_rate_limited(key)  # the pass failed: it comes back after its backoff
        queue.done(key)
    assert served[0] == "broken"
    assert served[1:] == [f"job-{n}" for n in range(20)]
    assert queue.get(timeout=0) is None  # "broken" waits for its backoff ...
    clock.now += 0.5
    assert queue.get(timeout=0) == "broken"  # ... then is tried again
