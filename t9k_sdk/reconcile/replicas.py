"""The walk over a job's replicas: for each slot, what its pod needs, asking the policies.

Per replica slot (`<job>-<type>-<index>`) of an active job, given the pod that exists (if any)
and what the last status recorded for that slot:

| pod                      | last status          | decision                                         |
|--------------------------|----------------------|--------------------------------------------------|
| none                     | none / not finished  | create it                                        |
| none                     | Succeeded / Failed   | restart allowed: create it, count one restart;   |
|                          |                      | otherwise the replica has finished for good      |
| finished                 | any                  | restart allowed: delete it (it is recreated next |
|                          |                      | pass); otherwise finished for good               |
| failed, ended by the     | any                  | delete it, recreated as a missing pod, no        |
| cluster (a disruption)   |                      | restart counted (`policies.disruptions`)         |
| being deleted            | any                  | wait                                             |
| pending / running        | any                  | nothing (or relaunch it, if the kind says so)    |

Before a missing pod is created, in this order: a conflict blocks every create
(`policies.conflicts`), a launcher waits for its workers (`policies.launch`), a full batch leaves
it for the next pass (`policies.batching`). Whether a replica restarts is `policies.restart`'s.
"""

from __future__ import annotations

from t9k_sdk._conventions import Slot
from t9k_sdk._job_status import ReplicaEntry
from t9k_sdk.models import ReplicaPhase
from t9k_sdk.reconcile.kinds import Mode
from t9k_sdk.reconcile.observe import PodView
from t9k_sdk.reconcile.policies import batching, disruptions, launch, restart
from t9k_sdk.reconcile.state import (
    FINISHED,
    PassState,
    asked_to_stop,
    ended,
    entry_of,
    stop_pod,
)
from t9k_sdk.reconcile.types import Deletion, Event

__all__ = ["active_replica", "begin_job_restart", "finished_replica", "restart_with_job"]


def active_replica(state: PassState, slot: Slot, mode: Mode) -> None:
    """Decide for the replica of `slot` of a job that is neither finished nor paused."""
    pod = state.pods.get(slot.name)
    if pod is None:
        _missing(state, slot, mode)
    elif pod.terminating or asked_to_stop(state, slot, pod):
        _being_deleted(state, slot, pod)
    else:
        _present(state, slot, pod)


def begin_job_restart(state: PassState, cause: Slot) -> None:
    """Restart scope Job: the whole job restarts because the pod of `cause` failed. Records
    why (the Running condition and an Event); `restart_with_job` then stops each replica."""
    pod = state.pods[cause.name]
    others = [s.name for s in state.slots if s.name != cause.name and _to_stop(state, s)]
    uncounted = "restarting the whole job (restart scope Job, not counted)"
    if cause.name in state.lost:
        why = f"was force-deleted: {state.lost[cause.name]}; {uncounted}"
    elif disruptions.disrupted(pod):
        why = f"{disruptions.how(pod)}; {uncounted}"
    else:
        budget = state.rules.group(cause.replica_type).policy.value
        why = (
            f"{ended(pod.phase.value, pod.exit_code)}; restarting the whole job"
            f" (restart scope Job, {budget} policy)"
        )
    message = f"Pod {pod.name} {why}: " + (
        f"stopping its {len(others)} other running pods, then recreating every replica"
        if others
        else "recreating every replica"
    )
    state.job_restart = (restart.RESTARTING_JOB, message)
    state.events.append(
        Event("Warning", restart.RESTARTING_JOB, message, after=f"delete Pod/{pod.name}")
    )


def _to_stop(state: PassState, slot: Slot) -> bool:
    pod = state.pods.get(slot.name)
    return (
        pod is not None
        and not pod.terminating
        and pod.phase != ReplicaPhase.SUCCEEDED
        and not asked_to_stop(state, slot, pod)
    )


def restart_with_job(state: PassState, slot: Slot, cause: Slot, mode: Mode) -> None:
    """Restart scope Job, in the pass that decided it: the failed pod of `cause` is deleted at
    once, every other pod that runs (or failed after it) is stopped with its grace period, and
    nothing is created; a replica that succeeded keeps its outcome."""
    pod = state.pods.get(slot.name)
    if slot.name == cause.name and pod is not None and slot.name in state.lost:
        stop_pod(state, slot, pod, "node-lost", "its node is lost")  # deleted: the entry alone
    elif slot.name == cause.name and pod is not None and disruptions.disrupted(pod):
        disruptions.replace_disrupted(state, slot, pod, event=False)  # RestartingJob says why
    elif slot.name == cause.name and pod is not None:
        state.entries[slot.name] = entry_of(slot, pod)
        restart.hold(state, slot)
        state.delete.append(
            Deletion("v1", "Pod", pod.name, pod.uid, "restart", grace_period_seconds=0)
        )
        state.notes.append(f"delete pod {pod.name}: the whole job restarts after it failed")
    elif pod is not None and _to_stop(state, slot):
        stop_pod(state, slot, pod, "restart", "the whole job restarts")
    elif pod is not None:
        active_replica(state, slot, mode)
    elif (prev := state.prev_entries.get(slot.name)) is not None:
        state.entries[slot.name] = prev.raw


