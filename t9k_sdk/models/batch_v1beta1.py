"""`batch.tensorstack.dev/v1beta1`: GenericJob, DeepSpeedJob and ColossalAIJob, wire-exact.

Field names, JSON names, enums and defaults follow T9k's API reference. Fields whose documented
default is filled in by the server carry it in their schema (`default_of()` returns it); the
models themselves keep `None` for "absent", so a manifest round-trips exactly as written.

Where the API reference of two kinds defines different types under the same name (`ReplicaSpec`
of GenericJob and of ColossalAIJob, `RunPolicy` of ColossalAIJob and of DeepSpeedJob), the Python
names carry the kind as a prefix; `wire_name()` gives the name used in the reference.
"""

from __future__ import annotations

import re
import warnings
from collections import Counter
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final, Literal, Self, TextIO

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from t9k_sdk import _yaml
from t9k_sdk.errors import (
    InvalidManifestError,
    LegacyManifestWarning,
    Problem,
    problems_from_validation_error,
)
from t9k_sdk.models import _names
from t9k_sdk.models._base import (
    Bool,
    Int,
    IntOrString,
    K8sModel,
    K8sPassthroughModel,
    Time,
    rule_error,
    wire_default,
)
from t9k_sdk.models._rules import (
    CAIJ_EXTRA_ARG,
    CAIJ_OWNED_ARG,
    CAIJ_SCRIPT,
    DNS_LABEL,
    MAX_NAME,
    RESERVED_VOLUMES,
    Msg,
    cel,
    mount_problems,
    normalize_path,
    replicas_of,
)
from t9k_sdk.models.core_v1 import PodTemplateSpec, ServicePort
from t9k_sdk.models.meta_v1 import ListMeta, ObjectMeta

__all__ = [
    "API_VERSION",
    "GROUP",
    "MAX_NODE_LOST_AFTER",
    "MAX_PODS",
    "MAX_SLOTS",
    "NODE_LOST_AFTER_ANNOTATION",
    "RESTART_SCOPES",
    "RESTART_SCOPE_ANNOTATION",
    "VERSION",
    "Aggregate",
    "AutotuneType",
    "CleanUpPolicy",
    "ColossalAIJob",
    "ColossalAIJobList",
    "ColossalAIJobSpec",
    "ColossalAIJobStatus",
    "ColossalAIReplicaSpec",
    "ColossalAIReplicaType",
    "ColossalAIRunPolicy",
    "ConditionStatus",
    "Config",
    "ContainerState",
    "ContainerStatus",
    "DebugMode",
    "DeepSpeedJob",
    "DeepSpeedJobList",
    "DeepSpeedJobSpec",
    "DeepSpeedJobStatus",
    "DeepSpeedRunPolicy",
    "ElasticConfig",
    "FinishRule",
    "GenericJob",
    "GenericJobList",
    "GenericJobSpec",
    "GenericJobStatus",
    "JobCondition",
    "JobConditionType",
    "JobPhase",
    "PauseMode",
    "ReplicaDebugSet",
    "ReplicaPhase",
    "ReplicaSpec",
    "ReplicaStatus",
    "RestartPolicy",
    "RestartPolicyType",
    "RestartScope",
    "ResumeSpec",
    "RunMode",
    "RunType",
    "SSHConfig",
    "SchedulePolicy",
    "ServiceOption",
    "T9kScheduler",
    "Tasks",
    "TorchConfig",
    "Worker",
    "node_lost_after_of",
    "restart_scope_of",
]

GROUP = "batch.tensorstack.dev"
VERSION = "v1beta1"
API_VERSION: Final = "batch.tensorstack.dev/v1beta1"

# Bounds that keep the CEL rules of the CRDs within the API server's cost budget.
MAX_REPLICA_SPECS = 16
MAX_RULES = 16
MAX_RULE_INDICES = 128
MAX_ARGS = 256
# Lengths that let the CEL rules on ColossalAIJob's script, extraArgs and ssh paths fit the
# API server's cost budget (the estimate grows with the longest string a field may hold).
MAX_ARG_LENGTH = 4096
MAX_OPTION_LENGTH = 256
MAX_PATH_LENGTH = 1024

# Bounds on the size of a job. Kubernetes caps an Indexed batch/v1 Job at 100,000 completions
# and its parallelism at 100,000; a T9k job keeps a status entry per pod in one object (etcd
# stores at most 1.5 MiB per object, about 150 bytes per entry), and every pod of a DeepSpeedJob
# or ColossalAIJob is a line of the hostfile every worker reads.
MAX_PODS = 10_000
"""Most pods of one job: replicas of one replica type, of all types together, and elastic
min/max/expected replicas."""
MAX_SLOTS = 1024
"""Most processes per worker: config.slotsPerWorker (DeepSpeedJob), torchConfig.procPerWorker."""

_TOTAL_PODS_MESSAGE = (
    f"a job has at most {MAX_PODS} pods: the replicas of all replica specs add up to more"
)


def _total_pods_cel(default: str = "1") -> dict[str, Any]:
    return cel(
        f"self.map(r, has(r.replicas) ? r.replicas : {default}).sum() <= {MAX_PODS}",
        _TOTAL_PODS_MESSAGE,
    )


def _total_pods_problems(counts: list[int]) -> list[tuple[str, str]]:
    total = sum(counts)
    if total <= MAX_PODS:
        return []
    return [
        ("replicaSpecs", f"{_TOTAL_PODS_MESSAGE}; got {' + '.join(map(str, counts))} = {total}")
    ]


def _dns_label(value: str) -> str:
    if not DNS_LABEL.fullmatch(value) or len(value) > MAX_NAME:
        raise PydanticCustomError("t9k_dns_label", f"{Msg.TYPE_DNS}; got {value!r}")
    return value


ReplicaTypeName = Annotated[
    str,
    AfterValidator(_dns_label),
    WithJsonSchema(
        {"type": "string", "maxLength": MAX_NAME, "pattern": DNS_LABEL.pattern},
    ),
]
"""A replica type: a DNS label, because it becomes part of pod names."""


def _decimal_index(value: int | str) -> int | str:
    if (isinstance(value, str) and not value.isdigit()) or (isinstance(value, int) and value < 0):
        raise PydanticCustomError(
            "t9k_index", f"replica index must be a non-negative integer; got {value!r}"
        )
    return value


FinishRule = Annotated[
    dict[
        str,
        Annotated[
            list[Annotated[IntOrString, AfterValidator(_decimal_index)]],
            Field(max_length=MAX_RULE_INDICES),
        ],
    ],
    Field(max_length=MAX_REPLICA_SPECS),
    WithJsonSchema(
        {
            "type": "object",
            "title": "FinishRule",
            "description": (
                "A map from replica type to a list of replica indices, e.g. {worker: [0, 1]}."
                " The rule holds when every replica it names has finished that way."
            ),
            "maxProperties": MAX_REPLICA_SPECS,
            "additionalProperties": {
                "type": "array",
                "maxItems": MAX_RULE_INDICES,
                "items": {"x-kubernetes-int-or-string": True},
            },
        }
    ),
]
"""`FinishRule`: replica type -> replica indices (ints, or decimal strings as IntOrString allows)."""


def _finish_rule_indices(rule: dict[str, list[int | str]]) -> dict[str, list[int]]:
    return {t: [int(i) for i in idx] for t, idx in rule.items()}


# ---------------------------------------------------------------------------------------------
# Enums
# ---------------------------------------------------------------------------------------------


class JobPhase(StrEnum):
    """A simple, high-level summary of where the job is in its lifecycle."""

    PENDING = "Pending"
    RUNNING = "Running"
    PAUSED = "Paused"
    RESUMING = "Resuming"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


