"""Reading job status without a cluster: wait targets, failures, stuck jobs, the grace period."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from t9k_sdk import models
from t9k_sdk.client import errors
from t9k_sdk.client.job_state import (
    StuckClock,
    WaitTarget,
    evaluate,
    event_from,
    failure_of,
    progress_line,
    replica_counts,
    reported,
    restarts,
    sort_events,
    stuck_of,
)

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def job(
    phase: str | None = "Pending",
    *conditions: tuple[str, str, str, str],
    tasks: list[dict[str, Any]] | None = None,
    aggregate: dict[str, int] | None = None,
) -> dict[str, Any]:
    """A GenericJob manifest with the given status; conditions are (type, status, reason, msg)."""
    status: dict[str, Any] = {}
    if phase:
        status["phase"] = phase
    if conditions:
        status["conditions"] = [
            {
                "type": t,
                "status": s,
                "reason": r,
                "message": m,
                "lastTransitionTime": "2026-01-01T12:00:00Z",
            }
            for t, s, r, m in conditions
        ]
    if tasks is not None:
        status["tasks"] = tasks
    if aggregate is not None:
        status["aggregate"] = aggregate
    return {
        "apiVersion": models.API_VERSION,
        "kind": "GenericJob",
        "metadata": {
            "name": "mnist",
            "namespace": "ns",
            "creationTimestamp": "2026-01-01T12:00:00Z",
        },
        "spec": {
            "replicaSpecs": [
                {
                    "type": "worker",
                    "replicas": 3,
                    "template": {"spec": {"containers": [{"name": "w", "image": "i"}]}},
                }
            ]
        },
        "status": status,
    }


SUCCEEDED = job(
    "Succeeded",
    ("Running", "False", "Succeeded", "The job has finished successfully."),
    ("Failed", "False", "Succeeded", "The job has finished successfully."),
    ("Completed", "True", "Succeeded", "The job has finished successfully."),
)
FAILED = job(
    "Failed",
    ("Running", "False", "Failed", "Pod[mnist-worker-0] exited with error code 3"),
    ("Failed", "True", "Failed", "Pod[mnist-worker-0] exited with error code 3"),
    ("Completed", "True", "Failed", "Pod[mnist-worker-0] exited with error code 3"),
)
UNSCHEDULABLE = job(
    "Pending",
    (
        "Running",
        "False",
        "Unschedulable",
        "Pod[mnist-worker-0] cannot be scheduled: 0/4 nodes are available: 4 Insufficient"
        " nvidia.com/gpu.",
    ),
)


# -- targets -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("phase=Succeeded", WaitTarget("phase", "Succeeded")),
        ("phase=running", WaitTarget("phase", "Running")),
        ("condition=Completed", WaitTarget("condition", "Completed", "True")),
        ("condition=paused=false", WaitTarget("condition", "Paused", "False")),
        ("Condition=ReplicaFailure=True", WaitTarget("condition", "ReplicaFailure", "True")),
        ("condition=ready", WaitTarget("condition", "Ready", "True")),
        ("condition=Stalled=False", WaitTarget("condition", "Stalled", "False")),
    ],
)
def test_wait_targets_parse_as_kubectl_wait_spells_them(text: str, expected: WaitTarget) -> None:
    assert WaitTarget.parse(text) == expected


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("Succeeded", "expected phase=PHASE or condition=TYPE"),
        ("phase=Done", "unknown phase 'Done': expected one of Pending, Running"),
        (
            "condition=Healthy",
            "unknown condition 'Healthy': expected one of Initialized, Running, ReplicaFailure, Completed, Failed, Paused, Ready, Reconciling, Stalled",
        ),
        ("condition=Completed=yes", "True or False"),
        ("state=Running", "expected phase=... or condition=..."),
    ],
)
def test_bad_wait_targets_say_what_is_accepted(text: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        WaitTarget.parse(text)


def test_a_target_prints_as_it_is_written() -> None:
    assert str(WaitTarget.parse("condition=Paused=False")) == "condition=Paused=False"
    assert str(WaitTarget.parse("condition=Completed")) == "condition=Completed"


# -- evaluate ------------------------------------------------------------------------------------


def test_a_succeeded_job_reaches_phase_succeeded_and_condition_completed() -> None:
    assert evaluate(SUCCEEDED, WaitTarget.phase("Succeeded")).state == "reached"
    assert evaluate(SUCCEEDED, WaitTarget.condition("Completed")).state == "reached"


def test_a_failed_job_fails_the_wait_with_its_message() -> None:
    verdict = evaluate(FAILED, WaitTarget.phase("Succeeded"))
    assert (verdict.state, verdict.reason) == ("failed", "Failed")
    assert verdict.message == "Pod[mnist-worker-0] exited with error code 3"


def test_waiting_for_failure_is_satisfied_by_a_failure() -> None:
    assert evaluate(FAILED, WaitTarget.phase("Failed")).state == "reached"
    assert evaluate(FAILED, WaitTarget.condition("Failed")).state == "reached"


def test_a_job_that_succeeded_cannot_reach_failed() -> None:
    verdict = evaluate(SUCCEEDED, WaitTarget.phase("Failed"))
    assert verdict.state == "unreachable"
    assert "will not be reached" in verdict.message


def test_an_invalid_spec_is_a_failure_with_its_reason() -> None:
    invalid = job(
        "Failed",
        ("Initialized", "False", "InvalidSpec", "spec.replicaSpecs: at least one"),
        ("Failed", "True", "InvalidSpec", "spec.replicaSpecs: at least one"),
    )
    verdict = evaluate(invalid, WaitTarget.phase("Succeeded"))
    assert (verdict.state, verdict.reason) == ("failed", "InvalidSpec")


def test_a_running_job_is_still_being_waited_for() -> None:
    running = job("Running", ("Running", "True", "-", "All pods are running normally."))
    assert evaluate(running, WaitTarget.phase("Succeeded")).state == "waiting"
    assert evaluate(running, WaitTarget.phase("Running")).state == "reached"


def test_a_job_without_status_is_waited_for() -> None:
    assert evaluate(job(None), WaitTarget.phase("Succeeded")).state == "waiting"


# -- stuck -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "error_class"),
    [
        ("Unschedulable", errors.UnschedulableError),
        ("ImagePullBackOff", errors.ImagePullError),
        ("ErrImagePull", errors.ImagePullError),
        ("InvalidImageName", errors.ImagePullError),
        ("CrashLoopBackOff", errors.CrashLoopError),
        ("CreateContainerConfigError", errors.ContainerConfigError),
    ],
)
def test_a_running_condition_with_a_stuck_reason_is_stuck(
    reason: str, error_class: type[errors.JobStuckError]
) -> None:
    status = job("Pending", ("Running", "False", reason, f"Pod[mnist-worker-0] {reason}"))
    stuck = stuck_of(status)
    assert stuck is not None
    assert (stuck.reason, stuck.message) == (reason, f"Pod[mnist-worker-0] {reason}")
    assert stuck.since == T0
    assert errors.stuck_error_class(reason) is error_class
    assert evaluate(status, WaitTarget.phase("Succeeded")).state == "stuck"


@pytest.mark.parametrize("reason", ["Pending", "Resuming", "Paused", "-", "ContainerCreating"])
def test_ordinary_waiting_is_not_stuck(reason: str) -> None:
    assert stuck_of(job("Pending", ("Running", "False", reason, "Waiting for 1 of 3"))) is None


def test_a_stalled_job_is_stuck_with_the_reason_and_message_of_its_stalled_condition() -> None:
    message = "Pod mnist-worker-0 exists but is not this job's: it has no controller owner."
    blocked = job(
        "Pending",
        ("Running", "False", "NameConflict", message),
        ("Stalled", "True", "NameConflict", message),
    )
    stuck = stuck_of(blocked)
    assert stuck is not None
    assert (stuck.reason, stuck.message, stuck.since) == ("NameConflict", message, T0)
    assert errors.stuck_error_class("NameConflict") is errors.JobStuckError
    assert evaluate(blocked, WaitTarget.condition("Ready")).state == "stuck"
    fine = job("Running", ("Ready", "True", "Running", "ok"), ("Stalled", "False", "Running", "ok"))
    assert stuck_of(fine) is None
    assert evaluate(fine, WaitTarget.condition("Ready")).state == "reached"


def test_a_finished_job_is_never_stuck() -> None:
    failed = job("Failed", ("Running", "False", "Unschedulable", "x"))
    assert stuck_of(failed) is None


BARRIER = "t9k bootstrap: worker bert-worker-1.bert: sshd did not answer within 600s"


def barrier_tasks() -> list[dict[str, Any]]:
    return [
        {
            "type": "worker",
            "replicas": [
                {
                    "name": "bert-worker-0",
                    "phase": "Failed",
                    "containers": [
                        {
                            "name": "worker",
                            "state": "Terminated",
                            "exitCode": 124,
                            "message": BARRIER,
                        }
                    ],
                }
            ],
        }
    ]


def test_an_expired_barrier_is_stuck_at_once_with_its_message() -> None:
    stuck = stuck_of(job("Running", tasks=barrier_tasks()))
    assert stuck is not None
    assert stuck.reason == "BarrierTimeout"
    assert stuck.immediate
    assert stuck.message == f"bert-worker-0: {BARRIER}"
    assert errors.stuck_error_class("BarrierTimeout") is errors.BarrierTimeoutError


def test_a_failure_caused_by_the_barrier_carries_its_message() -> None:
    failed = job(
        "Failed",
        (
            "Failed",
            "True",
            "Failed",
            "DeepSpeedJob bert has failed: bert-worker-0 failed with exit code 124",
        ),
        tasks=barrier_tasks(),
    )
    reason, message = failure_of(failed) or ("", "")
    assert reason == "Failed"
    assert message.endswith(f"(bert-worker-0: {BARRIER})")


# -- the grace period ----------------------------------------------------------------------------


def stuck_since(seconds_ago: float, now: datetime) -> Any:
    lt = (now - timedelta(seconds=seconds_ago)).isoformat()
    status = job("Pending", ("Running", "False", "Unschedulable", "no room"))
    status["status"]["conditions"][0]["lastTransitionTime"] = lt
    return stuck_of(status)


def test_a_job_already_stuck_when_the_wait_begins_counts_from_its_transition() -> None:
    now = T0 + timedelta(minutes=10)
    clock = StuckClock(60)
    assert clock.deadline(stuck_since(300, now), now) == now - timedelta(seconds=240)


def test_a_job_that_becomes_stuck_during_the_wait_gets_the_whole_grace_period() -> None:
    clock = StuckClock(60)
    assert clock.deadline(None, T0) is None  # the first look: pending, fine
    now = T0 + timedelta(seconds=5)
    # The condition's transition time is old (Pending -> Unschedulable keeps status False).
    assert clock.deadline(stuck_since(600, now), now) == now + timedelta(seconds=60)
    later = now + timedelta(seconds=30)
    assert clock.deadline(stuck_since(630, later), later) == now + timedelta(seconds=60)


def test_a_new_reason_starts_the_grace_period_again_and_recovery_resets_it() -> None:
    clock = StuckClock(10)
    clock.deadline(None, T0)
    first = clock.deadline(stuck_since(0, T0), T0)
    assert first == T0 + timedelta(seconds=10)
    t1 = T0 + timedelta(seconds=8)
    pulling = job("Pending", ("Running", "False", "ImagePullBackOff", "back-off"))
    assert clock.deadline(stuck_of(pulling), t1) == t1 + timedelta(seconds=10)
    t2 = t1 + timedelta(seconds=1)
    assert clock.deadline(None, t2) is None
    t3 = t2 + timedelta(seconds=1)
    assert clock.deadline(stuck_of(pulling), t3) == t3 + timedelta(seconds=10)


def test_grace_zero_fails_at_the_first_sight() -> None:
    clock = StuckClock(0)
    clock.deadline(None, T0)
    assert clock.deadline(stuck_since(0, T0), T0) == T0


def test_a_transition_time_in_the_future_is_treated_as_now() -> None:
    clock = StuckClock(30)
    assert clock.deadline(stuck_since(-3600, T0), T0) == T0 + timedelta(seconds=30)


def test_the_grace_period_cannot_be_negative() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        StuckClock(-1)


# -- counts, progress, events --------------------------------------------------------------------


def test_replica_counts_are_running_from_status_and_desired_from_spec() -> None:
    running = codecs_job(job("Running", aggregate={"running": 2, "pending": 1}))
    assert replica_counts(running) == (2, 3)
    assert replica_counts(codecs_job(job(None))) == (0, 3)


def test_restarts_add_up_the_tasks() -> None:
    status = job(
        "Running", tasks=[{"type": "worker", "restartCount": 2}, {"type": "ps", "restartCount": 1}]
    )
    assert restarts(codecs_job(status)) == 3


def test_the_progress_line_says_phase_message_and_counts() -> None:
    running = job(
        "Pending",
        ("Running", "False", "Pending", "Waiting for 1 of 3 replicas to start running."),
        aggregate={"running": 2, "pending": 1, "failed": 0},
    )
    assert progress_line(running) == (
        "Pending: Waiting for 1 of 3 replicas to start running. (running 2, pending 1)"
    )
    assert progress_line(FAILED) == "Failed: Pod[mnist-worker-0] exited with error code 3"
    assert "waiting for the operator" in progress_line(job(None))


def test_events_sort_by_time_then_by_storage_order() -> None:
    def raw(name: str, rv: str, last: str | None, event_time: str | None = None) -> dict[str, Any]:
        return {
            "metadata": {"name": name, "resourceVersion": rv},
            "involvedObject": {"kind": "Pod", "name": "mnist-worker-0"},
            "reason": name,
            "message": f" {name} happened ",
            "type": "Normal",
            "lastTimestamp": last,
            "eventTime": event_time,
        }

    events = [
        event_from(raw("created", "10", "2026-01-01T12:00:01Z")),
        event_from(raw("scheduled", "9", None, "2026-01-01T12:00:01.500000Z")),
        event_from(raw("first", "5", "2026-01-01T12:00:00Z")),
    ]
    assert [e.reason for e in sort_events(events)] == ["first", "scheduled", "created"]
    assert events[0].object == "Pod/mnist-worker-0"
    assert events[0].message == "created happened"


def codecs_job(manifest: dict[str, Any]) -> Any:
    from t9k_sdk import codecs

    return codecs.from_manifest(manifest)


def test_a_status_only_the_api_server_defaulted_is_not_a_report() -> None:
    unseen = job(None)
    unseen["status"] = {"observedGeneration": 0}
    assert not reported(unseen)
    assert progress_line(unseen) == "Pending: waiting for the operator to report on the job"
    assert reported(job("Pending"))
    seen = job(None)
    seen["status"] = {"observedGeneration": 1}
    assert reported(seen)
