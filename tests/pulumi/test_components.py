"""The Pulumi components under Pulumi's mocks: what the engine would be asked to create.

`pulumi.runtime.set_mocks` replaces the engine and the providers: `new_resource` sees each
resource's type, name and inputs exactly as the Kubernetes provider would, and its return value
plays the provider's result (the live object). Resource options (replace_on_changes,
depends_on, ...) are not part of what mocks see, so a transformation on the component records
them. Nothing here checks the API server or the provider's await logic: the cluster tests
(tests/cluster/test_pulumi_*.py) do that with the real CLI and provider.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes
import pytest

import t9k_sdk
from t9k_sdk import Debug, Replica, TorchrunJob, models, to_manifest
from t9k_sdk.crds import generate_crds
from t9k_sdk.errors import InvalidManifestError
from t9k_sdk.install import install_manifests, network_policy
from t9k_sdk.pulumi import (
    REPLACE_ON_CHANGES,
    ColossalAIJob,
    DeepSpeedJob,
    DeepSpeedJobArgs,
    GenericJob,
    InvalidJobOutputError,
    InvalidOutputArgumentError,
    JobFailedError,
    T9kOperator,
    T9kOperatorArgs,
    deferred,
    parse_timeout,
)

JOB_TYPE = f"kubernetes:{models.API_VERSION}:{{kind}}"


@dataclass
class Recorded:
    """One registered resource: the mocks' view and the options its transformation saw."""

    typ: str
    name: str
    inputs: dict[str, Any]
    opts: pulumi.ResourceOptions | None = None


@dataclass
class Engine(pulumi.runtime.Mocks):
    """Mocks that remember every resource and answer with a live object."""

    status: dict[str, Any] | None = None
    """`status` of the job objects the "provider" returns (None: no status yet)."""
    resources: list[Recorded] = field(default_factory=list)

    def new_resource(
        self, args: pulumi.runtime.MockResourceArgs
    ) -> tuple[str | None, dict[str, Any]]:
        self.resources.append(Recorded(args.typ, args.name, dict(args.inputs)))
        outputs = dict(args.inputs)
        if args.typ.startswith(f"kubernetes:{models.GROUP}/"):
            meta = dict(outputs["metadata"])
            meta.setdefault("namespace", "default")  # the provider's default namespace
            meta["uid"] = f"uid-{args.name}"
            outputs["metadata"] = meta
            if self.status is not None:
                outputs["status"] = self.status
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[Any] | None]:
        return {}, None

    def of_type(self, typ: str) -> list[Recorded]:
        return [r for r in self.resources if r.typ == typ]

    def job(self, kind: str = "GenericJob") -> Recorded:
        (found,) = self.of_type(JOB_TYPE.format(kind=kind))
        return found


@pytest.fixture
def engine() -> Iterator[Engine]:
    mocks = Engine()
    pulumi.runtime.set_mocks(mocks, project="t9k-test", stack="unit", preview=False)
    yield mocks
    # A program that fails (the tests of bad Outputs) leaves futures whose exception the Pulumi
    # runtime never retrieved. Collected here, asyncio logs them in this test; collected by
    # chance in a later test, inside `ast.parse` (tests/tools/test_function_length.py), Python
    # 3.11 raised "SystemError: AST constructor recursion depth mismatch" there.
    gc.collect()


def record_options(engine: Engine) -> pulumi.ResourceOptions:
    """Options for a component whose children's options end up in `engine.resources`."""

    def transformation(
        args: pulumi.ResourceTransformationArgs,
    ) -> pulumi.ResourceTransformationResult | None:
        engine.resources.append(Recorded(f"opts:{args.type_}", args.name, {}, args.opts))
        return None

    return pulumi.ResourceOptions(transformations=[transformation])


def options(engine: Engine, typ: str, name: str) -> pulumi.ResourceOptions:
    (found,) = [r for r in engine.resources if r.typ == f"opts:{typ}" and r.name == name]
    assert found.opts is not None
    return found.opts


def depends_on(opts: pulumi.ResourceOptions) -> list[Any]:
    given = opts.depends_on
    assert isinstance(given, list | type(None)), given
    return list(given or [])


def run(program: Callable[[], Sequence[pulumi.Output[Any]] | None]) -> list[Any]:
    """Run `program` under the mocks; return the values of the outputs it returns.

    @pulumi.runtime.test returns once every registration has completed, so what the engine was
    asked for is all in `engine.resources` afterwards."""
    values: list[Any] = []

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def wrapped() -> Any:
        return pulumi.Output.all(*(program() or ())).apply(values.extend)

    wrapped()
    return values


def plain(value: Any) -> Any:
    """What went over the wire as plain JSON values (numbers come back as floats)."""
    return json.loads(json.dumps(value))


# --- jobs -----------------------------------------------------------------------------------

WORKER = Replica(
    type="worker",
    count=2,
    image="pytorch/pytorch:2.4.0",
    command=["torchrun", "train.py"],
    node_selector={"accelerator_type": "a100", "topology.kubernetes.io/zone": "z1"},
    env={"NCCL_DEBUG": "INFO"},
)


def generic(**kwargs: Any) -> t9k_sdk.GenericJob:
    return t9k_sdk.GenericJob(**{"name": "mnist", "replicas": [WORKER], **kwargs})


def deepspeed(**kwargs: Any) -> t9k_sdk.DeepSpeedJob:
    base: dict[str, Any] = {
        "name": "bert",
        "image": "deepspeed/deepspeed:0.14",
        "workers": 2,
        "gpus_per_worker": 1,
        "run": ["train.py"],
    }
    return t9k_sdk.DeepSpeedJob(**{**base, **kwargs})


def colossalai() -> t9k_sdk.ColossalAIJob:
    return t9k_sdk.ColossalAIJob(
        name="palm", image="hpcaitech/colossalai:0.3.0", workers=2, script=["train.py"]
    )