class ConditionStatus(StrEnum):
    """Status of a condition: True, False or Unknown."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class JobConditionType(StrEnum):
    """Type of a job condition.

    Initialized, Running, ReplicaFailure, Completed, Failed and Paused are T9k's. Ready,
    Reconciling and Stalled are a t9k-sdk extension: the kstatus conditions that Flux, kpt,
    `kubectl wait --for=condition=Ready` and other GitOps tools read health from. Ready=True: the
    job is where its spec asks (running, succeeded, or paused as asked). Reconciling=True: it is on
    its way there (pods being created, resuming, pausing). Stalled=True: it will not get there by
    itself (it failed, or a problem blocks it).
    """

    INITIALIZED = "Initialized"
    RUNNING = "Running"
    REPLICA_FAILURE = "ReplicaFailure"
    COMPLETED = "Completed"
    FAILED = "Failed"
    PAUSED = "Paused"
    READY = "Ready"
    RECONCILING = "Reconciling"
    STALLED = "Stalled"


class CleanUpPolicy(StrEnum):
    """Which replicas are deleted when the job finishes.

    None (default): none. Unfinished: replicas still pending, running or unknown. All: all.
    """

    NONE = "None"
    UNFINISHED = "Unfinished"
    ALL = "All"


class RestartPolicyType(StrEnum):
    """When a finished replica is restarted.

    Always: whenever it terminates. OnFailure: when it failed. Never: never. ExitCode: when its
    exit code is retryable (128-255); codes 1-127 are permanent errors.
    """

    ALWAYS = "Always"
    ON_FAILURE = "OnFailure"
    NEVER = "Never"
    EXIT_CODE = "ExitCode"


class AutotuneType(StrEnum):
    """DeepSpeed autotuning: none, tune (find the best configuration) or run (find, then train)."""

    NONE = "none"
    TUNE = "tune"
    RUN = "run"


class ColossalAIReplicaType(StrEnum):
    """Replica type of a ColossalAIJob: one launcher, and workers."""

    LAUNCHER = "launcher"
    WORKER = "worker"


class ReplicaPhase(StrEnum):
    """Phase of one replica: the pod phase, plus Creating and Deleted."""

    CREATING = "Creating"
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"
    DELETED = "Deleted"


class ContainerState(StrEnum):
    """State of a container."""

    WAITING = "Waiting"
    RUNNING = "Running"
    TERMINATED = "Terminated"
    UNKNOWN = "Unknown"


# ---------------------------------------------------------------------------------------------
# Status (shared by the three kinds)
#
# Status types keep keys they do not know (K8sPassthroughModel): reading a live job must never
# fail because a controller wrote more than the API reference lists. `validate_manifest` still
# reports such keys, as the API server would prune them.
# ---------------------------------------------------------------------------------------------


class Aggregate(K8sPassthroughModel):
    """Aggregate records the number of replica pods at each phase."""

    creating: Int | None = None
    """Pod has been created, but resources have not been scheduled."""
    pending: Int | None = None
    """Pod has been accepted by the system, but one or more of the containers has not been started. This includes time before being bound to a node, as well as time spent pulling images onto the host."""
    running: Int | None = None
    """Pod has been bound to a node and all of the containers have been started. At least one container is still running or is in the process of being restarted."""
    succeeded: Int | None = None
    """All containers in the pod have voluntarily terminated with a container exit code of 0, and the system is not going to restart any of these containers."""
    failed: Int | None = None
    """All containers in the pod have terminated, and at least one container has terminated in failure (exited with a non-zero exit code or was stopped by the system)."""
    unknown: Int | None = None
    """For some reason the state of the pod could not be obtained, typically due to an error in communicating with the host of the pod."""
    deleted: Int | None = None
    """Pod has been deleted."""


class ContainerStatus(K8sPassthroughModel):
    """ContainerStatus defines the observed state of the container."""

    name: str | None = None
    """Container name."""
    state: ContainerState | None = None
    """Waiting, Running, Terminated or Unknown."""
    exit_code: Int | None = None
    """Exit code of the last termination, when the container terminated."""
    reason: str | None = None
    """(t9k-sdk extension) Brief reason for the state, e.g. ImagePullBackOff or OOMKilled."""
    message: str | None = None
    """(t9k-sdk extension) Human readable details of the state."""


class ReplicaStatus(K8sPassthroughModel):
    """ReplicaStatus defines the observed state of the pod."""

    name: str | None = None
    """Pod name."""
    uid: str | None = None
    """Pod uid."""
    phase: ReplicaPhase | None = None
    """Pod phase. The phase of a Pod is a simple, high-level summary of where the Pod is in its lifecycle."""
    containers: list[ContainerStatus] | None = None
    """Containers status."""
    restart_count: Int | None = None
    """How many times this replica was restarted (t9k-sdk: the per-replica count that a
    GenericJob's restartPolicy.limit bounds; absent while 0)."""


class Tasks(K8sPassthroughModel):
    """Task defines the observed state of the task."""

    type: str | None = None
    """Replica type."""
    restart_count: Int | None = None
    """The number of restarts that have been performed."""
    replicas: list[ReplicaStatus] | None = None
    """Replicas status array."""


class JobCondition(K8sPassthroughModel):
    """JobCondition describes the current state of a job."""

    type: JobConditionType
    """Type of job condition: Initialized, Running, ReplicaFailure, Completed, Failed or Paused; and (t9k-sdk extension, the kstatus conditions GitOps tools read) Ready, Reconciling or Stalled."""
    status: ConditionStatus
    """Status of the condition, one of True, False, Unknown."""
    last_transition_time: Time | None = None
    """Last time the condition transited from one status to another."""
    reason: str | None = None
    """Brief reason for the condition's last transition."""
    message: str | None = None
    """Human readable message indicating details about last transition."""


class _JobStatus(K8sPassthroughModel):
    observed_generation: Int | None = wire_default(0)
    """(t9k-sdk extension) The metadata.generation of the spec the operator last acted on; behind metadata.generation while a spec edit is not yet observed (kstatus, Flux and Argo CD then report the job in progress)."""
    tasks: list[Tasks] | None = None
    """An array of status of individual tasks."""
    phase: JobPhase | None = None
    """Provides a simple, high-level summary of where the Job is in its lifecycle. Note that this is NOT intended to be a comprehensive state machine."""
    aggregate: Aggregate | None = None
    """Records the number of replicas at each phase."""
    conditions: list[JobCondition] | None = None
    """The latest available observations of a job's current state."""

    def condition(self, type: JobConditionType) -> JobCondition | None:
        """The condition of `type`, if present."""
        for c in self.conditions or ():
            if c.type == type:
                return c
        return None


class GenericJobStatus(_JobStatus):
    """GenericJobStatus defines the observed state of GenericJob."""


class ColossalAIJobStatus(_JobStatus):
    """ColossalAIJobStatus describes the observed state of ColossalAIJob."""


class DeepSpeedJobStatus(_JobStatus):
    """DeepSpeedJobStatus represents the observed state of a DeepSpeedJob."""

    backoff_count: Int | None = None
    """The number of restarts being performed."""


# ---------------------------------------------------------------------------------------------
# Spec pieces shared by the three kinds
# ---------------------------------------------------------------------------------------------


class ReplicaDebugSet(K8sModel):
    """ReplicaDebugSet describes how to start replicas in debug mode."""

    type: str
    """Replica type."""
    skip_init_container: Bool | None = wire_default(False)
    """Skips creation of initContainer, if true."""
    command: list[str] | None = None
    """Entrypoint array. Optional: Default to ["sleep", "inf"]; DeepSpeedJob and ColossalAIJob workers run the job's sshd set-up (["/bin/sh", "/t9k/scripts/t9k-sshd.sh"]), so the training can be started by hand."""


class DebugMode(K8sModel):
    """DebugMode configs whether and how to start a job in debug mode."""

    enabled: Bool | None = wire_default(False)
    """Whether to enable debug mode."""
    replica_specs: list[ReplicaDebugSet] | None = Field(default=None, max_length=MAX_REPLICA_SPECS)
    """If provided, these specs provide overwriting values for job replicas."""

    @model_validator(mode="before")
    @classmethod
    def _legacy_enable(cls, data: Any) -> Any:
        return _rename_legacy_enable(data, "runMode.debug")


class ResumeSpec(K8sModel):
    """ResumeSpec describes how to resume replicas from pause mode."""

    type: str
    """Replica type."""
    skip_init_container: Bool | None = wire_default(False)
    """Skips creation of initContainer, if true."""
    command: list[str] | None = None
    """Entrypoint array. Provides overwriting values if provided; otherwise, values in immediate mode are used."""
    args: list[str] | None = None
    """Arguments to the entrypoint. Arguments in immediate mode are used if not provided."""


class PauseMode(K8sModel):
    """PauseMode configs whether and how to start a job in pause mode."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    "has(self.resumeSpecs) == has(oldSelf.resumeSpecs) && (!has(self.resumeSpecs)"
                    " || self.resumeSpecs == oldSelf.resumeSpecs)",
                    Msg.RESUME_IMMUTABLE,
                )
            ]
        }
    )

    enabled: Bool | None = wire_default(False)
    """Whether to enable pause mode."""
    resume_specs: list[ResumeSpec] | None = Field(default=None, max_length=MAX_REPLICA_SPECS)
    """If provided, these specs provide overwriting values for job replicas when resuming."""

    @model_validator(mode="before")
    @classmethod
    def _legacy_enable(cls, data: Any) -> Any:
        return _rename_legacy_enable(data, "runMode.pause")


class RunMode(K8sModel):
    """RunMode defines the job's execution behavior.

    Immediate mode: (Default) Tasks are executed immediately upon submission. Debug mode: Job pods
    are created, but regular executions are replaced with null operations (e.g., sleep) for
    convenient debugging purposes. Pause mode: Job execution is halted, and pods are deleted to
    reclaim resources. A graceful pod termination process is initiated to allow pods to exit
    cleanly.
    """

    debug: DebugMode | None = None
    """Debug mode."""
    pause: PauseMode | None = None
    """Pause mode."""

    @property
    def debug_enabled(self) -> bool:
        """Whether debug mode is on."""
        return bool(self.debug and self.debug.enabled)

    @property
    def pause_enabled(self) -> bool:
        """Whether pause mode is on."""
        return bool(self.pause and self.pause.enabled)

    def mode_types(self) -> list[tuple[str, str]]:
        """(relative wire path, replica type) of every per-type override."""
        out: list[tuple[str, str]] = []
        for i, d in enumerate((self.debug.replica_specs if self.debug else None) or ()):
            out.append((f"debug.replicaSpecs[{i}].type", d.type))
        for i, r in enumerate((self.pause.resume_specs if self.pause else None) or ()):
            out.append((f"pause.resumeSpecs[{i}].type", r.type))
        return out


_MODE_TYPES_CEL = (
    "(!has(self.runMode) || !has(self.runMode.debug) || !has(self.runMode.debug.replicaSpecs)"
    " || self.runMode.debug.replicaSpecs.all(d, self.{specs}.exists(r, r.type == d.type)))"
    " && (!has(self.runMode) || !has(self.runMode.pause) || !has(self.runMode.pause.resumeSpecs)"
    " || self.runMode.pause.resumeSpecs.all(d, self.{specs}.exists(r, r.type == d.type)))"
)


def _queue_name(value: str) -> str:
    """The queue becomes the pods' `scheduler.tensorstack.dev/queue` label: a label value."""
    if not _names.is_label_value(value):
        raise PydanticCustomError(
            "t9k_queue",
            "must be a label value (it labels the job's pods): at most 63 characters of letters,"
            f" digits, '-', '_' and '.', starting and ending with a letter or digit; got {value!r}",
        )
    return value


class T9kScheduler(K8sModel):
    """T9kScheduler provides additional configurations needed for the scheduling process."""

    queue: Annotated[
        str,
        Field(min_length=1, max_length=63),
        AfterValidator(_queue_name),
        WithJsonSchema(
            {
                "type": "string",
                "minLength": 1,
                "maxLength": 63,
                "pattern": _names.LABEL_VALUE_PATTERN,
            }
        ),
    ]
    """Specifies the name of the queue should be used for running this workload."""
    priority: Annotated[Int, Field(ge=0, le=100)] | None = wire_default(0)
    """Indicates the priority of the PodGroup; valid range: [0, 100]. Optional: Default to 0."""


class SchedulePolicy(K8sModel):
    """SchedulePolicy signals to K8s how the job should be scheduled."""

    t9k_scheduler: T9kScheduler | None = Field(default=None, alias="t9kScheduler")
    """T9k Scheduler: the job gets a PodGroup in the named queue and its pods use t9k-scheduler."""


class RestartPolicy(K8sModel):
    """RestartPolicy describes how the replica should be restarted."""

    policy: RestartPolicyType | None = wire_default(RestartPolicyType.ON_FAILURE.value)
    """The policy to restart finished replica. One of Always, OnFailure, Never, ExitCode. Default OnFailure."""
    limit: Annotated[Int, Field(ge=0)] | None = wire_default(0)
    """The maximum number of restarts. Optional: Default to 0."""


class ServiceOption(K8sModel):
    """Details of a replicas' service."""

    ports: list[ServicePort] | None = None
    """The list of ports that are exposed by this service."""


def _rename_legacy_enable(data: Any, where: str) -> Any:
    if isinstance(data, dict) and "enable" in data:
        if "enabled" in data:
            raise rule_error([("enable", "give either 'enabled' or the legacy 'enable', not both")])
        warnings.warn(
            f"{where}.enable is a legacy spelling; converted to {where}.enabled",
            LegacyManifestWarning,
            stacklevel=2,
        )
        data = {("enabled" if k == "enable" else k): v for k, v in data.items()}
    return data


RESTART_SCOPE_ANNOTATION: Final = "t9k-sdk.dev/restart-scope"
"""A t9k-sdk extension T9k ignores: what a retryable failure of one replica restarts."""
RESTART_SCOPES: Final = ("Replica", "Job")
"""The values of `RESTART_SCOPE_ANNOTATION`; "Replica" (T9k's behaviour) when it is absent."""
RestartScope = Literal["Replica", "Job"]
"""A value of `RESTART_SCOPE_ANNOTATION` (the builders' and Pulumi's `restart_scope`)."""

NODE_LOST_AFTER_ANNOTATION: Final = "t9k-sdk.dev/node-lost-after"
"""A t9k-sdk extension T9k ignores: how many seconds a pod's node may be NotReady before the
operator force-deletes the pod and replaces it (absent: the operator's `--node-lost-after`)."""
MAX_NODE_LOST_AFTER: Final = 7 * 24 * 3600
"""The largest `NODE_LOST_AFTER_ANNOTATION` (a week, in seconds)."""
_SECONDS = re.compile(r"0|[1-9][0-9]{0,6}")


def restart_scope_of(meta: ObjectMeta) -> str:
    """The job's restart scope: its `RESTART_SCOPE_ANNOTATION`, "Replica" when absent."""
    return (meta.annotations or {}).get(RESTART_SCOPE_ANNOTATION, "Replica")


def node_lost_after_of(meta: ObjectMeta) -> int | None:
    """The job's `NODE_LOST_AFTER_ANNOTATION` in seconds (None: absent; a validated job has a
    whole number from 0 to `MAX_NODE_LOST_AFTER` there)."""
    value = (meta.annotations or {}).get(NODE_LOST_AFTER_ANNOTATION)
    return int(value) if value is not None and _SECONDS.fullmatch(value) else None


def _extension_problems(annotations: Mapping[str, str] | None) -> list[tuple[str, str]]:
    """The problems of the t9k-sdk annotations' values."""
    problems = []
    scope = (annotations or {}).get(RESTART_SCOPE_ANNOTATION)
    if scope is not None and scope not in RESTART_SCOPES:
        problems.append(
            (
                f"annotations.{RESTART_SCOPE_ANNOTATION}",
                f"must be one of {', '.join(map(repr, RESTART_SCOPES))} ('Replica', T9k's"
                f" behaviour, restarts a failed pod alone; 'Job' restarts every replica"
                f" together); got {scope[:80]!r}",
            )
        )
    lost = (annotations or {}).get(NODE_LOST_AFTER_ANNOTATION)
    if lost is not None and (
        not _SECONDS.fullmatch(lost) or not 0 <= int(lost) <= MAX_NODE_LOST_AFTER
    ):
        problems.append(
            (
                f"annotations.{NODE_LOST_AFTER_ANNOTATION}",
                f"must be a whole number of seconds from 0 to {MAX_NODE_LOST_AFTER} (how long a"
                f" pod's node may be NotReady before the pod is replaced); got {lost[:80]!r}",
            )
        )
    return problems


def _check_job_name(meta: ObjectMeta) -> ObjectMeta:
    """metadata.name (or generateName) must exist and be a DNS label: it prefixes pod names.
    The namespace, labels and annotations follow the API server's syntax."""
    problems: list[tuple[str, str]] = []
    if meta.name is None:
        if not meta.generate_name:
            problems.append(("name", "required field is missing (or give generateName)"))
        elif (why := _names.generate_name_problem(meta.generate_name)) is not None:
            problems.append(("generateName", why))
    elif not DNS_LABEL.fullmatch(meta.name):
        problems.append(("name", f"{Msg.NAME_DNS}; got {meta.name!r}"))
    if meta.namespace is not None and (why := _names.namespace_problem(meta.namespace)):
        problems.append(("namespace", why))
    problems += _names.label_problems(meta.labels, meta.annotations)
    problems += _extension_problems(meta.annotations)
    if problems:
        raise rule_error(problems)
    return meta


JobMeta = Annotated[ObjectMeta, AfterValidator(_check_job_name)]


def _name_problems(meta: ObjectMeta, longest_suffix: int, message: str) -> list[tuple[str, str]]:
    """Problems with metadata.name, given the longest '-<type>-<index>' suffix of a pod name."""
    name = meta.name
    if (
        name is None
        and meta.generate_name
        and _names.generate_name_problem(meta.generate_name) is None
    ):
        # the server makes the name: generateName (cut to 58 characters) + 5 random characters
        length = min(len(meta.generate_name), _names.MAX_GENERATE_NAME) + _names.GENERATED_SUFFIX
        if length + longest_suffix > MAX_NAME:
            return [
                (
                    "metadata.generateName",
                    f"{message}; got {meta.generate_name!r}: the generated name has {length}"
                    f" characters, the longest pod name would have {length + longest_suffix}",
                )
            ]
        return []
    if name is None or not DNS_LABEL.fullmatch(name):
        return []  # reported by _check_job_name
    if len(name) + longest_suffix > MAX_NAME:
        return [
            (
                "metadata.name",
                f"{message}; got {name!r} ({len(name)} characters), longest pod name"
                f" would be {len(name) + longest_suffix} characters",
            )
        ]
    return []


_NAME_CEL = cel(
    "!has(self.metadata.name) || self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",
    f"metadata.name {Msg.NAME_DNS}",
)


def _types_unique_problems(types: list[str], path: str) -> list[tuple[str, str]]:
    counts = Counter(types)
    return [
        (f"{path}[{i}].type", f"{Msg.TYPES_UNIQUE}; {t!r} appears {counts[t]} times")
        for i, t in enumerate(types)
        if counts[t] > 1 and types.index(t) != i
    ]


def _has_container(template: PodTemplateSpec | None) -> bool:
    return bool(template and template.spec and template.spec.containers)


def _mount_problems(
    template: PodTemplateSpec | None,
    path: str,
    training: str,
    reserved: dict[str, str],
    rule: str | None = None,
) -> list[tuple[str, str]]:
    """Mounts of a DeepSpeedJob/ColossalAIJob pod template that Kubernetes or the operator's
    own mounts would break: reserved paths in the training container (the one named
    `training`, else the first), duplicate paths in any container, reserved volume names."""
    spec = template.spec if template else None
    if spec is None:
        return []
    problems = [
        (f"{path}.spec.volumes[{i}].name", f"{Msg.VOLUME_RESERVED}; got {v.name!r}")
        for i, v in enumerate(spec.volumes or ())
        if v.name in RESERVED_VOLUMES
    ]
    containers = spec.containers or []
    names = [c.name for c in containers]
    trainer = names.index(training) if training in names else 0
    for ci, c in enumerate(containers):
        mounts = [m.mount_path for m in c.volume_mounts or ()]
        found = mount_problems(mounts, reserved if ci == trainer else {}, rule)
        problems += [
            (f"{path}.spec.containers[{ci}].volumeMounts[{mi}].mountPath", message)
            for mi, message in found
        ]
    return problems


# ---------------------------------------------------------------------------------------------
# GenericJob
# ---------------------------------------------------------------------------------------------


class ReplicaSpec(K8sModel):
    """ReplicaSpec defines the desired state of replicas."""

    type: ReplicaTypeName
    """Replica type."""
    replicas: Annotated[Int, Field(ge=0, le=MAX_PODS)] | None = wire_default(1)
    """The desired number of replicas of this replica type. Defaults to 1."""
    restart_policy: RestartPolicy | None = None
    """Restart policy for replicas of this replica type. One of Always, OnFailure, Never, ExitCode. Optional: Default to OnFailure."""
    template: PodTemplateSpec
    """Defines the template used to create pods."""

    @property
    def replica_count(self) -> int:
        """`replicas`, or its default 1."""
        return 1 if self.replicas is None else self.replicas


def _finish_rule_problems(
    rules: list[dict[str, list[int | str]]] | None, field: str, counts: dict[str, int]
) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    for i, rule in enumerate(rules or ()):
        if not rule:
            problems.append((f"{field}[{i}]", f"{Msg.FINISH_RULE_EMPTY}; got {{}}"))
        for rtype, indices in rule.items():
            if not indices:
                problems.append((f"{field}[{i}].{rtype}", f"{Msg.FINISH_RULE_EMPTY}; got []"))
            if rtype not in counts:
                known = ", ".join(repr(t) for t in counts)
                problems.append(
                    (
                        f"{field}[{i}].{rtype}",
                        f"{Msg.FINISH_RULES}; no replica type {rtype!r} (types: {known})",
                    )
                )
                continue
            for j, index in enumerate(indices):
                if int(index) >= counts[rtype]:
                    problems.append(
                        (
                            f"{field}[{i}].{rtype}[{j}]",
                            f"{Msg.FINISH_RULES}; index {index!r} but {rtype!r} has {counts[rtype]} replicas",
                        )
                    )
    return problems


def _finish_rules_nonempty_cel(field: str) -> str:
    return (
        f"!has(self.{field}) || self.{field}.all(rule, size(rule) > 0"
        " && rule.all(t, size(rule[t]) > 0))"
    )


def _finish_rules_cel(field: str) -> str:
    return (
        f"!has(self.{field}) || self.{field}.all(rule, rule.all(t, self.replicaSpecs.exists(r,"
        f" r.type == t && rule[t].all(i, int(i) >= 0 && int(i) < {replicas_of('r')}))))"
    )


class GenericJobSpec(K8sModel):
    """GenericJobSpec defines the desired state of GenericJob."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(_finish_rules_cel("successRules"), Msg.FINISH_RULES, ".successRules"),
                cel(_finish_rules_cel("failureRules"), Msg.FINISH_RULES, ".failureRules"),
                cel(
                    _finish_rules_nonempty_cel("successRules"),
                    Msg.FINISH_RULE_EMPTY,
                    ".successRules",
                ),
                cel(
                    _finish_rules_nonempty_cel("failureRules"),
                    Msg.FINISH_RULE_EMPTY,
                    ".failureRules",
                ),
                cel(_MODE_TYPES_CEL.format(specs="replicaSpecs"), Msg.MODE_TYPES, ".runMode"),
            ]
        }
    )

    success_rules: list[FinishRule] | None = Field(default=None, max_length=MAX_RULES)
    """Rules used to check if a generic job has succeeded. The job succeeded when any one of the successRules is fulfilled. Each item of successRules may refer to a series of replicas, and the job succeeded only if all of the replicas referred in this series are completed successfully. Defaults to: every replica succeeded."""
    failure_rules: list[FinishRule] | None = Field(default=None, max_length=MAX_RULES)
    """Rules used to check if a generic job has failed. The job failed when any one of failureRules is fulfilled. Each item of failureRules refers to a series of replicas, and the job failed only if all of the replicas in this series failed. Defaults to: any replica failed for good."""
    service: ServiceOption | None = None
    """Details of v1/Service for replica pods. Optional: Defaults to empty and no service will be created."""
    run_mode: RunMode | None = None
    """Job running mode. Defaults to Immediate mode."""
    clean_up_policy: CleanUpPolicy | None = wire_default(CleanUpPolicy.NONE.value)
    """To avoid wasting resources on completed tasks, controller will reclaim resource according to the following policies: None: (default) no resources reclamation; Unfinished: unfinished pods are deleted; All: all the pods are to be deleted."""
    scheduler: SchedulePolicy | None = None
    """If specified, the pod will be dispatched by the specified scheduler. Otherwise, the pod will be dispatched by the default scheduler."""
    replica_specs: Annotated[
        list[ReplicaSpec],
        Field(
            min_length=1,
            max_length=MAX_REPLICA_SPECS,
            json_schema_extra={
                "x-kubernetes-validations": [
                    cel("self.all(r, self.exists_one(s, s.type == r.type))", Msg.TYPES_UNIQUE),
                    cel(
                        "self.all(r, has(r.template.spec) && has(r.template.spec.containers)"
                        " && size(r.template.spec.containers) > 0)",
                        Msg.CONTAINERS,
                    ),
                    _total_pods_cel(),
                ]
            },
        ),
    ]
    """List of replica specs belonging to the job. There must be at least one replica defined for a Job."""

    @model_validator(mode="after")
    def _cross_field_rules(self) -> Self:
        types = [r.type for r in self.replica_specs]
        problems = _types_unique_problems(types, "replicaSpecs")
        problems += _total_pods_problems([r.replica_count for r in self.replica_specs])
        counts = {r.type: r.replica_count for r in self.replica_specs}
        problems += _finish_rule_problems(self.success_rules, "successRules", counts)
        problems += _finish_rule_problems(self.failure_rules, "failureRules", counts)
        problems += [
            (f"runMode.{path}", f"{Msg.MODE_TYPES}; no replica type {t!r}")
            for path, t in (self.run_mode.mode_types() if self.run_mode else ())
            if t not in counts
        ]
        problems += [
            (f"replicaSpecs[{i}].template.spec.containers", Msg.CONTAINERS)
            for i, r in enumerate(self.replica_specs)
            if not _has_container(r.template)
        ]
        if problems:
            raise rule_error(problems)
        return self

    def finish_rules(self, which: Literal["success", "failure"]) -> list[dict[str, list[int]]]:
        """The success or failure rules with every index as an int."""
        rules = self.success_rules if which == "success" else self.failure_rules
        return [_finish_rule_indices(r) for r in rules or ()]


def _last_index(cel_var: str) -> str:
    """CEL for the largest pod index of a replica spec; 0 when it has no replicas, as in the SDK
    (whose pod-name rule counts at least the one digit of index 0)."""
    n = replicas_of(cel_var)
    return f"({n} > 0 ? {n} - 1 : 0)"


_REPLICA_NAMES_CEL = cel(
    "!has(self.metadata.name) || self.spec.replicaSpecs.all(r,"
    " size(self.metadata.name) + size(r.type)"
    f" + size(string({_last_index('r')})) + 2 <= 63)",
    Msg.POD_NAME_LENGTH,
)


_CAIJ_NAMES_CEL = cel(
    "!has(self.metadata.name) || self.spec.replicaSpecs.all(r, size(self.metadata.name)"
    " + (r.type == 'launcher' ? size('-launcher') : size(r.type)"
    f" + size(string({_last_index('r')})) + 2) <= 63)",
    Msg.CAIJ_POD_NAME_LENGTH,
)


class _Job(K8sModel):
    """Fields and helpers common to the three kinds."""

    KIND: ClassVar[str]
    PLURAL: ClassVar[str]
    SHORT_NAME: ClassVar[str]
    if TYPE_CHECKING:  # declared by each kind, after apiVersion and kind
        metadata: ObjectMeta

    @property
    def name(self) -> str:
        """`metadata.name` (empty when only generateName is set)."""
        return self.metadata.name or ""

    @classmethod
    def wire_name(cls) -> str:
        """The kind."""
        return cls.KIND

    @classmethod
    def from_yaml(cls, source: str | bytes | TextIO | Path) -> Self:
        """The job of a manifest of this kind: YAML text or bytes, an open file or a `Path`.

            job = models.DeepSpeedJob.from_yaml(Path("job.yaml"))  # a DeepSpeedJob, typed so

        The manifest holds this one job (`load_all_yaml` reads any number, of any kind). Raises
        `InvalidYAMLError` for input that is not YAML a Kubernetes object can hold, with its line
        and column, and `InvalidManifestError` listing every field at fault (a legacy form is
        converted with a `LegacyManifestWarning`, as `load_all_yaml` converts it). To change the
        job, see `edit()`; to write it back keeping the file's comments, `update_yaml()`.
        """
        docs = [d for d in _yaml.load_documents(source) if d is not None]
        doc = docs[0] if len(docs) == 1 else None
        if not isinstance(doc, dict):
            if len(docs) != 1:
                got = f"{len(docs)} documents"
            elif isinstance(doc, str) and "\n" not in doc:
                got = f"the text {doc!r} (to read a file, pass Path({doc!r}))"
            else:
                got = f"a {type(doc).__name__}"
            problem = Problem("", f"expected one document, a {cls.KIND}; got {got}")
            raise InvalidManifestError(f"{cls.KIND} manifest", [problem])
        kind, metadata = doc.get("kind"), doc.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        what = kind if isinstance(kind, str) else cls.KIND
        subject = f"{what} {name!r}" if isinstance(name, str) else f"{what} manifest"
        if kind != cls.KIND:
            other = next((c for c in _Job.__subclasses__() if kind == c.KIND), None)
            reader = f"models.{other.__name__}.from_yaml" if other else "load_all_yaml"
            problem = Problem(
                "kind",
                f"{cls.__name__}.from_yaml reads a {cls.KIND}; got {kind!r} ({reader} reads it)",
            )
            raise InvalidManifestError(subject, [problem])
        try:
            return cls.model_validate(doc)
        except ValidationError as exc:
            raise InvalidManifestError(subject, problems_from_validation_error(exc, cls)) from None

    def _longest_pod_suffix(self) -> int:
        """Length of the longest `-<type>-<index>` a pod name of this job gets."""
        raise NotImplementedError

    _NAME_LENGTH_MESSAGE: ClassVar[str] = Msg.POD_NAME_LENGTH

    @model_validator(mode="after")
    def _name_rules(self) -> Self:
        problems = _name_problems(
            self.metadata, self._longest_pod_suffix(), self._NAME_LENGTH_MESSAGE
        )
        if problems:
            raise rule_error(problems)
        return self


class GenericJob(_Job):
    """GenericJob represents the schema for a general-purpose batch job API. While it offers less automation compared to specialized APIs like PyTorchTrainingJob, it allows for greater flexibility in specifying parallel replicas/pods. This design serves as a comprehensive job definition mechanism when more specialized APIs are not applicable or available."""

    KIND: ClassVar[str] = "GenericJob"
    PLURAL: ClassVar[str] = "genericjobs"
    SHORT_NAME: ClassVar[str] = "gj"
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                _NAME_CEL,
                _REPLICA_NAMES_CEL,
            ]
        }
    )

    api_version: Literal["batch.tensorstack.dev/v1beta1"] = API_VERSION
    """batch.tensorstack.dev/v1beta1"""
    kind: Literal["GenericJob"] = "GenericJob"
    """GenericJob"""
    metadata: JobMeta
    """Refer to Kubernetes API documentation for fields of metadata."""
    spec: GenericJobSpec
    """The desired state of the job."""
    status: GenericJobStatus | None = wire_default({})
    """The observed state of the job, written by the controller. Until the controller first writes it, the API server shows `{observedGeneration: 0}`, so that kstatus-based tools see a job not yet observed as in progress."""

    def _longest_pod_suffix(self) -> int:
        return max(
            len(r.type) + len(str(max(r.replica_count - 1, 0))) + 2 for r in self.spec.replica_specs
        )


class GenericJobList(K8sModel):
    """GenericJobList contains a list of GenericJob."""

    api_version: Literal["batch.tensorstack.dev/v1beta1"] = API_VERSION
    """batch.tensorstack.dev/v1beta1"""
    kind: Literal["GenericJobList"] = "GenericJobList"
    """GenericJobList"""
    metadata: ListMeta | None = None
    """Refer to Kubernetes API documentation for fields of metadata."""
    items: list[GenericJob]
    """The jobs."""


# ---------------------------------------------------------------------------------------------
# ColossalAIJob
# ---------------------------------------------------------------------------------------------


_ABSOLUTE_PATH = re.compile(r"/[A-Za-z0-9._/+@,:-]*")
"""The characters OpenSSH's configuration files and the launch scripts carry as they are: no
quotes (ssh_config would unquote them), no `%` or `${` (ssh expands them as tokens), no `$`,
backslash, `#`, glob characters, spaces or controls."""


def _absolute_path(value: str) -> str:
    if not _ABSOLUTE_PATH.fullmatch(value):
        raise PydanticCustomError(
            "t9k_path",
            "must be an absolute path of letters, digits and . _ / + @ , : - only (it is written"
            " into the ssh and sshd configuration, which would read quotes, %, $ and spaces"
            f" as syntax); got {value!r}",
        )
    return value


AbsolutePath = Annotated[
    str,
    Field(max_length=MAX_PATH_LENGTH),
    AfterValidator(_absolute_path),
    WithJsonSchema(
        {"type": "string", "pattern": f"^{_ABSOLUTE_PATH.pattern}$", "maxLength": MAX_PATH_LENGTH}
    ),
]
"""An absolute path that ssh_config, sshd's options and the launch scripts carry unchanged."""


class SSHConfig(K8sModel):
    """SSHConfig specifies various configurations for running the SSH daemon (sshd)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    "!has(self.authMountPath) || !self.authMountPath.matches("
                    "'^/+(t9k/*|t9k/+(hostfile|scripts)(/.*)?)?$')",
                    Msg.AUTH_MOUNT_PATH,
                    ".authMountPath",
                )
            ]
        }
    )

    auth_mount_path: AbsolutePath | None = wire_default("/root/.ssh")
    """SSHAuthMountPath is the directory where SSH keys are mounted. Defaults to "/root/.ssh"."""
    sshd_path: AbsolutePath | None = wire_default("/usr/sbin/sshd")
    """The location of the sshd executable file, an absolute path. Defaults to "/usr/sbin/sshd"."""


class ColossalAIRunPolicy(K8sModel):
    """RunPolicy dictates specific actions to be taken by the controller upon job completion."""

    clean_up_workers: Bool | None = wire_default(False)
    """Delete the worker replicas when the job finishes; the launcher is kept for its logs. Defaults to false."""

    @classmethod
    def wire_name(cls) -> str:
        """Name in the API reference."""
        return "RunPolicy"


class TorchConfig(K8sModel):
    """TorchConfig describes how to start the colossalai job."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(f"self.script[0].matches('{CAIJ_SCRIPT.pattern}')", Msg.CAIJ_SCRIPT, ".script"),
                cel(
                    f"!has(self.extraArgs) || self.extraArgs.all(a, a.matches('{CAIJ_EXTRA_ARG.pattern}'))",
                    Msg.CAIJ_EXTRA_ARGS,
                    ".extraArgs",
                ),
                cel(
                    f"!has(self.extraArgs) || !self.extraArgs.exists(a, a.matches('{CAIJ_OWNED_ARG.pattern}'))",
                    Msg.CAIJ_EXTRA_ARGS_OWNED,
                    ".extraArgs",
                ),
            ]
        }
    )

    proc_per_worker: Annotated[Int, Field(ge=1, le=MAX_SLOTS)] | None = wire_default(1)
    """The number of processes of a worker. Defaults to 1."""
    script: Annotated[
        list[Annotated[str, Field(max_length=MAX_ARG_LENGTH)]],
        Field(min_length=1, max_length=MAX_ARGS),
    ]
    """Specifies the command used to start the workers: a script and its arguments, e.g. [train.py, --epochs, "3"]."""
    extra_args: list[Annotated[str, Field(max_length=MAX_OPTION_LENGTH)]] | None = Field(
        default=None, max_length=MAX_ARGS
    )
    """Args of torchrun, each one option: '--name' or '--name=value' (passed to torchrun through colossalai run's --extra_launch_args)."""

    @model_validator(mode="after")
    def _launchable(self) -> Self:
        problems: list[tuple[str, str]] = []
        if not CAIJ_SCRIPT.fullmatch(self.script[0]):
            problems.append(("script[0]", f"{Msg.CAIJ_SCRIPT}; got {self.script[0]!r}"))
        for i, a in enumerate(self.extra_args or ()):
            if not CAIJ_EXTRA_ARG.fullmatch(a):
                problems.append((f"extraArgs[{i}]", f"{Msg.CAIJ_EXTRA_ARGS}; got {a!r}"))
            elif CAIJ_OWNED_ARG.match(a):
                problems.append((f"extraArgs[{i}]", f"{Msg.CAIJ_EXTRA_ARGS_OWNED}; got {a!r}"))
        if problems:
            raise rule_error(problems)
        return self


