"""Pieces every builder shares: resources, volumes, run modes, scheduling, pod templates."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from enum import StrEnum
from functools import cached_property
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    ClassVar,
    Literal,
    Self,
    TypeAlias,
    TypeVar,
    cast,
)

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from t9k_sdk import _conventions as conventions
from t9k_sdk import codecs, models
from t9k_sdk.builders._help import ReadAs, document
from t9k_sdk.errors import InvalidManifestError, Problem, problems_from_validation_error
from t9k_sdk.models import core_v1, meta_v1
from t9k_sdk.models._base import Bool, Int, Quantity

__all__ = [
    "PVC",
    "AutotuneName",
    "CleanUpPolicyName",
    "Debug",
    "EmptyDir",
    "Env",
    "ResourceQuantity",
    "Resources",
    "RestartPolicyName",
    "Resume",
    "SecretVolume",
    "Volume",
]


CleanUpPolicyName = Literal["None", "Unfinished", "All"]
"""The values of `CleanUpPolicy` as strings: `clean_up_policy="Unfinished"` type-checks."""
RestartPolicyName = Literal["Always", "OnFailure", "Never", "ExitCode"]
"""The values of `RestartPolicyType` as strings: `restart_policy="Never"` type-checks."""
AutotuneName = Literal["none", "tune", "run"]
"""The values of `AutotuneType` as strings: `autotune="tune"` type-checks."""

if TYPE_CHECKING:
    # pydantic's own metaclass, whose `dataclass_transform` type checkers follow (not a subclass)
    from pydantic._internal._model_construction import ModelMetaclass as PieceMeta
else:
    from t9k_sdk.builders._help import PieceMeta

if TYPE_CHECKING:
    # Type checkers accept the enum member or its string; at run time the argument is validated
    # (and kept) as the enum, so a misspelled string gets the enum's error with a suggestion.
    CleanUpPolicyArg: TypeAlias = models.CleanUpPolicy | CleanUpPolicyName
    RestartPolicyArg: TypeAlias = models.RestartPolicyType | RestartPolicyName
    AutotuneArg: TypeAlias = models.AutotuneType | AutotuneName
    ResourceQuantity: TypeAlias = int | float | str
else:
    # `help()` and signatures show the strings, as the documentation writes them.
    CleanUpPolicyArg = Annotated[models.CleanUpPolicy, ReadAs(CleanUpPolicyName)]
    RestartPolicyArg = Annotated[models.RestartPolicyType, ReadAs(RestartPolicyName)]
    AutotuneArg = Annotated[models.AutotuneType, ReadAs(AutotuneName)]


def _canonical_quantity(value: Any) -> Any:
    """A float quantity as Kubernetes writes it: `0.5` -> `"500m"`, `2.0` -> `2`, `1e-05` ->
    `"0.00001"`; NaN and infinities are refused."""
    if not isinstance(value, float):
        return value
    if not math.isfinite(value):
        raise PydanticCustomError(
            "t9k_quantity",
            "must be a resource quantity such as 2, 0.5, '500m' or '16Gi'; got {value}",
            {"value": repr(value)},
        )
    exact = Decimal(repr(value))
    if exact == exact.to_integral_value():
        return int(exact)
    milli = exact * 1000
    if milli == milli.to_integral_value():
        return f"{int(milli)}m"
    return format(exact, "f")


if not TYPE_CHECKING:
    ResourceQuantity = Annotated[
        Quantity, BeforeValidator(_canonical_quantity), ReadAs(int | float | str)
    ]
    """A resource quantity argument: 8, 0.5 (written as "500m"), "500m" or "64Gi"."""


_ARGUMENT_HOOKS: list[Callable[[object], str | None]] = []
"""Functions that turn a foreign argument value into a string the builders accept, or return
None to leave it alone. `t9k_sdk.pulumi` registers one that turns a Pulumi Output into the
placeholder of `t9k_sdk.pulumi.deferred` (the core SDK never imports Pulumi)."""


def register_argument_hook(hook: Callable[[object], str | None]) -> None:
    """Let builders take values of a foreign type (see `_ARGUMENT_HOOKS`); once per hook."""
    if hook not in _ARGUMENT_HOOKS:
        _ARGUMENT_HOOKS.append(hook)


def _apply_hooks(value: Any) -> Any:
    """`value` with every foreign leaf a hook recognises replaced, in dicts, lists and tuples."""
    if isinstance(value, str | int | float | bool | BaseModel) or value is None:
        return value
    if isinstance(value, dict):
        return {k: _apply_hooks(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_apply_hooks(v) for v in value)
    for hook in _ARGUMENT_HOOKS:
        replaced = hook(value)
        if replaced is not None:
            return replaced
    return value


class _Piece(BaseModel, metaclass=PieceMeta):
    """Base of the builder-side value types: frozen, strict, snake_case, closed.

    Bad arguments raise `InvalidManifestError` naming each argument, its value and what is
    allowed. Copies are validated again: `replace(**changes)` (or `model_copy(update=...)`)
    returns a new object built from the old arguments and the changes.

    Each subclass gets, from its fields, a signature as type checkers read it and an `Args:`
    section after its docstring: what `help()` and editors show.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    _checks_arguments_in_validator: ClassVar[bool] = False
    """True for job builders, whose validator runs `_argument_problems()` (and names the job)."""
    _written_doc: ClassVar[str | None] = None
    """The class's docstring as written, without the generated `Args:` section."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls._written_doc = cls.__dict__.get("__doc__")
        document(cls, cls._written_doc)

    def __init__(self, /, **data: Any) -> None:
        cls = type(self)
        if _ARGUMENT_HOOKS:
            data = {name: _apply_hooks(value) for name, value in data.items()}
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise InvalidManifestError(
                cls.__name__, problems_from_validation_error(exc, cls)
            ) from None
        if not cls._checks_arguments_in_validator:
            problems = self._argument_problems()
            if problems:
                raise InvalidManifestError(cls.__name__, problems)

    def _argument_problems(self) -> list[Problem]:
        """Rules between arguments (extended cooperatively by the mixins), as (argument, message)."""
        return []

    def replace(self, **changes: Any) -> Self:
        """A new object with these arguments changed, validated like a new one.

        `job.replace(name="bert-lr3", run=[...])` keeps every other argument; an unknown or bad
        argument raises `InvalidManifestError`. Like `dataclasses.replace`.
        """
        return self.model_copy(update=changes)

    def __replace__(self, /, **changes: Any) -> Self:
        """`copy.replace(obj, **changes)` (Python 3.13): the same as `obj.replace(**changes)`."""
        return self.replace(**changes)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; with `update`, a new object validated from the old arguments and the update.

        Unlike pydantic's default, the update is validated and nothing built from the old
        arguments (such as a job's manifest) is carried over.
        """
        if not update:
            duplicate = super().model_copy(deep=deep)
            duplicate.__dict__.pop("_built", None)
            return duplicate
        data = {name: getattr(self, name) for name in self.model_fields_set}
        data.update(update)
        return type(self)(**(copy.deepcopy(data) if deep else data))


