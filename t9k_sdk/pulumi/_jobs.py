"""The job components: `GenericJob`, `DeepSpeedJob` and `ColossalAIJob` as Pulumi resources.

Each creates one `kubernetes.apiextensions.CustomResource` whose `spec` is exactly
`t9k_sdk.to_manifest(job)["spec"]`, the manifest the YAML renderer writes (camelCase keys, passed
as a plain dict so that nothing translates them: pulumi-kubernetes #1740).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar, Final, Literal, NotRequired, TypedDict, cast, get_args

import pulumi
import pulumi_kubernetes as k8s

from t9k_sdk import _conventions as conventions
from t9k_sdk import _kinds, builders, codecs, models
from t9k_sdk import _objects as o
from t9k_sdk._duration import parse_duration
from t9k_sdk.codecs import AnyJob
from t9k_sdk.errors import InvalidManifestError, Problem
from t9k_sdk.install import validate_namespace
from t9k_sdk.pulumi._args import checked_input, describe, unknown_keys_error
from t9k_sdk.pulumi._operator import T9kOperator
from t9k_sdk.pulumi._outputs import output_of, placeholders, substitute
from t9k_sdk.validation import validate_manifest

__all__ = [
    "REPLACE_ON_CHANGES",
    "AwaitPhase",
    "ColossalAIJob",
    "ColossalAIJobArgs",
    "DeepSpeedJob",
    "DeepSpeedJobArgs",
    "GenericJob",
    "GenericJobArgs",
    "InvalidJobOutputError",
    "JobFailedError",
]

AwaitPhase = Literal["Running", "Succeeded"]
"""What `up` waits for: "Running" (every replica running, or already finished) or "Succeeded"
(the job finished; `up` fails if it failed)."""

DEFAULT_TIMEOUT: Final = "10m"
"""How long `up` waits for `await_phase` when no `timeout` is given (the provider's default)."""

WAIT_FOR: Final = "pulumi.com/waitFor"
TIMEOUT_SECONDS: Final = "pulumi.com/timeoutSeconds"

_RESUME_SPECS = "spec.runMode.pause.resumeSpecs"
REPLACE_ON_CHANGES: Final[Mapping[str, tuple[str, ...]]] = {
    models.GenericJob.KIND: (
        "spec.replicaSpecs",
        "spec.service",
        "spec.scheduler",
        _RESUME_SPECS,
    ),
    models.DeepSpeedJob.KIND: (
        "spec.worker",
        "spec.config",
        "spec.disableCustomEnv",
        "spec.scheduler",
        "spec.elastic.minReplicas",
        "spec.elastic.maxReplicas",
        _RESUME_SPECS,
    ),
    models.ColossalAIJob.KIND: (
        "spec.replicaSpecs",
        "spec.torchConfig",
        "spec.ssh",
        "spec.scheduler",
        _RESUME_SPECS,
    ),
}
"""Per kind, the spec fields whose change replaces the job (delete, then create) instead of
updating it in place.

* Rejected by the CRD once the job exists: `elastic.minReplicas`/`maxReplicas`,
  `runMode.pause.resumeSpecs`.
* Baked into pods when the operator creates them, which it does not recreate when the spec
  changes: replica specs and pod templates (`replicaSpecs`, `worker`), what the launcher runs
  (`config`, `torchConfig`, `disableCustomEnv`), the ssh set-up (`ssh`), per-replica services whose
  hosts and ports are substituted into commands (`service`), the scheduler (`schedulerName` and
  queue labels on every pod).

Everything else updates in place and the operator acts on it: `runMode` (pause, resume, debug),
`elastic.enabled`/`expectedReplicas` (scale), `runPolicy`, `cleanUpPolicy`, `successRules`,
`failureRules`, and labels and annotations.
"""

# JSONPath (RFC 9535, as the provider evaluates it) over the job's conditions, for waitFor. The
# provider ANDs a list of expressions, so "Running, or already finished" is one filter. The
# operator sets Completed=True when the job ends either way, and Failed=True as well when it failed.
_RUNNING_OR_DONE: Final = (
    "jsonpath={.status.conditions[?(@.status=='True' && "
    "(@.type=='Running' || @.type=='Completed'))].type}"
)
_DONE: Final = "jsonpath={.status.conditions[?(@.status=='True' && @.type=='Completed')].type}"
_PAUSED: Final = "jsonpath={.status.conditions[?(@.status=='True' && @.type=='Paused')].type}"


class JobFailedError(pulumi.RunError):
    """The job failed while `up` waited for it (see `await_phase`).

    A `pulumi.RunError`, so `up` shows the message without a Python stack trace."""


class InvalidJobOutputError(InvalidManifestError, pulumi.RunError):
    """A job is invalid once the Pulumi Outputs in its builder's fields (given directly or with
    `deferred`) resolved (at `up`).

    An `InvalidManifestError` (the builders' error type, with a `problems` list naming each
    field, its value and what is allowed) and a `pulumi.RunError`, so `up` fails with the
    message and no Python stack trace."""


class _JobArgsBase(TypedDict):
    """The string arguments take a `str` or a `pulumi.Input[str]` (an Output of another
    resource): an Output is checked, as a `str` is at once, when its value is known, and a bad
    value fails `up` with `InvalidOutputArgumentError`."""

    namespace: NotRequired[pulumi.Input[str]]
    """Namespace of the job; overrides the job's own. Neither: the provider's default namespace."""
    await_phase: NotRequired[pulumi.Input[AwaitPhase] | None]
    """None (the default): `up` creates or updates the job and returns. "Running": `up` waits
    until every replica runs (or the job already finished). "Succeeded": `up` waits until the job
    finishes, and fails with the reason if the job failed. A paused job is awaited until its
    replicas are gone instead. An Output must resolve to "Running" or "Succeeded"."""
    timeout: NotRequired[pulumi.Input[str]]
    """How long `up` waits for `await_phase`, as `t9k-sdk wait --timeout` takes it: "90s",
    "30m", "1h30m", "1.5h", "2d" or seconds as digits (default "10m"). Only with
    `await_phase`."""
    operator: NotRequired[T9kOperator]
    """A `T9kOperator` of the same stack: the job is created after its CRDs and Deployment (and
    deleted before them)."""
    kueue_queue: NotRequired[str]
    """Kueue LocalQueue that admits the job as one gang (Kueue's label
    `kueue.x-k8s.io/queue-name` on the job), as the builders' `kueue_queue` sets it."""
    kueue_priority_class: NotRequired[str]
    """Kueue WorkloadPriorityClass of the job (the label `kueue.x-k8s.io/priority-class`; needs
    a queue, here or on the job)."""
    restart_scope: NotRequired[models.RestartScope]
    """What a retryable failure restarts (the annotation `t9k-sdk.dev/restart-scope`, a
    t9k-sdk extension T9k ignores), as the builders' `restart_scope` sets it: "Replica" (T9k's
    behaviour) the failed pod alone, "Job" every replica together, counted once."""
    node_lost_after: NotRequired[int]
    """Seconds a pod's node may be NotReady before the operator replaces the pod (the
    annotation `t9k-sdk.dev/node-lost-after`, a t9k-sdk extension T9k ignores), as the
    builders' `node_lost_after` sets it; absent: the operator's `--node-lost-after`."""


class GenericJobArgs(_JobArgsBase):
    """Inputs of `t9k_sdk.pulumi.GenericJob`."""

    job: builders.GenericJob | builders.TorchrunJob | models.GenericJob
    """The job: the builder `t9k_sdk.GenericJob` or `t9k_sdk.TorchrunJob`, or the wire model
    `t9k_sdk.models.GenericJob`."""


class DeepSpeedJobArgs(_JobArgsBase):
    """Inputs of `t9k_sdk.pulumi.DeepSpeedJob`."""

    job: builders.DeepSpeedJob | models.DeepSpeedJob
    """The job: `t9k_sdk.DeepSpeedJob` or `t9k_sdk.models.DeepSpeedJob`."""


class ColossalAIJobArgs(_JobArgsBase):
    """Inputs of `t9k_sdk.pulumi.ColossalAIJob`."""

    job: builders.ColossalAIJob | models.ColossalAIJob
    """The job: `t9k_sdk.ColossalAIJob` or `t9k_sdk.models.ColossalAIJob`."""


def parse_timeout(value: str) -> int:
    """Whole seconds (rounded up) of a timeout in the CLI's duration grammar: "90s", "30m",
    "1h30m", "1.5h", "2d" or plain digits (seconds); more than 0."""
    try:
        seconds = math.ceil(parse_duration(value))
    except ValueError:
        raise ValueError(
            'timeout must be a duration like "90s", "30m", "1h30m" or "1.5h" (or seconds), as'
            f" t9k-sdk wait --timeout takes; got {value!r}"
        ) from None
    if seconds <= 0:
        raise ValueError(f"timeout must be positive; got {value!r}")
    return seconds


class _JobResource(k8s.apiextensions.CustomResource):
    """The job object: a `CustomResource` that also resolves `status` from the provider's result.

    pulumi-kubernetes' `CustomResource` registers only apiVersion, kind, metadata and spec, so its
    Python object has no `status` output even though the provider returns the live object. This
    registers the same properties plus `status` (as the typed Kubernetes resources do) and keeps
    every input a plain dict, so no key is case-translated.
    """

    metadata: pulumi.Output[Any]
    status: pulumi.Output[Any]

    def _internal_init(
        self,
        resource_name: str,
        api_version: str,
        kind: str,
        opts: pulumi.ResourceOptions | None = None,
        metadata: Any = None,
        spec: Any = None,
        __props__: Any = None,
    ) -> None:
        props = {
            "apiVersion": api_version,
            "kind": kind,
            "metadata": metadata,
            "spec": spec,
            "status": None,
        }
        pulumi.CustomResource.__init__(
            self, f"kubernetes:{api_version}:{kind}", resource_name, props, opts
        )


class _JobComponent(pulumi.ComponentResource):
    """What the three job components share; see `GenericJob`."""

    KIND: ClassVar[str]

    name: pulumi.Output[str]
    """`metadata.name` of the job."""
    namespace: pulumi.Output[str]
    """`metadata.namespace` of the job (as the API server stored it)."""
    uid: pulumi.Output[str]
    """`metadata.uid` of the job (changes when the job is replaced)."""
    phase: pulumi.Output[str | None]
    """`status.phase` when `up` finished waiting (with `await_phase`); None without it."""
    custom_resource: k8s.apiextensions.CustomResource
    """The job object itself (to `depends_on`, or to read more of its outputs)."""
    manifest: codecs.Manifest
    """The job's manifest as `t9k_sdk.to_manifest` gives it (before namespace and await
    annotations are applied)."""

    def __init__(
        self, resource_name: str, args: Mapping[str, Any], opts: pulumi.ResourceOptions | None
    ) -> None:
        _check_keys(self.KIND, resource_name, args)
        subject = f"{self.KIND} {resource_name!r}"
        job = _with_extensions(
            subject, _with_kueue(subject, _job_model(self.KIND, args.get("job")), args), args
        )
        await_phase, seconds = _await_inputs(subject, args, debug=_debug(job))
        namespace = checked_input(subject, "namespace", args.get("namespace"), validate_namespace)
        extra = _operator_dependencies(subject, self.KIND, args.get("operator"))

        super().__init__(f"t9k:batch:{self.KIND}", resource_name, {}, opts)

        self.manifest = codecs.to_manifest(job)
        metadata = _metadata(self.manifest, job, namespace, await_phase, seconds)
        child = pulumi.ResourceOptions.merge(
            pulumi.ResourceOptions(depends_on=opts.depends_on if opts else None),
            pulumi.ResourceOptions(
                parent=self,
                depends_on=extra,
                replace_on_changes=list(REPLACE_ON_CHANGES[self.KIND]),
                # The name is fixed, so the old job must go before the new one is created
                # (pulumi-kubernetes only does this itself for replacements it decides).
                delete_before_replace=bool(job.metadata.name),
            ),
        )
        meta_input: pulumi.Input[Any] = metadata
        spec: pulumi.Input[Any] = self.manifest["spec"]
        if any(placeholders(self.manifest)):
            # Values given with `deferred`: resolved (and validated) when they are known.
            meta_input, spec = _resolved(subject, self.manifest, metadata)
        resource = _JobResource(
            resource_name,
            api_version=models.API_VERSION,
            kind=self.KIND,
            metadata=meta_input,
            spec=spec,
            opts=child,
        )
        self._set_outputs(resource, await_phase)

    def _set_outputs(
        self, resource: _JobResource, await_phase: AwaitPhase | pulumi.Output[AwaitPhase] | None
    ) -> None:
        """The component's outputs, from the job object's, and their registration."""
        self.custom_resource = resource
        meta: pulumi.Output[Any] = resource.metadata
        self.name = meta.apply(lambda m: str(m["name"]))
        self.namespace = meta.apply(lambda m: o.Meta(o.mapping(m)).namespace)
        self.uid = meta.apply(lambda m: o.Meta(o.mapping(m)).uid)
        if await_phase is None:
            self.phase = pulumi.Output.from_input(None)
        else:
            kind = self.KIND
            self.phase = pulumi.Output.all(meta, resource.status, await_phase).apply(
                lambda known: _checked_phase(kind, known[2], known[0], known[1])
            )
        self.register_outputs(
            {"name": self.name, "namespace": self.namespace, "uid": self.uid, "phase": self.phase}
        )


def _with_kueue(subject: str, job: AnyJob, args: Mapping[str, Any]) -> AnyJob:
    """`job` with the Kueue labels of `kueue_queue` and `kueue_priority_class`; a ValueError
    names the argument when one is not a Kueue object name, disagrees with the job's own label,
    or (the priority) has no queue."""
    labels = dict(job.metadata.labels or {})
    for argument, label in (
        ("kueue_queue", conventions.KUEUE_QUEUE_LABEL),
        ("kueue_priority_class", conventions.KUEUE_PRIORITY_LABEL),
    ):
        value = args.get(argument)
        if value is None:
            continue
        if not isinstance(value, str) or not conventions.KUEUE_NAME.fullmatch(value):
            raise ValueError(
                f"{subject}: {argument} must be a Kueue object name (at most 63 lowercase"
                f" letters, digits, '-' and '.', starting and ending with a letter or digit);"
                f" got {value!r}"
            )
        if labels.get(label, value) != value:
            raise ValueError(
                f"{subject}: {argument}={value!r} disagrees with the job's label"
                f" {label}={labels[label]!r}: give one of them"
            )
        labels[label] = value
    if conventions.KUEUE_PRIORITY_LABEL in labels and conventions.KUEUE_QUEUE_LABEL not in labels:
        raise ValueError(
            f"{subject}: kueue_priority_class needs kueue_queue: Kueue priorities apply to jobs"
            " it admits from a queue"
        )
    if labels == dict(job.metadata.labels or {}):
        return job
    metadata = job.metadata.model_copy(update={"labels": labels})
    return job.model_copy(update={"metadata": metadata})


def _with_extensions(subject: str, job: AnyJob, args: Mapping[str, Any]) -> AnyJob:
    """`job` with the annotations of `restart_scope` and `node_lost_after`; a ValueError names
    the argument when its value is not allowed or disagrees with the job's own annotation."""
    annotations = dict(job.metadata.annotations or {})
    for argument, key, value in (
        ("restart_scope", models.RESTART_SCOPE_ANNOTATION, _restart_scope(subject, args)),
        ("node_lost_after", models.NODE_LOST_AFTER_ANNOTATION, _node_lost_after(subject, args)),
    ):
        if value is None:
            continue
        if annotations.get(key, value) != value:
            raise ValueError(
                f"{subject}: {argument}={args[argument]!r} disagrees with the job's annotation"
                f" {key}={annotations[key]!r}: give one of them"
            )
        annotations[key] = value
    if annotations == dict(job.metadata.annotations or {}):
        return job
    metadata = job.metadata.model_copy(update={"annotations": annotations})
    return job.model_copy(update={"metadata": metadata})


def _restart_scope(subject: str, args: Mapping[str, Any]) -> str | None:
    value = args.get("restart_scope")
    if value is not None and value not in models.RESTART_SCOPES:
        raise ValueError(
            f"{subject}: restart_scope must be one of"
            f" {', '.join(map(repr, models.RESTART_SCOPES))}; got {str(value)[:80]!r}"
        )
    return value


def _node_lost_after(subject: str, args: Mapping[str, Any]) -> str | None:
    value = args.get("node_lost_after")
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 0 <= value <= models.MAX_NODE_LOST_AFTER
    ):
        raise ValueError(
            f"{subject}: node_lost_after must be a whole number of seconds from 0 to"
            f" {models.MAX_NODE_LOST_AFTER}; got {str(value)[:80]!r}"
        )
    return str(value)


