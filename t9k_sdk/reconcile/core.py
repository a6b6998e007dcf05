"""`reconcile(job, observed, now=...) -> Plan`: one level-triggered pass, pure.

Per replica slot (`<job>-<type>-<index>`), given the pod that exists (if any) and what the last
status recorded for that slot:

| pod                      | last status          | decision                                         |
|--------------------------|----------------------|--------------------------------------------------|
| none                     | none / not finished  | create it                                        |
| none                     | Succeeded / Failed   | restart allowed: create it, count one restart;   |
|                          |                      | otherwise the replica has finished for good      |
| finished                 | any                  | restart allowed: delete it (it is recreated next |
|                          |                      | pass); otherwise finished for good               |
| being deleted            | any                  | wait                                             |
| pending / running        | any                  | nothing                                          |

One pass plans at most `POD_CREATES_PER_PASS` pods and about `PLAN_BYTES_PER_PASS` of pod
manifests (as the ReplicaSet controller creates at most 500 pods per sync): the memory a pass
holds does not grow with the job. The slots left over keep their status (a missing pod stays
Creating, a restart stays pending) and the next pass, woken by the new pods, plans them.

Restarts are counted when the replacement pod is planned, and the new status (with the count) is
written before anything is created; so a pass interrupted at any point never counts a restart
twice or loses one. "Restart allowed" is the replica's policy (Always, OnFailure, Never, ExitCode:
128-255 retryable, 1-127 permanent) within its budget (GenericJob: restartPolicy.limit per
replica, its count in the replica's status entry; DeepSpeedJob: runPolicy.backoffLimit for the
whole job).
"""

from __future__ import annotations

import json
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from t9k_sdk import _conventions as conventions
from t9k_sdk import _objects as o
from t9k_sdk import codecs, models
from t9k_sdk._conventions import Slot
from t9k_sdk._job_status import ReplicaEntry, TaskEntry
from t9k_sdk.codecs import AnyJob
from t9k_sdk.errors import InvalidManifestError, LegacyManifestWarning
from t9k_sdk.models import ConditionStatus, JobConditionType, JobPhase, ReplicaPhase
from t9k_sdk.models._base import _format_time
from t9k_sdk.reconcile import ownership
from t9k_sdk.reconcile.conditions import Conditions, kstatus_conditions, phase_and_conditions
from t9k_sdk.reconcile.kinds import KindRules, Mode, ReplicaGroup, rules_for
from t9k_sdk.reconcile.observe import PodView, observe_pod
from t9k_sdk.reconcile.types import Deletion, Event, Manifest, Observed, Plan, Update

__all__ = ["reconcile", "restart_allowed"]

_FINISHED = (ReplicaPhase.SUCCEEDED.value, ReplicaPhase.FAILED.value)
DEADLINE_EXCEEDED = "DeadlineExceeded"
CONFLICT_RECHECK_SECONDS = 30.0
POD_CREATES_PER_PASS = 500
"""Most pods one pass plans (Kubernetes' ReplicaSet controller: `burstReplicas`, 500)."""
PLAN_BYTES_PER_PASS = 16 * 1024 * 1024
"""About how many bytes of pod manifests (as JSON) one pass plans; at least one pod."""
NEXT_BATCH_SECONDS = 1.0
"""When a pass left pods for later: the next pass at the latest this much later (the new pods'
watch events usually wake it first)."""
"""How often a job blocked by a foreign object looks again (its removal wakes no watch of ours)."""


def restart_allowed(group: ReplicaGroup, outcome: str, exit_code: int | None, used: int) -> bool:
    """Whether a replica that ended with `outcome` ("Succeeded"/"Failed") is restarted."""
    if used >= group.limit:
        return False
    policy = group.policy
    if policy == models.RestartPolicyType.ALWAYS:
        return True
    if outcome != ReplicaPhase.FAILED.value or policy == models.RestartPolicyType.NEVER:
        return False
    if policy == models.RestartPolicyType.EXIT_CODE:
        # 1-127: permanent error; 128-255: retryable. No exit code (evicted, node lost): retryable.
        return exit_code is None or 128 <= exit_code <= 255
    return True  # OnFailure


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
    return _Pass(job, job_manifest, observed, now).run()