@pytest.mark.parametrize(
    ("component", "make"),
    [
        (GenericJob, generic),
        (DeepSpeedJob, deepspeed),
        (ColossalAIJob, colossalai),
        (GenericJob, lambda: generic().build()),
        (DeepSpeedJob, lambda: deepspeed().build()),
        (ColossalAIJob, lambda: colossalai().build()),
        (GenericJob, lambda: TorchrunJob(name="ddp", image="pt:2", workers=3, run=["train.py"])),
    ],
    ids=[
        "generic",
        "deepspeed",
        "colossalai",
        "generic-model",
        "deepspeed-model",
        "caij-model",
        "torchrun",
    ],
)
def test_the_custom_resource_spec_is_exactly_the_yaml_renderers_manifest(
    engine: Engine, component: Any, make: Callable[[], Any]
) -> None:
    job = make()
    expected = to_manifest(job)
    run(lambda: [component("training", {"job": job}).uid])
    sent = engine.job(expected["kind"]).inputs
    assert sent["apiVersion"] == "batch.tensorstack.dev/v1beta1"
    assert sent["kind"] == expected["kind"]
    assert plain(sent["spec"]) == plain(expected["spec"])


def test_keys_that_pulumi_would_translate_are_left_alone(engine: Engine) -> None:
    """pulumi-kubernetes #1740: `node_selector` became `nodeSelector` in CustomResource specs."""
    run(lambda: [GenericJob("mnist", {"job": generic()}).uid])
    template = engine.job().inputs["spec"]["replicaSpecs"][0]["template"]["spec"]
    assert template["nodeSelector"] == {
        "accelerator_type": "a100",
        "topology.kubernetes.io/zone": "z1",
    }
    assert template["containers"][0]["env"] == [{"name": "NCCL_DEBUG", "value": "INFO"}]
    assert "node_selector" not in json.dumps(engine.job().inputs)


def test_metadata_comes_from_the_job_and_the_namespace_argument_wins(engine: Engine) -> None:
    job = generic(namespace="from-job", labels={"team": "nlp"}, annotations={"owner": "ana"})
    values = run(
        lambda: [
            GenericJob("a", {"job": job}).namespace,
            GenericJob("b", {"job": job, "namespace": "from-args"}).namespace,
        ]
    )
    sent = {
        r.name: r.inputs["metadata"] for r in engine.of_type(JOB_TYPE.format(kind="GenericJob"))
    }
    a, b = sent["a"], sent["b"]
    assert a == {
        "name": "mnist",
        "namespace": "from-job",
        "labels": {"team": "nlp"},
        "annotations": {"owner": "ana"},
    }
    assert b == {**a, "namespace": "from-args"}
    assert values == ["from-job", "from-args"]


def test_the_kueue_arguments_put_the_job_in_a_queue(engine: Engine) -> None:
    run(
        lambda: [
            GenericJob(
                "q", {"job": generic(), "kueue_queue": "team-a", "kueue_priority_class": "high"}
            ).uid
        ]
    )
    assert engine.job().inputs["metadata"]["labels"] == {
        "kueue.x-k8s.io/queue-name": "team-a",
        "kueue.x-k8s.io/priority-class": "high",
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"kueue_queue": "Team A"}, "kueue_queue must be a Kueue object name"),
        ({"kueue_priority_class": "high"}, "kueue_priority_class needs kueue_queue"),
    ],
)
def test_kueue_arguments_that_cannot_work_are_refused_naming_the_argument(
    args: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=rf"^GenericJob 'q': {message}"):
        GenericJob("q", {"job": generic(), **args})  # type: ignore[typeddict-item]


def test_a_kueue_queue_that_disagrees_with_the_jobs_label_is_refused() -> None:
    job = generic(labels={"kueue.x-k8s.io/queue-name": "team-b"})
    with pytest.raises(ValueError, match="disagrees with the job's label"):
        GenericJob("q", {"job": job, "kueue_queue": "team-a"})


def test_restart_scope_job_annotates_the_job(engine: Engine) -> None:
    run(lambda: [GenericJob("r", {"job": generic(), "restart_scope": "Job"}).uid])
    assert engine.job().inputs["metadata"]["annotations"] == {"t9k-sdk.dev/restart-scope": "Job"}


@pytest.mark.parametrize(
    ("job_annotations", "scope", "message"),
    [
        (None, "job", "restart_scope must be one of 'Replica', 'Job'; got 'job'"),
        ({"t9k-sdk.dev/restart-scope": "Replica"}, "Job", "disagrees with the job's annotation"),
    ],
)
def test_a_restart_scope_that_cannot_work_is_refused_naming_the_argument(
    job_annotations: dict[str, str] | None, scope: str, message: str
) -> None:
    job = generic(annotations=job_annotations) if job_annotations else generic()
    with pytest.raises(ValueError, match=rf"^GenericJob 'r': .*{message}"):
        GenericJob("r", {"job": job, "restart_scope": scope})  # type: ignore[typeddict-item]


def test_node_lost_after_annotates_the_job_and_a_bad_one_is_refused(engine: Engine) -> None:
    run(lambda: [GenericJob("r", {"job": generic(), "node_lost_after": 90}).uid])
    annotations = engine.job().inputs["metadata"]["annotations"]
    assert annotations == {"t9k-sdk.dev/node-lost-after": "90"}
    for bad, message in (
        (-5, "node_lost_after must be a whole number of seconds from 0 to 604800; got '-5'"),
        ("90", "node_lost_after must be a whole number"),
        (True, "node_lost_after must be a whole number"),
    ):
        with pytest.raises(ValueError, match=rf"^GenericJob 'r': {message}"):
            GenericJob("r", {"job": generic(), "node_lost_after": bad})  # type: ignore[typeddict-item]
    job = generic(annotations={"t9k-sdk.dev/node-lost-after": "30"})
    with pytest.raises(ValueError, match="node_lost_after=90 disagrees with the job's annotation"):
        GenericJob("r", {"job": job, "node_lost_after": 90})


