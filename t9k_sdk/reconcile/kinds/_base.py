"""What every job kind shares: the rules interface (`KindRules`), replica groups, and the
metadata and pod building every child gets. Which replica slots a job has, and the names and
labels of its children, are the job conventions of `t9k_sdk._conventions`.

Each kind contributes its rules through a `KindRules` subclass (one module per kind in this
package, looked up by `rules_for(job)`): which replica slots exist, how each pod is built, which
other objects the job needs, who decides success or failure, and how restarts are budgeted. The
generic machinery here and in `core.py` does the rest.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from t9k_sdk import _conventions as conventions
from t9k_sdk import _objects as o
from t9k_sdk import models
from t9k_sdk._conventions import Slot
from t9k_sdk.codecs import AnyJob
from t9k_sdk.reconcile import scheduling
from t9k_sdk.reconcile.types import Manifest

__all__ = ["KindRules", "Mode", "ReplicaGroup", "owner_reference"]

Mode = Literal["immediate", "debug", "resumed"]
"""How pods are started: as written, in debug mode, or after a resume (resumeSpecs apply)."""

DEFAULT_DEBUG_COMMAND = ("sleep", "inf")


@dataclass(frozen=True)
class ReplicaGroup:
    """A replica type as the core sees it, whatever the kind's schema calls it."""

    type: str
    count: int
    template: Mapping[str, Any]
    policy: models.RestartPolicyType
    limit: int
    """Restarts allowed (restartPolicy.limit; DeepSpeedJob: runPolicy.backoffLimit)."""
    training_container: str | None = None
    """Name of the container whose command run modes replace (None: the first)."""


