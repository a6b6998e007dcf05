"""Desired children of a job: pods, services and the PodGroup (pure, deterministic).

Each kind contributes its rules through a `KindRules` object (`rules_for(job)`): which replica
slots exist, how each pod is built, which other objects the job needs, who decides success or
failure, and how restarts are budgeted. The generic machinery here and in `core.py` does the rest.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from t9k_sdk import _objects as o
from t9k_sdk import codecs, models
from t9k_sdk.codecs import AnyJob
from t9k_sdk.reconcile import bootstrap, names
from t9k_sdk.reconcile.types import Manifest

__all__ = [
    "Children",
    "Mode",
    "ReplicaGroup",
    "Slot",
    "desired_children",
    "iter_desired_children",
    "owner_reference",
    "rules_for",
]

Mode = Literal["immediate", "debug", "resumed"]
"""How pods are started: as written, in debug mode, or after a resume (resumeSpecs apply)."""

DEFAULT_DEBUG_COMMAND = ("sleep", "inf")


@dataclass(frozen=True)
class Slot:
    """One replica: a pod name that exists (or will) for the job."""

    replica_type: str
    index: int | None
    name: str

    @property
    def rank(self) -> int:
        """The replica's index within its type (0 for a single unindexed replica)."""
        return self.index or 0


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


@dataclass(frozen=True)
class Children:
    """Everything a job owns, as it should be."""

    pods: tuple[Manifest, ...] = ()
    services: tuple[Manifest, ...] = ()
    config_maps: tuple[Manifest, ...] = ()
    secrets: tuple[Manifest, ...] = ()
    pod_groups: tuple[Manifest, ...] = ()

    def all(self) -> tuple[Manifest, ...]:
        """In creation order."""
        return (*self.pod_groups, *self.secrets, *self.config_maps, *self.services, *self.pods)


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
        return [
            Slot(g.type, i, names.pod_name(self.job.name, g.type, i))
            for g in self.groups()
            for i in range(g.count)
        ]

    def group(self, replica_type: str) -> ReplicaGroup:
        return next(g for g in self.groups() if g.type == replica_type)

    def run_mode(self) -> models.RunMode:
        spec = self.job.spec
        return spec.run_mode or models.RunMode()

    def scheduler(self) -> models.T9kScheduler | None:
        policy = self.job.spec.scheduler
        return policy.t9k_scheduler if policy else None

    def min_member(self) -> int:
        """PodGroup minMember: every replica must be placed together."""
        return sum(g.count for g in self.groups())

    def is_master(self, slot: Slot) -> bool:
        """The replica that gets `job-role: master`."""
        return slot == self.slots()[0] if self.slots() else False

    # -- children -------------------------------------------------------------------------------

    def labels(self, slot: Slot | None) -> dict[str, str]:
        job = self.job.name
        out = {
            self.kind_label: job,
            names.COMPONENT: self.kind_label,
            names.COMPONENT_TYPE: "user",
            names.OWNER_NAME: job,
            names.JOB_NAME: job,
            names.GROUP_NAME: names.GROUP,
        }
        if slot is not None:
            out[f"{self.kind_label}-replica"] = slot.name
            out[names.REPLICA_TYPE] = slot.replica_type
            out[names.REPLICA_INDEX] = str(slot.rank)
            out[names.REPLICA_NAME] = slot.name
            if self.is_master(slot):
                out[names.JOB_ROLE] = "master"
            sched = self.scheduler()
            if sched is not None:
                out[names.SCHED_GROUP] = job
                out[names.SCHED_QUEUE] = sched.queue
                out[names.SCHED_ROLE] = slot.replica_type
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
        meta["ownerReferences"] = [owner_reference(self.job)]
        return meta

    def pod(self, slot: Slot, mode: Mode) -> Manifest:
        """The pod of `slot`, started in `mode`."""
        group = self.group(slot.replica_type)
        template = _copy_json(group.template)
        spec: dict[str, Any] = dict(o.spec(template))
        spec["containers"] = [dict(c) for c in spec.get("containers") or ()]
        self.customize(spec, slot)
        self._apply_mode(spec, slot, group, mode)
        spec["restartPolicy"] = "Never"  # the controller decides restarts
        if self.scheduler() is not None:
            spec["schedulerName"] = names.T9K_SCHEDULER
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
        sched = self.scheduler()
        if sched is None:
            return None
        spec: dict[str, Any] = {"minMember": self.min_member(), "queue": sched.queue}
        spec["priority"] = sched.priority if sched.priority is not None else 0
        return {
            "apiVersion": names.PODGROUP_API_VERSION,
            "kind": "PodGroup",
            "metadata": self._meta(self.job.name, None),
            "spec": spec,
        }

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


