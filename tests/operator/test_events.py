"""The background Event recorder: a pass queues its Events and never waits for them."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from t9k_operator.events import EventRecorder
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
    recorder = EventRecorder(writer, capacity=10)
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
    recorder = EventRecorder(writer, capacity=1, on_drop=dropped.append)
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

    recorder = EventRecorder(write)
    recorder.start()
    recorder.record(JOB, [event("Bad")])
    recorder.record(JOB, [event("Good")])
    recorder.stop(timeout=5)
    assert written == ["Good"]
    assert "recording events failed" in caplog.text
