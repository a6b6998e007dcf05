"""The background Event recorder: a pass queues its Events and never waits for them."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from t9k_operator.events import MESSAGE_LIMIT, EventRecorder, aggregate
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk.reconcile import Event

JOB = {
    "apiVersion": "batch.tensorstack.dev/v1beta1",
    "kind": "GenericJob",
    "metadata": {"name": "demo", "namespace": "default", "uid": "u1"},
}


def event(reason: str) -> Event:
    return Event("Normal", reason, f"{reason} happened")


class SlowWriter:
    """Writes only while `gate` is open; remembers what it wrote."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.started = threading.Event()
        self.written: list[str] = []

    def __call__(self, job: Mapping[str, Any], events: Sequence[Event]) -> int:
        self.started.set()
        self.gate.wait()
        self.written.extend(e.reason for e in events)
        return len(events)


def test_before_start_events_are_written_inline() -> None:
    writer = SlowWriter()
    writer.gate.set()
    recorder = EventRecorder(writer)
    recorder.record(JOB, [event("Created")])
    assert writer.written == ["Created"]


def test_record_returns_while_the_writer_is_busy_and_stop_flushes() -> None:
    writer = SlowWriter()
    recorder = EventRecorder(writer, capacity=10, window=0)
    recorder.start()
    recorder.record(JOB, [event("A")])
    assert writer.started.wait(5)
    recorder.record(JOB, [event("B"), event("C")])  # the writer is blocked: this must not block
    assert writer.written == []
    writer.gate.set()
    recorder.stop(timeout=5)
    assert writer.written == ["A", "B", "C"]
    assert not recorder.running


def test_a_full_queue_drops_new_events_counts_and_logs_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    writer = SlowWriter()
    dropped: list[int] = []
    recorder = EventRecorder(writer, capacity=1, window=0, on_drop=dropped.append)
    recorder.start()
    recorder.record(JOB, [event("A")])
    assert writer.started.wait(5)  # A is being written; the queue is empty again
    recorder.record(JOB, [event("B")])  # fills the queue
    recorder.record(JOB, [event("C"), event("D")])  # dropped
    assert dropped == [2]
    assert recorder.dropped == 2
    assert "event queue full" in caplog.text
    writer.gate.set()
    recorder.stop(timeout=5)
    assert writer.written == ["A", "B"]


def test_a_failed_write_is_logged_and_the_next_batch_still_goes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    written: list[str] = []

    def write(job: Mapping[str, Any], events: Sequence[Event]) -> int:
        if events[0].reason == "Bad":
            raise ApiError(403, "Forbidden")
        written.extend(e.reason for e in events)
        return len(events)

    recorder = EventRecorder(write, window=0)
    recorder.start()
    recorder.record(JOB, [event("Bad")])
    recorder.record(JOB, [event("Good")])
    recorder.stop(timeout=5)
    assert written == ["Good"]
    assert "recording events failed" in caplog.text


# --- aggregation: a burst of similar Events is a few writes, and says everything it can ---------


def created(pod: str) -> Event:
    return Event("Normal", "SuccessfulCreatePod", f"Created pod: {pod}", after=f"create Pod/{pod}")


def test_similar_events_become_one_per_reason_naming_every_pod() -> None:
    running = Event("Normal", "Running", "The job is running.")
    out = aggregate([created("a"), created("b"), running, created("c"), running])
    assert [(e.reason, e.message, n) for e, n in out] == [
        ("SuccessfulCreatePod", "Created pod: a, b, c", 3),
        ("Running", "The job is running.", 2),
    ]


def test_messages_without_a_shared_head_are_joined_whole() -> None:
    out = aggregate([Event("Warning", "ReplicaFailure", m) for m in ("pod a failed", "pod b: oom")])
    assert out[0][0].message == "pod a failed; pod b: oom"


def test_a_combined_message_stays_within_an_events_limit_and_says_how_many_it_left_out() -> None:
    pods = [f"big-worker-{i}" for i in range(2000)]
    ((event, count),) = aggregate([created(p) for p in pods])
    assert count == 2000
    assert len(event.message) <= MESSAGE_LIMIT
    assert event.message.startswith("Created pod: big-worker-0, big-worker-1, ")
    shown = event.message.removeprefix("Created pod: ").split(" and ")[0].split(", ")
    assert event.message.endswith(f" and {2000 - len(shown)} more")
    assert shown == pods[: len(shown)]


def test_the_writer_merges_a_jobs_batches_that_arrive_within_its_window() -> None:
    writes: list[list[str]] = []

    def write(job: Mapping[str, Any], events: Sequence[Event]) -> int:
        writes.append([e.reason for e in events])
        return 1

    recorder = EventRecorder(write, window=0.5)
    recorder.start()
    other = {**JOB, "metadata": {**JOB["metadata"], "uid": "u2", "name": "other"}}
    recorder.record(JOB, [created("a")])
    recorder.record(other, [created("x")])
    recorder.record(JOB, [created("b")])
    recorder.stop(timeout=5)
    assert writes == [["SuccessfulCreatePod"] * 2, ["SuccessfulCreatePod"]]


def test_a_transition_event_is_written_at_once_not_after_the_window() -> None:
    written = threading.Event()

    def write(job: Mapping[str, Any], events: Sequence[Event]) -> int:
        written.set()
        return 1

    recorder = EventRecorder(write, window=30)
    recorder.start()
    recorder.record(JOB, [event("Running")])  # no `after`: a transition, not a child action
    assert written.wait(5)
    recorder.stop(timeout=5)