def owner_reference(job: AnyJob) -> dict[str, Any]:
    """The controller owner reference children carry (the GC deletes them with the job)."""
    return {
        "apiVersion": models.API_VERSION,
        "kind": job.kind,
        "name": job.name,
        "uid": job.metadata.uid or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


_T = TypeVar("_T")


def _once(method: Callable[[Any], _T]) -> Callable[[Any], _T]:
    """Compute `method()` once per rules object (one pass); later calls return the same value.

    The job is frozen, so the structure derived from it cannot change during a pass. Without
    this, per-pod helpers that ask for every slot (`is_master`) or every group (`group`,
    `substitute`) made a pass quadratic in the number of pods. Callers must not modify the result.
    """
    key = method.__qualname__

    @functools.wraps(method)
    def wrapper(self: Any) -> _T:
        memo: dict[str, Any] = self.__dict__.setdefault("_memo", {})
        if key not in memo:
            memo[key] = method(self)
        result: _T = memo[key]
        return result

    return wrapper


class KindRules:
    """What differs between the job kinds. Subclasses override the hooks.

    `groups()` and `slots()` are computed once per rules object, also where a subclass
    overrides them (see `_once`).
    """

    kind_label: str = ""
    debug_command: tuple[str, ...] = DEFAULT_DEBUG_COMMAND
    budget: Literal["replica", "type", "job"] = "type"
    """Whether restart limits count per replica, per replica type or for the whole job."""

    def __init__(self, job: AnyJob) -> None:
        self.job = job

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in ("groups", "slots"):
            if name in cls.__dict__:
                setattr(cls, name, _once(cls.__dict__[name]))

    # -- structure ------------------------------------------------------------------------------

    def groups(self) -> list[ReplicaGroup]:
        raise NotImplementedError

    @_once
    def slots(self) -> list[Slot]:
        """Every replica, in order: by replica type, then index."""
        return conventions.slots(self.job)

    def group(self, replica_type: str) -> ReplicaGroup:
        return self._groups_by_type()[replica_type]

    @_once
    def _groups_by_type(self) -> dict[str, ReplicaGroup]:
        return {g.type: g for g in self.groups()}

    @_once
    def _owner_reference(self) -> dict[str, Any]:
        return owner_reference(self.job)

    def run_mode(self) -> models.RunMode:
        spec = self.job.spec
        return spec.run_mode or models.RunMode()

    def min_member(self) -> int:
        """The gang (PodGroup minMember, `t9k_sdk.reconcile.scheduling`): every replica must be
        placed together."""
        return sum(g.count for g in self.groups())

    def is_master(self, slot: Slot) -> bool:
        """The replica that gets `job-role: master`."""
        return slot == self.slots()[0] if self.slots() else False

    # -- children -------------------------------------------------------------------------------

    def labels(self, slot: Slot | None) -> dict[str, str]:
        job = self.job.name
        out = {
            self.kind_label: job,
            conventions.COMPONENT: self.kind_label,
            conventions.COMPONENT_TYPE: "user",
            conventions.OWNER_NAME: job,
            conventions.JOB_NAME: job,
            conventions.GROUP_NAME: conventions.GROUP,
        }
        if slot is not None:
            out[f"{self.kind_label}-replica"] = slot.name
            out[conventions.REPLICA_TYPE] = slot.replica_type
            out[conventions.REPLICA_INDEX] = str(slot.rank)
            out[conventions.REPLICA_NAME] = slot.name
            if self.is_master(slot):
                out[conventions.JOB_ROLE] = "master"
            out.update(scheduling.pod_labels(self.job, slot.replica_type))
        return out

    def _meta(self, name: str, slot: Slot | None, template: o.Meta | None = None) -> dict[str, Any]:
        """Metadata of a child: the template's labels and annotations (if any), then ours."""
        meta: dict[str, Any] = {"name": name}
        if self.job.metadata.namespace:
            meta["namespace"] = self.job.metadata.namespace
        labels = dict(template.labels) if template is not None else {}
        labels.update(self.labels(slot))
        meta["labels"] = labels
        if template is not None and template.annotations:
            meta["annotations"] = dict(template.annotations)
        meta["ownerReferences"] = [dict(self._owner_reference())]
        return meta

    def child_metadata(self, name: str) -> dict[str, Any]:
        """Metadata of a child of the whole job (no replica) named `name`."""
        return self._meta(name, None)

    def pod(self, slot: Slot, mode: Mode) -> Manifest:
        """The pod of `slot`, started in `mode`."""
        group = self.group(slot.replica_type)
        template = _copy_json(group.template)
        spec: dict[str, Any] = dict(o.spec(template))
        spec["containers"] = [dict(c) for c in spec.get("containers") or ()]
        self.customize(spec, slot)
        self._apply_mode(spec, slot, group, mode)
        spec["restartPolicy"] = "Never"  # the controller decides restarts
        scheduling.place_pod(self.job, spec, self.placement.get(slot.replica_type))
        meta = self._meta(slot.name, slot, o.meta(template))
        extra = self.pod_annotations(slot)
        if extra:
            meta["annotations"] = {**meta.get("annotations", {}), **extra}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}

    def customize(self, spec: dict[str, Any], slot: Slot) -> None:
        """Kind-specific changes to a pod spec (variables, launch commands, mounts)."""

    def debug_default(self, slot: Slot) -> list[str]:
        """The training container's command in debug mode unless runMode.debug says otherwise."""
        return list(self.debug_command)

    def pod_annotations(self, slot: Slot) -> dict[str, str]:
        """Annotations the operator puts on a pod (e.g. the hostfile it was started with)."""
        return {}

    def outdated(self, slot: Slot, annotations: Mapping[str, str]) -> str | None:
        """Why a running pod must be relaunched (the spec changed under it), or None."""
        return None

    placement: Mapping[str, scheduling.Placement] = {}
    """Replica type -> what the job's admitted Kueue flavours add to its pods (set by the pass
    from the job's Workload, `policies.admission`)."""

    mounted_hostfile: str | None = None
    """The hostfile in the job's ConfigMap as last observed (None: not observed yet). A pod
    mounts what the ConfigMap holds, not what the spec asks for."""
    running: frozenset[str] | None = None
    """Names of the job's pods that run, as last observed (None: offline, as `plan` shows a
    job). An elastic DeepSpeedJob launches with the workers that run."""
    succeeded: frozenset[str] = frozenset()
    """Names of the job's pods that ended with success, as last observed: a launcher does not
    wait for them (it fails at its readiness barrier if it needed them)."""
    stuck: frozenset[str] = frozenset()
    """Names of the job's pods that will not start by themselves (unschedulable, an image that
    cannot be pulled, ...), as last observed."""

    def launch_waits_for(self, slot: Slot) -> list[str]:
        """The pods the pod of `slot` still waits for: it is created once they run (a launcher
        starts the training on them over ssh). The operator holds the pod back until then, so
        a job whose workers wait for GPUs or images is Pending, never failed by a timeout."""
        return []

    def standby(self) -> frozenset[str]:
        """Pods the job runs without until they run (see `status.phase_and_conditions`)."""
        return frozenset()

    def _not_running(self, names_: list[str]) -> list[str]:
        running = self.running or frozenset()
        return [n for n in names_ if n not in running and n not in self.succeeded]

    def deadline_seconds(self) -> int | None:
        """Seconds the job may run (from its creation) before it is failed."""
        return None

    def _training_index(self, spec: Mapping[str, Any], group: ReplicaGroup) -> int | None:
        containers = spec.get("containers") or []
        if not containers:
            return None
        if group.training_container is not None:
            for i, c in enumerate(containers):
                if c.get("name") == group.training_container:
                    return i
        return 0

    def _apply_mode(
        self, spec: dict[str, Any], slot: Slot, group: ReplicaGroup, mode: Mode
    ) -> None:
        run_mode = self.run_mode()
        index = self._training_index(spec, group)
        if mode == "debug":
            sets = {
                d.type: d for d in (run_mode.debug.replica_specs if run_mode.debug else None) or ()
            }
            d = sets.get(slot.replica_type)
            command = list(d.command) if d and d.command else self.debug_default(slot)
            if index is not None:
                spec["containers"][index]["command"] = command
                spec["containers"][index].pop("args", None)
            if d and d.skip_init_container:
                spec.pop("initContainers", None)
        elif mode == "resumed":
            resumes = {
                r.type: r for r in (run_mode.pause.resume_specs if run_mode.pause else None) or ()
            }
            r = resumes.get(slot.replica_type)
            if r is not None:
                if index is not None and r.command is not None:
                    spec["containers"][index]["command"] = list(r.command)
                if index is not None and r.args is not None:
                    spec["containers"][index]["args"] = list(r.args)
                if r.skip_init_container:
                    spec.pop("initContainers", None)

    def services(self) -> list[Manifest]:
        return []

    def config_maps(self) -> list[Manifest]:
        return []

    def secrets(self, ssh_key: tuple[str, str] | None) -> list[Manifest]:
        return []

    def pod_group(self) -> Manifest | None:
        """The job's PodGroup, if a T9k scheduler places it (`t9k_sdk.reconcile.scheduling`)."""
        return scheduling.pod_group(self.job, self.min_member(), self._meta(self.job.name, None))

    # -- outcome --------------------------------------------------------------------------------

    def outcome(
        self, final: Mapping[str, str], failed_codes: Mapping[str, int | None]
    ) -> tuple[str, str] | None:
        """("Succeeded" | "Failed", message) once the job is decided, else None.

        `final` maps pod name -> "Succeeded" | "Failed" for replicas that finished for good.
        """
        raise NotImplementedError

    def clean_up_policy(self) -> models.CleanUpPolicy:
        return models.CleanUpPolicy.NONE

    def to_clean_up(self, finished: Mapping[str, bool]) -> list[str]:
        """Pods to delete once the job ended; `finished` maps pod name -> pod finished."""
        policy = self.clean_up_policy()
        if policy == models.CleanUpPolicy.ALL:
            return list(finished)
        if policy == models.CleanUpPolicy.UNFINISHED:
            return [name for name, done in finished.items() if not done]
        return []


def _copy_json(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars): a pass copies a template once per
    pod, and this is several times faster than `copy.deepcopy` (docs/performance.md)."""
    if isinstance(value, Mapping):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value
