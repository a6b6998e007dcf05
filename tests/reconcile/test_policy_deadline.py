"""The deadline policy, called directly: `runPolicy.activeDeadlineSeconds`.

What a user sees: a job that has run longer than its deadline fails with reason
DeadlineExceeded, and the message says from when it was counted. The clock starts at the job's
first pass (its Initialized condition) or at its last resume (its Paused condition turning
False), whichever is later; a job resumed in this very pass starts it again. Until then the job
is looked at again when the deadline falls due. A job without a deadline runs as long as it
needs. A job that failed on its deadline in an earlier pass is known as such (its deletions are
finished even after a crash).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from t9k_sdk.reconcile.policies import deadline
from tests.sdk.manifests import deepspeed_job

from .policy_kit import NOW, condition, read, served

STARTED = "2026-01-01T11:00:00Z"
"""The job's first pass: an hour before the pass under test (`NOW`)."""


def ds(seconds: int | None) -> dict[str, Any]:
    policy = {"activeDeadlineSeconds": seconds} if seconds is not None else {}
    return deepspeed_job(runPolicy=policy)


def running_since(seconds: int | None, *conditions: dict[str, Any]) -> dict[str, Any]:
    """The job as an earlier pass left it: initialized at `STARTED`, with `conditions` too."""
    return served(
        ds(seconds),
        phase="Running",
        conditions=[condition("Initialized", "True", STARTED), *conditions],
    )


def test_a_job_without_a_deadline_is_never_failed_by_one() -> None:
    state = read(running_since(None), now=NOW + timedelta(days=365))
    assert deadline.check(state) == (None, None)


@pytest.mark.parametrize(("seconds", "left"), [(3601, 1.0), (7200, 3600.0)])
def test_a_job_within_its_deadline_is_looked_at_again_when_it_falls_due(
    seconds: int, left: float
) -> None:
    assert deadline.check(read(running_since(seconds))) == (None, left)


@pytest.mark.parametrize("seconds", [3600, 60])
def test_a_job_past_its_deadline_fails_with_deadline_exceeded(seconds: int) -> None:
    """At the very second it falls due, and any time after."""
    outcome, left = deadline.check(read(running_since(seconds)))
    assert outcome == (
        "Failed",
        "DeadlineExceeded",
        f"The job ran longer than runPolicy.activeDeadlineSeconds ({seconds}s, counted from"
        f" {STARTED}): its unfinished pods are deleted.",
    )
    assert left is None


def test_the_clock_starts_at_the_first_pass() -> None:
    """A new job (no Initialized condition yet) has its whole deadline ahead of it."""
    assert deadline.check(read(ds(60))) == (None, 60.0)


def test_the_clock_starts_again_when_the_job_is_resumed() -> None:
    """Paused for most of the hour and resumed 10 minutes ago: 10 of its 15 minutes are used,
    though it was created an hour ago."""
    job = served(
        ds(900),
        phase="Running",
        conditions=[
            condition("Initialized", "True", STARTED),
            condition("Paused", "False", "2026-01-01T11:50:00Z"),
        ],
    )
    assert deadline.check(read(job)) == (None, 300.0)


def test_a_job_resumed_in_this_pass_has_its_whole_deadline_ahead() -> None:
    """Its Paused condition still says True: the pass that resumes it starts the clock."""
    job = served(
        ds(900),
        phase="Paused",
        conditions=[
            condition("Initialized", "True", STARTED),
            condition("Paused", "True", "2026-01-01T11:05:00Z"),
        ],
    )
    assert deadline.check(read(job)) == (None, 900.0)


@pytest.mark.parametrize(
    ("status", "reason", "before"),
    [
        ("True", "DeadlineExceeded", True),
        ("True", "Failed", False),
        ("False", "DeadlineExceeded", False),
    ],
)
def test_a_job_that_failed_on_its_deadline_before_is_known_as_such(
    status: str, reason: str, before: bool
) -> None:
    job = running_since(60, condition("Failed", status, STARTED, reason=reason))
    assert deadline.exceeded_before(job) is before