class ColossalAIReplicaSpec(K8sModel):
    """ReplicaSpec defines the desired state of replicas."""

    type: ColossalAIReplicaType
    """Replica type: launcher or worker."""
    replicas: Annotated[Int, Field(ge=0, le=MAX_PODS)] | None = wire_default(1)
    """The desired number of replicas of this replica type. Defaults to 1."""
    restart_policy: RestartPolicy | None = None
    """Restart policy for replicas of this replica type. One of Always, OnFailure, Never. Optional: Default to OnFailure."""
    template: PodTemplateSpec | None = None
    """Defines the template used to create pods. The launcher's may be empty: a default container is supplied."""

    @property
    def replica_count(self) -> int:
        """`replicas`, or its default 1."""
        return 1 if self.replicas is None else self.replicas

    @classmethod
    def wire_name(cls) -> str:
        """Name in the API reference."""
        return "ReplicaSpec"


def _legacy_colossalai(data: Any) -> Any:
    """Convert the pre-2025 `launcher`/`worker` schema of ColossalAIJob to `replicaSpecs`."""
    if not isinstance(data, dict) or not ({"launcher", "worker"} & data.keys()):
        return data
    if "replicaSpecs" in data or "replica_specs" in data or "torchConfig" in data:
        raise rule_error(
            [
                (
                    "",
                    "mixes the legacy launcher/worker fields with replicaSpecs/torchConfig; use one schema",
                )
            ]
        )
    warnings.warn(
        "ColossalAIJob spec.launcher/spec.worker is the legacy schema; converted to"
        " spec.replicaSpecs and spec.torchConfig",
        LegacyManifestWarning,
        stacklevel=2,
    )
    out = {k: v for k, v in data.items() if k not in ("launcher", "worker")}
    launcher = data.get("launcher") or {}
    worker = data.get("worker") or {}
    if not isinstance(launcher, dict) or not isinstance(worker, dict):
        raise rule_error([("", "legacy launcher and worker must be mappings")])
    unknown_l = set(launcher) - {"image", "workingDir", "env", "resources"}
    unknown_w = set(worker) - {"replicas", "procPerWorker", "command", "torchArgs", "template"}
    problems = [
        (f"launcher.{k}", "unknown field of the legacy launcher") for k in sorted(unknown_l)
    ]
    problems += [(f"worker.{k}", "unknown field of the legacy worker") for k in sorted(unknown_w)]
    if problems:
        raise rule_error(problems)
    container = {"name": "launcher", **{k: v for k, v in launcher.items() if v not in (None, [])}}
    torch: dict[str, Any] = {}
    if "procPerWorker" in worker:
        torch["procPerWorker"] = worker["procPerWorker"]
    if "command" in worker:
        torch["script"] = worker["command"]
    if worker.get("torchArgs"):
        torch["extraArgs"] = worker["torchArgs"]
    out["torchConfig"] = torch
    worker_spec: dict[str, Any] = {"type": "worker"}
    if "replicas" in worker:
        worker_spec["replicas"] = worker["replicas"]
    if "template" in worker:
        worker_spec["template"] = worker["template"]
    out["replicaSpecs"] = [
        {"type": "launcher", "template": {"spec": {"containers": [container]}}},
        worker_spec,
    ]
    return out


