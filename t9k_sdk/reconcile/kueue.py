"""Kueue's objects: a job's Workload, and where the job stands with Kueue (pure).

A job labelled `kueue.x-k8s.io/queue-name: <LocalQueue>` (Kueue's own label) gets a Kueue
`Workload` (`kueue.x-k8s.io/v1beta2`) owned by the job, one pod set per replica type with its
count and pod template, so that Kueue sees everything the job will run, launcher included. The
operator speaks Kueue's protocol for a job controller outside Kueue's Go framework (the one its
`jobframework` follows, and that its `integrations.externalFrameworks` names our kinds for):

* no pod of the job is created until the Workload is admitted (condition `Admitted`); meanwhile
  the job is Pending and its Running condition carries Kueue's reason (`Queued`, with Kueue's
  message from `QuotaReserved`; `QueueUnavailable` when the cluster serves no Workload API);
* the admitted flavours' node labels and tolerations (`ResourceFlavor.spec`) reach the pods of
  each pod set;
* an evicted Workload (`Evicted`: preempted, `waitForPodsReady`'s timeout, deactivated) has every
  pod of the job deleted gracefully, without counting a restart; once none is left the operator
  clears the Workload's admission (`QuotaReserved=False`, reason `Pending`) and Kueue queues it
  again;
* `PodsReady` follows the job's pods (all running), which `waitForPodsReady` reads;
* a paused job's Workload is `spec.active: false`, so it gives its quota back; resumed, `true`;
* a finished job's Workload gets `Finished=True` at once, which releases its quota.

This module is the one place that knows Kueue's objects (it builds and reads them); what a pass
does with them is `policies/admission.py`'s.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal

from t9k_sdk import _conventions as conventions
from t9k_sdk import _objects as o
from t9k_sdk.codecs import AnyJob
from t9k_sdk.models import ReplicaPhase
from t9k_sdk.reconcile.kinds import KindRules
from t9k_sdk.reconcile.scheduling import Placement
from t9k_sdk.reconcile.types import Manifest, Update

__all__ = [
    "Admission",
    "desired_workload",
    "queue_of",
    "read_admission",
    "workload_name",
    "workload_updates",
]

WORKLOAD_KIND: Final = "Workload"
QUEUED: Final = conventions.KUEUE_QUEUED
QUEUE_UNAVAILABLE: Final = conventions.KUEUE_QUEUE_UNAVAILABLE
EVICTED: Final = conventions.KUEUE_EVICTED
INADMISSIBLE: Final = conventions.KUEUE_INADMISSIBLE

_GROUP: Final = conventions.KUEUE_API_VERSION.split("/")[0]
PAUSED_ANNOTATION: Final = "t9k-sdk.dev/deactivated-by-pause"
"""On a Workload the operator deactivated because its job was paused: only such a Workload is
activated again when the job resumes (one Kueue or an admin deactivated stays so)."""
_POD_SET_NAME: Final = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_TEMPLATE_CONTAINER_KEYS: Final = ("name", "image", "resources")
_TEMPLATE_SPEC_KEYS: Final = (
    "nodeSelector",
    "affinity",
    "tolerations",
    "priorityClassName",
    "overhead",
    "runtimeClassName",
)
MESSAGE_CHARS: Final = 1024
"""The most of a Kueue message the job's condition carries."""
_NEVER_FITS: Final = "> maximum capacity"
_REQUEUED_AT_ONCE: Final = ("Preempted", "NodeFailures")


Situation = Literal[
    "unavailable", "creating", "queued", "admitted", "unplaced", "evicting", "evicted", "stale"
]


@dataclass(frozen=True)
class Admission:
    """Where a job that names a queue stands with Kueue (see the module docstring)."""

    queue: str
    situation: Situation
    workload: Mapping[str, Any] | None
    """The job's own Workload, as the API server returned it."""
    reason: str = ""
    message: str = ""
    placement: Mapping[str, Placement] = field(default_factory=dict)
    """Replica type -> what its admitted flavours add to its pods."""
    priority: int | None = None
    """The value of the job's WorkloadPriorityClass, for the Workload to create."""

    @property
    def holds_pods(self) -> bool:
        """No pod of the job may run: it waits for admission, or it was evicted."""
        return self.situation != "admitted"