# ---------------------------------------------------------------------------------------------
# GenericJob
# ---------------------------------------------------------------------------------------------


# Compiled once: `re`'s own pattern cache is shared with everything else in the process, so a
# per-pod re.fullmatch(str) would sometimes compile again (and cost per pod).
_REPLICAS_VAR = re.compile(r"replicas\[([^\]]+)\]")
_SERVICE_HOST_VAR = re.compile(r"service\.([^\[\]]+)\[(\d+)\]\.host")
_SERVICE_PORT_VAR = re.compile(r"service\.port\[([^\]]+)\]")


class GenericJobRules(KindRules):
    """GenericJob: free replica types, finish rules, optional per-replica services, variables."""

    kind_label = "genericjob"
    # T9k: restartPolicy.limit is "the maximum restarts of the replica"; tasks[].restartCount
    # is the sum over its type.
    budget = "replica"
    job: models.GenericJob

    def groups(self) -> list[ReplicaGroup]:
        out = []
        for r in self.job.spec.replica_specs:
            policy = r.restart_policy or models.RestartPolicy()
            out.append(
                ReplicaGroup(
                    type=r.type,
                    count=r.replica_count,
                    template=codecs.to_wire(r.template),
                    policy=models.RestartPolicyType(
                        policy.policy or models.RestartPolicy.default_of("policy")
                    ),
                    limit=policy.limit if policy.limit is not None else 0,
                )
            )
        return out

    def _ports(self) -> dict[str, int]:
        service = self.job.spec.service
        return {p.name: p.port for p in (service.ports if service else None) or () if p.name}

    def substitute(self, text: str, slot: Slot) -> str:
        """Expand `$(type)`, `$(rank)`, `$(replicas[t])`, `$(service.t[i].host)`,
        `$(service.port[name])`; anything else (e.g. `$(HOME)`, for the kubelet) is kept.

        One left-to-right pass with the kubelet's syntax (Kubernetes' `expansion.Expand`): a
        variable runs to the first `)`, and `$$` is the escape. The escape is kept as `$$`, so
        that the kubelet, which expands the same fields next, turns `$$(rank)` into the literal
        `$(rank)` (and `$$(HOME)` into `$(HOME)`, as it would without the operator)."""
        if "$" not in text:  # most strings: nothing to expand (a pass makes one per pod field)
            return text
        counts = {g.type: g.count for g in self.groups()}
        has_service = self.job.spec.service is not None
        ports = self._ports()

        def value(var: str) -> str | None:
            if var == "type":
                return slot.replica_type
            if var == "rank":
                return str(slot.rank)
            m = _REPLICAS_VAR.fullmatch(var)
            if m and m.group(1) in counts:
                return str(counts[m.group(1)])
            m = _SERVICE_HOST_VAR.fullmatch(var)
            if m and has_service and m.group(1) in counts and int(m.group(2)) < counts[m.group(1)]:
                return names.pod_name(self.job.name, m.group(1), int(m.group(2)))
            m = _SERVICE_PORT_VAR.fullmatch(var)
            if m and has_service and m.group(1) in ports:
                return str(ports[m.group(1)])
            return None

        # One scan: every search starts where the last one ended, so a string is read once
        # however many `$` or unclosed `$(` it holds (a `$(` with no `)` after it means no later
        # one has one either: the rest is kept as it is, as the kubelet keeps it).
        out: list[str] = []
        i = 0
        while (dollar := text.find("$", i)) != -1:
            out.append(text[i:dollar])
            after = text[dollar + 1 : dollar + 2]
            if after == "$":
                out.append("$$")
                i = dollar + 2
            elif after == "(":
                close = text.find(")", dollar + 2)
                if close == -1:
                    i = dollar
                    break
                expanded = value(text[dollar + 2 : close])
                out.append(text[dollar : close + 1] if expanded is None else expanded)
                i = close + 1
            else:
                out.append("$")
                i = dollar + 1
        out.append(text[i:])
        return "".join(out)

    def pod(self, slot: Slot, mode: Mode) -> Manifest:
        """The pod, with the variables substituted in every command, argument and env value it
        ends up with (run-mode overrides included)."""
        manifest = super().pod(slot, mode)
        spec = manifest["spec"]
        for key in ("containers", "initContainers"):
            containers = []
            for c in spec.get(key) or ():
                c = dict(c)
                for field_ in ("command", "args"):
                    if c.get(field_) is not None:
                        c[field_] = [self.substitute(a, slot) for a in c[field_]]
                if c.get("env") is not None:
                    c["env"] = [
                        {**e, "value": self.substitute(e["value"], slot)} if e.get("value") else e
                        for e in c["env"]
                    ]
                containers.append(c)
            if key in spec:
                spec[key] = containers
        return manifest

    def services(self) -> list[Manifest]:
        service = self.job.spec.service
        if service is None:
            return []
        ports = [codecs.to_wire(p) for p in service.ports or ()]
        return [
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": self._meta(slot.name, slot),
                "spec": {
                    "clusterIP": "None",
                    "publishNotReadyAddresses": True,
                    "selector": {f"{self.kind_label}-replica": slot.name},
                    "ports": ports,
                },
            }
            for slot in self.slots()
        ]

    def outcome(
        self, final: Mapping[str, str], failed_codes: Mapping[str, int | None]
    ) -> tuple[str, str] | None:
        spec = self.job.spec
        slots = self.slots()

        def rule_slots(rule: Mapping[str, list[int]]) -> list[str]:
            return [names.pod_name(self.job.name, t, i) for t, idx in rule.items() for i in idx]

        # A rule that names no replica would hold before any replica ran. The SDK and the CRD
        # reject it, and so does `reconcile` (InvalidSpec); should one get here, it is ignored.
        failure_rules = [r for r in spec.finish_rules("failure") if rule_slots(r)]
        success_rules = [r for r in spec.finish_rules("success") if rule_slots(r)]
        failed = [s.name for s in slots if final.get(s.name) == "Failed"]

        def failures(pods: list[str]) -> str:
            shown = [f"Pod[{p}] {_failed_how(failed_codes.get(p))}" for p in pods[:3]]
            more = f", and {len(pods) - 3} more" if len(pods) > 3 else ""
            return ", ".join(shown) + more

        for rule in failure_rules:
            if all(final.get(p) == "Failed" for p in rule_slots(rule)):
                return "Failed", f"The job is failed with rule: {_rule_text(rule)}"
        if not failure_rules and failed:
            return "Failed", f"The job is failed: {failures(failed[:1])}"
        if not slots:
            return None
        # Without successRules the job succeeds when every replica succeeded.
        wanted = [rule_slots(r) for r in success_rules] or [[s.name for s in slots]]
        if any(all(final.get(p) == "Succeeded" for p in members) for members in wanted):
            return "Succeeded", "The job has finished successfully."
        if all(any(final.get(p) == "Failed" for p in members) for members in wanted):
            # no success rule can be met any more: waiting for the other replicas is pointless
            blocking = {p for members in wanted for p in members}
            culprits = failures([p for p in failed if p in blocking])
            if success_rules:
                return (
                    "Failed",
                    f"The job is failed: no success rule can be met any more: {culprits}",
                )
            return (
                "Failed",
                f"The job is failed: without successRules every replica must succeed, but {culprits}",
            )
        if all(s.name in final for s in slots):
            return (
                "Failed",
                "The job is failed: every replica has finished, but no success rule was met",
            )
        return None

    def clean_up_policy(self) -> models.CleanUpPolicy:
        return models.CleanUpPolicy(self.job.spec.clean_up_policy or models.CleanUpPolicy.NONE)