def _invalid_spec(
    job_manifest: Mapping[str, Any], exc: InvalidManifestError, now: datetime
) -> Plan:
    prev = dict(o.status(job_manifest))
    message = "; ".join(str(p) for p in exc.problems)
    conditions = Conditions(o.conditions(job_manifest), now)
    conditions.set(JobConditionType.INITIALIZED, ConditionStatus.FALSE, "InvalidSpec", message)
    conditions.set(JobConditionType.FAILED, ConditionStatus.TRUE, "InvalidSpec", message)
    conditions.set(JobConditionType.COMPLETED, ConditionStatus.TRUE, "InvalidSpec", message)
    kstatus_conditions(conditions, JobPhase.FAILED.value)
    status = _observed(
        job_manifest, {**prev, "phase": JobPhase.FAILED.value, "conditions": conditions.wire()}
    )
    changed = status != prev
    return Plan(
        status=status if changed else None,
        events=(Event("Warning", "InvalidSpec", message),) if changed else (),
        finished=True,
        notes=(f"invalid spec: {message}",),
    )


class _Pass:
    """The working state of one reconcile pass."""

    def __init__(self, job: AnyJob, raw: Mapping[str, Any], observed: Observed, now: datetime):
        self.job = job
        self.rules: KindRules = rules_for(job)
        self.observed = observed
        self.now = now
        self.raw = raw
        self.prev: dict[str, Any] = dict(o.status(raw))
        self.prev_phase = o.phase(raw)
        self.prev_entries: dict[str, o.Replica] = {
            name: r for r in o.replicas(raw) if (name := r.name)
        }
        self.restarts: Counter[str] = Counter(
            {t.type: t.restart_count for t in o.tasks(raw) if t.type}
        )
        self.backoff = int(self.prev.get("backoffCount") or 0)
        # per replica (a t9k-sdk extension of the replica status: `restartCount`)
        self.replica_restarts: Counter[str] = Counter(
            {name: n for name, r in self.prev_entries.items() if (n := _restarts_of(r.raw))}
        )
        # Ownership is the controller owner reference's uid, never a name or a label: anything
        # else is foreign, and is never counted, changed, deleted or mounted.
        self.uid = job.metadata.uid or ""
        # Only the job's own namespace holds its children (and the names they need): whatever
        # the shell hands over from another one is not looked at, whoever it names as owner.
        namespace = job.metadata.namespace or ""

        def here(objs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
            return [x for x in objs if not namespace or o.meta(x).namespace in ("", namespace)]

        self.foreign: list[tuple[str, Mapping[str, Any]]] = []
        self.pods: dict[str, PodView] = {}
        for p in here(observed.pods):
            if not ownership.owned_by(p, self.uid):
                self.foreign.append(("Pod", p))
                continue
            view = observe_pod(p)
            self.pods[view.name] = view
        self.others_by_kind: dict[str, list[Mapping[str, Any]]] = {}
        for kind, objs in (
            ("Service", observed.services),
            ("ConfigMap", observed.config_maps),
            ("Secret", observed.secrets),
            ("PodGroup", observed.pod_groups),
        ):
            mine = self.others_by_kind.setdefault(kind, [])
            for obj in here(objs):
                if ownership.owned_by(obj, self.uid):
                    mine.append(obj)
                else:
                    self.foreign.append((kind, obj))
        # what the launcher rules need to know of the pods (see KindRules.running)
        running: set[str] = set()
        succeeded: set[str] = set()
        stuck: set[str] = set()
        for name, view in self.pods.items():
            if view.terminating:
                continue
            if view.phase == ReplicaPhase.RUNNING:
                running.add(name)
            elif view.phase == ReplicaPhase.SUCCEEDED:
                succeeded.add(name)
            if view.unschedulable or view.stuck:
                stuck.add(name)
        self.rules.running = frozenset(running)
        self.rules.succeeded = frozenset(succeeded)
        self.rules.stuck = frozenset(stuck)
        for cm in self.others_by_kind["ConfigMap"]:
            if o.meta(cm).name == conventions.config_map_name(job.metadata.name or ""):
                data = cm.get("data")
                hostfile = data.get("hostfile") if isinstance(data, Mapping) else None
                self.rules.mounted_hostfile = hostfile if isinstance(hostfile, str) else ""
        self.conflicts: list[tuple[str, Mapping[str, Any]]] = []
        self.blocked = False
        self.create: list[Manifest] = []
        self.pods_planned = 0
        self.bytes_planned = 0
        self.pod_sizes: dict[str, int] = {}  # replica type -> JSON bytes of one of its pods
        self.deferred = 0  # pods left for a later pass
        self.update: list[Update] = []
        self.delete: list[Deletion] = []
        self.events: list[Event] = []
        self.notes: list[str] = []
        self.entries: dict[str, ReplicaEntry] = {}
        self.final: dict[str, str] = {}
        self.failed_codes: dict[str, int | None] = {}
        self.pending_restarts: Counter[str] = Counter()
        self.held: dict[str, list[str]] = {}  # launcher -> the workers it waits for

    # -- budget -----------------------------------------------------------------------------------

    def _scope(self, slot: Slot) -> str:
        if self.rules.budget == "job":
            return "job"
        return slot.name if self.rules.budget == "replica" else f"type:{slot.replica_type}"

    def _used(self, slot: Slot) -> int:
        scope = self._scope(slot)
        if self.rules.budget == "job":
            used = self.backoff
        elif self.rules.budget == "replica":
            used = self.replica_restarts[slot.name]
        else:
            used = self.restarts[slot.replica_type]
        return used + self.pending_restarts[scope]

    def _count_restart(self, slot: Slot) -> None:
        self.restarts[slot.replica_type] += 1
        self.replica_restarts[slot.name] += 1
        if self.rules.budget == "job":
            self.backoff += 1

    # -- the pass ---------------------------------------------------------------------------------

    def run(self) -> Plan:
        terminal = self.prev_phase in (JobPhase.SUCCEEDED.value, JobPhase.FAILED.value)
        slots = self.rules.slots()
        run_mode = self.rules.run_mode()
        paused = run_mode.pause_enabled
        self._find_conflicts(slots, terminal)
        if terminal:
            self._finished_pass(slots)
        else:
            mode = self._mode(run_mode)
            for slot in slots:
                if paused:
                    self._pause_slot(slot)
                else:
                    self._active_slot(slot, mode)
            self._delete_orphans({s.name for s in slots})
        self._other_children(terminal)
        outcome: tuple[str, str, str] | None = None
        requeue: float | None = None
        if not terminal and not paused:
            if not run_mode.debug_enabled:  # debug: the job never finishes by itself...
                decided = self.rules.outcome(self.final, self.failed_codes)
                if decided is not None:
                    outcome = (decided[0], decided[0], decided[1])
                else:
                    outcome = self._held_outcome()
            deadline = self.rules.deadline_seconds()
            if outcome is None and deadline is not None:  # ...but its pods hold GPUs too
                started = self._active_since()
                remaining = deadline - (self.now - started).total_seconds()
                if remaining <= 0:
                    outcome = (
                        JobPhase.FAILED.value,
                        DEADLINE_EXCEEDED,
                        f"The job ran longer than runPolicy.activeDeadlineSeconds ({deadline}s,"
                        f" counted from {_format_time(started)}): its unfinished pods are deleted.",
                    )
                else:
                    requeue = remaining
            if outcome is not None:
                self._clean_up(slots, hard_stop=outcome[1] == DEADLINE_EXCEEDED)
        if self.blocked:
            requeue = min(requeue or CONFLICT_RECHECK_SECONDS, CONFLICT_RECHECK_SECONDS)
        if self.deferred:
            self.notes.append(f"{self.deferred} more pods next pass (at most a batch per pass)")
            requeue = min(requeue or NEXT_BATCH_SECONDS, NEXT_BATCH_SECONDS)
        return self._plan(slots, outcome, terminal, paused, requeue)

    def _desired_others(self, services: bool = True) -> list[Manifest]:
        desired: list[Manifest] = [
            *(self.rules.services() if services else ()),
            *self.rules.config_maps(),
            *self.rules.secrets(self.observed.ssh_key),
        ]
        group = self.rules.pod_group()
        if group is not None:
            desired.append(group)
        return desired

    def _find_conflicts(self, slots: list[Slot], terminal: bool) -> None:
        """Foreign objects holding a name the job needs block every new child of the job."""
        if not self.foreign:
            return
        needed = {("Pod", s.name) for s in slots}
        needed |= {(m["kind"], m["metadata"]["name"]) for m in self._desired_others()}
        self.conflicts = sorted(
            ((kind, obj) for kind, obj in self.foreign if (kind, o.meta(obj).name) in needed),
            key=lambda c: (c[0], o.meta(c[1]).name),
        )
        self.blocked = bool(self.conflicts) and not terminal
        for kind, obj in self.conflicts:
            self.notes.append(f"blocked: {ownership.conflict_message(kind, obj)}")

    def _problem(self) -> tuple[str, str] | None:
        """(reason, message) of what keeps the job from getting its children, if anything."""
        if self.blocked:
            found = "; ".join(ownership.conflict_message(k, o) for k, o in self.conflicts)
            return (
                "NameConflict",
                f"{found}. The job creates no more children until that object is deleted or"
                " renamed (or delete this job and create it with another name).",
            )
        planned = {("create", m["kind"], m["metadata"]["name"]) for m in self.create}
        planned |= {
            ("update", u.manifest["kind"], u.manifest["metadata"]["name"]) for u in self.update
        }
        failures = [
            f
            for f in sorted(self.observed.failures, key=lambda f: (f.kind, f.name))
            if (f.action, f.kind, f.name) in planned
        ]
        if not failures:
            return None
        reason = "CreateFailed" if failures[0].action == "create" else "UpdateFailed"
        return reason, "; ".join(ownership.failure_message(f) for f in failures)

    def _active_since(self) -> datetime:
        """When the deadline's clock started: the job's first pass (its Initialized condition),
        or its last resume (its Paused condition turning False), whichever is later. A job
        resumed in this very pass, or on its first pass, starts now."""
        initialized = o.condition(self.raw, JobConditionType.INITIALIZED.value)
        paused = o.condition(self.raw, JobConditionType.PAUSED.value)
        if initialized is None or initialized.get("status") != ConditionStatus.TRUE.value:
            return self.now
        if paused is not None and paused.get("status") == ConditionStatus.TRUE.value:
            return self.now  # resuming now
        marks = [
            when
            for c in (initialized, paused)
            if c is not None and (when := o.parse_time(c.get("lastTransitionTime"))) is not None
        ]
        return max(marks, default=self.now)

    def _mode(self, run_mode: models.RunMode) -> Mode:
        if run_mode.debug_enabled:
            return "debug"
        paused_before = o.condition(self.raw, JobConditionType.PAUSED.value) is not None or (
            self.prev_phase in (JobPhase.PAUSED.value, JobPhase.RESUMING.value)
        )
        return "resumed" if paused_before else "immediate"

    def _entry(self, slot: Slot, pod: PodView) -> ReplicaEntry:
        out: ReplicaEntry = {"name": slot.name, "uid": pod.uid, "phase": pod.phase.value}
        containers = [c.wire() for c in pod.containers]
        if containers:
            out["containers"] = containers
        return out

    def _batch_full(self) -> bool:
        """Whether this pass has planned as many pods as one pass may hold."""
        return (
            self.pods_planned >= POD_CREATES_PER_PASS or self.bytes_planned >= PLAN_BYTES_PER_PASS
        )

    def _create_pod(self, slot: Slot, mode: Mode, why: str) -> None:
        pod = self.rules.pod(slot, mode)
        size = self.pod_sizes.get(slot.replica_type)
        if size is None:  # pods of one replica type are alike: measure one of each
            size = self.pod_sizes[slot.replica_type] = len(json.dumps(pod, default=str))
        self.pods_planned += 1
        self.bytes_planned += size
        self.create.append(pod)
        self.entries[slot.name] = {"name": slot.name, "phase": ReplicaPhase.CREATING.value}
        self.notes.append(f"create pod {slot.name}: {why}")

    def _active_slot(self, slot: Slot, mode: Mode) -> None:
        pod = self.pods.get(slot.name)
        prev = self.prev_entries.get(slot.name)
        group = self.rules.group(slot.replica_type)
        prev_finished = prev is not None and prev.phase in _FINISHED
        if pod is None and self.blocked:  # a foreign object holds a name: create nothing
            if prev is not None:
                self.entries[slot.name] = prev.raw
            return
        if pod is None and mode != "debug" and (waiting := self.rules.launch_waits_for(slot)):
            # A launcher is created only once every worker it starts the training on runs: a
            # job waiting for GPUs, images or a scheduler stays Pending, and no timeout in the
            # launcher can fail it or spend its restarts (a restart waits the same way).
            if prev is not None and prev_finished:
                if restart_allowed(group, prev.phase, prev.exit_code, self._used(slot)):
                    self.held[slot.name] = waiting
                    self.entries[slot.name] = prev.raw
                    self.pending_restarts[self._scope(slot)] += 1
                    return
            else:
                self.held[slot.name] = waiting
                self.entries[slot.name] = {"name": slot.name, "phase": ReplicaPhase.PENDING.value}
                return
        if pod is None and self._batch_full():  # a pod to create waits for the next pass
            if not (prev is not None and prev_finished):
                self.deferred += 1
                self.entries[slot.name] = {"name": slot.name, "phase": ReplicaPhase.CREATING.value}
                return
            if restart_allowed(group, prev.phase, prev.exit_code, self._used(slot)):
                self.deferred += 1  # as a pod deleted for a restart: pending, not yet counted
                self.entries[slot.name] = prev.raw
                self.pending_restarts[self._scope(slot)] += 1
                return
        if pod is None:
            if prev is not None and prev_finished:
                outcome = prev.phase
                code = prev.exit_code
                if restart_allowed(group, outcome, code, self._used(slot)):
                    self._count_restart(slot)
                    self._create_pod(slot, mode, f"restart after {outcome.lower()}")
                    self.events.append(
                        Event(
                            "Normal",
                            "RestartedPod",
                            f"Recreated pod {slot.name} after it {_ended(outcome, code)}",
                            after=f"create Pod/{slot.name}",
                        )
                    )
                else:
                    self._finished_for_good(slot, prev.raw, outcome, code)
            else:
                self._create_pod(slot, mode, "missing")
                # Recorded by the operator only once the create went through (a refused create
                # is planned again, and so is its Event).
                self.events.append(
                    Event(
                        "Normal",
                        "SuccessfulCreatePod",
                        f"Created pod: {slot.name}",
                        after=f"create Pod/{slot.name}",
                    )
                )
            return
        if pod.terminating:
            if prev is not None and prev_finished and prev.uid == pod.uid:
                # deleted for a restart: keep the outcome until the replacement is planned
                self.entries[slot.name] = prev.raw
                outcome = prev.phase
                code = prev.exit_code
                if restart_allowed(group, outcome, code, self._used(slot)):
                    self.pending_restarts[self._scope(slot)] += 1
                else:
                    self._finished_for_good(slot, prev.raw, outcome, code)
            else:
                self.entries[slot.name] = self._entry(slot, pod)
            return
        entry = self._entry(slot, pod)
        self.entries[slot.name] = entry
        why = None if pod.finished else self.rules.outdated(slot, pod.annotations)
        if why is not None:
            self.delete.append(Deletion("v1", "Pod", pod.name, pod.uid, "relaunch"))
            self.notes.append(f"delete pod {pod.name}: {why}")
            self.events.append(
                Event(
                    "Normal",
                    "Relaunching",
                    f"Relaunching pod {pod.name}: {why}",
                    after=f"delete Pod/{pod.name}",
                )
            )
            return
        if pod.finished:
            outcome = pod.phase.value
            if restart_allowed(group, outcome, pod.exit_code, self._used(slot)):
                self.pending_restarts[self._scope(slot)] += 1
                self.delete.append(
                    Deletion("v1", "Pod", pod.name, pod.uid, "restart", grace_period_seconds=0)
                )
                self.notes.append(
                    f"delete pod {pod.name}: restart after it {_ended(outcome, pod.exit_code)}"
                )
                self.events.append(
                    Event(
                        "Warning" if outcome == ReplicaPhase.FAILED.value else "Normal",
                        "RestartingPod",
                        f"Pod {pod.name} {_ended(outcome, pod.exit_code)};"
                        f" restarting it ({group.policy.value} policy)",
                        after=f"delete Pod/{pod.name}",
                    )
                )
            else:
                self._finished_for_good(slot, entry, outcome, pod.exit_code)

    def _held_outcome(self) -> tuple[str, str, str] | None:
        """A held launcher whose worker failed for good never starts: the job fails."""
        for launcher, waiting in self.held.items():
            for name in waiting:
                state = self.final.get(name)
                if state != ReplicaPhase.FAILED.value:
                    continue
                code = self.failed_codes.get(name)
                how = _ended(state, code)
                message = (
                    f"{self.job.kind} {self.job.name} has failed: {name} {how} before the"
                    f" launcher {launcher} could start, and is not restarted"
                )
                return JobPhase.FAILED.value, JobPhase.FAILED.value, message
        return None

    def _waiting_message(self) -> tuple[str, str] | None:
        """(reason, message) of the Running condition while a launcher is held back."""
        if not self.held:
            return None
        launcher, waiting = next(iter(self.held.items()))
        shown = ", ".join(waiting[:5]) + (
            f" and {len(waiting) - 5} more" if len(waiting) > 5 else ""
        )
        return (
            "WaitingForWorkers",
            f"The launcher {launcher} starts once every worker it needs is running;"
            f" waiting for {shown}.",
        )

    def _finished_for_good(
        self, slot: Slot, entry: ReplicaEntry, outcome: str, code: int | None
    ) -> None:
        self.entries[slot.name] = {**entry}
        self.final[slot.name] = outcome
        if outcome == ReplicaPhase.FAILED.value:
            self.failed_codes[slot.name] = code

    def _pause_slot(self, slot: Slot) -> None:
        pod = self.pods.get(slot.name)
        prev = self.prev_entries.get(slot.name)
        if pod is not None:
            if not pod.terminating:
                self.delete.append(Deletion("v1", "Pod", pod.name, pod.uid, "pause"))
                self.notes.append(f"delete pod {pod.name}: the job is paused")
            entry = self._entry(slot, pod)
            entry["phase"] = ReplicaPhase.DELETED.value
            self.entries[slot.name] = entry
        elif prev is not None:
            self.entries[slot.name] = {**prev.raw, "phase": ReplicaPhase.DELETED.value}
        else:
            self.entries[slot.name] = {"name": slot.name, "phase": ReplicaPhase.DELETED.value}

    def _finished_pass(self, slots: list[Slot]) -> None:
        for slot in slots:
            pod = self.pods.get(slot.name)
            prev = self.prev_entries.get(slot.name)
            if pod is not None:
                entry = self._entry(slot, pod)
                if pod.terminating and prev is not None:
                    entry = {**prev.raw, "phase": ReplicaPhase.DELETED.value}
                self.entries[slot.name] = entry
            elif prev is not None:
                self.entries[slot.name] = (
                    prev.raw
                    if prev.phase == ReplicaPhase.DELETED.value
                    else {**prev.raw, "phase": ReplicaPhase.DELETED.value}
                )
        failed = o.condition(self.raw, JobConditionType.FAILED.value)
        # a pass interrupted after the status write: the deadline's deletions still happen
        self._clean_up(
            slots,
            hard_stop=failed is not None
            and failed.get("status") == ConditionStatus.TRUE.value
            and failed.get("reason") == DEADLINE_EXCEEDED,
        )

    def _clean_up(self, slots: list[Slot], *, hard_stop: bool = False) -> None:
        """Delete the pods the clean-up policy names; with `hard_stop` (a deadline passed), also
        every pod still pending or running, whatever the policy says."""
        present = {s.name: self.pods[s.name] for s in slots if s.name in self.pods}
        finished = {
            name: pod.phase in (ReplicaPhase.SUCCEEDED, ReplicaPhase.FAILED)
            for name, pod in present.items()
            if not pod.terminating
        }
        already = {d.name for d in self.delete}
        doomed = self.rules.to_clean_up(finished)
        if hard_stop:
            doomed += [n for n, done in finished.items() if not done and n not in doomed]
        for name in doomed:
            pod = present[name]
            if name in already:
                continue
            self.delete.append(Deletion("v1", "Pod", name, pod.uid, "clean-up"))
            if hard_stop and not finished[name]:
                self.notes.append(f"delete pod {name}: the job ran past its deadline")
                self.events.append(
                    Event(
                        "Normal",
                        "CleanUpPod",
                        f"Deleted pod {name}: the job ran past runPolicy.activeDeadlineSeconds",
                        after=f"delete Pod/{name}",
                    )
                )
                continue
            self.notes.append(f"delete pod {name}: clean-up after the job finished")
            self.events.append(
                Event(
                    "Normal",
                    "CleanUpPod",
                    f"Deleted pod {name} after the job finished",
                    after=f"delete Pod/{name}",
                )
            )

    def _delete_orphans(self, wanted: set[str]) -> None:
        for name, pod in sorted(self.pods.items()):
            if name not in wanted and not pod.terminating:
                self.delete.append(Deletion("v1", "Pod", name, pod.uid, "not in the spec"))
                self.notes.append(f"delete pod {name}: no longer in the job's spec")

    # -- services, config maps, secrets, pod groups -------------------------------------------------

    def _other_children(self, terminal: bool) -> None:
        observed_by_kind = self.others_by_kind  # only the job's own: foreign ones are never touched
        # While pods wait for a later pass, the services are left as they are (none is created,
        # changed or deleted): they follow once every pod is planned, so a job of 10,000 pods
        # does not build and compare its 10,000 services in each of its 20 passes of pods.
        services = not self.deferred  # (only an active pass defers pods)
        desired = self._desired_others(services)
        wanted: dict[tuple[str, str], Manifest] = {
            (m["kind"], m["metadata"]["name"]): m for m in desired
        }
        for kind, objs in observed_by_kind.items():
            if kind == "Service" and not services:
                continue
            for obj in objs:
                meta = o.meta(obj)
                key = (kind, meta.name)
                want = wanted.pop(key, None)
                if want is None:
                    if not terminal:
                        api_version = str(obj.get("apiVersion") or "v1")
                        self.delete.append(
                            Deletion(api_version, kind, key[1], meta.uid or None, "not needed")
                        )
                    continue
                changed = _mutable_part(kind, want) != _mutable_part(kind, obj)
                if changed and not terminal:
                    manifest = {
                        **want,
                        "metadata": {
                            **want["metadata"],
                            "resourceVersion": meta.resource_version or None,
                        },
                    }
                    self.update.append(Update(manifest, f"{kind} {key[1]} differs from the spec"))
        first: list[Manifest] = []
        last: list[Manifest] = []
        for (kind, name), manifest in wanted.items():
            if kind == "Secret" and manifest.get("data") is None:
                continue  # no key material yet: the operator supplies a key pair next pass
            if terminal or self.blocked:
                continue
            (last if kind == "Service" else first).append(manifest)
            self.notes.append(f"create {kind.lower()} {name}")
        # The config maps, secrets and pod group come before the pods that mount them or are
        # scheduled with them; the services after the pods (as Kubeflow's operator orders them),
        # and only once no pod waits for a later pass (a job of more than a pass of pods gets all
        # its pods before its first service), so pods are scheduled and pull their images while
        # the names are being created. A peer's
        # name may resolve a moment after a pod starts: the SSH launchers wait for every host,
        # and a GenericJob's program retries (docs/operator/semantics.md).
        self.create[:0] = first
        self.create.extend(last)

    # -- status -----------------------------------------------------------------------------------

    def _plan(
        self,
        slots: list[Slot],
        outcome: tuple[str, str, str] | None,
        terminal: bool,
        paused: bool,
        requeue: float | None,
    ) -> Plan:
        for name, entry in self.entries.items():
            count = self.replica_restarts[name]
            if count and entry.get("restartCount") != count:
                self.entries[name] = {**entry, "restartCount": count}
        tasks: list[TaskEntry] = []
        for group in self.rules.groups():
            replicas = [
                self.entries[s.name]
                for s in slots
                if s.replica_type == group.type and s.name in self.entries
            ]
            task: TaskEntry = {"type": group.type, "restartCount": self.restarts[group.type]}
            if replicas:
                task["replicas"] = replicas
            tasks.append(task)
        aggregate = {p.value.lower(): 0 for p in ReplicaPhase}
        for entry in self.entries.values():
            aggregate[str(entry["phase"]).lower()] += 1
        phase, conditions, events = phase_and_conditions(
            prev=self.prev,
            entries=[self.entries[s.name] for s in slots if s.name in self.entries],
            pods=self.pods,
            final=self.final,
            outcome=outcome,
            terminal=terminal,
            paused=paused,
            debug=self.rules.run_mode().debug_enabled,
            now=self.now,
            problem=self._problem(),
            waiting=self._waiting_message(),
            failure_is_the_jobs=isinstance(self.job, models.DeepSpeedJob),
            standby=self.rules.standby(),
        )
        status: dict[str, Any] = {
            **self.prev,
            "tasks": tasks,
            "phase": phase,
            "aggregate": aggregate,
            "conditions": conditions,
        }
        if isinstance(self.job, models.DeepSpeedJob):
            status["backoffCount"] = self.backoff
        status = _observed(self.raw, status)
        changed = status != self.prev
        return Plan(
            status=status if changed else None,
            delete=tuple(self.delete),
            update=tuple(self.update),
            create=tuple(self.create),
            # transition events only when the status write that records them happens
            events=(*events, *self.events) if changed else tuple(self.events),
            requeue_after=requeue,
            finished=phase in (JobPhase.SUCCEEDED.value, JobPhase.FAILED.value),
            notes=tuple(self.notes),
        )


def _restarts_of(entry: Mapping[str, Any]) -> int:
    value = entry.get("restartCount")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _observed(job_manifest: Mapping[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """`status` with `observedGeneration`: the generation of the spec this pass acted on.

    Whatever was there before (a foreign writer's number, however large) is replaced. A job
    without a generation (never the case on an API server) keeps no observedGeneration."""
    generation = o.meta(job_manifest).generation
    out = {k: v for k, v in status.items() if k != "observedGeneration"}
    if generation > 0:
        out = {"observedGeneration": generation, **out}
    return out


def _ended(outcome: str, code: int | None) -> str:
    if outcome == ReplicaPhase.SUCCEEDED.value:
        return "succeeded"
    return f"failed with exit code {code}" if code is not None else "failed"


def _mutable_part(kind: str, obj: Mapping[str, Any]) -> Any:
    """The part of a child the operator keeps in line with the spec."""
    if kind == "Service":  # the server fills in protocol and targetPort: compare what we set
        return [(p.get("name"), p.get("port")) for p in o.spec(obj).get("ports") or ()]
    if kind == "ConfigMap":
        return obj.get("data") or {}
    if kind == "PodGroup":
        spec = o.spec(obj)
        return {k: spec.get(k) for k in ("minMember", "queue", "priority")}
    return None  # Secrets: key material is generated once and never replaced