COLOSSALAI_OPERATOR_PATHS = {"/t9k/hostfile": "hostfile", "/t9k/scripts": "bootstrap scripts"}


def colossalai_reserved_paths(ssh_dir: str) -> dict[str, str]:
    """Paths of a ColossalAIJob's training containers that belong to the operator."""
    return {normalize_path(ssh_dir): "SSH keys (ssh.authMountPath)", **COLOSSALAI_OPERATOR_PATHS}


class ColossalAIJobSpec(K8sModel):
    """ColossalAIJobSpec defines the configurations of a ColossalAI training job."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(_MODE_TYPES_CEL.format(specs="replicaSpecs"), Msg.MODE_TYPES, ".runMode"),
            ]
        }
    )

    ssh: SSHConfig | None = None
    """SSH configs."""
    run_mode: RunMode | None = None
    """The desired running mode of the job, defaults to Immediate."""
    run_policy: ColossalAIRunPolicy | None = None
    """Controls the handling of completed replicas and other related processes."""
    scheduler: SchedulePolicy | None = None
    """Specifies the scheduler to request for resources. Defaults to cluster default scheduler."""
    torch_config: TorchConfig
    """Describes how to start the colossalai job."""
    replica_specs: Annotated[
        list[ColossalAIReplicaSpec],
        Field(
            min_length=1,
            max_length=MAX_REPLICA_SPECS,
            json_schema_extra={
                "x-kubernetes-validations": [
                    cel("self.all(r, self.exists_one(s, s.type == r.type))", Msg.TYPES_UNIQUE),
                    cel(
                        "self.exists_one(r, r.type == 'launcher') && self.all(r, r.type !="
                        " 'launcher' || !has(r.replicas) || r.replicas == 1)",
                        Msg.CAIJ_LAUNCHER,
                    ),
                    cel("self.exists(r, r.type == 'worker')", Msg.CAIJ_WORKER),
                    _total_pods_cel(),
                ]
            },
        ),
    ]
    """List of replica specs belonging to the job: one launcher and the workers."""

    @model_validator(mode="before")
    @classmethod
    def _legacy_schema(cls, data: Any) -> Any:
        return _legacy_colossalai(data)

    @model_validator(mode="after")
    def _cross_field_rules(self) -> Self:
        types = [r.type.value for r in self.replica_specs]
        problems = _types_unique_problems(types, "replicaSpecs")
        problems += _total_pods_problems([r.replica_count for r in self.replica_specs])
        launchers = [i for i, t in enumerate(types) if t == ColossalAIReplicaType.LAUNCHER]
        if len(launchers) != 1:
            problems.append(("replicaSpecs", f"{Msg.CAIJ_LAUNCHER}; found {len(launchers)}"))
        for i in launchers:
            n = self.replica_specs[i].replica_count
            if n != 1:
                problems.append((f"replicaSpecs[{i}].replicas", f"{Msg.CAIJ_LAUNCHER}; got {n}"))
        if ColossalAIReplicaType.WORKER not in types:
            problems.append(("replicaSpecs", Msg.CAIJ_WORKER))
        for i, r in enumerate(self.replica_specs):
            if r.type != ColossalAIReplicaType.WORKER:
                continue
            names = [
                c.name
                for c in (r.template.spec.containers if r.template and r.template.spec else None)
                or ()
            ]
            if "worker" not in names:
                problems.append(
                    (
                        f"replicaSpecs[{i}].template.spec.containers",
                        f"{Msg.CAIJ_WORKER_CONTAINER}; found {names}",
                    )
                )
        problems += [
            (f"runMode.{path}", f"{Msg.MODE_TYPES}; no replica type {t!r}")
            for path, t in (self.run_mode.mode_types() if self.run_mode else ())
            if t not in types
        ]
        problems += self._mount_rules()
        if problems:
            raise rule_error(problems)
        return self

    def _mount_rules(self) -> list[tuple[str, str]]:
        ssh_dir = (self.ssh.auth_mount_path if self.ssh else None) or str(
            SSHConfig.default_of("auth_mount_path")
        )
        if mount_problems([ssh_dir], COLOSSALAI_OPERATOR_PATHS):
            return [("ssh.authMountPath", f"{Msg.AUTH_MOUNT_PATH}; got {ssh_dir!r}")]
        reserved = colossalai_reserved_paths(ssh_dir)
        problems: list[tuple[str, str]] = []
        for i, r in enumerate(self.replica_specs):
            problems += _mount_problems(
                r.template, f"replicaSpecs[{i}].template", r.type.value, reserved
            )
        return problems

    def replica(self, type: ColossalAIReplicaType) -> ColossalAIReplicaSpec | None:
        """The replica spec of `type`, if present."""
        return next((r for r in self.replica_specs if r.type == type), None)


class ColossalAIJob(_Job):
    """ColossalAIJob is the Schema for the colossalaijobs API."""

    KIND: ClassVar[str] = "ColossalAIJob"
    _NAME_LENGTH_MESSAGE: ClassVar[str] = Msg.CAIJ_POD_NAME_LENGTH
    PLURAL: ClassVar[str] = "colossalaijobs"
    SHORT_NAME: ClassVar[str] = "caij"
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                _NAME_CEL,
                _CAIJ_NAMES_CEL,
            ]
        }
    )

    api_version: Literal["batch.tensorstack.dev/v1beta1"] = API_VERSION
    """batch.tensorstack.dev/v1beta1"""
    kind: Literal["ColossalAIJob"] = "ColossalAIJob"
    """ColossalAIJob"""
    metadata: JobMeta
    """Refer to Kubernetes API documentation for fields of metadata."""
    spec: ColossalAIJobSpec
    """The desired state of the job."""
    status: ColossalAIJobStatus | None = wire_default({})
    """The observed state of the job, written by the controller. Until the controller first writes it, the API server shows `{observedGeneration: 0}`, so that kstatus-based tools see a job not yet observed as in progress."""

    def _longest_pod_suffix(self) -> int:
        return max(
            (
                len("-launcher")
                if r.type == ColossalAIReplicaType.LAUNCHER
                else len(r.type.value) + len(str(max(r.replica_count - 1, 0))) + 2
            )
            for r in self.spec.replica_specs
        )


class ColossalAIJobList(K8sModel):
    """ColossalAIJobList contains a list of ColossalAIJob."""

    api_version: Literal["batch.tensorstack.dev/v1beta1"] = API_VERSION
    """batch.tensorstack.dev/v1beta1"""
    kind: Literal["ColossalAIJobList"] = "ColossalAIJobList"
    """ColossalAIJobList"""
    metadata: ListMeta | None = None
    """Refer to Kubernetes API documentation for fields of metadata."""
    items: list[ColossalAIJob]
    """The jobs."""


# ---------------------------------------------------------------------------------------------
# DeepSpeedJob
# ---------------------------------------------------------------------------------------------


class RunType(K8sModel):
    """How the training program should be started. Exactly one of the 3 choices should be set."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    "(has(self.python) ? 1 : 0) + (has(self.module) ? 1 : 0)"
                    " + (has(self.exec) ? 1 : 0) == 1",
                    Msg.RUN_EXACTLY_ONE,
                )
            ]
        }
    )

    python: list[str] | None = Field(default=None, max_length=MAX_ARGS)
    """Using a python script: the script and its arguments."""
    module: list[str] | None = Field(default=None, max_length=MAX_ARGS)
    """Using a python module: the module and its arguments (deepspeed --module)."""
    exec: list[str] | None = Field(default=None, max_length=MAX_ARGS)
    """Using an executable program: the program and its arguments (deepspeed --no_python)."""

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        given = [n for n in ("python", "module", "exec") if getattr(self, n) is not None]
        if len(given) != 1:
            raise rule_error([("", f"{Msg.RUN_EXACTLY_ONE}; got {given or 'none'}")])
        return self


