"""A job's status, from what a reconcile pass found: the phase and the conditions
(`phase.py`, by the job's situation), the conditions' rules and the kstatus table
(`conditions.py`), the tasks, the aggregate and `observedGeneration` (`summary.py`)."""

from __future__ import annotations

from t9k_sdk.reconcile.status.conditions import Conditions, kstatus_conditions
from t9k_sdk.reconcile.status.phase import JobView, phase_and_conditions
from t9k_sdk.reconcile.status.summary import (
    aggregate,
    invalid_spec_status,
    tasks,
    with_observed_generation,
)

__all__ = [
    "Conditions",
    "JobView",
    "aggregate",
    "invalid_spec_status",
    "kstatus_conditions",
    "phase_and_conditions",
    "tasks",
    "with_observed_generation",
]