Env = dict[str, str] | list[core_v1.EnvVar]
"""Environment variables: `{"NAME": "value"}`, or `EnvVar`s for `valueFrom` sources."""


class Resources(_Piece):
    """Compute resources of one replica.

    `Resources(cpu=8, memory="64Gi", gpus=4)` requests and limits exactly that (Guaranteed QoS,
    what distributed training wants); `requests=`/`limits=` override single entries.
    """

    cpu: ResourceQuantity | None = None
    """CPU cores, e.g. 8, 0.5 (written as "500m") or "500m"."""
    memory: ResourceQuantity | None = None
    """Memory, e.g. "64Gi"."""
    gpus: Annotated[Int, Field(ge=0)] = 0
    """GPUs per replica (in the `gpu_resource` extended resource)."""
    gpu_resource: str = "nvidia.com/gpu"
    """Extended resource name of the GPUs."""
    requests: dict[str, ResourceQuantity] | None = None
    """Extra or overriding requests."""
    limits: dict[str, ResourceQuantity] | None = None
    """Extra or overriding limits."""

    def to_requirements(self) -> core_v1.ResourceRequirements:
        """The `resources` of a container."""
        base: dict[str, Any] = {}
        if self.cpu is not None:
            base["cpu"] = self.cpu
        if self.memory is not None:
            base["memory"] = self.memory
        if self.gpus:
            base[self.gpu_resource] = self.gpus
        requests = {**base, **(self.requests or {})}
        limits = {**base, **(self.limits or {})}
        return core_v1.ResourceRequirements(requests=requests or None, limits=limits or None)