def _check_keys(kind: str, resource_name: str, args: object) -> None:
    """TypeError unless `args` is a mapping with no key but those of the job arguments."""
    if not isinstance(args, Mapping):
        raise TypeError(
            f"{kind} {resource_name!r}: args must be a dict such as"
            f' {{"job": ...}}; got {describe(args)}'
        )
    known = ["job", *(k for k in _JobArgsBase.__annotations__ if k != "job")]
    unknown = unknown_keys_error(kind, resource_name, args, known)
    if unknown is not None:
        raise unknown


def _await_inputs(
    subject: str, args: Mapping[str, Any], *, debug: bool
) -> tuple[AwaitPhase | pulumi.Output[AwaitPhase] | None, str | pulumi.Output[str] | None]:
    """`await_phase` and the timeout in seconds, each checked (an Output when it is known)."""

    def phase_of(value: str) -> AwaitPhase:
        phase = _await_phase(value)
        if phase == "Succeeded" and debug:
            raise ValueError(
                "a job in debug mode never finishes by itself;"
                ' await "Running" (or nothing) instead of "Succeeded"'
            )
        return phase

    await_phase = checked_input(subject, "await_phase", args.get("await_phase"), phase_of)
    timeout = args.get("timeout")
    if timeout is not None and await_phase is None:
        given = repr(timeout) if isinstance(timeout, str) else f"<{describe(timeout)}>"
        raise ValueError(
            f'{subject}: timeout={given} only applies with await_phase ("Running" or'
            ' "Succeeded")'
        )
    seconds = checked_input(
        subject,
        "timeout",
        DEFAULT_TIMEOUT if timeout is None else timeout,
        lambda value: str(parse_timeout(value)),
    )
    return await_phase, seconds