def test_the_namespace_may_be_another_resources_output(engine: Engine) -> None:
    def program() -> list[pulumi.Output[Any]]:
        ns = pulumi_kubernetes.core.v1.Namespace("ml", metadata={"name": "ml"})
        return [GenericJob("mnist", {"job": generic(), "namespace": ns.metadata.name}).namespace]

    assert run(program) == ["ml"]
    assert engine.job().inputs["metadata"]["namespace"] == "ml"


def test_outputs_name_namespace_uid_and_no_phase_without_awaiting(engine: Engine) -> None:
    engine.status = {"phase": "Pending"}

    def program() -> list[pulumi.Output[Any]]:
        job = GenericJob("mnist", {"job": generic()})
        return [job.name, job.namespace, job.uid, job.phase]

    assert run(program) == ["mnist", "default", "uid-mnist", None]
    annotations = engine.job().inputs["metadata"].get("annotations", {})
    assert [a for a in annotations if a.startswith("pulumi.com/")] == []


@pytest.mark.parametrize(
    ("await_phase", "timeout", "wait_for", "seconds"),
    [
        (
            "Running",
            None,
            "jsonpath={.status.conditions[?(@.status=='True' && "
            "(@.type=='Running' || @.type=='Completed'))].type}",
            "600",
        ),
        (
            "Succeeded",
            "1h30m",
            "jsonpath={.status.conditions[?(@.status=='True' && @.type=='Completed')].type}",
            "5400",
        ),
    ],
)
def test_awaiting_sets_the_providers_wait_annotations_and_the_phase_output(
    engine: Engine, await_phase: str, timeout: str | None, wait_for: str, seconds: str
) -> None:
    engine.status = {"phase": await_phase}
    args: dict[str, Any] = {
        "job": generic(annotations={"owner": "ana"}),
        "await_phase": await_phase,
    }
    if timeout is not None:
        args["timeout"] = timeout
    assert run(lambda: [GenericJob("mnist", args).phase]) == [await_phase]  # type: ignore[arg-type]
    assert engine.job().inputs["metadata"]["annotations"] == {
        "owner": "ana",
        "pulumi.com/waitFor": wait_for,
        "pulumi.com/timeoutSeconds": seconds,
    }


def test_a_paused_job_is_awaited_until_its_replicas_are_gone(engine: Engine) -> None:
    engine.status = {"phase": "Paused"}
    job = generic(paused=True)
    assert run(lambda: [GenericJob("mnist", {"job": job, "await_phase": "Running"}).phase]) == [
        "Paused"
    ]
    annotations = engine.job().inputs["metadata"]["annotations"]
    assert annotations["pulumi.com/waitFor"] == (
        "jsonpath={.status.conditions[?(@.status=='True' && @.type=='Paused')].type}"
    )


def test_a_job_that_failed_while_awaited_fails_the_program_with_its_reason(
    engine: Engine,
) -> None:
    engine.status = {
        "phase": "Failed",
        "conditions": [
            {"type": "Running", "status": "False", "reason": "ErrorInPod", "message": "x"},
            {
                "type": "Failed",
                "status": "True",
                "reason": "ErrorInPod",
                "message": "Pod[mnist-worker-1] exited with error code 3",
            },
            {"type": "Completed", "status": "True", "reason": "ErrorInPod", "message": "y"},
        ],
    }
    job = generic(namespace="ml")
    with pytest.raises(JobFailedError) as err:
        run(lambda: [GenericJob("mnist", {"job": job, "await_phase": "Succeeded"}).phase])
    assert str(err.value) == (
        "GenericJob 'mnist' in namespace ml failed while `up` waited for it to be Succeeded:"
        " Pod[mnist-worker-1] exited with error code 3."
        " Details: t9k-sdk describe GenericJob mnist -n ml"
    )


def test_a_failed_job_is_not_an_error_when_nothing_awaits_it(engine: Engine) -> None:
    engine.status = {"phase": "Failed"}
    assert run(lambda: [GenericJob("mnist", {"job": generic()}).phase]) == [None]


def test_a_job_that_succeeded_before_it_was_seen_running_satisfies_running(
    engine: Engine,
) -> None:
    engine.status = {"phase": "Succeeded"}
    job = generic()
    assert run(lambda: [GenericJob("mnist", {"job": job, "await_phase": "Running"}).phase]) == [
        "Succeeded"
    ]


