"""The deadline: `runPolicy.activeDeadlineSeconds` fails a job that runs too long.

Its clock starts at the job's first pass (its Initialized condition) or its last resume (its
Paused condition turning False), whichever is later; a paused job's clock does not run. A job
that runs past it fails with reason `DeadlineExceeded`, and every pod still pending or running
is deleted, whatever the clean-up policy says (a debug job, which never finishes by itself,
holds GPUs too).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from t9k_sdk import _objects as o
from t9k_sdk.models import ConditionStatus, JobConditionType, JobPhase
from t9k_sdk.models._base import _format_time
from t9k_sdk.reconcile.state import PassState

__all__ = ["DEADLINE_EXCEEDED", "check", "exceeded_before"]

DEADLINE_EXCEEDED = "DeadlineExceeded"


def check(state: PassState) -> tuple[tuple[str, str, str] | None, float | None]:
    """(the job's outcome if its deadline passed, else None; seconds left, if it has one)."""
    deadline = state.rules.deadline_seconds()
    if deadline is None:
        return None, None
    started = _active_since(state.raw, state.now)
    remaining = deadline - (state.now - started).total_seconds()
    if remaining > 0:
        return None, remaining
    return (
        JobPhase.FAILED.value,
        DEADLINE_EXCEEDED,
        f"The job ran longer than runPolicy.activeDeadlineSeconds ({deadline}s,"
        f" counted from {_format_time(started)}): its unfinished pods are deleted.",
    ), None


def exceeded_before(raw: Mapping[str, Any]) -> bool:
    """Whether the job failed on its deadline in an earlier pass (a pass interrupted after the
    status write: the deadline's deletions still happen)."""
    failed = o.condition(raw, JobConditionType.FAILED.value)
    return (
        failed is not None
        and failed.get("status") == ConditionStatus.TRUE.value
        and failed.get("reason") == DEADLINE_EXCEEDED
    )


def _active_since(raw: Mapping[str, Any], now: datetime) -> datetime:
    """When the deadline's clock started: the job's first pass (its Initialized condition),
    or its last resume (its Paused condition turning False), whichever is later. A job
    resumed in this very pass, or on its first pass, starts now."""
    initialized = o.condition(raw, JobConditionType.INITIALIZED.value)
    paused = o.condition(raw, JobConditionType.PAUSED.value)
    if initialized is None or initialized.get("status") != ConditionStatus.TRUE.value:
        return now
    if paused is not None and paused.get("status") == ConditionStatus.TRUE.value:
        return now  # resuming now
    marks = [
        when
        for c in (initialized, paused)
        if c is not None and (when := o.parse_time(c.get("lastTransitionTime"))) is not None
    ]
    return max(marks, default=now)