def _missing(state: PassState, slot: Slot, mode: Mode) -> None:
    prev = state.prev_entries.get(slot.name)
    if state.blocked:  # a foreign object holds a name: create nothing
        if prev is not None:
            state.entries[slot.name] = prev.raw
        return
    ended_before = prev is not None and prev.phase in FINISHED
    restarts = (
        prev is not None
        and ended_before
        and restart.allowed(state, slot, prev.phase, prev.exit_code)
    )
    if restart.waits_for_old_ranks(state):  # the whole job restarts: old ranks stop first
        state.entries[slot.name] = (
            prev.raw
            if prev is not None
            else {"name": slot.name, "phase": ReplicaPhase.PENDING.value}
        )
        if restarts:
            restart.hold(state, slot)
        return
    if mode != "debug" and (waiting := state.rules.launch_waits_for(slot)):
        if prev is None or not ended_before:
            pending: ReplicaEntry = {"name": slot.name, "phase": ReplicaPhase.PENDING.value}
            launch.hold_back(state, slot, waiting, pending)
            return
        if restarts:
            launch.hold_back(state, slot, waiting, prev.raw)
            restart.hold(state, slot)
            return
    if batching.full(state):  # a pod to create waits for the next pass
        if prev is None or not ended_before:
            state.deferred += 1
            state.entries[slot.name] = {"name": slot.name, "phase": ReplicaPhase.CREATING.value}
            return
        if restarts:
            state.deferred += 1  # as a pod deleted for a restart: pending, not yet counted
            state.entries[slot.name] = prev.raw
            restart.hold(state, slot)
            return
    if prev is None or not ended_before:
        batching.plan_pod(state, slot, mode, "missing")
        # Recorded by the operator only once the create went through (a refused create is
        # planned again, and so is its Event).
        state.events.append(
            Event(
                "Normal",
                "SuccessfulCreatePod",
                f"Created pod: {slot.name}",
                after=f"create Pod/{slot.name}",
            )
        )
    elif restarts:
        restart.count(state, slot)
        batching.plan_pod(state, slot, mode, f"restart after {prev.phase.lower()}")
        state.events.append(
            Event(
                "Normal",
                "RestartedPod",
                f"Recreated pod {slot.name} after it {ended(prev.phase, prev.exit_code)}",
                after=f"create Pod/{slot.name}",
            )
        )
    else:
        _finished_for_good(state, slot, prev.raw, prev.phase, prev.exit_code)


def _being_deleted(state: PassState, slot: Slot, pod: PodView) -> None:
    prev = state.prev_entries.get(slot.name)
    if prev is not None and asked_to_stop(state, slot, pod):
        state.entries[slot.name] = prev.raw  # stopped by the operator: neither failed nor done
        return
    if prev is None or prev.phase not in FINISHED or prev.uid != pod.uid:
        state.entries[slot.name] = entry_of(slot, pod)
        return
    # deleted for a restart: keep the outcome until the replacement is planned
    state.entries[slot.name] = prev.raw
    if restart.allowed(state, slot, prev.phase, prev.exit_code):
        restart.hold(state, slot)
    else:
        _finished_for_good(state, slot, prev.raw, prev.phase, prev.exit_code)


def _present(state: PassState, slot: Slot, pod: PodView) -> None:
    entry = entry_of(slot, pod)
    state.entries[slot.name] = entry
    why = None if pod.finished else state.rules.outdated(slot, pod.annotations)
    if why is not None:
        state.delete.append(Deletion("v1", "Pod", pod.name, pod.uid, "relaunch"))
        state.notes.append(f"delete pod {pod.name}: {why}")
        state.events.append(
            Event(
                "Normal",
                "Relaunching",
                f"Relaunching pod {pod.name}: {why}",
                after=f"delete Pod/{pod.name}",
            )
        )
        return
    if not pod.finished:
        return
    if disruptions.disrupted(pod):
        disruptions.replace_disrupted(state, slot, pod)
        return
    outcome = pod.phase.value
    if not restart.allowed(state, slot, outcome, pod.exit_code):
        _finished_for_good(state, slot, entry, outcome, pod.exit_code)
        return
    restart.hold(state, slot)
    state.delete.append(Deletion("v1", "Pod", pod.name, pod.uid, "restart", grace_period_seconds=0))
    how = ended(outcome, pod.exit_code)
    state.notes.append(f"delete pod {pod.name}: restart after it {how}")
    policy = state.rules.group(slot.replica_type).policy
    state.events.append(
        Event(
            "Warning" if outcome == ReplicaPhase.FAILED.value else "Normal",
            "RestartingPod",
            f"Pod {pod.name} {how}; restarting it ({policy.value} policy)",
            after=f"delete Pod/{pod.name}",
        )
    )


def _finished_for_good(
    state: PassState, slot: Slot, entry: ReplicaEntry, outcome: str, code: int | None
) -> None:
    state.entries[slot.name] = {**entry}
    state.final[slot.name] = outcome
    if outcome == ReplicaPhase.FAILED.value:
        state.failed_codes[slot.name] = code


def finished_replica(state: PassState, slot: Slot) -> None:
    """The status entry of a replica of a job that had finished: Deleted once its pod is gone
    or going."""
    pod = state.pods.get(slot.name)
    prev = state.prev_entries.get(slot.name)
    deleted = ReplicaPhase.DELETED.value
    if pod is not None:
        entry = entry_of(slot, pod)
        if pod.terminating and prev is not None:
            entry = {**prev.raw, "phase": deleted}
        state.entries[slot.name] = entry
    elif prev is not None:
        state.entries[slot.name] = (
            prev.raw if prev.phase == deleted else {**prev.raw, "phase": deleted}
        )
