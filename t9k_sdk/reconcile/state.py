"""The state of one reconcile pass: what it knows, and what it has planned so far.

`PassState` is a plain dataclass. `read_state` fills the first half from the job and what was
observed; the policies (`t9k_sdk.reconcile.policies`) read it and record their decisions in the
second half (the pods to create, the deletions, the Events, the replica entries of the status);
`t9k_sdk.reconcile.core` runs them in order and turns the state into a `Plan`. No policy calls
another: what one decided and another needs is in the state.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from t9k_sdk import _conventions as conventions
from t9k_sdk import _objects as o
from t9k_sdk import models
from t9k_sdk._conventions import Slot
from t9k_sdk._job_status import ReplicaEntry
from t9k_sdk.codecs import AnyJob
from t9k_sdk.models import JobPhase, ReplicaPhase
from t9k_sdk.reconcile import ownership
from t9k_sdk.reconcile.kinds import KindRules, rules_for
from t9k_sdk.reconcile.kueue import Admission, read_admission
from t9k_sdk.reconcile.observe import PodView, observe_pod
from t9k_sdk.reconcile.types import Deletion, Event, Manifest, Observed, Update

__all__ = ["FINISHED", "PassState", "asked_to_stop", "ended", "entry_of", "read_state", "stop_pod"]

FINISHED = (ReplicaPhase.SUCCEEDED.value, ReplicaPhase.FAILED.value)
"""The replica phases a replica ends in."""

_OTHER_KINDS = ("Service", "ConfigMap", "Secret", "PodGroup", "Workload")


@dataclass
class PassState:
    """What one pass knows (read once) and what it has planned (filled by the policies)."""

    # -- what the pass knows ---------------------------------------------------------------------
    job: AnyJob
    raw: Mapping[str, Any]
    """The job as the API server returned it (its status is read from here, as data)."""
    rules: KindRules
    observed: Observed
    now: datetime
    slots: list[Slot]
    run_mode: models.RunMode
    terminal: bool
    """The job had finished before this pass (Succeeded or Failed)."""
    pods: dict[str, PodView]
    """The job's own pods, by name (the controller owner reference carries the job's uid)."""
    others_by_kind: dict[str, list[Mapping[str, Any]]]
    """The job's own services, config maps, secrets, pod groups and Kueue Workloads."""
    foreign: list[tuple[str, Mapping[str, Any]]]
    """Objects of the job's namespace handed over that the job does not own."""
    admission: Admission | None
    """Where the job stands with Kueue (None: it names no queue; `policies.admission`)."""
    pod_limit: int
    """Most pods this pass plans (see `policies.batching`)."""
    byte_limit: int
    """About how many bytes of pod manifests this pass plans."""
    prev: dict[str, Any] = field(default_factory=dict)
    prev_entries: dict[str, o.Replica] = field(default_factory=dict)

    # -- the restart budget (`policies.restart`) -------------------------------------------------
    restarts: Counter[str] = field(default_factory=Counter)
    """Restarts per replica type (the status' `tasks[].restartCount`)."""
    replica_restarts: Counter[str] = field(default_factory=Counter)
    """Restarts per replica (a t9k-sdk extension of the replica status: `restartCount`)."""
    backoff: int = 0
    """Restarts of the whole job (DeepSpeedJob's `backoffCount`)."""
    pending_restarts: Counter[str] = field(default_factory=Counter)
    """Restarts decided but not yet planned (their pod is being deleted or waits), by scope."""
    restart_scope: str = "Replica"
    """What a retryable failure restarts: "Replica" (T9k's behaviour) or "Job" (every replica
    together; the annotation `t9k-sdk.dev/restart-scope`)."""
    job_restart: tuple[str, str] | None = None
    """(reason, message) while the whole job restarts (restart scope Job)."""
    old_ranks_stopping: bool | None = None
    """Restart scope Job: a pod of the job is still stopping (`policies.restart`; None until
    asked: the walk asks for each missing pod, and the pods do not change during it)."""

    # -- what the policies found -----------------------------------------------------------------
    conflicts: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    blocked: bool = False
    """A foreign object holds a name the job needs: nothing new is created."""
    held: dict[str, list[str]] = field(default_factory=dict)
    """Launcher -> the workers it waits for."""
    lost: dict[str, str] = field(default_factory=dict)
    """Pod -> why it was force-deleted in this pass, its node being lost (`policies.lost_nodes`)."""
    final: dict[str, str] = field(default_factory=dict)
    """Replica -> "Succeeded" | "Failed", for the replicas that finished for good."""
    failed_codes: dict[str, int | None] = field(default_factory=dict)
    entries: dict[str, ReplicaEntry] = field(default_factory=dict)
    """The replica entries of the new status, by replica name."""

    # -- what the pass has planned ---------------------------------------------------------------
    create: list[Manifest] = field(default_factory=list)
    update: list[Update] = field(default_factory=list)
    delete: list[Deletion] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    pods_planned: int = 0
    bytes_planned: int = 0
    pod_sizes: dict[str, int] = field(default_factory=dict)
    """Replica type -> JSON bytes of one of its pods."""
    deferred: int = 0
    """Pods left for a later pass."""

    @property
    def prev_phase(self) -> str | None:
        return o.phase(self.raw)

    @property
    def paused(self) -> bool:
        return self.run_mode.pause_enabled