@pytest.mark.parametrize(
    ("kind", "make", "changed", "replaces"),
    [
        ("GenericJob", generic, "spec.replicaSpecs[0].template.spec.containers[0].image", True),
        ("GenericJob", generic, "spec.replicaSpecs[1]", True),
        ("GenericJob", generic, "spec.service.ports[0].port", True),
        ("GenericJob", generic, "spec.scheduler.t9kScheduler.queue", True),
        ("GenericJob", generic, "spec.cleanUpPolicy", False),
        ("GenericJob", generic, "spec.successRules", False),
        ("GenericJob", generic, "spec.runMode.pause.enabled", False),
        ("GenericJob", generic, "spec.runMode.pause.resumeSpecs[0].command", True),
        ("GenericJob", generic, "spec.runMode.debug", False),
        ("GenericJob", generic, "metadata.labels", False),
        ("DeepSpeedJob", deepspeed, "spec.worker.template.spec.containers[0].image", True),
        ("DeepSpeedJob", deepspeed, "spec.worker.replicas", True),
        ("DeepSpeedJob", deepspeed, "spec.config.run.python[1]", True),
        ("DeepSpeedJob", deepspeed, "spec.elastic.minReplicas", True),
        ("DeepSpeedJob", deepspeed, "spec.elastic.maxReplicas", True),
        ("DeepSpeedJob", deepspeed, "spec.elastic.expectedReplicas", False),
        ("DeepSpeedJob", deepspeed, "spec.runPolicy.cleanUpPolicy", False),
        ("DeepSpeedJob", deepspeed, "spec.runMode.pause", False),
        ("ColossalAIJob", colossalai, "spec.torchConfig.script", True),
        ("ColossalAIJob", colossalai, "spec.replicaSpecs[1].replicas", True),
        ("ColossalAIJob", colossalai, "spec.ssh", True),
        ("ColossalAIJob", colossalai, "spec.runPolicy", False),
    ],
)
def test_fields_the_cluster_cannot_update_replace_the_job(
    engine: Engine, kind: str, make: Callable[[], Any], changed: str, replaces: bool
) -> None:
    component: Any = {"GenericJob": GenericJob, "DeepSpeedJob": DeepSpeedJob}.get(
        kind, ColossalAIJob
    )
    run(lambda: [component("training", {"job": make()}, record_options(engine)).uid])
    opts = options(engine, JOB_TYPE.format(kind=kind), "training")
    paths = opts.replace_on_changes or []
    assert paths == list(REPLACE_ON_CHANGES[kind])
    # The engine's rule: a change replaces when a listed path is a prefix of the changed one.
    hit = any(changed == p or changed.startswith((p + ".", p + "[")) for p in paths)
    assert hit is replaces
    # The name stays, so the old job must be deleted before the new one is created.
    assert opts.delete_before_replace is True


def test_the_custom_resource_is_a_child_of_the_component(engine: Engine) -> None:
    made: list[GenericJob] = []

    def program() -> list[pulumi.Output[Any]]:
        made.append(GenericJob("mnist", {"job": generic()}, record_options(engine)))
        return [made[0].uid]

    run(program)
    opts = options(engine, JOB_TYPE.format(kind="GenericJob"), "mnist")
    assert opts.parent is made[0]
    assert isinstance(made[0].custom_resource, pulumi_kubernetes.apiextensions.CustomResource)
    (component,) = engine.of_type("t9k:batch:GenericJob")
    assert component.name == "mnist"


def test_depends_on_given_to_the_component_reaches_the_custom_resource(engine: Engine) -> None:
    made: list[GenericJob] = []

    def program() -> list[pulumi.Output[Any]]:
        first = GenericJob("first", {"job": generic()})
        made.append(first)
        opts = pulumi.ResourceOptions.merge(
            record_options(engine), pulumi.ResourceOptions(depends_on=[first])
        )
        return [GenericJob("second", {"job": generic(name="other")}, opts).uid]

    run(program)
    child = options(engine, JOB_TYPE.format(kind="GenericJob"), "second")
    assert made[0] in depends_on(child)


# --- validation -----------------------------------------------------------------------------


def test_a_job_of_another_kind_is_rejected_with_the_component_to_use(engine: Engine) -> None:
    with pytest.raises(TypeError) as err:
        GenericJob("x", {"job": deepspeed()})  # type: ignore[typeddict-item]
    assert str(err.value) == (
        "t9k_sdk.pulumi.GenericJob got a DeepSpeedJob"
        " (t9k_sdk.builders.deepspeed_job.DeepSpeedJob); use t9k_sdk.pulumi.DeepSpeedJob for it"
    )
    with pytest.raises(TypeError, match=r"got a GenericJob .*models.*use t9k_sdk.pulumi.Generic"):
        ColossalAIJob("x", {"job": generic().build()})  # type: ignore[typeddict-item]
    assert engine.resources == []


@pytest.mark.parametrize("bad", [None, {"kind": "GenericJob"}, "mnist.yaml"])
def test_something_that_is_not_a_job_is_rejected(engine: Engine, bad: Any) -> None:
    with pytest.raises(TypeError, match=r"needs args\['job'\]: a t9k_sdk.GenericJob builder or"):
        GenericJob("x", {"job": bad})


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"await_phase": "Completed"}, "await_phase must be one of 'Running', 'Succeeded' or None"),
        ({"await_phase": "Running", "timeout": "soon"}, 'timeout must be a duration like "90s"'),
        ({"await_phase": "Running", "timeout": "0s"}, "timeout must be positive"),
        ({"timeout": "5m"}, "timeout='5m' only applies with await_phase"),
        ({"operator": "t9k"}, "operator must be a t9k_sdk.pulumi.T9kOperator; got str"),
        ({"namespace": "ml\n"}, "GenericJob 'x': namespace 'ml\\n' is not a valid namespace name"),
        ({"namespace": "ML"}, "namespace 'ML' is not a valid namespace name"),
        ({"namespace": "ml/../kube-system"}, "'ml/../kube-system' is not a valid namespace"),
        ({"namespace": ""}, "namespace must not be empty"),
        ({"namespace": 7}, "namespace must be a string or a pulumi.Output; got"),
    ],
)
def test_bad_arguments_are_rejected_before_anything_is_registered(
    engine: Engine, extra: dict[str, Any], message: str
) -> None:
    with pytest.raises((ValueError, TypeError)) as err:
        GenericJob("x", {"job": generic(), **extra})  # type: ignore[typeddict-item]
    assert message in str(err.value)
    assert engine.resources == []


def test_awaiting_success_of_a_debug_job_is_rejected(engine: Engine) -> None:
    with pytest.raises(ValueError, match="a job in debug mode never finishes by itself"):
        DeepSpeedJob("x", {"job": deepspeed(debug=Debug()), "await_phase": "Succeeded"})


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("30m", 1800),
        ("1h30m", 5400),
        ("2h", 7200),
        ("45", 45),
        (" 1m5s ", 65),
        ("1.5h", 5400),
        ("2d", 172800),
        ("1500ms", 2),  # whole seconds, rounded up
    ],
)
def test_timeouts_take_the_clis_duration_grammar(text: str, seconds: int) -> None:
    """One grammar everywhere: what `t9k-sdk wait --timeout` takes, Pulumi's timeout takes."""
    from t9k_sdk.cli._format import parse_duration

    assert parse_timeout(text) == seconds
    assert parse_duration(text) == pytest.approx(seconds, abs=1)