def queue_of(job: AnyJob) -> str | None:
    """The LocalQueue the job names (Kueue's label), or None."""
    labels = job.metadata.labels or {}
    queue = labels.get(conventions.KUEUE_QUEUE_LABEL)
    return queue or None


def workload_name(job: AnyJob) -> str:
    """The name of the job's Workload: `<kind>-<job name>`, as Kueue names a job's Workload
    (without its hash: one job of a kind per name in a namespace)."""
    return f"{job.kind.lower()}-{job.name}"


def pod_set_names(rules: KindRules) -> dict[str, str]:
    """Replica type -> its pod set's name: the type in lower case when that is a DNS label
    (Kueue's rule) and unique, else `replica-<n>`."""
    out: dict[str, str] = {}
    for n, group in enumerate(rules.groups()):
        name = group.type.lower()
        if not _POD_SET_NAME.fullmatch(name) or name in out.values():
            name = f"replica-{n}"
        out[group.type] = name
    return out


def desired_workload(
    rules: KindRules, queue: str, metadata: Mapping[str, Any], priority: int | None = None
) -> Manifest:
    """The job's Workload: every pod set it will run, with the requests Kueue charges, and
    the priority of its WorkloadPriorityClass (`priority`: that class' value)."""
    job = rules.job
    spec: dict[str, Any] = {"queueName": queue, "podSets": _pod_sets(rules), "active": True}
    priority_class = (job.metadata.labels or {}).get(conventions.KUEUE_PRIORITY_LABEL)
    if priority_class and priority is not None:
        spec["priorityClassRef"] = {
            "group": _GROUP,
            "kind": "WorkloadPriorityClass",
            "name": priority_class,
        }
        spec["priority"] = priority
    meta = copy.deepcopy(dict(metadata))
    meta["name"] = workload_name(job)
    meta.setdefault("labels", {})["kueue.x-k8s.io/job-uid"] = job.metadata.uid or ""
    return {
        "apiVersion": conventions.KUEUE_API_VERSION,
        "kind": WORKLOAD_KIND,
        "metadata": meta,
        "spec": spec,
    }


def _pod_sets(rules: KindRules) -> list[dict[str, Any]]:
    names = pod_set_names(rules)
    pod_sets = []
    slots = rules.slots()
    for group in rules.groups():
        if group.count <= 0:
            continue
        first = next(s for s in slots if s.replica_type == group.type)
        pod_sets.append(
            {
                "name": names[group.type],
                "count": group.count,
                "template": _template(rules.pod(first, "immediate")),
            }
        )
    return pod_sets


def _charged(pod_sets: Sequence[Mapping[str, Any]]) -> list[tuple[str, int, str]]:
    """What Kueue charges for pod sets: (name, count, the containers' resources), to tell a
    Workload made for another spec of the job (its replicas or requests changed)."""
    out = []
    for ps in pod_sets:
        spec = (ps.get("template") or {}).get("spec") or {}
        resources = [
            (key, c.get("name"), c.get("resources") or {})
            for key in ("initContainers", "containers")
            for c in spec.get(key) or ()
        ]
        out.append((str(ps.get("name")), int(ps.get("count") or 0), repr(resources)))
    return out


def _template(pod: Manifest) -> dict[str, Any]:
    """What Kueue reads of a pod: its containers' requests and where it may run."""
    spec = o.spec(pod)
    out: dict[str, Any] = {k: copy.deepcopy(spec[k]) for k in _TEMPLATE_SPEC_KEYS if k in spec}
    for key in ("initContainers", "containers"):
        containers = spec.get(key) or ()
        if containers:
            out[key] = [
                {k: copy.deepcopy(c[k]) for k in _TEMPLATE_CONTAINER_KEYS if k in c}
                for c in containers
            ]
    return {"spec": out}