def read_state(
    job: AnyJob,
    raw: Mapping[str, Any],
    observed: Observed,
    now: datetime,
    *,
    pod_limit: int,
    byte_limit: int,
) -> PassState:
    """The state of a pass over `job` (parsed from `raw`) given what was `observed`."""
    rules = rules_for(job)
    prev_entries = {name: r for r in o.replicas(raw) if (name := r.name)}
    foreign, pods, others = _own_children(job, observed)
    prev = dict(o.status(raw))
    state = PassState(
        job=job,
        raw=raw,
        rules=rules,
        observed=observed,
        now=now,
        slots=rules.slots(),
        run_mode=rules.run_mode(),
        terminal=o.phase(raw) in (JobPhase.SUCCEEDED.value, JobPhase.FAILED.value),
        pods=pods,
        others_by_kind=others,
        foreign=foreign,
        admission=read_admission(
            rules,
            others["Workload"],
            observed.kueue is not False,
            observed.flavors,
            observed.priorities,
        ),
        pod_limit=pod_limit,
        byte_limit=byte_limit,
        prev=prev,
        prev_entries=prev_entries,
        restarts=Counter({t.type: t.restart_count for t in o.tasks(raw) if t.type}),
        replica_restarts=Counter(
            {name: n for name, r in prev_entries.items() if (n := _restarts_of(r.raw))}
        ),
        backoff=int(prev.get("backoffCount") or 0),
        restart_scope=models.restart_scope_of(job.metadata),
    )
    _tell_rules(state)
    if state.admission is not None:
        rules.placement = state.admission.placement
    return state


def _own_children(job: AnyJob, observed: Observed) -> tuple[
    list[tuple[str, Mapping[str, Any]]],
    dict[str, PodView],
    dict[str, list[Mapping[str, Any]]],
]:
    """(foreign objects, own pods by name, own other children by kind).

    Ownership is the controller owner reference's uid, never a name or a label: anything else is
    foreign, and is never counted, changed, deleted or mounted. Only the job's own namespace
    holds its children (and the names they need): whatever the shell hands over from another one
    is not looked at, whoever it names as owner."""
    uid = job.metadata.uid or ""
    namespace = job.metadata.namespace or ""

    def here(objs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        return [x for x in objs if not namespace or o.meta(x).namespace in ("", namespace)]

    foreign: list[tuple[str, Mapping[str, Any]]] = []
    pods: dict[str, PodView] = {}
    for p in here(observed.pods):
        if not ownership.owned_by(p, uid):
            foreign.append(("Pod", p))
            continue
        view = observe_pod(p)
        pods[view.name] = view
    others: dict[str, list[Mapping[str, Any]]] = {}
    for kind, objs in zip(
        _OTHER_KINDS,
        (
            observed.services,
            observed.config_maps,
            observed.secrets,
            observed.pod_groups,
            observed.workloads,
        ),
        strict=True,
    ):
        mine = others.setdefault(kind, [])
        for obj in here(objs):
            if ownership.owned_by(obj, uid):
                mine.append(obj)
            else:
                foreign.append((kind, obj))
    return foreign, pods, others


def _tell_rules(state: PassState) -> None:
    """What the launcher rules need to know of the pods (see `KindRules.running`), and the
    hostfile the job's ConfigMap holds."""
    running: set[str] = set()
    succeeded: set[str] = set()
    stuck: set[str] = set()
    for name, view in state.pods.items():
        if view.terminating:
            continue
        if view.phase == ReplicaPhase.RUNNING:
            running.add(name)
        elif view.phase == ReplicaPhase.SUCCEEDED:
            succeeded.add(name)
        if view.unschedulable or view.stuck:
            stuck.add(name)
    rules = state.rules
    rules.running = frozenset(running)
    rules.succeeded = frozenset(succeeded)
    rules.stuck = frozenset(stuck)
    for cm in state.others_by_kind["ConfigMap"]:
        if o.meta(cm).name == conventions.config_map_name(state.job.metadata.name or ""):
            data = cm.get("data")
            hostfile = data.get("hostfile") if isinstance(data, Mapping) else None
            rules.mounted_hostfile = hostfile if isinstance(hostfile, str) else ""


def entry_of(slot: Slot, pod: PodView) -> ReplicaEntry:
    """The replica entry of the status for `slot`, whose pod is `pod`."""
    out: ReplicaEntry = {"name": slot.name, "uid": pod.uid, "phase": pod.phase.value}
    containers = [c.wire() for c in pod.containers]
    if containers:
        out["containers"] = containers
    return out


def stop_pod(state: PassState, slot: Slot, pod: PodView, reason: str, why: str) -> None:
    """Delete the pod of `slot` gracefully (its own grace period; not again while it is being
    deleted), and show its replica Deleted (a paused job, one Kueue holds back)."""
    if not pod.terminating:
        state.delete.append(Deletion("v1", "Pod", pod.name, pod.uid, reason))
        state.notes.append(f"delete pod {pod.name}: {why}")
    entry = entry_of(slot, pod)
    entry["phase"] = ReplicaPhase.DELETED.value
    state.entries[slot.name] = entry


def asked_to_stop(state: PassState, slot: Slot, pod: PodView) -> bool:
    """Whether the operator deleted `pod` (its replica's last entry is Deleted with the pod's
    uid): whatever the pod shows while it stops, or before the deletion is seen, it is neither a
    failure nor a success of the replica."""
    prev = state.prev_entries.get(slot.name)
    return (
        prev is not None
        and prev.phase == ReplicaPhase.DELETED.value
        and bool(prev.uid)
        and prev.uid == pod.uid
    )


def ended(outcome: str, code: int | None) -> str:
    """How a replica ended, in words: "succeeded", "failed with exit code 1", "failed"."""
    if outcome == ReplicaPhase.SUCCEEDED.value:
        return "succeeded"
    return f"failed with exit code {code}" if code is not None else "failed"


def _restarts_of(entry: Mapping[str, Any]) -> int:
    value = entry.get("restartCount")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
