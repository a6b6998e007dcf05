"""The job components: `GenericJob`, `DeepSpeedJob` and `ColossalAIJob` as Pulumi resources.

Each creates one `kubernetes.apiextensions.CustomResource` whose `spec` is exactly
`t9k_sdk.to_manifest(job)["spec"]`, the manifest the YAML renderer writes (camelCase keys, passed
as a plain dict so that nothing translates them: pulumi-kubernetes #1740).
"""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, Final, Literal, NotRequired, TypedDict, get_args

import pulumi
import pulumi_kubernetes as k8s

from t9k_sdk import _objects as o
from t9k_sdk import builders, codecs, models
from t9k_sdk._duration import parse_duration
from t9k_sdk.builders._common import register_argument_hook
from t9k_sdk.codecs import AnyJob
from t9k_sdk.errors import InvalidManifestError, Problem
from t9k_sdk.install import validate_namespace
from t9k_sdk.pulumi._args import unknown_keys_error
from t9k_sdk.pulumi._operator import T9kOperator
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
    "deferred",
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
    """A job is invalid once the Pulumi Outputs given with `deferred` resolved (at `up`).

    An `InvalidManifestError` (the builders' error type, with a `problems` list naming each
    field, its value and what is allowed) and a `pulumi.RunError`, so `up` fails with the
    message and no Python stack trace."""


_PLACEHOLDER = re.compile(r"t9k-output-[0-9a-f]{12}")
# Placeholder -> the Output it stands for, for the lifetime of the Pulumi program's process.
_DEFERRED: dict[str, pulumi.Output[Any]] = {}


def deferred(value: pulumi.Input[str]) -> str:
    """A string that stands for a Pulumi Input (an Output of another resource, say) in a job.

    Builders take a `pulumi.Output` as it is once this package is imported, but their
    arguments are typed `str`: `deferred` returns a `str` (for mypy), and lets any string field,
    or part of one in an f-string, come from an Output: the image of a `docker.Image` built in the same stack, an env value, the name,
    namespace or labels. The job components replace each placeholder with the Output's value
    once it is known and validate the whole manifest then (an invalid value fails `up` with
    `InvalidJobOutputError`); while it is unknown (`preview`) the spec shows as unknown.

        image = docker.Image("trainer", ...).repo_digest
        job = t9k_sdk.GenericJob(name="mnist", replicas=[Replica(type="worker",
                                 image=deferred(image), ...)])
        t9k_sdk.pulumi.GenericJob("mnist", {"job": job})

    The placeholder (`t9k-output-` and 12 hex digits) is a valid name, label value and image,
    so the builder still checks everything else at once; it is also what `t9k_sdk.to_manifest`
    and `t9k-sdk render` show, since only the Pulumi components resolve it. A plain `str` is
    returned as it is.
    """
    if isinstance(value, str):
        return value
    while True:
        token = f"t9k-output-{secrets.token_hex(6)}"
        if token not in _DEFERRED:
            break
    _DEFERRED[token] = pulumi.Output.from_input(value)
    return token


def _output_argument(value: object) -> str | None:
    """Builders given a Pulumi Output take it as if it came through `deferred`."""
    return deferred(value) if isinstance(value, pulumi.Output) else None


register_argument_hook(_output_argument)


