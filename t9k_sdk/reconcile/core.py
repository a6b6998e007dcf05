"""`reconcile(job, observed, now=...) -> Plan`: one level-triggered pass, pure.

This module holds the order of the steps and nothing else:

1. parse the job (a spec that cannot be read fails the job: `InvalidSpec`);
2. read the pass' state (`state.read_state`: the job's own children, its last status);
3. run the policies (`policies/`) in order: conflicts; the replicas, by the job's situation
   (finished: their final entries and the clean-up; paused: every pod deleted; active: the
   walk over the replicas in `replicas.py`, then the pods outside the spec); the other
   children; the outcome (the kind's rules, a held launcher's failed worker, the deadline) and
   its clean-up; when to look again;
4. write the status (`status/`) and return the plan.

What each step decides is in its module's docstring; docs/concepts/architecture.md draws them.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from t9k_sdk import _objects as o
from t9k_sdk import codecs, models
from t9k_sdk.errors import InvalidManifestError, LegacyManifestWarning
from t9k_sdk.models import JobPhase
from t9k_sdk.reconcile import kueue, replicas, status
from t9k_sdk.reconcile.children import desired_others
from t9k_sdk.reconcile.policies import (
    admission,
    batching,
    cleanup,
    conflicts,
    deadline,
    launch,
    lost_nodes,
    others,
    pause,
    restart,
)
from t9k_sdk.reconcile.policies.batching import PLAN_BYTES_PER_PASS, POD_CREATES_PER_PASS
from t9k_sdk.reconcile.policies.restart import restart_allowed
from t9k_sdk.reconcile.state import PassState, read_state
from t9k_sdk.reconcile.types import Event, Observed, Plan

__all__ = ["PLAN_BYTES_PER_PASS", "POD_CREATES_PER_PASS", "reconcile", "restart_allowed"]

_Outcome = tuple[str, str, str]
"""(phase, reason, message) of a job decided in this pass."""


def reconcile(job_manifest: Mapping[str, Any], observed: Observed, *, now: datetime) -> Plan:
    """One reconcile pass for one job. Pure: the same inputs give the same plan."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LegacyManifestWarning)
        try:
            # The spec alone decides what to do: a status is only read as data (raw), so one
            # that a foreign writer filled with nonsense cannot fail the job as InvalidSpec.
            job = codecs.from_manifest({k: v for k, v in job_manifest.items() if k != "status"})
        except InvalidManifestError as exc:
            return _invalid_spec(job_manifest, exc, now)
    # The batch limits are read here, when the pass starts: tests and the memory benchmark
    # lower or lift them on this module.
    state = read_state(
        job,
        job_manifest,
        observed,
        now,
        pod_limit=POD_CREATES_PER_PASS,
        byte_limit=PLAN_BYTES_PER_PASS,
    )
    if state.foreign:
        needed = [
            (m["kind"], m["metadata"]["name"])
            for m in desired_others(state.rules, observed.ssh_key)
        ]
        if state.admission is not None:
            needed.append(("Workload", kueue.workload_name(job)))
        conflicts.find(state, needed)
    lost = lost_nodes.replace_lost(state)
    _replicas(state)
    others.keep_in_line(state)
    outcome, requeue = _outcome(state)
    requeue = lost if requeue is None else requeue if lost is None else min(requeue, lost)
    admission.keep_workload(state, outcome)
    requeue = conflicts.recheck(state, requeue)
    requeue = batching.next_pass(state, requeue)
    return _plan(state, outcome, requeue)


def _invalid_spec(
    job_manifest: Mapping[str, Any], exc: InvalidManifestError, now: datetime
) -> Plan:
    message = "; ".join(str(p) for p in exc.problems)
    new = status.invalid_spec_status(job_manifest, message, now)
    changed = new != dict(o.status(job_manifest))
    return Plan(
        status=new if changed else None,
        events=(Event("Warning", "InvalidSpec", message),) if changed else (),
        finished=True,
        notes=(f"invalid spec: {message}",),
    )


def _replicas(state: PassState) -> None:
    """Each replica, by the job's situation: finished, paused or active."""
    if state.terminal:
        for slot in state.slots:
            replicas.finished_replica(state, slot)
        cleanup.clean_up(state, hard_stop=deadline.exceeded_before(state.raw))
        return
    mode = pause.mode(state)
    cause = None
    if not state.paused and not admission.holds(state):
        cause = restart.job_restart_cause(state)
        if cause is not None:
            replicas.begin_job_restart(state, cause)
    for slot in state.slots:
        if state.paused:
            pause.pause_replica(state, slot)
        elif admission.holds(state):
            admission.hold_replica(state, slot)
        elif cause is not None:
            replicas.restart_with_job(state, slot, cause, mode)
        else:
            replicas.active_replica(state, slot, mode)
    cleanup.delete_orphans(state)


def _outcome(state: PassState) -> tuple[_Outcome | None, float | None]:
    """(the job's outcome if it was decided in this pass, seconds until its deadline)."""
    if state.terminal or state.paused or admission.holds(state):
        return None, None
    outcome: _Outcome | None = None
    if not state.run_mode.debug_enabled:  # debug: the job never finishes by itself...
        decided = state.rules.outcome(state.final, state.failed_codes)
        outcome = (decided[0], *decided) if decided is not None else launch.outcome(state)
    requeue = None
    if outcome is None:  # ...but its pods hold GPUs too
        outcome, requeue = deadline.check(state)
    if outcome is not None:
        cleanup.clean_up(state, hard_stop=outcome[1] == deadline.DEADLINE_EXCEEDED)
    return outcome, requeue


def _plan(state: PassState, outcome: _Outcome | None, requeue: float | None) -> Plan:
    for name, entry in state.entries.items():
        count = state.replica_restarts[name]
        if count and entry.get("restartCount") != count:
            state.entries[name] = {**entry, "restartCount": count}
    entries = [state.entries[s.name] for s in state.slots if s.name in state.entries]
    phase, conditions, events = status.phase_and_conditions(
        status.JobView(
            prev=state.prev,
            entries=entries,
            pods=state.pods,
            final=state.final,
            outcome=outcome,
            terminal=state.terminal,
            paused=state.paused,
            debug=state.run_mode.debug_enabled,
            now=state.now,
            problem=conflicts.problem(state),
            waiting=launch.waiting_message(state),
            queued=admission.waiting(state),
            restarting=restart.restarting(state),
            failure_is_the_jobs=isinstance(state.job, models.DeepSpeedJob),
            standby=state.rules.standby(),
        )
    )
    new: dict[str, Any] = {
        **state.prev,
        "tasks": status.tasks(
            [g.type for g in state.rules.groups()], state.slots, state.entries, state.restarts
        ),
        "phase": phase,
        "aggregate": status.aggregate(state.entries.values()),
        "conditions": conditions,
    }
    if isinstance(state.job, models.DeepSpeedJob):
        new["backoffCount"] = state.backoff
    new = status.with_observed_generation(state.raw, new)
    changed = new != state.prev
    return Plan(
        status=new if changed else None,
        delete=tuple(state.delete),
        update=tuple(state.update),
        create=tuple(state.create),
        # transition events only when the status write that records them happens
        events=(*events, *state.events) if changed else tuple(state.events),
        requeue_after=requeue,
        finished=phase in (JobPhase.SUCCEEDED.value, JobPhase.FAILED.value),
        notes=tuple(state.notes),
    )