def read_admission(
    rules: KindRules,
    workloads: Sequence[Mapping[str, Any]],
    kueue: bool,
    flavors: Mapping[str, Mapping[str, Any]],
    priorities: Mapping[str, int] | None = None,
) -> Admission | None:
    """Where the job stands with Kueue, from its own Workload (None: it names no queue).
    `priorities`: WorkloadPriorityClass name -> value (None: not known, as offline)."""
    queue = queue_of(rules.job)
    if queue is None:
        return None
    if not kueue:
        message = (
            f"The job names the Kueue LocalQueue {queue!r} (label {conventions.KUEUE_QUEUE_LABEL})"
            " but this cluster serves no Kueue Workload API (kueue.x-k8s.io/v1beta2): install"
            " Kueue, or remove the label to run the job without a queue. No pod is created."
        )
        return Admission(queue, "unavailable", None, QUEUE_UNAVAILABLE, message)
    name = workload_name(rules.job)
    workload = next((w for w in workloads if o.meta(w).name == name), None)
    if workload is None:
        return _to_create(rules, queue, name, priorities)
    conditions = _conditions(workload)
    evicted = conditions.get("Evicted")
    spec = workload.get("spec") or {}
    if spec.get("queueName") != queue or _charged(spec.get("podSets") or ()) != _charged(
        _pod_sets(rules)
    ):
        message = (
            f"The job changed since its Kueue Workload {name} was made (its queue, replicas or"
            " requests): its pods are stopped and it queues again as it is now."
        )
        return Admission(queue, "stale", workload, QUEUED, message)
    if evicted is not None and _true(evicted) and _has_admission(workload):
        message = f"Kueue evicted the job ({evicted.get('reason')}): {evicted.get('message')}"
        return Admission(queue, "evicting", workload, EVICTED, _short(message))
    if _true(conditions.get("Admitted")) and _has_admission(workload):
        return _admitted(rules, queue, workload, flavors)
    return _waiting(queue, workload, conditions)


def _to_create(
    rules: KindRules, queue: str, name: str, priorities: Mapping[str, int] | None
) -> Admission:
    """No Workload yet: one is created, unless its WorkloadPriorityClass is not there."""
    priority_class = (rules.job.metadata.labels or {}).get(conventions.KUEUE_PRIORITY_LABEL)
    if priority_class and priorities is not None and priority_class not in priorities:
        message = (
            f"The job names the Kueue WorkloadPriorityClass {priority_class!r} (label"
            f" {conventions.KUEUE_PRIORITY_LABEL}), which does not exist or which the operator"
            " cannot read: create it, or remove the label. No pod is created."
        )
        return Admission(queue, "unavailable", None, INADMISSIBLE, _short(message))
    priority = None if priorities is None or not priority_class else priorities[priority_class]
    return Admission(
        queue, "creating", None, QUEUED, f"Creating the Kueue Workload {name}.", priority=priority
    )


def _admitted(
    rules: KindRules,
    queue: str,
    workload: Mapping[str, Any],
    flavors: Mapping[str, Mapping[str, Any]],
) -> Admission:
    """Admitted: where the flavours put its pods; held while a flavour is not known."""
    assigned = sorted(
        {
            str(f)
            for a in ((workload.get("status") or {}).get("admission") or {}).get(
                "podSetAssignments"
            )
            or ()
            for f in (a.get("flavors") or {}).values()
        }
    )
    unknown = [f for f in assigned if f not in flavors]
    if unknown:
        message = (
            f"Kueue admitted the job on the ResourceFlavor {', '.join(map(repr, unknown))},"
            " which the operator cannot read (yet): its pods wait for the flavour's node labels"
            " and tolerations."
        )
        return Admission(queue, "unplaced", workload, QUEUED, _short(message))
    return Admission(queue, "admitted", workload, placement=_placement(rules, workload, flavors))