class _JobArgsBase(TypedDict):
    namespace: NotRequired[pulumi.Input[str]]
    """Namespace of the job; overrides the job's own. Neither: the provider's default namespace."""
    await_phase: NotRequired[AwaitPhase | None]
    """None (the default): `up` creates or updates the job and returns. "Running": `up` waits
    until every replica runs (or the job already finished). "Succeeded": `up` waits until the job
    finishes, and fails with the reason if the job failed. A paused job is awaited until its
    replicas are gone instead."""
    timeout: NotRequired[str]
    """How long `up` waits for `await_phase`, as `t9k-sdk wait --timeout` takes it: "90s",
    "30m", "1h30m", "1.5h", "2d" or seconds as digits (default "10m"). Only with
    `await_phase`."""
    operator: NotRequired[T9kOperator]
    """A `T9kOperator` of the same stack: the job is created after its CRDs and Deployment (and
    deleted before them)."""


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
        if not isinstance(args, Mapping):
            raise TypeError(
                f"{self.KIND} {resource_name!r}: args must be a dict such as"
                f' {{"job": ...}}; got {_describe(args)}'
            )
        known = ["job", *(k for k in _JobArgsBase.__annotations__ if k != "job")]
        unknown = unknown_keys_error(self.KIND, resource_name, args, known)
        if unknown is not None:
            raise unknown
        job = _job_model(self.KIND, args.get("job"))
        await_phase = _await_phase(args.get("await_phase"))
        timeout = args.get("timeout")
        if timeout is not None and await_phase is None:
            raise ValueError(
                f"{self.KIND} {resource_name!r}: timeout={timeout!r} only applies with"
                ' await_phase ("Running" or "Succeeded")'
            )
        if await_phase == "Succeeded" and _debug(job):
            raise ValueError(
                f"{self.KIND} {resource_name!r}: a job in debug mode never finishes by itself;"
                ' await "Running" (or nothing) instead of "Succeeded"'
            )
        namespace_arg = args.get("namespace")
        if isinstance(namespace_arg, str):  # an Output is checked when its value is known
            _check_namespace(self.KIND, resource_name, namespace_arg)
        elif namespace_arg is not None and not isinstance(namespace_arg, pulumi.Output):
            raise TypeError(
                f"{self.KIND} {resource_name!r}: namespace must be a string or a pulumi.Output;"
                f" got {_describe(namespace_arg)}"
            )
        operator = args.get("operator")
        extra: list[pulumi.Resource] = []
        if operator is not None:
            if not isinstance(operator, T9kOperator):
                raise TypeError(
                    f"{self.KIND} {resource_name!r}: operator must be a t9k_sdk.pulumi.T9kOperator;"
                    f" got {type(operator).__name__}"
                )
            extra = [operator.crds[self.KIND], operator.deployment]

        super().__init__(f"t9k:batch:{self.KIND}", resource_name, {}, opts)

        self.manifest = codecs.to_manifest(job)
        metadata: dict[str, Any] = dict(self.manifest["metadata"])
        namespace = namespace_arg
        if isinstance(namespace, pulumi.Output):
            kind = self.KIND
            namespace = namespace.apply(lambda n: _check_namespace(kind, resource_name, n))
        if namespace is not None:
            metadata["namespace"] = namespace
        if await_phase is not None:
            seconds = parse_timeout(timeout if timeout is not None else DEFAULT_TIMEOUT)
            metadata["annotations"] = {
                **metadata.get("annotations", {}),
                WAIT_FOR: _PAUSED if _paused(job) else _wait_for(await_phase),
                TIMEOUT_SECONDS: str(seconds),
            }

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
        if any(_placeholders(self.manifest)):
            # Values given with `deferred`: resolved (and validated) when they are known.
            meta_input, spec = _resolved(f"{self.KIND} {resource_name!r}", self.manifest, metadata)
        resource = _JobResource(
            resource_name,
            api_version=models.API_VERSION,
            kind=self.KIND,
            metadata=meta_input,
            spec=spec,
            opts=child,
        )
        self.custom_resource = resource
        meta: pulumi.Output[Any] = resource.metadata
        self.name = meta.apply(lambda m: str(m["name"]))
        self.namespace = meta.apply(lambda m: o.Meta(o.mapping(m)).namespace)
        self.uid = meta.apply(lambda m: o.Meta(o.mapping(m)).uid)
        if await_phase is None:
            self.phase = pulumi.Output.from_input(None)
        else:
            kind, wanted = self.KIND, await_phase
            self.phase = pulumi.Output.all(meta, resource.status).apply(
                lambda mv: _checked_phase(kind, wanted, mv[0], mv[1])
            )
        self.register_outputs(
            {"name": self.name, "namespace": self.namespace, "uid": self.uid, "phase": self.phase}
        )


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