@pytest.mark.parametrize("text", ["", "m", "-5", "5 m", "0s", "1h" * 40])
def test_bad_timeouts(text: str) -> None:
    with pytest.raises(ValueError, match="timeout must be"):
        parse_timeout(text)


# --- the operator ---------------------------------------------------------------------------


@pytest.mark.parametrize("watch", [None, "team-a", "ml-system"])
def test_the_operator_component_creates_exactly_the_install_manifests(
    engine: Engine, watch: str | None
) -> None:
    image = "registry.example/t9k-operator:1.0"
    expected = install_manifests(image, "ml-system", watch_namespace=watch)
    args: T9kOperatorArgs = {"image": image, "namespace": "ml-system"}
    if watch is not None:
        args["watch_namespace"] = watch
    namespace = run(lambda: [T9kOperator("t9k", args).namespace])
    assert namespace == ["ml-system"]
    sent = [r.inputs for r in engine.resources if r.typ.startswith("kubernetes:")]
    assert sorted(r["kind"] for r in sent) == sorted(m["kind"] for m in expected)
    for manifest in expected:
        (match,) = [
            r
            for r in sent
            if r["kind"] == manifest["kind"]
            and r["metadata"]["name"] == manifest["metadata"]["name"]
        ]
        assert plain(match) == plain(manifest), manifest["kind"]


def test_the_operator_component_adds_the_network_policy_when_asked(engine: Engine) -> None:
    args: T9kOperatorArgs = {"namespace": "ml-system", "network_policy": True}
    run(lambda: [T9kOperator("t9k", args).namespace])
    (sent,) = engine.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")
    expected = network_policy("ml-system")
    assert plain(sent.inputs["spec"]) == plain(expected["spec"])
    assert sent.inputs["metadata"]["namespace"] == "ml-system"


def test_the_crds_are_the_generated_ones_keyed_by_kind_and_kept_on_destroy(engine: Engine) -> None:
    made: list[T9kOperator] = []

    def program() -> list[pulumi.Output[Any]]:
        made.append(T9kOperator("t9k", None, record_options(engine)))
        return [made[0].namespace]

    run(program)
    op = made[0]
    assert sorted(op.crds) == ["ColossalAIJob", "DeepSpeedJob", "GenericJob"]
    crd_type = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
    sent = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in engine.of_type(crd_type)}
    assert plain(sent) == {c["metadata"]["name"]: plain(c["spec"]) for c in generate_crds()}
    for name in ("t9k-genericjobs", "t9k-deepspeedjobs", "t9k-colossalaijobs"):
        assert options(engine, crd_type, name).retain_on_delete is True
    deployment = options(engine, "kubernetes:apps/v1:Deployment", "t9k-deployment")
    assert set(op.crds.values()) <= set(depends_on(deployment))


def test_the_operator_can_use_an_existing_namespace_and_drop_its_crds(engine: Engine) -> None:
    def program() -> list[pulumi.Output[Any]]:
        args: T9kOperatorArgs = {
            "namespace": "platform",
            "create_namespace": False,
            "retain_crds": False,
        }
        return [T9kOperator("t9k", args, record_options(engine)).namespace]

    assert run(program) == ["platform"]
    assert engine.of_type("kubernetes:core/v1:Namespace") == []
    crd_type = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
    assert not options(engine, crd_type, "t9k-genericjobs").retain_on_delete
    (deployment,) = engine.of_type("kubernetes:apps/v1:Deployment")
    assert deployment.inputs["metadata"]["namespace"] == "platform"