def _waiting(
    queue: str, workload: Mapping[str, Any], conditions: Mapping[str, Mapping[str, Any]]
) -> Admission:
    """A Workload not admitted: queued, or one Kueue says it cannot admit as it is."""
    reserved = conditions.get("QuotaReserved") or {}
    detail = str(reserved.get("message") or "").strip()
    evicted = conditions.get("Evicted")
    requeued = conditions.get("Requeued")
    if _true(evicted) or (requeued is not None and not _true(requeued)):
        why = evicted or requeued or {}
        message = (
            f"Kueue evicted the job ({why.get('reason')}): {why.get('message')}; it waits in"
            f" the LocalQueue {queue!r} to be admitted again"
        )
        return Admission(queue, "evicted", workload, EVICTED, _short(message))
    # Kueue's own reason, or its words for a job larger than its queue can ever hold (it
    # reports that as an ordinary wait, reason Pending, which no freed quota ends)
    if reserved.get("reason") == "Inadmissible" or _NEVER_FITS in detail:
        message = f"Kueue cannot admit the job from the LocalQueue {queue!r}: {detail}"
        return Admission(queue, "queued", workload, INADMISSIBLE, _short(message))
    message = f"Waiting in the Kueue LocalQueue {queue!r} for admission" + (
        f": {detail}" if detail else "."
    )
    return Admission(queue, "queued", workload, QUEUED, _short(message))


def _placement(
    rules: KindRules, workload: Mapping[str, Any], flavors: Mapping[str, Mapping[str, Any]]
) -> dict[str, Placement]:
    """Replica type -> the node labels and tolerations of the flavours admitted for it."""
    by_pod_set = {v: k for k, v in pod_set_names(rules).items()}
    out: dict[str, Placement] = {}
    admission = (workload.get("status") or {}).get("admission") or {}
    for assignment in admission.get("podSetAssignments") or ():
        replica_type = by_pod_set.get(str(assignment.get("name")))
        if replica_type is None:
            continue
        selector: dict[str, str] = {}
        tolerations: list[Mapping[str, Any]] = []
        for flavor_name in sorted(set((assignment.get("flavors") or {}).values())):
            flavor = flavors.get(str(flavor_name)) or {}
            selector.update(flavor.get("nodeLabels") or {})
            tolerations.extend(t for t in flavor.get("tolerations") or () if t not in tolerations)
        out[replica_type] = Placement(selector, tuple(tolerations))
    return out


def workload_updates(
    admission: Admission,
    *,
    paused: bool,
    pods_left: int,
    pods_ready: bool,
    finished: tuple[str, str] | None,
    now: datetime,
) -> list[Update]:
    """What the job tells Kueue through its Workload: `spec.active` (pause), or else in its
    status the admission given back after an eviction, `PodsReady`, and `Finished` (one write a
    pass: both would carry the same resourceVersion)."""
    workload = admission.workload
    if workload is None:
        return []
    active = _active_update(workload, paused, finished is not None)
    if active is not None:
        return [active]
    status = dict(workload.get("status") or {})
    conditions = [dict(c) for c in status.get("conditions") or ()]
    changed = False
    if finished is not None:
        changed |= _set(conditions, "Finished", "True", finished[0], finished[1], now)
    elif admission.situation == "evicting" and pods_left == 0:
        status.pop("admission", None)
        changed = True
        _give_back(conditions, _conditions(workload)["Evicted"], now)
    elif admission.situation in ("admitted", "unplaced"):
        changed |= _set(conditions, "PodsReady", *_pods_ready(conditions, pods_ready), now)
    if not changed:
        return []
    new = copy.deepcopy(dict(workload))
    new["status"] = {**status, "conditions": conditions}
    return [Update(new, "kueue", subresource="status")]


