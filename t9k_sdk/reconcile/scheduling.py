"""Scheduling: which scheduler places a job's pods, and the gang it places them as.

A job whose `spec.scheduler.t9kScheduler` names a queue gets, as T9k's operator gives it:

* a `PodGroup` (`scheduler.tensorstack.dev/v1beta1`) named after the job, with `minMember` (the
  gang: every replica, or an elastic DeepSpeedJob's `minReplicas`, from the kind's
  `KindRules.min_member`), the queue and the priority (0 when unset);
* on each pod, `schedulerName: t9k-scheduler` and the labels that tie it to the group:
  `scheduler.tensorstack.dev/group-name`, `.../queue` and `.../role` (its replica type).

A job without one is scheduled by the cluster's default scheduler, pod by pod; a job admitted by
Kueue (`policies/admission.py`) has its admitted flavours' node labels and tolerations added
to the pods of each replica type (`Placement`). This module is
the one place that knows how a job is handed to a scheduler; the kind rules ask it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from t9k_sdk import _conventions as conventions
from t9k_sdk import models
from t9k_sdk.codecs import AnyJob
from t9k_sdk.reconcile.types import Manifest

__all__ = ["Placement", "place_pod", "pod_group", "pod_labels", "t9k_scheduler"]


def t9k_scheduler(job: AnyJob) -> models.T9kScheduler | None:
    """The job's T9k scheduler settings, or None when the default scheduler places it."""
    policy = job.spec.scheduler
    return policy.t9k_scheduler if policy else None


def pod_labels(job: AnyJob, replica_type: str) -> dict[str, str]:
    """The labels that tie a pod of `replica_type` to the job's pod group (none without one)."""
    sched = t9k_scheduler(job)
    if sched is None:
        return {}
    return {
        conventions.SCHED_GROUP: job.name,
        conventions.SCHED_QUEUE: sched.queue,
        conventions.SCHED_ROLE: replica_type,
    }


def place_pod(job: AnyJob, spec: dict[str, Any], placement: Placement | None = None) -> None:
    """Hand a pod spec to the job's scheduler (nothing to do for the default one), with what
    its admitted Kueue flavour adds."""
    if t9k_scheduler(job) is not None:
        spec["schedulerName"] = conventions.T9K_SCHEDULER
    if placement is not None:
        placement.apply(spec)


@dataclass(frozen=True)
class Placement:
    """What an admitted flavour adds to the pods of one pod set."""

    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()

    def apply(self, spec: dict[str, Any]) -> None:
        """Merge into a pod spec: the flavour's node labels and its tolerations."""
        if self.node_selector:
            spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **self.node_selector}
        if self.tolerations:
            have = list(spec.get("tolerations") or [])
            spec["tolerations"] = have + [dict(t) for t in self.tolerations if t not in have]


def pod_group(job: AnyJob, min_member: int, metadata: dict[str, Any]) -> Manifest | None:
    """The job's PodGroup (with `metadata`, as every child of the job has it), or None."""
    sched = t9k_scheduler(job)
    if sched is None:
        return None
    spec: dict[str, Any] = {"minMember": min_member, "queue": sched.queue}
    spec["priority"] = sched.priority if sched.priority is not None else 0
    return {
        "apiVersion": conventions.PODGROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": metadata,
        "spec": spec,
    }