_FORBIDDEN_OTHER_ARGS = ("--no_local_rank", "--autotuning", "--module", "--no_python")


class Config(K8sModel):
    """Configuration information for running a DeepSpeed job. Details are outlined in the official DeepSpeed documentation (https://www.deepspeed.ai/getting-started/) for comprehensive guidance."""

    custom_command: str | None = None
    """Custom launch commands, when enabled, other options in Config except for slotsPerWorker will not take effect."""
    slots_per_worker: Annotated[Int, Field(ge=1, le=MAX_SLOTS)] | None = wire_default(1)
    """The number of slots for each worker/replica. This is normally set to the number of GPUs requested for each replica."""
    local_rank: Bool | None = wire_default(True)
    """If parameter local_rank should be passed to training programs."""
    autotune: AutotuneType | None = wire_default(AutotuneType.NONE.value)
    """Parameters for running the autotuning process to find configurations for a training job on a particular cluster/machine."""
    run: RunType | None = None
    """Mechanism to start the training program."""
    other_args: (
        Annotated[
            list[str],
            Field(
                max_length=MAX_ARGS,
                json_schema_extra={
                    "x-kubernetes-validations": [
                        cel(
                            "!self.exists(a, a in ['--no_local_rank', '--autotuning', '--module',"
                            " '--no_python'] || a.startsWith('--autotuning='))",
                            Msg.OTHER_ARGS,
                        )
                    ]
                },
            ),
        ]
        | None
    ) = None
    """Setting up other command line args for the deepspeed job."""

    @model_validator(mode="after")
    def _other_args(self) -> Self:
        bad = [
            (f"otherArgs[{i}]", f"{Msg.OTHER_ARGS}; got {a!r}")
            for i, a in enumerate(self.other_args or ())
            if a in _FORBIDDEN_OTHER_ARGS or a.startswith("--autotuning=")
        ]
        if bad:
            raise rule_error(bad)
        return self