class PVC(_Piece):
    """A PersistentVolumeClaim mounted into the training container."""

    claim: str
    """Name of the claim."""
    mount_path: str
    """Where it is mounted, e.g. /workspace."""
    name: str | None = None
    """Volume name; defaults to the claim name."""
    sub_path: str | None = None
    """Mount only this path of the volume."""
    read_only: bool = False
    """Mount read-only."""

    def volume(self) -> core_v1.Volume:
        """The pod volume."""
        return core_v1.Volume.model_construct(
            name=self.name or self.claim,
            persistent_volume_claim=core_v1.PersistentVolumeClaimVolumeSource.model_construct(
                claim_name=self.claim, read_only=self.read_only or None
            ),
        )


class EmptyDir(_Piece):
    """A scratch directory; `EmptyDir(mount_path="/dev/shm", medium="Memory")` enlarges /dev/shm."""

    mount_path: str
    """Where it is mounted."""
    name: str | None = None
    """Volume name; defaults to one derived from the mount path."""
    medium: Literal["Memory"] | None = None
    """`Memory` for a tmpfs."""
    size_limit: ResourceQuantity | None = None
    """Maximum size, e.g. "8Gi"."""
    sub_path: str | None = None
    """Mount only this path of the volume."""
    read_only: bool = False
    """Mount read-only."""

    def volume(self) -> core_v1.Volume:
        """The pod volume."""
        return core_v1.Volume.model_construct(
            name=self.name or _name_from_path(self.mount_path),
            empty_dir=core_v1.EmptyDirVolumeSource.model_construct(
                # validated as a quantity already: 0.5 is "500m" by now
                medium=self.medium,
                size_limit=cast("int | str | None", self.size_limit),
            ),
        )


class SecretVolume(_Piece):
    """A Secret's keys as files."""

    secret: str
    """Name of the secret."""
    mount_path: str
    """Where it is mounted."""
    name: str | None = None
    """Volume name; defaults to the secret name."""
    sub_path: str | None = None
    """Mount only this key."""
    read_only: bool = True
    """Mount read-only (the default)."""

    def volume(self) -> core_v1.Volume:
        """The pod volume."""
        return core_v1.Volume.model_construct(
            name=self.name or self.secret,
            secret=core_v1.SecretVolumeSource.model_construct(secret_name=self.secret),
        )


Volume = PVC | EmptyDir | SecretVolume
"""A volume and where the training container mounts it."""


def _name_from_path(path: str) -> str:
    cleaned = "".join(c if c.isalnum() else "-" for c in path.strip("/").lower())
    return ("vol-" + cleaned).strip("-")[:63] or "vol"


class Debug(_Piece):
    """Debug mode: pods are created but the training command is replaced (by `sleep inf`, or sshd).

    `debug=True` on a job uses the defaults; `Debug(command=[...], skip_init_containers=True)`
    overrides them for every replica type, or only for `types`.
    """

    command: list[str] | None = None
    """Command run instead of the training program."""
    skip_init_containers: bool = False
    """Drop the init containers."""
    types: list[str] | None = None
    """Replica types the overrides apply to; all when omitted."""


class Resume(_Piece):
    """What a replica type runs when a paused job resumes (default: its normal command)."""

    command: list[str] | None = None
    """Command on resume."""
    args: list[str] | None = None
    """Arguments on resume."""
    skip_init_containers: bool = False
    """Drop the init containers on resume."""