def _operator_dependencies(subject: str, kind: str, operator: object) -> list[pulumi.Resource]:
    """What the job waits for: the CRD of its kind and the operator's Deployment (none without
    an operator)."""
    if operator is None:
        return []
    if not isinstance(operator, T9kOperator):
        raise TypeError(
            f"{subject}: operator must be a t9k_sdk.pulumi.T9kOperator;"
            f" got {type(operator).__name__}"
        )
    return [operator.crds[kind], operator.deployment]


def _metadata(
    manifest: codecs.Manifest,
    job: AnyJob,
    namespace: str | pulumi.Output[str] | None,
    await_phase: AwaitPhase | pulumi.Output[AwaitPhase] | None,
    seconds: str | pulumi.Output[str] | None,
) -> dict[str, Any]:
    """The job's metadata: the manifest's, in `namespace`, with the await annotations."""
    metadata: dict[str, Any] = dict(manifest["metadata"])
    if namespace is not None:
        metadata["namespace"] = namespace
    if await_phase is not None:
        paused = _paused(job)
        wait_for = (
            await_phase.apply(lambda phase: _wait_for(phase, paused))
            if isinstance(await_phase, pulumi.Output)
            else _wait_for(await_phase, paused)
        )
        metadata["annotations"] = {
            **metadata.get("annotations", {}),
            WAIT_FOR: wait_for,
            TIMEOUT_SECONDS: seconds,
        }
    return metadata