class ElasticConfig(K8sModel):
    """Configuration governing the elastic scaling behavior of the job."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    "!has(self.enabled) || !self.enabled"
                    " || (has(self.minReplicas) && has(self.maxReplicas))",
                    Msg.ELASTIC_BOUNDS,
                ),
                cel(
                    "(!has(self.minReplicas) || !has(self.maxReplicas)"
                    " || self.minReplicas <= self.maxReplicas)"
                    " && (!has(self.expectedReplicas) || ((!has(self.minReplicas)"
                    " || self.minReplicas <= self.expectedReplicas) && (!has(self.maxReplicas)"
                    " || self.expectedReplicas <= self.maxReplicas)))",
                    Msg.ELASTIC_ORDER,
                ),
                cel(
                    "has(self.minReplicas) == has(oldSelf.minReplicas) && has(self.maxReplicas)"
                    " == has(oldSelf.maxReplicas) && (!has(self.minReplicas) || self.minReplicas"
                    " == oldSelf.minReplicas) && (!has(self.maxReplicas) || self.maxReplicas"
                    " == oldSelf.maxReplicas)",
                    Msg.ELASTIC_IMMUTABLE,
                ),
            ]
        }
    )

    enabled: Bool | None = wire_default(False)
    """Set true to use elastic training."""
    min_replicas: Annotated[Int, Field(ge=1, le=MAX_PODS)] | None = None
    """The minimum number of replicas to start to run this elastic compute. The autoscaler cannot scale down an elastic job below this number. This value cannot be changed once the job is created."""
    max_replicas: Annotated[Int, Field(ge=1, le=MAX_PODS)] | None = None
    """The maximum number of replicas to start to run this elastic compute. The autoscaler cannot scale up an elastic job over this number. This value cannot be changed once the job is created."""
    expected_replicas: Annotated[Int, Field(ge=1, le=MAX_PODS)] | None = None
    """Number of replicas to be created. This number can be set to an initial value upon creation. This value can be modified dynamically by an external entity, such as a user or an autoscaler, to scale the job up or down."""

    @model_validator(mode="before")
    @classmethod
    def _legacy_enable(cls, data: Any) -> Any:
        return _rename_legacy_enable(data, "elastic")

    @model_validator(mode="after")
    def _bounds(self) -> Self:
        lo, hi, want = self.min_replicas, self.max_replicas, self.expected_replicas
        if self.enabled and (lo is None or hi is None):
            raise rule_error(
                [("", f"{Msg.ELASTIC_BOUNDS}; got minReplicas={lo}, maxReplicas={hi}")]
            )
        ordered = [v for v in (lo, want, hi) if v is not None]
        if ordered != sorted(ordered):
            raise rule_error(
                [
                    (
                        "",
                        f"{Msg.ELASTIC_ORDER}; got minReplicas={lo}, expectedReplicas={want},"
                        f" maxReplicas={hi}",
                    )
                ]
            )
        return self


class DeepSpeedRunPolicy(K8sModel):
    """RunPolicy encapsulates various runtime policies of the distributed training job, for example how to clean up resources and how long the job can stay active."""

    active_deadline_seconds: Annotated[Int, Field(ge=1)] | None = None
    """Specifies the duration in seconds relative to the startTime that the job may be active before the system tries to terminate it; value must be positive integer."""
    backoff_limit: Annotated[Int, Field(ge=0)] | None = wire_default(3)
    """Optional number of retries before marking this job failed. Defaults to 3."""
    clean_up_policy: CleanUpPolicy | None = wire_default(CleanUpPolicy.NONE.value)
    """Clean the tasks after the training job finished: None (default), Unfinished or All."""

    @classmethod
    def wire_name(cls) -> str:
        """Name in the API reference."""
        return "RunPolicy"


class Worker(K8sModel):
    """Worker defines the configurations for DeepSpeedJob worker replicas."""

    replicas: Annotated[Int, Field(ge=0, le=MAX_PODS)] | None = wire_default(1)
    """The number of workers to launch. Defaults to 1."""
    template: PodTemplateSpec
    """Describes the pod that will be created for this replica. Note that RestartPolicy in PodTemplateSpec will always be set to Never as the job controller will decide if restarts are desired."""
    restart_policy: RestartPolicyType | None = wire_default(RestartPolicyType.ON_FAILURE.value)
    """Restart policy for all replicas owned by the job. One of Always, OnFailure, Never, or ExitCode. Defaults to OnFailure."""

    @property
    def replica_count(self) -> int:
        """`replicas`, or its default 1."""
        return 1 if self.replicas is None else self.replicas


DEEPSPEED_RESERVED_PATHS = {
    "/root/.ssh": "SSH keys",
    "/t9k/hostfile": "hostfile",
    "/t9k/scripts": "bootstrap scripts",
    "/t9k/run": "in-memory session environment",
    "/root/.deepspeed_env": "DeepSpeed env file",
}
"""Paths of a DeepSpeedJob's training container that belong to the operator (and DeepSpeed)."""