class _Builder(_Piece):
    """Base of the job builders: validated at construction, immutable, `build()` once.

    A builder writes its job as the wire models (`model_construct`, so that mypy checks every
    field name and type) and the kind's model validates the whole manifest once: each wire
    rule's problem then has its full path, and is reported at the argument that set it.
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", use_attribute_docstrings=True, arbitrary_types_allowed=False
    )
    _checks_arguments_in_validator: ClassVar[bool] = True

    name: Annotated[str, Field(min_length=1)]
    """Job name (metadata.name); pods are named after it."""
    namespace: str | None = None
    """Namespace; when omitted, `kubectl`'s current namespace."""
    labels: dict[str, str] | None = None
    """Labels of the job object."""
    annotations: dict[str, str] | None = None
    """Annotations of the job object."""
    queue: str | None = None
    """T9k Scheduler queue; the job gets a PodGroup there and gang scheduling."""
    priority: Annotated[Int, Field(ge=0, le=100)] | None = None
    """Priority within the queue, 0-100 (needs `queue`)."""
    kueue_queue: str | None = None
    """Kueue LocalQueue that admits the job as one gang (the label `kueue.x-k8s.io/queue-name`):
    no pod of it is created until Kueue admits all of them."""
    kueue_priority_class: str | None = None
    """Kueue WorkloadPriorityClass of the job (the label `kueue.x-k8s.io/priority-class`; needs
    `kueue_queue`)."""
    restart_scope: models.RestartScope | None = None
    """What a retryable failure restarts (a t9k-sdk extension T9k ignores, the annotation
    `t9k-sdk.dev/restart-scope`): "Replica" (T9k's behaviour, the default) the failed pod
    alone; "Job" every replica together, counted as one restart, once every old pod is gone."""
    node_lost_after: Annotated[Int, Field(ge=0, le=models.MAX_NODE_LOST_AFTER)] | None = None
    """Seconds a pod's node may be NotReady before the operator force-deletes the pod and
    replaces it (a t9k-sdk extension T9k ignores, the annotation
    `t9k-sdk.dev/node-lost-after`); None: the operator's `--node-lost-after` (300 by default)."""
    debug: Bool | Debug = False
    """Start in debug mode (True for the defaults, or a `Debug`)."""
    paused: Bool = False
    """Create the job paused: no pods until `paused` is set to false."""
    resume: dict[str, Resume] | None = None
    """Per replica type overrides applied when the job resumes from pause."""

    @model_validator(mode="wrap")
    @classmethod
    def _validate_everything(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        """Arguments and the wire rules at construction, with one error type for both."""
        try:
            builder = handler(data)
        except ValidationError as exc:
            name = data.get("name") if isinstance(data, dict) else None
            subject = f"{cls.__name__} {name!r}" if isinstance(name, str) else cls.__name__
            raise InvalidManifestError(subject, problems_from_validation_error(exc, cls)) from None
        problems = builder._argument_problems()
        if problems:
            raise InvalidManifestError(f"{cls.__name__} {builder.name!r}", problems)
        builder.build()  # the wire model's rules: raises InvalidManifestError with wire paths
        return builder

    def _argument_problems(self) -> list[Problem]:
        problems = super()._argument_problems()
        if self.priority is not None and self.queue is None:
            problems.append(
                Problem("priority", "needs queue: T9k Scheduler priorities apply within a queue")
            )
        labels = self.labels or {}
        queue = self.kueue_queue or labels.get(conventions.KUEUE_QUEUE_LABEL)
        priority = self.kueue_priority_class or labels.get(conventions.KUEUE_PRIORITY_LABEL)
        if priority is not None and queue is None:
            problems.append(
                Problem(
                    "kueue_priority_class",
                    "needs kueue_queue: Kueue priorities apply to jobs it admits from a queue",
                )
            )
        for argument, label in (
            ("kueue_queue", conventions.KUEUE_QUEUE_LABEL),
            ("kueue_priority_class", conventions.KUEUE_PRIORITY_LABEL),
        ):
            given = labels.get(label)
            value = getattr(self, argument)
            if value is not None and given is not None and given != value:
                problems.append(
                    Problem(
                        argument,
                        f"{value!r} disagrees with labels[{label!r}] = {given!r}: give one of them",
                    )
                )
                continue
            final = value if value is not None else given
            if final is not None and not conventions.KUEUE_NAME.fullmatch(final):
                where = argument if value is not None else f"labels[{label!r}]"
                problems.append(
                    Problem(
                        where,
                        f"{final!r} is not a Kueue object name: at most 63 lowercase letters,"
                        " digits, '-' and '.', starting and ending with a letter or digit",
                    )
                )
        for argument, key, value in self._extensions():
            given = (self.annotations or {}).get(key)
            if value is not None and given is not None and given != value:
                problems.append(
                    Problem(
                        argument,
                        f"{getattr(self, argument)!r} disagrees with annotations[{key!r}] ="
                        f" {given!r}: give one"
                        " of them",
                    )
                )
        return problems

    def _extensions(self) -> list[tuple[str, str, str | None]]:
        """(argument, annotation, its value or None) of the t9k-sdk extensions."""
        lost = self.node_lost_after
        return [
            ("restart_scope", models.RESTART_SCOPE_ANNOTATION, self.restart_scope),
            (
                "node_lost_after",
                models.NODE_LOST_AFTER_ANNOTATION,
                None if lost is None else str(lost),
            ),
        ]

    def _manifest(self) -> codecs.AnyJob:  # pragma: no cover - every builder overrides it
        """The job as unvalidated wire models (`model_construct`): `build()` validates it."""
        raise NotImplementedError

    def _argument_paths(self) -> dict[str, str]:
        """Wire path -> the argument that sets it, so that the wire rules' problems name the
        builder's arguments (`name`, not `metadata.name`); subclasses add their own."""
        return {
            "metadata.name": "name",
            "metadata.namespace": "namespace",
            "metadata.labels": "labels*",
            f"metadata.labels.{conventions.KUEUE_QUEUE_LABEL}": "kueue_queue",
            f"metadata.labels.{conventions.KUEUE_PRIORITY_LABEL}": "kueue_priority_class",
            "metadata.annotations": "annotations*",
            "spec.scheduler.t9kScheduler.queue": "queue",
            "spec.scheduler.t9kScheduler.priority": "priority",
            "spec.runMode.debug": "debug",
            "spec.runMode.pause.enabled": "paused",
            "spec.runMode.pause.resumeSpecs": "resume",
        }

    @cached_property
    def _built(self) -> codecs.AnyJob:
        job = self._manifest()
        cls = type(job)
        try:
            return cls.model_validate(codecs.to_wire(job))
        except ValidationError as exc:
            subject = f"{type(self).__name__} {self.name!r}"
            paths = self._argument_paths()
            problems = [
                _argument_problem(p, paths) for p in problems_from_validation_error(exc, cls)
            ]
            raise InvalidManifestError(subject, problems) from None

    def build(self) -> codecs.AnyJob:
        """The wire model (validated once, then reused)."""
        return self._built

    def to_dict(self) -> dict[str, Any]:
        """The manifest as a camelCase dict."""
        return codecs.to_manifest(self.build())

    def to_yaml(self) -> str:
        """The manifest as YAML."""
        return codecs.dump_all_yaml([self.build()])

    # -- helpers for subclasses: the parts every kind has -----------------------------------

    def _metadata(self) -> meta_v1.ObjectMeta:
        return meta_v1.ObjectMeta.model_construct(
            name=self.name,
            namespace=self.namespace,
            labels=self._labels(),
            annotations=self._annotations(),
        )

    def _annotations(self) -> dict[str, str] | None:
        """`annotations`, with those of the extension arguments given."""
        extra = {key: value for _, key, value in self._extensions() if value is not None}
        return {**(self.annotations or {}), **extra} if extra else self.annotations

    def _labels(self) -> dict[str, str] | None:
        """`labels`, with the Kueue labels of `kueue_queue` and `kueue_priority_class`."""
        kueue = {
            label: value
            for label, value in (
                (conventions.KUEUE_QUEUE_LABEL, self.kueue_queue),
                (conventions.KUEUE_PRIORITY_LABEL, self.kueue_priority_class),
            )
            if value is not None
        }
        return {**(self.labels or {}), **kueue} if kueue else self.labels

    def _scheduler(self) -> models.SchedulePolicy | None:
        if self.queue is None:
            return None
        return models.SchedulePolicy.model_construct(
            t9k_scheduler=models.T9kScheduler.model_construct(
                queue=self.queue, priority=self.priority
            )
        )

    def _run_mode(self, types: list[str]) -> models.RunMode | None:
        """Debug and pause; `types` are the kind's replica types (debug overrides apply to)."""
        debug = None
        if self.debug is True:
            debug = models.DebugMode.model_construct(enabled=True)
        elif isinstance(self.debug, Debug):
            d = self.debug
            replicas = None
            if d.command is not None or d.skip_init_containers:
                replicas = [
                    models.ReplicaDebugSet.model_construct(
                        type=t,
                        skip_init_container=d.skip_init_containers or None,
                        command=d.command,
                    )
                    for t in (d.types or types)
                ]
            debug = models.DebugMode.model_construct(enabled=True, replica_specs=replicas)
        pause = None
        if self.paused or self.resume:
            resume = [
                models.ResumeSpec.model_construct(
                    type=t,
                    skip_init_container=r.skip_init_containers or None,
                    command=r.command,
                    args=r.args,
                )
                for t, r in (self.resume or {}).items()
            ]
            pause = models.PauseMode.model_construct(
                enabled=self.paused or None, resume_specs=resume or None
            )
        if debug is None and pause is None:
            return None
        return models.RunMode.model_construct(debug=debug, pause=pause)


def _argument_problem(problem: Problem, paths: Mapping[str, str]) -> Problem:
    """`problem` at the argument that set its wire path, and its message saying it the same way.

    `paths` maps a wire path to an argument, for the path and everything under it; the longest
    one that matches wins. An argument ending in `*` keeps the rest of the path, where it has
    the wire's shape: `"spec.config.run.python": "run*"` makes `spec.config.run.python[1]`
    `run[1]`, while `"spec.elastic": "elastic"` makes `spec.elastic.minReplicas` `elastic`.
    """
    wire = problem.path
    matches = [p for p in paths if wire == p or wire.startswith((f"{p}.", f"{p}["))]
    if not matches:
        return problem
    prefix = max(matches, key=len)
    argument = paths[prefix]
    path = argument[:-1] + wire[len(prefix) :] if argument.endswith("*") else argument
    return Problem(path, problem.message.replace(wire, path))


_E = TypeVar("_E", bound=StrEnum)


def _member(enum: type[_E], value: _E | str | None) -> _E | None:
    """An enum argument as the wire model types it: validation made it the member already (the
    strings are for type checkers, see `CleanUpPolicyArg`)."""
    return None if value is None else enum(value)


_M = TypeVar("_M", bound=models.K8sModel)


def _unless_empty(model: _M) -> _M | None:
    """`model`, or None where it sets no field (the manifest leaves it out rather than `{}`)."""
    return model if codecs.to_wire(model) else None


def _free_form(template: dict[str, Any]) -> core_v1.PodTemplateSpec:
    """A pod template made by `_Container._template` (a wire dict) as a model whose every key is
    kept as given, as a passthrough model keeps unknown keys: validated with the whole job."""
    model = core_v1.PodTemplateSpec.model_construct()
    assert model.__pydantic_extra__ is not None  # passthrough models keep unknown keys there
    model.__pydantic_extra__.update(template)
    return model


def _settings(container: core_v1.Container) -> dict[str, Any]:
    """The wire fields `container` sets, but its name: settings written into the training
    container of a template, which keeps its own name."""
    wire = codecs.to_wire(container)
    del wire["name"]
    return wire


def _container_index(containers: list[dict[str, Any]], name: str) -> int:
    """The training container among a pod's: the one named `name`, else the first."""
    return next((i for i, c in enumerate(containers) if c.get("name") == name), 0)


class _Container(_Piece):
    """Settings of the training container and its pod, shared by replicas, workers and launchers.

    `template` is the escape hatch: a full core/v1 pod template (model or dict) used as the base;
    the other settings are applied on top of it, to the training container.
    """

    if TYPE_CHECKING:  # each kind of container declares it: required or not, and its default
        image: str | None
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = None
    """When the kubelet pulls the image."""
    env: Env | None = None
    """Environment variables of the training container."""
    working_dir: str | None = None
    """Working directory of the training container."""
    volumes: list[Volume] | None = None
    """Volumes mounted into the training container."""
    node_selector: dict[str, str] | None = None
    """Node labels the pods require."""
    tolerations: list[dict[str, Any]] | None = None
    """Taints the pods tolerate."""
    template: core_v1.PodTemplateSpec | dict[str, Any] | None = None
    """A raw pod template to start from (escape hatch); the other settings are applied on top."""

    def _container_name(self) -> str:
        """Name of the training container."""
        return "worker"

    def _template(
        self,
        *,
        command: list[str] | None = None,
        args: list[str] | None = None,
        resources: Resources | core_v1.ResourceRequirements | None = None,
        ports: dict[str, int] | None = None,
    ) -> dict[str, Any]:
        """The pod template: `template` with these settings applied to the training container.

        The training container is the one named `_container_name()`, else the template's first
        one, else a new container of that name.
        """
        # The template is the escape hatch: any core/v1 pod template, whose training container may
        # still lack what the arguments give (its image). So it stays a wire dict until the job's
        # model validates the whole manifest; what the arguments set is built as typed models
        # and written into it in wire form.
        base = self.template
        data: dict[str, Any] = (
            codecs.to_wire(base) if isinstance(base, core_v1.PodTemplateSpec) else dict(base or {})
        )
        spec: dict[str, Any] = dict(data.get("spec") or {})
        containers: list[dict[str, Any]] = [dict(c) for c in spec.get("containers") or []]
        name = self._container_name()
        if not containers:
            containers.append({"name": name})
        c = containers[_container_index(containers, name)]
        if isinstance(resources, Resources):
            resources = resources.to_requirements()
        settings = core_v1.Container.model_construct(
            name=name,
            image=self.image,
            image_pull_policy=self.image_pull_policy,
            command=command,
            args=args,
            working_dir=self.working_dir,
            resources=resources,
            ports=(
                [
                    core_v1.ContainerPort.model_construct(name=n, container_port=p)
                    for n, p in ports.items()
                ]
                if ports
                else None
            ),
        )
        c.update(_settings(settings))
        if self.env is not None:
            settings = core_v1.Container.model_construct(name=name, env=_env_vars(self.env))
            ((key, env),) = _settings(settings).items()
            names = {e["name"] for e in env}
            c[key] = [e for e in c.get(key) or [] if e.get("name") not in names] + env
        if self.volumes:
            mounts = [
                core_v1.VolumeMount.model_construct(
                    name=v.volume().name,
                    mount_path=v.mount_path,
                    sub_path=v.sub_path or None,
                    read_only=v.read_only or None,
                )
                for v in self.volumes
            ]
            settings = core_v1.Container.model_construct(name=name, volume_mounts=mounts)
            ((key, added),) = _settings(settings).items()
            c[key] = [*(c.get(key) or []), *added]
            pod = core_v1.PodSpec.model_construct(volumes=[v.volume() for v in self.volumes])
            ((key, volumes),) = codecs.to_wire(pod).items()
            existing = list(spec.get(key) or [])
            for vol in volumes:
                if not any(e.get("name") == vol["name"] for e in existing):
                    existing.append(vol)
            spec[key] = existing
        pod = core_v1.PodSpec.model_construct(
            node_selector=self.node_selector, tolerations=self.tolerations
        )
        spec.update(codecs.to_wire(pod))
        spec["containers"] = containers
        data["spec"] = spec
        return data

    def _pod_paths(self, wire: str, argument: str, **container: str) -> dict[str, str]:
        """`_Builder._argument_paths` of the pod template at `wire`, set by the arguments that
        start with `argument`: the training container's fields (more in `container`, wire name
        -> argument), the pod's volumes and scheduling, and the rest of `template` as written."""
        containers = self._template()["spec"]["containers"]
        index = _container_index(containers, self._container_name())
        pod, c = f"{wire}.spec", f"{wire}.spec.containers[{index}]"
        return {
            wire: f"{argument}template*",
            f"{pod}.volumes": f"{argument}volumes",
            f"{pod}.nodeSelector": f"{argument}node_selector*",
            f"{pod}.tolerations": f"{argument}tolerations*",
            f"{c}.image": f"{argument}image",
            f"{c}.imagePullPolicy": f"{argument}image_pull_policy",
            f"{c}.workingDir": f"{argument}working_dir",
            f"{c}.env": f"{argument}env",
            f"{c}.volumeMounts": f"{argument}volumes",
            f"{c}.resources": f"{argument}resources",
            **{f"{c}.{k}": argument + v for k, v in container.items()},
        }


class _TrainingContainer(_Container):
    """The settings of a training container, whose image type checkers require.

    At run time the image may come from the training container of `template` instead, as the
    other settings do; a missing image is reported as the `image` argument.
    """

    if TYPE_CHECKING:
        image: str
        """Container image, e.g. "pytorch/pytorch:2.4.0"."""
    else:
        image: Annotated[str | None, ReadAs(str, required=True)] = None

    def _argument_problems(self) -> list[Problem]:
        problems = super()._argument_problems()
        containers = self._template()["spec"]["containers"]
        image = containers[_container_index(containers, self._container_name())].get("image")
        if not image:
            problems.append(
                Problem(
                    "image",
                    "required: the image of the training container, e.g."
                    f" image='pytorch/pytorch:2.4.0'; got {self.image!r}",
                )
            )
        return problems


class _WorkerResources(_Piece):
    """Per-worker resources: the shortcuts, or a full `resources` (not both)."""

    gpus_per_worker: Annotated[Int, Field(ge=0)] = 0
    """GPUs per worker (nvidia.com/gpu)."""
    cpu_per_worker: ResourceQuantity | None = None
    """CPU per worker, e.g. 16 or 0.5 (written as "500m")."""
    memory_per_worker: ResourceQuantity | None = None
    """Memory per worker, e.g. "64Gi"."""
    resources: Resources | core_v1.ResourceRequirements | None = None
    """Full resources per worker, instead of the `*_per_worker` shortcuts."""

    def _argument_problems(self) -> list[Problem]:
        problems = super()._argument_problems()
        shortcuts = (
            self.gpus_per_worker
            or self.cpu_per_worker is not None
            or self.memory_per_worker is not None
        )
        if self.resources is not None and shortcuts:
            problems.append(
                Problem(
                    "resources",
                    "give either resources= or the gpus_per_worker/cpu_per_worker/"
                    "memory_per_worker shortcuts, not both",
                )
            )
        return problems

    def _worker_resources(self) -> Resources | core_v1.ResourceRequirements | None:
        if self.resources is not None:
            return self.resources
        if (
            self.gpus_per_worker
            or self.cpu_per_worker is not None
            or self.memory_per_worker is not None
        ):
            return Resources(
                cpu=self.cpu_per_worker, memory=self.memory_per_worker, gpus=self.gpus_per_worker
            )
        return None


def _env_vars(env: Env) -> list[core_v1.EnvVar]:
    if isinstance(env, dict):
        return [core_v1.EnvVar.model_construct(name=k, value=v) for k, v in env.items()]
    return env