def _failed_how(code: int | None) -> str:
    return f"exited with error code {code}" if code is not None else "failed"


def _rule_text(rule: Mapping[str, list[int]]) -> str:
    """As T9k prints rules: compact JSON, sorted keys, indices as strings."""
    return json.dumps(
        {t: [str(i) for i in idx] for t, idx in sorted(rule.items())}, separators=(",", ":")
    )


# ---------------------------------------------------------------------------------------------
# DeepSpeedJob and ColossalAIJob: the replica structure; launch bootstrap is in `bootstrap.py`
# ---------------------------------------------------------------------------------------------


class _SSHRules(KindRules):
    """What DeepSpeedJob and ColossalAIJob share: the SSH bootstrap objects (see bootstrap.py)."""

    @property
    def ssh_dir(self) -> str:
        """Where the job's SSH keys are mounted."""
        raise NotImplementedError

    def hostfile(self) -> str:
        raise NotImplementedError

    def host(self, index: int) -> str:
        """DNS name of worker `index` through the job's headless service: `<pod>.<job>`."""
        return f"{names.pod_name(self.job.name, 'worker', index)}.{self.job.name}"

    def services(self) -> list[Manifest]:
        selector = {self.kind_label: self.job.name}
        return [bootstrap.headless_service(self._meta(self.job.name, None), selector)]

    def config_maps(self) -> list[Manifest]:
        meta = self._meta(names.config_map_name(self.job.name), None)
        return [bootstrap.config_map(meta, self.hostfile())]

    def secrets(self, ssh_key: tuple[str, str] | None) -> list[Manifest]:
        meta = self._meta(names.ssh_secret_name(self.job.name), None)
        return [bootstrap.ssh_secret(meta, ssh_key, self.ssh_dir)]