def _strings(node: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string of a manifest (keys too) with its field path."""
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, Mapping):
        for key, value in node.items():
            sub = f"{path}.{key}" if path else str(key)
            yield from _strings(key, sub)
            yield from _strings(value, sub)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _strings(item, f"{path}[{index}]")


def _placeholders(node: Any) -> Iterator[tuple[str, str]]:
    """(field path, placeholder) of every `deferred` placeholder in `node`."""
    for path, text in _strings(node):
        for token in _PLACEHOLDER.findall(text):
            if token in _DEFERRED:
                yield path, token


def _substitute(node: Any, values: Mapping[str, str]) -> Any:
    if isinstance(node, str):
        return _PLACEHOLDER.sub(lambda m: values.get(m.group(), m.group()), node)
    if isinstance(node, Mapping):
        return {_substitute(k, values): _substitute(v, values) for k, v in node.items()}
    if isinstance(node, list):
        return [_substitute(item, values) for item in node]
    return node


def _resolved(
    subject: str, manifest: codecs.Manifest, metadata: dict[str, Any]
) -> tuple[pulumi.Output[Any], pulumi.Output[Any]]:
    """`metadata` and the spec with every placeholder replaced by its Output's value.

    The spec's Output validates the whole resolved manifest (metadata included) and fails with
    `InvalidJobOutputError` naming each field at fault. The metadata waits only for its own
    Outputs, so the job's name stays known in a preview when only the image is unknown."""
    found = list(_placeholders(manifest))
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
        full = _substitute(dict(manifest), values(resolved))
        problems = validate_manifest(full)
        if problems:
            raise InvalidJobOutputError(f"{subject} (with the values of its Outputs)", problems)
        return full["spec"]

    meta_tokens = list(dict.fromkeys(token for _, token in _placeholders(metadata)))

    def meta(resolved: list[Any]) -> Any:
        plain, *rest = resolved  # the namespace argument may be an Output too
        return _substitute(plain, {t: str(v) for t, v in zip(meta_tokens, rest, strict=True)})

    outputs = (_DEFERRED[t] for t in meta_tokens)
    return (
        pulumi.Output.all(pulumi.Output.from_input(metadata), *outputs).apply(meta),
        pulumi.Output.all(*(_DEFERRED[t] for t in tokens)).apply(spec),
    )


def _check_namespace(kind: str, resource_name: str, namespace: object) -> str:
    """`namespace`, or a ValueError naming the component, as `t9k-sdk apply -n` says it."""
    if not isinstance(namespace, str):
        raise TypeError(
            f"{kind} {resource_name!r}: namespace must be a string; got {_describe(namespace)}"
        )
    try:
        return validate_namespace(namespace)
    except ValueError as err:
        raise ValueError(f"{kind} {resource_name!r}: {err}") from None


def _job_model(kind: str, job: object) -> AnyJob:
    """The wire model of `job`, which must be a builder or wire model of `kind`."""
    if isinstance(job, models.GenericJob | models.DeepSpeedJob | models.ColossalAIJob):
        model: AnyJob = job
    elif isinstance(
        job,
        builders.GenericJob | builders.TorchrunJob | builders.DeepSpeedJob | builders.ColossalAIJob,
    ):
        model = job.build()
    else:
        raise TypeError(
            f"t9k_sdk.pulumi.{kind} needs args['job']: a t9k_sdk.{kind} builder or a"
            f" t9k_sdk.models.{kind}; got {_describe(job)}"
        )
    if model.kind != kind:
        raise TypeError(
            f"t9k_sdk.pulumi.{kind} got a {model.kind} ({_describe(job)});"
            f" use t9k_sdk.pulumi.{model.kind} for it"
        )
    return model


def _describe(value: object) -> str:
    if value is None:
        return "nothing"
    cls = type(value)
    return f"{cls.__module__}.{cls.__qualname__}"


def _await_phase(value: object) -> AwaitPhase | None:
    allowed = get_args(AwaitPhase)
    if value is None or value in allowed:
        return value  # type: ignore[return-value]
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


def _wait_for(phase: AwaitPhase) -> str:
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
