"""Admission: a job that names a Kueue LocalQueue runs only once Kueue admits it whole.

Where the job stands with Kueue is read with the pass' state (`t9k_sdk.reconcile.kueue`,
`state.admission`); this policy acts on it:

* `hold_replica`: while the job waits for admission, or after Kueue evicted it, none of its pods
  runs: a pod that exists is deleted gracefully (each rank gets its grace period), and neither
  that nor its coming back counts as a restart; its replica shows Deleted (Pending if it never
  had a pod);
* `keep_workload`: the job's Workload is created when missing (before any pod), deleted when the
  job no longer names a queue, and told what Kueue must know (`kueue.workload_updates`: paused,
  the admission given back once an evicted job's pods are gone, `PodsReady`, `Finished`);
* `waiting`: the (reason, message) the job's Running condition carries meanwhile.
"""

from __future__ import annotations

from t9k_sdk import _conventions as conventions
from t9k_sdk import _objects as o
from t9k_sdk._conventions import Slot
from t9k_sdk.models import JobPhase, ReplicaPhase
from t9k_sdk.reconcile import kueue
from t9k_sdk.reconcile.state import PassState, stop_pod
from t9k_sdk.reconcile.types import Deletion

__all__ = ["hold_replica", "holds", "keep_workload", "waiting"]


def holds(state: PassState) -> bool:
    """No pod of the job may run now: it names a queue and is not admitted (or was evicted)."""
    return state.admission is not None and state.admission.holds_pods


def hold_replica(state: PassState, slot: Slot) -> None:
    """Keep the replica of `slot` without a pod while Kueue has not admitted the job."""
    pod = state.pods.get(slot.name)
    prev = state.prev_entries.get(slot.name)
    if pod is not None:
        why = state.admission.reason if state.admission else "admission"
        stop_pod(state, slot, pod, f"kueue: {why}", f"the job is not admitted by Kueue ({why})")
    elif prev is not None and prev.uid:
        state.entries[slot.name] = {**prev.raw, "phase": ReplicaPhase.DELETED.value}
    else:
        state.entries[slot.name] = {"name": slot.name, "phase": ReplicaPhase.PENDING.value}


def keep_workload(state: PassState, outcome: tuple[str, str, str] | None) -> None:
    """Create, delete or update the job's Workload (see the module docstring)."""
    admission = state.admission
    if admission is None:
        for workload in state.others_by_kind.get("Workload", ()):
            meta = o.meta(workload)
            api_version = str(workload.get("apiVersion"))
            state.delete.append(
                Deletion(api_version, "Workload", meta.name, meta.uid or None, "no queue")
            )
        return
    if admission.situation == "unavailable":
        return
    if admission.workload is None:
        if not (state.terminal or state.blocked):
            child = state.rules.child_metadata(kueue.workload_name(state.job))
            workload = kueue.desired_workload(
                state.rules, admission.queue, child, admission.priority
            )
            state.create.insert(0, workload)
            state.notes.append(f"create workload {kueue.workload_name(state.job)}")
        return
    if admission.situation == "stale":
        # made for another spec of the job: deleted once no pod of it is left (its quota is
        # given back with it), and made again, as the job is now, in the next pass
        if not state.pods and not state.terminal:
            meta = o.meta(admission.workload)
            state.delete.append(
                Deletion(
                    conventions.KUEUE_API_VERSION, "Workload", meta.name, meta.uid or None, "stale"
                )
            )
            state.notes.append(f"delete workload {meta.name}: made for another spec of the job")
        return
    state.update.extend(
        kueue.workload_updates(
            admission,
            paused=state.paused,
            pods_left=sum(1 for _ in state.pods),
            pods_ready=kueue.running([p.phase for p in state.pods.values()])
            and len(state.pods) == len(state.slots),
            finished=_finished(state, outcome),
            now=state.now,
        )
    )


def _finished(state: PassState, outcome: tuple[str, str, str] | None) -> tuple[str, str] | None:
    """(reason, message) of the job's end, for Kueue's `Finished` condition, or None."""
    phase = outcome[0] if outcome is not None else (state.prev_phase if state.terminal else None)
    if phase not in (JobPhase.SUCCEEDED.value, JobPhase.FAILED.value):
        return None
    message = outcome[2] if outcome is not None else f"The job {phase.lower()}."
    return phase, message


def waiting(state: PassState) -> tuple[str, str] | None:
    """(reason, message) of the Running condition while Kueue holds the job's pods back."""
    admission = state.admission
    if admission is None or not admission.holds_pods:
        return None
    return admission.reason, admission.message