def _active_update(workload: Mapping[str, Any], paused: bool, finished: bool) -> Update | None:
    """`spec.active: false` when the job is paused (marked as the operator's doing), and true
    again when it resumes; a Workload deactivated by Kueue or an admin is left as it is."""
    if finished:
        return None
    spec = workload.get("spec") or {}
    annotations = dict(o.meta(workload).annotations or {})
    active = bool(spec.get("active", True))
    if paused and active:
        annotations[PAUSED_ANNOTATION] = "true"
    elif not paused and not active and annotations.pop(PAUSED_ANNOTATION, None) is not None:
        pass
    else:
        return None
    new = copy.deepcopy(dict(workload))
    new["spec"] = {**spec, "active": not paused}
    new["metadata"] = {**new["metadata"], "annotations": annotations}
    new.pop("status", None)
    return Update(new, "pause" if paused else "resume")


def _give_back(conditions: list[dict[str, Any]], evicted: Mapping[str, Any], now: datetime) -> None:
    """The admission of an evicted job whose pods are gone, given back as Kueue's job framework
    does: queued again at once after a preemption or a node failure; otherwise
    (waitForPodsReady's timeout, deactivation) Kueue requeues it itself after its backoff, or
    once the Workload is active again."""
    message = str(evicted.get("message") or "")
    reason = str(evicted.get("reason") or "")
    requeued = "True" if reason in _REQUEUED_AT_ONCE else "False"
    _set(conditions, "Requeued", requeued, reason, message, now)
    _set(conditions, "QuotaReserved", "False", "Pending", message, now)
    _set(conditions, "Admitted", "False", "NoReservation", "The workload has no reservation", now)
    _set(conditions, "PodsReady", "False", "WaitForStart", _NOT_READY, now)


_NOT_READY: Final = "Not all pods are ready or succeeded"


def _pods_ready(conditions: Sequence[Mapping[str, Any]], ready: bool) -> tuple[str, str, str]:
    """(status, reason, message) of `PodsReady` for an admitted job, as Kueue's job framework
    writes it: a job whose pods were all ready once and are not now waits for recovery (which
    only `recoveryTimeout` limits), not for its start."""
    previous = next((c for c in conditions if c.get("type") == "PodsReady"), None)
    reason = (previous or {}).get("reason")
    if ready:
        if reason in ("WaitForRecovery", "Recovered"):
            return "True", "Recovered", _READY
        return "True", "Started", _READY
    if previous is not None and (previous.get("status") == "True" or reason == "WaitForRecovery"):
        return "False", "WaitForRecovery", "At least one pod has failed, waiting for recovery"
    return "False", "WaitForStart", _NOT_READY


_READY: Final = "All pods reached readiness and the workload is running"


def _set(
    conditions: list[dict[str, Any]],
    type_: str,
    status: str,
    reason: str,
    message: str,
    now: datetime,
) -> bool:
    """Set one condition (a new transition time only when its status changes); True if changed."""
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    for c in conditions:
        if c.get("type") != type_:
            continue
        if (c.get("status"), c.get("reason"), c.get("message")) == (status, reason, message):
            return False
        if c.get("status") != status:
            c["lastTransitionTime"] = stamp
        c.update(status=status, reason=reason, message=message)
        return True
    conditions.append(
        {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": stamp,
        }
    )
    return True


def _conditions(workload: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    status = workload.get("status") or {}
    return {str(c.get("type")): c for c in status.get("conditions") or () if isinstance(c, Mapping)}


def _short(text: str) -> str:
    """Kueue's words, at most MESSAGE_CHARS of them, on one line (they reach the job's
    status, its Events and a terminal)."""
    flat = "".join(c if c.isprintable() else " " for c in text)
    return flat if len(flat) <= MESSAGE_CHARS else flat[: MESSAGE_CHARS - 3] + "..."


def _true(condition: Mapping[str, Any] | None) -> bool:
    return condition is not None and condition.get("status") == "True"


def _has_admission(workload: Mapping[str, Any]) -> bool:
    return bool((workload.get("status") or {}).get("admission"))


def running(phases: Sequence[ReplicaPhase]) -> bool:
    """Every pod of the job runs or has succeeded (Kueue's `PodsReady`)."""
    return bool(phases) and all(p in (ReplicaPhase.RUNNING, ReplicaPhase.SUCCEEDED) for p in phases)