def test_a_job_given_the_operator_depends_on_its_crd_and_deployment(engine: Engine) -> None:
    made: list[T9kOperator] = []

    def program() -> list[pulumi.Output[Any]]:
        op = T9kOperator("t9k")
        made.append(op)
        job = DeepSpeedJob("bert", {"job": deepspeed(), "operator": op}, record_options(engine))
        return [job.uid]

    run(program)
    child = options(engine, JOB_TYPE.format(kind="DeepSpeedJob"), "bert")
    assert depends_on(child) == [made[0].crds["DeepSpeedJob"], made[0].deployment]


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ({"image": " "}, ValueError, "image must not be empty"),
        ({"namespace": ""}, ValueError, "namespace must not be empty"),
        (
            {"imagen": "x"},
            TypeError,
            "T9kOperator 't9k': unknown argument 'imagen' (did you mean 'image'?);"
            " known arguments: image, namespace, watch_namespace",
        ),
    ],
)
def test_bad_operator_arguments(
    engine: Engine, args: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as err:
        T9kOperator("t9k", args)  # type: ignore[arg-type]
    assert message in str(err.value)
    assert engine.resources == []


# --- Pulumi Outputs in job fields ---------------------------------------------------------------


def test_an_output_of_another_resource_becomes_the_image_env_labels_and_name(
    engine: Engine,
) -> None:
    """The image of a job comes from another resource of the stack (a ConfigMap here, a
    docker.Image in real stacks): its value, not a placeholder, reaches the pod template."""

    def program() -> list[pulumi.Output[Any]]:
        config = pulumi_kubernetes.core.v1.ConfigMap(
            "build",
            data={
                "image": "registry.example/mnist:abc123",
                "run": "run-7",
                "name": "mnist-7",
                "namespace": "ml",
            },
        )
        data: pulumi.Output[Any] = config.data
        image = data.apply(lambda d: str(d["image"]))
        tag = data.apply(lambda d: str(d["run"]))
        job = t9k_sdk.GenericJob(
            name=deferred(data.apply(lambda d: str(d["name"]))),
            namespace=deferred(data.apply(lambda d: str(d["namespace"]))),
            labels={"run": deferred(tag)},
            replicas=[
                Replica(
                    type="worker",
                    count=2,
                    image=deferred(image),
                    command=["torchrun", "train.py"],
                    env={"RUN": deferred(tag), "OUT": f"/data/{deferred(tag)}/ckpt"},
                )
            ],
        )
        return [GenericJob("mnist", {"job": job}).name]

    assert run(program) == ["mnist-7"]
    sent = plain(engine.job().inputs)
    container = sent["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    assert container["image"] == "registry.example/mnist:abc123"
    assert container["env"] == [
        {"name": "RUN", "value": "run-7"},
        {"name": "OUT", "value": "/data/run-7/ckpt"},
    ]
    assert sent["metadata"] == {"name": "mnist-7", "namespace": "ml", "labels": {"run": "run-7"}}
    assert "t9k-output-" not in json.dumps(sent)


def test_builders_take_outputs_directly_where_typing_allows_any(engine: Engine) -> None:
    """An Output given straight to a builder (no `deferred`) works the same at run time: what
    users of pulumi-kubernetes write (`image=image.repo_digest`)."""

    def program() -> list[pulumi.Output[Any]]:
        config = pulumi_kubernetes.core.v1.ConfigMap(
            "build", data={"image": "registry.example/mnist:def456", "run": "run-8"}
        )
        data: pulumi.Output[Any] = config.data
        image: Any = data.apply(lambda d: str(d["image"]))
        tag: Any = data.apply(lambda d: str(d["run"]))
        job = t9k_sdk.GenericJob(
            name="mnist",
            labels={"run": tag},
            replicas=[Replica(type="worker", image=image, command=["train"], env={"RUN": tag})],
        )
        return [GenericJob("mnist", {"job": job}).name]

    assert run(program) == ["mnist"]
    sent = plain(engine.job().inputs)
    container = sent["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    assert container["image"] == "registry.example/mnist:def456"
    assert container["env"] == [{"name": "RUN", "value": "run-8"}]
    assert sent["metadata"]["labels"] == {"run": "run-8"}


def test_a_value_no_hook_knows_is_still_an_argument_error() -> None:
    with pytest.raises(InvalidManifestError, match="image"):
        Replica(type="worker", image=object(), command=["train"])  # type: ignore[arg-type]


def test_outputs_and_the_namespace_output_resolve_together(engine: Engine) -> None:
    def program() -> list[pulumi.Output[Any]]:
        ns = pulumi_kubernetes.core.v1.Namespace("ml", metadata={"name": "ml"})
        team = pulumi.Output.from_input("nlp")
        job = generic(labels={"team": deferred(team)})
        return [GenericJob("mnist", {"job": job, "namespace": ns.metadata.name}).namespace]

    assert run(program) == ["ml"]
    assert engine.job().inputs["metadata"] == {
        "name": "mnist",
        "namespace": "ml",
        "labels": {"team": "nlp"},
    }


def test_a_plain_string_passes_through_deferred() -> None:
    assert deferred("pytorch/pytorch:2.4.0") == "pytorch/pytorch:2.4.0"


@pytest.mark.parametrize(
    ("field", "value", "path", "says"),
    [
        ("name", "Mnist_7", "metadata.name", "must be a lowercase DNS label"),
        ("image", "", "containers[0].image", "every container needs an image; got ''"),
        ("label", "no spaces", "metadata.labels", "a label value must be empty or at most 63"),
        ("image", 7, "containers[0].image", "must resolve to a string; got int 7"),
    ],
)
def test_an_invalid_value_inside_an_output_fails_the_update_naming_the_field(
    engine: Engine, field: str, value: Any, path: str, says: str
) -> None:
    def program() -> list[pulumi.Output[Any]]:
        out = deferred(pulumi.Output.from_input(value))
        job = t9k_sdk.GenericJob(
            name=out if field == "name" else "mnist",
            labels={"run": out} if field == "label" else {},
            replicas=[
                Replica(type="worker", image=out if field == "image" else "img", command=["x"])
            ],
        )
        return [GenericJob("mnist", {"job": job}).uid]

    with pytest.raises(InvalidJobOutputError) as err:
        run(program)
    # The builders' error type, and a RunError so `pulumi up` prints no Python stack trace.
    assert isinstance(err.value, InvalidManifestError)
    assert isinstance(err.value, pulumi.RunError)
    message = str(err.value)
    assert "GenericJob 'mnist'" in message
    assert path in message
    assert says in message


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"awiat_phase": "Running"},
            "GenericJob 'mnist': unknown argument 'awiat_phase' (did you mean 'await_phase'?);"
            " known arguments: job, namespace, await_phase, timeout, operator",
        ),
        (
            {"image": "x", "await": "Running"},
            "unknown arguments 'image', 'await' (did you mean 'await_phase'?)",
        ),
    ],
)
def test_unknown_argument_keys_are_named_with_a_suggestion(
    engine: Engine, args: dict[str, Any], message: str
) -> None:
    with pytest.raises(TypeError) as err:
        GenericJob("mnist", {"job": generic(), **args})  # type: ignore[typeddict-unknown-key]
    assert message in str(err.value)
    assert engine.resources == []