def _dj_mounts_cel() -> dict[str, Any]:
    """The reserved-path rule as CEL, where the API server's cost budget allows it: the first
    container's mounts when it is the training container (every container's mounts, two nested
    lists, would cost 100 times the budget). The SDK and the operator check every case."""
    t = "self.worker.template.spec"
    allowed = ["m.mountPath != '/'", "m.mountPath != '/t9k'"] + [
        f"m.mountPath != '{r}' && !m.mountPath.startsWith('{r}/')" for r in DEEPSPEED_RESERVED_PATHS
    ]
    return cel(
        f"!has({t}) || !has({t}.containers) || size({t}.containers) == 0"
        f" || ({t}.containers[0].name != 'worker' && {t}.containers.exists(c, c.name == 'worker'))"
        f" || !has({t}.containers[0].volumeMounts)"
        f" || {t}.containers[0].volumeMounts.all(m, {' && '.join(allowed)})",
        Msg.DJ_MOUNTS,
        ".worker.template",
    )


_DJ_MOUNTS_CEL = _dj_mounts_cel()


_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _forwarded_env_problems(template: PodTemplateSpec) -> list[tuple[str, str]]:
    """The container's variables reach every rank through a shell (DeepSpeed's launch, the ssh
    sessions): a name a shell cannot hold (`A-DASH`, `A.DOT`) would be lost on the way."""
    spec = template.spec
    out = []
    for i, c in enumerate((spec.containers if spec else None) or ()):
        for j, e in enumerate(c.env or ()):
            if not _SHELL_NAME.fullmatch(e.name):
                out.append(
                    (
                        f"worker.template.spec.containers[{i}].env[{j}].name",
                        "a DeepSpeedJob forwards its containers' environment to every training"
                        " process through a shell, which can only carry names of letters,"
                        " digits and '_' not starting with a digit; rename it, or set"
                        f" disableCustomEnv: true to keep it for the entrypoint only; got"
                        f" {e.name!r}",
                    )
                )
    return out


