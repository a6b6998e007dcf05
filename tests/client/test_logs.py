"""The multi-replica log follower, line by line, with pods and logs the test controls.

Why not a real cluster here: the local test cluster has no kubelet (kwok only writes pod
status), so no container ever prints a line, and the API server cannot fetch a log from a kwok
node. tests/cluster/test_client_logs.py covers the API server's side (what it answers for a
kwok node, and real log streaming through it from a small kubelet stand-in); this file covers
what the follower does with pods and lines: prefixes, waiting for pods, restarts, tails,
selection, errors, and when it stops.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from t9k_sdk.client.logs import (
    LogLine,
    LogUnavailableError,
    PodSnapshot,
    follow_logs,
    replica_name,
)

HOLD_LIMIT = 10.0  # a held stream never blocks a test longer than this

# Pod name -> uid of the pod last made by `pod()`: like a kubelet, the fake source is asked for
# a log by pod name and serves the pod that has that name now.
CURRENT_UID: dict[str, str] = {}


def pod(
    rtype: str,
    index: int | None,
    uid: str,
    *,
    started: bool = True,
    running: bool = True,
    restarts: int = 0,
    containers: tuple[str, ...] = ("main",),
    job: str = "job",
) -> dict[str, Any]:
    name = f"{job}-{rtype}" if index is None else f"{job}-{rtype}-{index}"
    CURRENT_UID[name] = uid
    labels = {"replica-type": rtype}
    if index is not None:
        labels["replica-index"] = str(index)
    state: dict[str, Any] = {"running": {}} if running else {"terminated": {"exitCode": 0}}
    statuses = (
        [{"name": c, "state": state, "restartCount": restarts} for c in containers]
        if started
        else []
    )
    return {
        "metadata": {"name": name, "uid": uid, "labels": labels},
        "spec": {"containers": [{"name": c} for c in containers]},
        "status": {"phase": "Running" if started else "Pending", "containerStatuses": statuses},
    }


class FakeStream:
    def __init__(self, lines: list[str], hold: bool, delay: float = 0.0) -> None:
        self.lines = lines
        self.hold = hold
        self.delay = delay
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[str]:
        for line in self.lines:
            if self.closed.is_set():
                return
            if self.delay:
                time.sleep(self.delay)
            yield line
        if self.hold:  # a running container being followed: more may come until closed
            self.closed.wait(HOLD_LIMIT)

    def close(self) -> None:
        self.closed.set()


class FakeSource:
    """Logs by pod uid: the n-th open of a uid gets its n-th log (for in-place restarts)."""

    def __init__(
        self,
        logs: dict[str, list[list[str]]],
        *,
        hold: bool = False,
        fail: LogUnavailableError | None = None,
        delay: float = 0.0,
        uids: dict[str, str] | None = None,
    ) -> None:
        self.logs = logs
        self.hold = hold
        self.fail = fail
        self.delay = delay
        self.opened: list[dict[str, Any]] = []
        self.streams: list[FakeStream] = []
        self.current_uid: dict[str, str] = uids or {}

    def open(
        self, pod: str, container: str, *, follow: bool, tail: int | None, timestamps: bool
    ) -> FakeStream:
        uid = self.current_uid.get(pod) or CURRENT_UID.get(pod, pod)
        n = sum(1 for o in self.opened if o["uid"] == uid)
        self.opened.append(
            {"pod": pod, "uid": uid, "container": container, "follow": follow, "tail": tail}
        )
        if self.fail is not None:
            raise self.fail
        lines = self.logs.get(uid, [[]])[min(n, len(self.logs.get(uid, [[]])) - 1)]
        if tail is not None:
            lines = lines[-tail:] if tail else []
        stream = FakeStream(lines, hold=self.hold and follow, delay=self.delay)
        self.streams.append(stream)
        return stream


class Feed:
    """Snapshots given in advance, or pushed by the test; records close()."""

    def __init__(self, *snapshots: PodSnapshot) -> None:
        self.snapshots = list(snapshots)
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[PodSnapshot]:
        for snapshot in self.snapshots:
            if self.closed.is_set():
                return
            yield snapshot
        self.closed.wait(HOLD_LIMIT)

    def close(self) -> None:
        self.closed.set()


def collect(lines: Iterator[LogLine]) -> list[str]:
    return [str(line) for line in lines]


def test_each_line_is_prefixed_with_its_replica_type_and_index() -> None:
    pods = [pod("worker", 0, "w0"), pod("worker", 1, "w1"), pod("launcher", None, "l")]
    source = FakeSource({"w0": [["a", "b"]], "w1": [["c"]], "l": [["start"]]})
    out = collect(follow_logs([PodSnapshot(pods, final=True)], source, follow=False))
    assert sorted(out) == ["[launcher] start", "[worker-0] a", "[worker-0] b", "[worker-1] c"]


def test_lines_of_one_replica_keep_their_order() -> None:
    numbers = [str(i) for i in range(200)]
    source = FakeSource({"w0": [numbers], "w1": [numbers]})
    pods = [pod("worker", 0, "w0"), pod("worker", 1, "w1")]
    out = collect(follow_logs([PodSnapshot(pods, final=True)], source, follow=False))
    assert [line.split()[1] for line in out if line.startswith("[worker-1]")] == numbers


def test_replica_name_comes_from_the_labels() -> None:
    assert replica_name(pod("ps", 3, "x")) == "ps-3"
    assert replica_name(pod("launcher", None, "x")) == "launcher"
    assert replica_name({"metadata": {"name": "odd-pod"}}) == "odd-pod"


def test_following_waits_for_pods_that_do_not_exist_yet() -> None:
    feed = Feed(
        PodSnapshot([]),  # the job has no pods yet
        PodSnapshot([pod("worker", 0, "w0", started=False)]),  # created, not started
        PodSnapshot([pod("worker", 0, "w0")]),  # running: now there is a log
        PodSnapshot([pod("worker", 0, "w0", running=False)], final=True),
    )
    source = FakeSource({"w0": [["hello", "bye"]]})
    out = collect(follow_logs(feed, source, follow=True, drain=0.5))
    assert out == ["[worker-0] hello", "[worker-0] bye"]
    assert [o["pod"] for o in source.opened] == ["job-worker-0"]  # not before it started


def test_a_recreated_pod_is_read_from_its_start_under_the_same_prefix() -> None:
    first, second = pod("worker", 0, "uid-a"), pod("worker", 0, "uid-b")
    source = FakeSource({"uid-a": [["a1", "a2", "a3"]], "uid-b": [["b1", "b2"]]})

    class Recreating(Feed):
        def __iter__(self) -> Iterator[PodSnapshot]:
            source.current_uid["job-worker-0"] = "uid-a"
            yield PodSnapshot([first])
            _wait_until(lambda: len(source.opened) == 1)
            source.current_uid["job-worker-0"] = "uid-b"
            yield PodSnapshot([second])
            _wait_until(lambda: len(source.opened) == 2)
            yield PodSnapshot([pod("worker", 0, "uid-b", running=False)], final=True)

    out = collect(follow_logs(Recreating(), source, follow=True, tail=1, drain=0.5))
    # The tail applies to the log that existed when following began, not to the new pod's.
    assert out == ["[worker-0] a3", "[worker-0] b1", "[worker-0] b2"]
    assert [(o["uid"], o["tail"]) for o in source.opened] == [("uid-a", 1), ("uid-b", None)]


def test_a_container_restarted_in_place_is_read_again() -> None:
    feed = Feed(
        PodSnapshot([pod("worker", 0, "w0", restarts=0)]),
        PodSnapshot([pod("worker", 0, "w0", restarts=0)]),  # nothing new: not read twice
        PodSnapshot([pod("worker", 0, "w0", restarts=1)]),
        PodSnapshot([pod("worker", 0, "w0", restarts=1, running=False)], final=True),
    )
    source = FakeSource({"w0": [["run 1"], ["run 2"]]})
    out = collect(follow_logs(feed, source, follow=True, drain=0.5))
    assert out == ["[worker-0] run 1", "[worker-0] run 2"]


@pytest.mark.parametrize(
    ("rtype", "index", "expected"),
    [
        ("worker", None, ["[worker-0] w0", "[worker-1] w1"]),
        ("worker", 1, ["[worker-1] w1"]),
        ("ps", None, ["[ps-0] p0"]),
        (None, 0, ["[ps-0] p0", "[worker-0] w0"]),
    ],
)
def test_replicas_are_chosen_by_type_and_index(
    rtype: str | None, index: int | None, expected: list[str]
) -> None:
    pods = [pod("worker", 0, "w0"), pod("worker", 1, "w1"), pod("ps", 0, "p0")]
    source = FakeSource({"w0": [["w0"]], "w1": [["w1"]], "p0": [["p0"]]})
    snapshot = PodSnapshot(pods, final=True)
    out = collect(follow_logs([snapshot], source, follow=False, replica_type=rtype, index=index))
    assert sorted(out) == expected


def test_the_container_can_be_chosen_and_a_missing_one_is_reported() -> None:
    pods = [pod("worker", 0, "w0", containers=("main", "sidecar"))]
    source = FakeSource({"w0": [["x"]]})
    follow_logs([PodSnapshot(pods, final=True)], source, follow=False, container="sidecar")
    lines = list(
        follow_logs([PodSnapshot(pods, final=True)], source, follow=False, container="sidecar")
    )
    assert [o["container"] for o in source.opened] == ["sidecar"]
    assert [line.text for line in lines] == ["x"]
    missing = list(
        follow_logs([PodSnapshot(pods, final=True)], source, follow=False, container="nope")
    )
    assert [line.notice for line in missing] == [True]
    assert "has no container 'nope' (its containers: main, sidecar)" in missing[0].text


def test_the_default_container_annotation_is_honoured() -> None:
    p = pod("worker", 0, "w0", containers=("init-helper", "trainer"))
    p["metadata"]["annotations"] = {"kubectl.kubernetes.io/default-container": "trainer"}
    source = FakeSource({"w0": [["x"]]})
    list(follow_logs([PodSnapshot([p], final=True)], source, follow=False))
    assert [o["container"] for o in source.opened] == ["trainer"]


def test_a_log_that_cannot_be_read_gives_one_notice_and_is_not_retried() -> None:
    refused = LogUnavailableError("the API server could not reach the kubelet")
    source = FakeSource({}, fail=refused)
    feed = Feed(
        PodSnapshot([pod("worker", 0, "w0")]),
        PodSnapshot([pod("worker", 0, "w0")]),
        PodSnapshot([pod("worker", 0, "w0", running=False)], final=True),
    )
    lines = list(follow_logs(feed, source, follow=True, drain=0.2))
    assert [(line.notice, line.replica) for line in lines] == [(True, "worker-0")]
    assert "could not reach the kubelet" in lines[0].text
    assert len(source.opened) == 1


def test_a_log_not_ready_yet_is_tried_again_when_the_pod_changes() -> None:
    source = FakeSource({"w0": [["late"]]})
    calls = {"n": 0}
    real_open = source.open

    def flaky_open(pod_name: str, container: str, **kw: Any) -> FakeStream:
        calls["n"] += 1
        if calls["n"] == 1:
            raise LogUnavailableError("container main is waiting to start", retry=True)
        return real_open(pod_name, container, **kw)

    source.open = flaky_open  # type: ignore[method-assign]

    class Slow(Feed):
        def __iter__(self) -> Iterator[PodSnapshot]:
            yield PodSnapshot([pod("worker", 0, "w0")])
            _wait_until(lambda: calls["n"] == 1)
            time.sleep(0.1)  # let the follower take in the failure first
            yield PodSnapshot([pod("worker", 0, "w0")])
            _wait_until(lambda: calls["n"] == 2)
            yield PodSnapshot([pod("worker", 0, "w0", running=False)], final=True)

    lines = list(follow_logs(Slow(), source, follow=True, drain=0.5))
    assert [str(line) for line in lines if not line.notice] == ["[worker-0] late"]
    assert calls["n"] == 2


def test_following_ends_when_the_job_has_finished_even_if_a_pod_still_runs() -> None:
    source = FakeSource({"w0": [["done"]], "w1": [["still going"]]}, hold=True)
    feed = Feed(
        PodSnapshot([pod("worker", 0, "w0"), pod("worker", 1, "w1")]),
        # worker-0 decided the job; worker-1 keeps running (cleanUpPolicy None)
        PodSnapshot([pod("worker", 0, "w0", running=False), pod("worker", 1, "w1")], final=True),
    )
    start = time.monotonic()
    out = collect(follow_logs(feed, source, follow=True, drain=0.3))
    assert sorted(out) == ["[worker-0] done", "[worker-1] still going"]
    assert time.monotonic() - start < HOLD_LIMIT / 2
    assert all(s.closed.is_set() for s in source.streams)


def test_without_follow_every_log_is_read_to_its_end() -> None:
    source = FakeSource({"w0": [[str(i) for i in range(5)]]}, delay=0.05)
    snapshot = PodSnapshot([pod("worker", 0, "w0")], final=True)
    out = collect(follow_logs([snapshot], source, follow=False, drain=0.01))
    assert out == [f"[worker-0] {i}" for i in range(5)]
    assert source.opened[0]["follow"] is False


def test_closing_the_iterator_closes_the_streams_and_the_feed() -> None:
    source = FakeSource({"w0": [["first"]]}, hold=True)
    feed = Feed(PodSnapshot([pod("worker", 0, "w0")]))
    lines = follow_logs(feed, source, follow=True)
    assert str(next(lines)) == "[worker-0] first"
    lines.close()
    assert feed.closed.is_set()
    assert source.streams[0].closed.is_set()


def _wait_until(done: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)