def test_a_preview_with_an_unknown_output_registers_the_job_with_its_name_known() -> None:
    """In a preview, an Output whose resource is not created yet is unknown: the job is still
    registered (no error), its metadata known, its spec left for `up` to resolve."""

    class Preview(Engine):
        def new_resource(
            self, args: pulumi.runtime.MockResourceArgs
        ) -> tuple[str | None, dict[str, Any]]:
            if args.typ == "kubernetes:core/v1:ConfigMap":
                # Not created yet: the provider knows none of its outputs in a preview.
                self.resources.append(Recorded(args.typ, args.name, dict(args.inputs)))
                return None, {}
            return super().new_resource(args)

    engine = Preview()
    pulumi.runtime.set_mocks(engine, project="t9k-test", stack="unit", preview=True)
    seen: list[bool] = []

    def program() -> list[pulumi.Output[Any]]:
        config = pulumi_kubernetes.core.v1.ConfigMap("build", data={"image": "img:1"})
        data: pulumi.Output[Any] = config.data
        image = data.apply(lambda d: str(d["image"]))
        job = t9k_sdk.GenericJob(
            name="mnist",
            replicas=[Replica(type="worker", image=deferred(image), command=["train"])],
        )
        component = GenericJob("mnist", {"job": job})
        component.custom_resource.urn.apply(lambda _: seen.append(True))
        return []

    run(program)
    sent = engine.job().inputs
    assert sent["metadata"] == {"name": "mnist"}
    # Unknown (the mocks drop or mark an unknown input), never the placeholder.
    spec = sent.get("spec")
    assert spec is None or isinstance(spec, pulumi.output.Unknown), spec
    assert seen == [True]


@pytest.mark.usefixtures("engine")
def test_a_namespace_output_is_checked_when_its_value_is_known() -> None:
    def program() -> list[pulumi.Output[Any]]:
        namespace = pulumi.Output.from_input("ml/../kube-system")
        return [GenericJob("mnist", {"job": generic(), "namespace": namespace}).namespace]

    with pytest.raises(Exception, match=r"GenericJob 'mnist': namespace 'ml/\.\./kube-system'"):
        run(program)


# --- Outputs in the components' own string arguments -------------------------------------------


def config_map_values(**data: str) -> dict[str, pulumi.Output[str]]:
    """Outputs of another resource of the stack (a ConfigMap that builds nothing), by key."""
    config = pulumi_kubernetes.core.v1.ConfigMap("build", data=data)
    values: pulumi.Output[Any] = config.data
    return {key: values.apply(lambda d, key=key: str(d[key])) for key in data}


def operator_sent(engine: Engine) -> list[dict[str, Any]]:
    return [plain(r.inputs) for r in engine.resources if r.typ.startswith("kubernetes:")]


@pytest.mark.parametrize(
    "given",
    ["output", "deferred", "f-string"],
)
def test_the_operator_takes_outputs_for_its_image_and_namespaces(
    engine: Engine, given: str
) -> None:
    """`T9kOperator("t9k", {"image": output})` with an image another resource holds: every
    child gets the resolved values, exactly what a plain string of that value gives."""
    image, namespace, watch = "registry.example/t9k-operator:built", "ml-system", "team-a"

    def program() -> list[pulumi.Output[Any]]:
        out = config_map_values(registry="registry.example", namespace=namespace, watch=watch)
        args: T9kOperatorArgs
        if given == "output":
            tag = out["registry"].apply(lambda r: f"{r}/t9k-operator:built")
            args = {"image": tag, "namespace": out["namespace"], "watch_namespace": out["watch"]}
        elif given == "deferred":
            tag = out["registry"].apply(lambda r: f"{r}/t9k-operator:built")
            args = {
                "image": deferred(tag),
                "namespace": deferred(out["namespace"]),
                "watch_namespace": deferred(out["watch"]),
            }
        else:
            args = {
                "image": f"{deferred(out['registry'])}/t9k-operator:built",
                "namespace": f"{deferred(out['namespace'])}",
                "watch_namespace": deferred(out["watch"]),
            }
        return [T9kOperator("t9k", args).namespace]

    assert run(program) == [namespace]
    sent = [r for r in operator_sent(engine) if r.get("kind") != "ConfigMap"]
    assert "t9k-output-" not in json.dumps(sent)
    (deployment,) = [r for r in sent if r["kind"] == "Deployment"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == image
    assert f"--namespace={watch}" in container["args"]
    expected = install_manifests(image, namespace, watch_namespace=watch)
    assert sorted(r["kind"] for r in sent) == sorted(m["kind"] for m in expected)
    for manifest in expected:
        (match,) = [
            r
            for r in sent
            if r["kind"] == manifest["kind"]
            and r["metadata"]["name"] == manifest["metadata"]["name"]
            and r["metadata"].get("namespace") == manifest["metadata"].get("namespace")
        ]
        assert match == plain(manifest), manifest["kind"]


def test_the_operators_roles_wait_for_the_namespace_the_watched_one_may_be(
    engine: Engine,
) -> None:
    """A watched namespace from an Output may turn out to be the operator's own, which this
    stack creates: the Roles are created after it."""
    made: list[T9kOperator] = []

    def program() -> list[pulumi.Output[Any]]:
        watch = pulumi.Output.from_input("ml-system")
        args: T9kOperatorArgs = {"namespace": "ml-system", "watch_namespace": watch}
        made.append(T9kOperator("t9k", args, record_options(engine)))
        return [made[0].namespace]

    run(program)
    role_type = "kubernetes:rbac.authorization.k8s.io/v1:Role"
    roles = engine.of_type(role_type)
    assert {r.inputs["metadata"]["namespace"] for r in roles} == {"ml-system"}
    assert len(roles) == len(made[0].roles) == 2  # the operator's and the Lease's
    for role in roles:
        needs = depends_on(options(engine, role_type, role.name))
        assert [type(d) for d in needs] == [pulumi_kubernetes.core.v1.Namespace], role.name


def test_a_preview_with_an_unknown_operator_image_keeps_the_rest_known() -> None:
    class Preview(Engine):
        def new_resource(
            self, args: pulumi.runtime.MockResourceArgs
        ) -> tuple[str | None, dict[str, Any]]:
            if args.typ == "kubernetes:core/v1:ConfigMap":
                self.resources.append(Recorded(args.typ, args.name, dict(args.inputs)))
                return None, {}  # not built yet: nothing of it is known in a preview
            return super().new_resource(args)

    engine = Preview()
    pulumi.runtime.set_mocks(engine, project="t9k-test", stack="unit", preview=True)

    def program() -> list[pulumi.Output[Any]]:
        op = T9kOperator("t9k", {"image": config_map_values(image="img:1")["image"]})
        op.deployment.urn.apply(lambda _: None)
        return []

    run(program)
    (deployment,) = engine.of_type("kubernetes:apps/v1:Deployment")
    sent = deployment.inputs
    assert sent["metadata"]["name"] == "t9k-operator"
    container = sent["spec"]["template"]["spec"]["containers"][0]
    assert container["name"] == "operator"
    image = container.get("image")
    assert image is None or isinstance(image, pulumi.output.Unknown), image
    assert "t9k-output-" not in str(sent)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("image", " ", "T9kOperator 't9k': image must not be empty"),
        ("namespace", "ML", "T9kOperator 't9k': namespace 'ML' is not a valid namespace name"),
        (
            "watch_namespace",
            "team_a",
            "T9kOperator 't9k': watch namespace 'team_a' is not a valid namespace name",
        ),
        ("image", 7, "T9kOperator 't9k': image must resolve to a string; got int 7"),
    ],
)
def test_a_bad_value_from_an_operator_output_fails_like_the_plain_string(
    engine: Engine, key: str, value: Any, message: str
) -> None:
    if isinstance(value, str):  # the same value as a plain string: the same message, at once
        with pytest.raises(ValueError, match=r"^T9kOperator 't9k': ") as plain_err:
            T9kOperator("t9k", {key: value})  # type: ignore[misc]
        assert str(plain_err.value).startswith(message)

    def program() -> list[pulumi.Output[Any]]:
        op = T9kOperator("t9k", {key: pulumi.Output.from_input(value)})  # type: ignore[misc]
        return [op.deployment.urn]

    with pytest.raises(InvalidOutputArgumentError) as err:
        run(program)
    assert isinstance(err.value, pulumi.RunError)  # `up` prints no Python stack trace
    assert str(err.value).startswith(message)
    if isinstance(value, str):
        assert str(err.value) == str(plain_err.value)