def uses_pdsh(other_args: list[str], workers: int) -> bool:
    """Whether `deepspeed` with these options starts the script through its pdsh runner: with
    more than one host (or `--force_multi`), unless another launcher (`--launcher openmpi`...),
    `--no_ssh` or `--num_nodes 1` is asked for. Otherwise it runs the script itself, with its
    arguments as they are, and nothing may be escaped."""

    def option(name: str) -> str | None:
        for i, arg in enumerate(other_args):
            if arg == name and i + 1 < len(other_args):
                return other_args[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
        return None

    if (option("--launcher") or "pdsh").lower() != "pdsh" or "--no_ssh" in other_args:
        return False
    if "--force_multi" in other_args:
        return True
    return workers > 1 and option("--num_nodes") != "1"


def for_pdsh_runner(arg: str) -> str:
    """`arg` written so that it reaches the training script unchanged through DeepSpeed's pdsh
    runner, which joins the script's arguments into one command line for `bash -c` on each
    worker. That runner wraps an argument holding a space in double quotes (escaping its `"`)
    and passes every other argument as it is, so the shell would expand `$`, split on `;`, and
    choke on a lone `'`; and pdsh replaces `%n`, `%h` and `%u` everywhere in that line (it is
    how DeepSpeed passes each worker its rank). So `%` is doubled (pdsh's escape), and then an
    argument with a space has `\\`, `$` and `` ` `` (what is special inside double quotes)
    escaped, and any other is single-quoted where the shell would change it.
    """
    arg = arg.replace("%", "%%")
    if " " in arg:
        return arg.replace("\\", "\\\\").replace("$", "\\$").replace("`", "\\`")
    return shlex.quote(arg)


class DeepSpeedJobRules(_SSHRules):
    """DeepSpeedJob: workers only; worker-0 launches and decides the outcome."""

    kind_label = "deepspeedjob"
    budget = "job"
    job: models.DeepSpeedJob

    def worker_count(self) -> int:
        spec = self.job.spec
        elastic = spec.elastic
        if elastic and elastic.enabled and elastic.expected_replicas is not None:
            return elastic.expected_replicas
        return spec.worker.replica_count

    def groups(self) -> list[ReplicaGroup]:
        spec = self.job.spec
        policy = spec.run_policy or models.DeepSpeedRunPolicy()
        limit = policy.backoff_limit
        return [
            ReplicaGroup(
                type="worker",
                count=self.worker_count(),
                template=codecs.to_wire(spec.worker.template),
                policy=models.RestartPolicyType(
                    spec.worker.restart_policy or models.Worker.default_of("restart_policy")
                ),
                limit=(
                    limit
                    if limit is not None
                    else int(models.DeepSpeedRunPolicy.default_of("backoff_limit"))
                ),
                training_container="worker",
            )
        ]

    def min_member(self) -> int:
        elastic = self.job.spec.elastic
        if elastic and elastic.enabled and elastic.min_replicas is not None:
            return elastic.min_replicas
        return self.worker_count()

    # -- bootstrap --------------------------------------------------------------------------------

    @property
    def ssh_dir(self) -> str:
        return "/root/.ssh"

    def debug_default(self, slot: Slot) -> list[str]:
        """Every worker runs the job's sshd set-up, so `deepspeed` can be started by hand."""
        return bootstrap.sshd_command()

    def hostfile(self) -> str:
        cfg = self.job.spec.config or models.Config()
        slots = cfg.slots_per_worker or int(models.Config.default_of("slots_per_worker"))
        return "".join(f"{self.host(i)} slots={slots}\n" for i in self.hosts())

    def launcher_argv(self) -> list[str]:
        """The `deepspeed` command worker-0 runs after the barrier (an argv list)."""
        cfg = self.job.spec.config or models.Config()
        if cfg.custom_command:
            return ["/bin/sh", "-c", cfg.custom_command]
        argv = ["deepspeed", "--hostfile", bootstrap.HOSTFILE, "--master_addr", self.host(0)]
        if cfg.local_rank is False:
            argv.append("--no_local_rank")
        if cfg.autotune in (models.AutotuneType.TUNE, models.AutotuneType.RUN):
            argv += ["--autotuning", cfg.autotune.value]
        argv += cfg.other_args or []
        run = cfg.run or models.RunType(python=[])
        if run.module is not None:
            argv.append("--module")
            target = run.module
        elif run.exec is not None:
            argv.append("--no_python")
            target = run.exec
        else:
            target = run.python or []
        if uses_pdsh(cfg.other_args or [], len(self.hosts())):
            # DeepSpeed joins the arguments into one command line for the workers' shell
            target = [*target[:1], *(for_pdsh_runner(a) for a in target[1:])]
        return [*argv, *target]

    def customize(self, spec: dict[str, Any], slot: Slot) -> None:
        index = self._training_index(spec, self.group("worker"))
        if index is None:
            return
        container = spec["containers"][index]
        settings = {"T9K_SSH_DIR": self.ssh_dir, "T9K_HOSTFILE": bootstrap.HOSTFILE}
        settings["T9K_SSHD"] = "/usr/sbin/sshd"
        # disableCustomEnv false: the training processes that DeepSpeed starts over ssh get the
        # environment of their own worker's container (env, valueFrom and envFrom, resolved by
        # the kubelet in that pod), never values copied onto pdsh's command line.
        forward = not self.job.spec.disable_custom_env
        if forward:
            settings["T9K_FORWARD_ENV"] = "1"
            settings["T9K_RUN_DIR"] = bootstrap.RUN_DIR
        if slot.rank == 0:
            settings[bootstrap.BARRIER_TIMEOUT_ENV] = bootstrap.barrier_timeout(container)
            container["command"] = bootstrap.launch_command(self.launcher_argv())
        else:
            container["command"] = bootstrap.sshd_command()
        container.pop("args", None)
        bootstrap.mount_bootstrap(
            spec,
            container,
            job=self.job.name,
            ssh_dir=self.ssh_dir,
            pod_name=slot.name,
            settings=settings,
            run_dir=forward,
        )

    def launch_waits_for(self, slot: Slot) -> list[str]:
        """worker-0 runs `deepspeed`, which reaches every other worker of the hostfile over ssh
        at once: it waits for them to run. An elastic job leaves out of the hostfile the workers
        that will not start by themselves (unschedulable, ...), down to minReplicas."""
        if slot.rank != 0:
            return []
        others = [names.pod_name(self.job.name, "worker", i) for i in self.hosts()[1:]]
        waiting = self._not_running(others)
        if self._elastic() and len(self.hosts()) < self.min_member():
            stuck = [
                names.pod_name(self.job.name, "worker", i)
                for i in range(1, self.worker_count())
                if i not in self.hosts()
            ]
            waiting = [*waiting, *stuck]
        if not waiting and self.mounted_hostfile not in (None, self.hostfile()):
            # worker-0 would mount the old hostfile: wait for its update
            cm = names.config_map_name(self.job.name)
            return [f"the new hostfile in ConfigMap {cm}"]
        return waiting

    def hosts(self) -> list[int]:
        """The indices of the workers in the hostfile: every worker; for an elastic job whose
        pods are known, worker-0 and every other worker that will start by itself (a worker
        that cannot be scheduled, for one, is left out until it can)."""
        count = self.worker_count()
        if not self._elastic() or self.running is None:
            return list(range(count))
        return [0] + [
            i
            for i in range(1, count)
            if names.pod_name(self.job.name, "worker", i) not in self.stuck
        ]

    def standby(self) -> frozenset[str]:
        """Elastic, once worker-0 launched: the expected workers beyond its hostfile."""
        if not self._elastic() or self.running is None:
            return frozenset()
        launcher = names.pod_name(self.job.name, "worker", 0)
        if launcher not in self.running:
            return frozenset()
        hosts = set(self.hosts())
        return frozenset(
            names.pod_name(self.job.name, "worker", i)
            for i in range(self.worker_count())
            if i not in hosts
        )

    def _elastic(self) -> bool:
        elastic = self.job.spec.elastic
        return bool(elastic and elastic.enabled)

    def pod_annotations(self, slot: Slot) -> dict[str, str]:
        if slot.rank != 0:
            return {}
        # what the pod will mount: the ConfigMap as it is, which a refused update leaves old
        mounted = self.mounted_hostfile if self.mounted_hostfile is not None else self.hostfile()
        return {bootstrap.HOSTFILE_HASH: bootstrap.hostfile_hash(mounted)}

    def outdated(self, slot: Slot, annotations: Mapping[str, str]) -> str | None:
        if slot.rank != 0 or self.run_mode().debug_enabled:
            return None
        wanted = self.hostfile()
        if self.mounted_hostfile is not None and self.mounted_hostfile != wanted:
            return None  # relaunch once the ConfigMap holds the new hostfile, not before
        started = annotations.get(bootstrap.HOSTFILE_HASH)
        if started is not None and started != bootstrap.hostfile_hash(wanted):
            return "the set of workers changed (elastic resize): relaunching with the new hostfile"
        return None

    def deadline_seconds(self) -> int | None:
        policy = self.job.spec.run_policy
        return policy.active_deadline_seconds if policy else None

    def outcome(
        self, final: Mapping[str, str], failed_codes: Mapping[str, int | None]
    ) -> tuple[str, str] | None:
        launcher = names.pod_name(self.job.name, "worker", 0)
        state = final.get(launcher)
        if state == "Succeeded":
            return "Succeeded", "The job has finished successfully."
        failed = [launcher] if state == "Failed" else [p for p, v in final.items() if v == "Failed"]
        if failed:
            pod = failed[0]
            code = failed_codes.get(pod)
            detail = f"failed with exit code {code}" if code is not None else "failed"
            return "Failed", f"DeepSpeedJob {self.job.name} has failed: {pod} {detail}"
        return None

    def clean_up_policy(self) -> models.CleanUpPolicy:
        policy = (self.job.spec.run_policy or models.DeepSpeedRunPolicy()).clean_up_policy
        return models.CleanUpPolicy(policy or models.CleanUpPolicy.NONE)


class ColossalAIJobRules(_SSHRules):
    """ColossalAIJob: `<job>-launcher` decides the outcome; workers are never restarted."""

    kind_label = "colossalaijob"
    job: models.ColossalAIJob

    def groups(self) -> list[ReplicaGroup]:
        out = []
        for r in self.job.spec.replica_specs:
            template = codecs.to_wire(r.template) if r.template else {}
            out.append(
                ReplicaGroup(
                    type=r.type.value,
                    count=r.replica_count,
                    template=template,
                    # ColossalAI cannot take a restarted worker back into a running training:
                    # the restart policy is accepted for compatibility and never applied.
                    policy=models.RestartPolicyType.NEVER,
                    limit=0,
                    training_container=r.type.value,
                )
            )
        return out

    def slots(self) -> list[Slot]:
        out = []
        for g in self.groups():
            if g.type == models.ColossalAIReplicaType.LAUNCHER:
                out.append(Slot(g.type, None, names.pod_name(self.job.name, g.type, None)))
            else:
                out.extend(
                    Slot(g.type, i, names.pod_name(self.job.name, g.type, i))
                    for i in range(g.count)
                )
        return out

    def is_master(self, slot: Slot) -> bool:
        return slot.replica_type == models.ColossalAIReplicaType.LAUNCHER

    # -- bootstrap --------------------------------------------------------------------------------

    @property
    def ssh_dir(self) -> str:
        ssh = self.job.spec.ssh or models.SSHConfig()
        return ssh.auth_mount_path or str(models.SSHConfig.default_of("auth_mount_path"))

    @property
    def sshd(self) -> str:
        ssh = self.job.spec.ssh or models.SSHConfig()
        return ssh.sshd_path or str(models.SSHConfig.default_of("sshd_path"))

    def worker_count(self) -> int:
        worker = self.job.spec.replica(models.ColossalAIReplicaType.WORKER)
        return worker.replica_count if worker else 0

    def hostfile(self) -> str:
        return "".join(f"{self.host(i)}\n" for i in range(self.worker_count()))

    def launcher_argv(self) -> list[str]:
        """`colossalai run` as the launcher runs it after the barrier (an argv list).

        `colossalai run` joins the torchrun command into one string that a shell runs on each
        worker, so the script's arguments are shell-quoted here to arrive there intact.
        torchConfig.extraArgs become `--extra_launch_args name=value,...`, which colossalai
        turns back into `--name=value` torchrun options; `--` ends colossalai's own options, so
        neither a script argument nor an unknown option can be taken for one of them.
        """
        torch = self.job.spec.torch_config
        procs = torch.proc_per_worker or int(models.TorchConfig.default_of("proc_per_worker"))
        argv = [
            "colossalai",
            "run",
            "--nproc_per_node",
            str(procs),
            "--hostfile",
            bootstrap.HOSTFILE,
            "--master_addr",
            self.host(0),
        ]
        if torch.extra_args:
            argv += ["--extra_launch_args", ",".join(a[2:] for a in torch.extra_args)]
        script, *args = torch.script
        return [*argv, "--", script, *(shlex.quote(a) for a in args)]

    def debug_default(self, slot: Slot) -> list[str]:
        """The launcher sleeps; the workers keep sshd, so `colossalai run` can be run by hand."""
        if slot.replica_type == models.ColossalAIReplicaType.WORKER:
            return bootstrap.sshd_command()
        return list(self.debug_command)

    def customize(self, spec: dict[str, Any], slot: Slot) -> None:
        launcher = slot.replica_type == models.ColossalAIReplicaType.LAUNCHER
        if not spec.get("containers"):
            worker = self.group(models.ColossalAIReplicaType.WORKER.value).template
            containers = (worker.get("spec") or {}).get("containers") or [{}]
            base = next((c for c in containers if c.get("name") == "worker"), containers[0])
            spec["containers"] = [{"name": "launcher", "image": base.get("image")}]
        index = self._training_index(spec, self.group(slot.replica_type)) or 0
        container = spec["containers"][index]
        settings = {"T9K_SSH_DIR": self.ssh_dir, "T9K_HOSTFILE": bootstrap.HOSTFILE}
        if launcher:
            settings[bootstrap.BARRIER_TIMEOUT_ENV] = bootstrap.barrier_timeout(container)
            settings["T9K_SCRIPT"] = self.job.spec.torch_config.script[0]
            container["command"] = bootstrap.launch_command(self.launcher_argv())
        else:
            settings["T9K_SSHD"] = self.sshd
            container["command"] = bootstrap.sshd_command()
        container.pop("args", None)
        bootstrap.mount_bootstrap(
            spec,
            container,
            job=self.job.name,
            ssh_dir=self.ssh_dir,
            pod_name=slot.name,
            settings=settings,
        )

    def launch_waits_for(self, slot: Slot) -> list[str]:
        """The launcher runs `colossalai run`, which reaches every worker over ssh at once."""
        if not self.is_master(slot):
            return []
        return self._not_running(
            [names.pod_name(self.job.name, "worker", i) for i in range(self.worker_count())]
        )

    def outcome(
        self, final: Mapping[str, str], failed_codes: Mapping[str, int | None]
    ) -> tuple[str, str] | None:
        launcher = names.pod_name(self.job.name, "launcher", None)
        state = final.get(launcher)
        if state == "Succeeded":
            return "Succeeded", "The job has finished successfully."
        if state == "Failed":
            code = failed_codes.get(launcher)
            detail = f"failed with exit code {code}" if code is not None else "failed"
            return "Failed", f"ColossalAIJob {self.job.name} has failed: {launcher} {detail}"
        return None

    def to_clean_up(self, finished: Mapping[str, bool]) -> list[str]:
        """runPolicy.cleanUpWorkers deletes the workers; the launcher stays for its logs."""
        policy = self.job.spec.run_policy
        if not (policy and policy.clean_up_workers):
            return []
        launcher = names.pod_name(self.job.name, "launcher", None)
        return [name for name in finished if name != launcher]


def rules_for(job: AnyJob) -> KindRules:
    """The kind rules of a job."""
    if isinstance(job, models.GenericJob):
        return GenericJobRules(job)
    if isinstance(job, models.DeepSpeedJob):
        return DeepSpeedJobRules(job)
    return ColossalAIJobRules(job)


def iter_desired_children(
    job: AnyJob, *, ssh_key: tuple[str, str] | None = None
) -> Iterator[Manifest]:
    """What `desired_children(...).all()` holds, one object at a time: each pod is built when
    it is asked for, so a job of 10,000 replicas never has them all in memory at once."""
    rules = rules_for(job)
    run_mode = rules.run_mode()
    mode: Mode = "debug" if run_mode.debug_enabled else "immediate"
    group = rules.pod_group()
    if group:
        yield group
    yield from rules.secrets(ssh_key)
    yield from rules.config_maps()
    yield from rules.services()
    if not run_mode.pause_enabled:
        for slot in rules.slots():
            yield rules.pod(slot, mode)


def desired_children(job: AnyJob, *, ssh_key: tuple[str, str] | None = None) -> Children:
    """Everything a newly created `job` would own, as `t9k-sdk plan` shows it."""
    by_kind: dict[str, list[Manifest]] = {}
    for obj in iter_desired_children(job, ssh_key=ssh_key):
        by_kind.setdefault(str(obj["kind"]), []).append(obj)
    return Children(
        pods=tuple(by_kind.get("Pod", ())),
        services=tuple(by_kind.get("Service", ())),
        config_maps=tuple(by_kind.get("ConfigMap", ())),
        secrets=tuple(by_kind.get("Secret", ())),
        pod_groups=tuple(by_kind.get("PodGroup", ())),
    )


def _copy_json(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars): faster than `copy.deepcopy`, which
    a pass calls once per pod (docs/performance.md, change 10)."""
    if isinstance(value, Mapping):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value