class GenericJob(_JobComponent):
    """A GenericJob deployed by Pulumi.

        job = t9k_sdk.GenericJob(name="mnist", replicas=[Replica(type="worker", count=2, ...)])
        t9k_sdk.pulumi.GenericJob("mnist", {"job": job, "await_phase": "Running"})

    Outputs: `name`, `namespace`, `uid`, `phase` (with `await_phase`), `custom_resource`.
    Fields in `REPLACE_ON_CHANGES["GenericJob"]` replace the job when they change; the others
    update it in place.
    """

    KIND: ClassVar[str] = models.GenericJob.KIND

    def __init__(
        self, resource_name: str, args: GenericJobArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(resource_name, args, opts)


class DeepSpeedJob(_JobComponent):
    """A DeepSpeedJob deployed by Pulumi; see `GenericJob` for the arguments and outputs."""

    KIND: ClassVar[str] = models.DeepSpeedJob.KIND

    def __init__(
        self,
        resource_name: str,
        args: DeepSpeedJobArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(resource_name, args, opts)


class ColossalAIJob(_JobComponent):
    """A ColossalAIJob deployed by Pulumi; see `GenericJob` for the arguments and outputs."""

    KIND: ClassVar[str] = models.ColossalAIJob.KIND

    def __init__(
        self,
        resource_name: str,
        args: ColossalAIJobArgs,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(resource_name, args, opts)


def _resolved(
    subject: str, manifest: codecs.Manifest, metadata: dict[str, Any]
) -> tuple[pulumi.Output[Any], pulumi.Output[Any]]:
    """`metadata` and the spec with every placeholder replaced by its Output's value.

    The spec's Output validates the whole resolved manifest (metadata included) and fails with
    `InvalidJobOutputError` naming each field at fault. The metadata waits only for its own
    Outputs, so the job's name stays known in a preview when only the image is unknown."""
    found = list(placeholders(manifest))
    tokens = list(dict.fromkeys(token for _, token in found))
    paths = {token: path for path, token in reversed(found)}

    def values(resolved: list[Any]) -> dict[str, str]:
        problems = [
            Problem(
                paths[token],
                "a t9k_sdk.pulumi.deferred(...) value must resolve to a string;"
                f" got {type(value).__name__} {value!r}",
            )
            for token, value in zip(tokens, resolved, strict=True)
            if not isinstance(value, str)
        ]
        if problems:
            raise InvalidJobOutputError(subject, problems)
        return dict(zip(tokens, resolved, strict=True))

    def spec(resolved: list[Any]) -> Any:
        full = substitute(dict(manifest), values(resolved))
        problems = validate_manifest(full)
        if problems:
            raise InvalidJobOutputError(f"{subject} (with the values of its Outputs)", problems)
        return full["spec"]

    meta_tokens = list(dict.fromkeys(token for _, token in placeholders(metadata)))

    def meta(resolved: list[Any]) -> Any:
        plain, *rest = resolved  # the namespace and await annotations may be Outputs too
        return substitute(plain, {t: str(v) for t, v in zip(meta_tokens, rest, strict=True)})

    outputs = map(output_of, meta_tokens)
    return (
        pulumi.Output.all(pulumi.Output.from_input(metadata), *outputs).apply(meta),
        pulumi.Output.all(*map(output_of, tokens)).apply(spec),
    )


def _builders() -> tuple[type[codecs.Buildable], ...]:
    """The builders of every registered kind (`t9k_sdk.GenericJob`, `TorchrunJob`, ...)."""
    return tuple(getattr(builders, name) for k in _kinds.JOB_KINDS for name in k.builders)


def _job_model(kind: str, job: object) -> AnyJob:
    """The wire model of `job`, which must be a builder or wire model of `kind`."""
    if isinstance(job, _kinds.MODELS):
        model: AnyJob = job
    elif isinstance(job, _builders()):
        model = job.build()
    else:
        raise TypeError(
            f"t9k_sdk.pulumi.{kind} needs args['job']: a t9k_sdk.{kind} builder or a"
            f" t9k_sdk.models.{kind}; got {describe(job)}"
        )
    if model.kind != kind:
        raise TypeError(
            f"t9k_sdk.pulumi.{kind} got a {model.kind} ({describe(job)});"
            f" use t9k_sdk.pulumi.{model.kind} for it"
        )
    return model


def _await_phase(value: str) -> AwaitPhase:
    allowed = get_args(AwaitPhase)
    if value in allowed:
        return cast(AwaitPhase, value)
    raise ValueError(
        f"await_phase must be one of {', '.join(map(repr, allowed))} or None; got {value!r}"
    )


def _run_mode(job: AnyJob) -> models.RunMode:
    return job.spec.run_mode or models.RunMode()


def _debug(job: AnyJob) -> bool:
    debug = _run_mode(job).debug
    return bool(debug and debug.enabled)


def _paused(job: AnyJob) -> bool:
    pause = _run_mode(job).pause
    return bool(pause and pause.enabled)


def _wait_for(phase: AwaitPhase, paused: bool) -> str:
    """The `pulumi.com/waitFor` annotation: a paused job is awaited until its pods are gone."""
    if paused:
        return _PAUSED
    return _RUNNING_OR_DONE if phase == "Running" else _DONE


def _checked_phase(
    kind: str, wanted: AwaitPhase, metadata: Mapping[str, Any] | None, status: Any
) -> str | None:
    """The phase `up` ended on; raises `JobFailedError` (failing `up`) when the job failed."""
    job = {"metadata": metadata, "status": status}
    phase = o.phase(job)
    if phase == models.JobPhase.FAILED.value:
        meta = o.meta(job)
        name, namespace = meta.name, meta.namespace
        where, ns_flag = (
            (f" in namespace {namespace}", f" -n {namespace}") if namespace else ("", "")
        )
        raise JobFailedError(
            f"{kind} {name!r}{where} failed while `up` waited for it to be {wanted}:"
            f" {_failure_reason(job)}. Details: t9k-sdk describe {kind} {name}{ns_flag}"
        )
    return phase or None


def _failure_reason(job: Mapping[str, Any]) -> str:
    """Why the job failed: the ReplicaFailure condition (which pod, exit code, termination
    message; the operator sets it whenever a job fails), else the Failed condition."""
    messages: dict[str, str] = {}
    for condition in o.conditions(job):
        text = condition.get("message") or condition.get("reason")
        if condition.get("status") == "True" and text:
            messages[str(condition.get("type"))] = str(text)
    return messages.get("ReplicaFailure") or messages.get("Failed") or "no reason given"