@pytest.mark.parametrize("key", ["image", "namespace", "watch_namespace"])
def test_an_operator_argument_of_another_type_is_rejected_naming_it(
    engine: Engine, key: str
) -> None:
    with pytest.raises(TypeError) as err:
        T9kOperator("t9k", {key: 7})  # type: ignore[misc]
    assert str(err.value) == (
        f"T9kOperator 't9k': {key} must be a string or a pulumi.Output; got builtins.int"
    )
    assert engine.resources == []


@pytest.mark.parametrize(("await_phase", "paused"), [("Running", False), ("Succeeded", True)])
def test_a_job_components_string_arguments_take_outputs(
    engine: Engine, await_phase: str, paused: bool
) -> None:
    engine.status = {"phase": "Paused" if paused else await_phase}

    def program() -> list[pulumi.Output[Any]]:
        out = config_map_values(namespace="ml", await_phase=await_phase, timeout="1h30m")
        job = GenericJob(
            "mnist",
            {
                "job": generic(paused=paused),
                "namespace": out["namespace"],
                "await_phase": out["await_phase"],  # type: ignore[typeddict-item]
                "timeout": out["timeout"],
            },
        )
        return [job.namespace, job.phase]

    assert run(program) == ["ml", "Paused" if paused else await_phase]
    metadata = engine.job().inputs["metadata"]
    assert metadata["namespace"] == "ml"
    wait_for = {
        "Running": "(@.type=='Running' || @.type=='Completed')",
        "Succeeded": "@.type=='Completed')",
    }
    assert metadata["annotations"]["pulumi.com/timeoutSeconds"] == "5400"
    expected = "@.type=='Paused')" if paused else wait_for[await_phase]
    assert expected in metadata["annotations"]["pulumi.com/waitFor"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"await_phase": "Completed"},
            "GenericJob 'x': await_phase must be one of 'Running', 'Succeeded' or None;"
            " got 'Completed'",
        ),
        ({"await_phase": "Running", "timeout": "soon"}, 'timeout must be a duration like "90s"'),
        ({"namespace": "ML"}, "GenericJob 'x': namespace 'ML' is not a valid namespace name"),
        ({"namespace": 7}, "GenericJob 'x': namespace must resolve to a string; got int 7"),
    ],
)
def test_a_bad_value_from_a_job_argument_output_fails_the_update(
    engine: Engine, args: dict[str, Any], message: str
) -> None:
    def program() -> list[pulumi.Output[Any]]:
        outputs = {key: pulumi.Output.from_input(value) for key, value in args.items()}
        if "timeout" in args:
            outputs["await_phase"] = pulumi.Output.from_input(args["await_phase"])
        return [GenericJob("x", {"job": generic(), **outputs}).uid]  # type: ignore[typeddict-item]

    with pytest.raises(InvalidOutputArgumentError) as err:
        run(program)
    assert message in str(err.value)


def test_awaiting_success_of_a_debug_job_from_an_output_fails_the_update(
    engine: Engine,
) -> None:
    def program() -> list[pulumi.Output[Any]]:
        phase = pulumi.Output.from_input("Succeeded")
        args: DeepSpeedJobArgs = {"job": deepspeed(debug=Debug()), "await_phase": phase}
        return [DeepSpeedJob("x", args).uid]

    with pytest.raises(InvalidOutputArgumentError, match="a job in debug mode never finishes"):
        run(program)


def test_a_timeout_output_without_await_phase_is_rejected_at_once(engine: Engine) -> None:
    with pytest.raises(ValueError, match="only applies with await_phase") as err:
        GenericJob("x", {"job": generic(), "timeout": pulumi.Output.from_input("5m")})
    assert str(err.value) == (
        "GenericJob 'x': timeout=<pulumi.output.Output> only applies with await_phase"
        ' ("Running" or "Succeeded")'
    )