class DeepSpeedJobSpec(K8sModel):
    """DeepSpeedJobSpec outlines the intended configuration and execution parameters for a DeepSpeedJob."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    "(has(self.runMode) && has(self.runMode.debug) && has(self.runMode.debug.enabled)"
                    " && self.runMode.debug.enabled) || (has(self.config) && (has(self.config.run)"
                    " || (has(self.config.customCommand) && self.config.customCommand != '')))",
                    Msg.LAUNCH,
                    ".config",
                ),
                cel(
                    "has(self.worker.template.spec) && has(self.worker.template.spec.containers)"
                    " && size(self.worker.template.spec.containers) > 0",
                    Msg.CONTAINERS,
                    ".worker.template",
                ),
                _DJ_MOUNTS_CEL,
                cel(
                    "!has(self.worker.template.spec) || !has(self.worker.template.spec.volumes)"
                    " || !self.worker.template.spec.volumes.exists(v, v.name in"
                    f" {list(RESERVED_VOLUMES)!r})",
                    Msg.VOLUME_RESERVED,
                    ".worker.template",
                ),
                cel(
                    "(has(self.runMode) && has(self.runMode.debug) && has(self.runMode.debug.enabled)"
                    " && self.runMode.debug.enabled) || !has(self.config) || !has(self.config.run)"
                    " || (has(self.config.customCommand) && self.config.customCommand != '')"
                    " || ((!has(self.config.run.python) || (size(self.config.run.python) > 0"
                    " && self.config.run.python[0] != ''))"
                    " && (!has(self.config.run.module) || (size(self.config.run.module) > 0"
                    " && self.config.run.module[0] != ''))"
                    " && (!has(self.config.run.exec) || (size(self.config.run.exec) > 0"
                    " && self.config.run.exec[0] != '')))",
                    Msg.RUN_EMPTY,
                    ".config.run",
                ),
                cel(
                    "(!has(self.runMode) || !has(self.runMode.debug) || !has(self.runMode.debug.replicaSpecs)"
                    " || self.runMode.debug.replicaSpecs.all(d, d.type == 'worker'))"
                    " && (!has(self.runMode) || !has(self.runMode.pause) || !has(self.runMode.pause.resumeSpecs)"
                    " || self.runMode.pause.resumeSpecs.all(d, d.type == 'worker'))",
                    Msg.MODE_TYPES,
                    ".runMode",
                ),
            ]
        }
    )

    scheduler: SchedulePolicy | None = None
    """Identifies the preferred scheduler for allocating resources to replicas. Defaults to cluster default scheduler."""
    run_policy: DeepSpeedRunPolicy | None = None
    """Execution policy configurations governing the behavior of the distributed training job."""
    run_mode: RunMode | None = None
    """Job's execution behavior. If omitted, defaults to Immediate mode, and tasks are executed immediately upon submission."""
    elastic: ElasticConfig | None = None
    """Configurations for how to launch an elastic training."""
    config: Config | None = None
    """Key configurations for executing DeepSpeed training jobs."""
    disable_custom_env: Bool | None = wire_default(False)
    """false (default): the environment variables set in the job spec are written to an env file that the launcher distributes to every training process; true: they only apply to the container entrypoint."""
    worker: Worker
    """Specifications for the worker replicas."""

    @model_validator(mode="after")
    def _cross_field_rules(self) -> Self:
        problems: list[tuple[str, str]] = []
        debug = bool(self.run_mode and self.run_mode.debug_enabled)
        cfg = self.config
        if not debug and not (cfg and (cfg.run is not None or cfg.custom_command)):
            problems.append(("config", Msg.LAUNCH))
        if not _has_container(self.worker.template):
            problems.append(("worker.template.spec.containers", Msg.CONTAINERS))
        problems += [
            (f"runMode.{path}", f"{Msg.MODE_TYPES}; DeepSpeedJob has only 'worker', got {t!r}")
            for path, t in (self.run_mode.mode_types() if self.run_mode else ())
            if t != "worker"
        ]
        run = cfg.run if cfg and not cfg.custom_command else None
        if run is not None and not debug:
            problems += [
                (f"config.run.{n}", f"{Msg.RUN_EMPTY}; got {list(v)!r}")
                for n in ("python", "module", "exec")
                if (v := getattr(run, n)) is not None and (not v or not v[0])
            ]
        problems += _mount_problems(
            self.worker.template,
            "worker.template",
            "worker",
            DEEPSPEED_RESERVED_PATHS,
            Msg.DJ_MOUNTS,
        )
        if not self.disable_custom_env:
            problems += _forwarded_env_problems(self.worker.template)
        if problems:
            raise rule_error(problems)
        return self

    @property
    def max_workers(self) -> int:
        """The largest number of workers the job may have (elastic maxReplicas, else replicas)."""
        n = self.worker.replica_count
        if self.elastic:  # counted even when disabled: the CRD's rule cannot tell either way
            n = max(n, self.elastic.max_replicas or 0)
            if self.elastic.enabled:
                n = max(n, self.elastic.expected_replicas or 0)
        return n


class DeepSpeedJob(_Job):
    """DeepSpeedJob defines the schema for the DeepSpeedJob API."""

    KIND: ClassVar[str] = "DeepSpeedJob"
    _NAME_LENGTH_MESSAGE: ClassVar[str] = Msg.DJ_POD_NAME_LENGTH
    PLURAL: ClassVar[str] = "deepspeedjobs"
    SHORT_NAME: ClassVar[str] = "dj"
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                _NAME_CEL,
                cel(
                    "!has(self.metadata.name) || size(self.metadata.name) + size('-worker-')"
                    " + size(string(max_workers > 0 ? max_workers - 1 : 0)) <= 63".replace(
                        "max_workers",
                        "((has(self.spec.elastic) && has(self.spec.elastic.maxReplicas)"
                        " && self.spec.elastic.maxReplicas > (has(self.spec.worker.replicas)"
                        " ? self.spec.worker.replicas : 1)) ? self.spec.elastic.maxReplicas"
                        " : (has(self.spec.worker.replicas) ? self.spec.worker.replicas : 1))",
                    ),
                    Msg.DJ_POD_NAME_LENGTH,
                ),
            ]
        }
    )

    api_version: Literal["batch.tensorstack.dev/v1beta1"] = API_VERSION
    """batch.tensorstack.dev/v1beta1"""
    kind: Literal["DeepSpeedJob"] = "DeepSpeedJob"
    """DeepSpeedJob"""
    metadata: JobMeta
    """Refer to Kubernetes API documentation for fields of metadata."""
    spec: DeepSpeedJobSpec
    """The desired state of the job."""
    status: DeepSpeedJobStatus | None = wire_default({})
    """The observed state of the job, written by the controller. Until the controller first writes it, the API server shows `{observedGeneration: 0}`, so that kstatus-based tools see a job not yet observed as in progress."""

    def _longest_pod_suffix(self) -> int:
        return len("-worker-") + len(str(max(self.spec.max_workers - 1, 0)))


class DeepSpeedJobList(K8sModel):
    """DeepSpeedJobList contains a list of DeepSpeedJob."""

    api_version: Literal["batch.tensorstack.dev/v1beta1"] = API_VERSION
    """batch.tensorstack.dev/v1beta1"""
    kind: Literal["DeepSpeedJobList"] = "DeepSpeedJobList"
    """DeepSpeedJobList"""
    metadata: ListMeta | None = None
    """Refer to Kubernetes API documentation for fields of metadata."""
    items: list[DeepSpeedJob]
    """The jobs."""
