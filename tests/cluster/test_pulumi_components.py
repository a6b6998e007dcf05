"""t9k_sdk.pulumi with the real Pulumi CLI and Kubernetes provider against the local control plane.

Each test deploys a stack through the Automation API (an inline program: the CLI and the provider
run for real, no language host is needed) into the namespace of this module's operator. The
operator is a local `t9k-operator` process (fixture `e2e`), which is what reconciles the jobs:
kwok only fakes pods, so an operator Deployment in the cluster would never run. The pods finish
when their template carries the kwok annotations (`finish(...)`).

What a user notices is checked on both sides: what `up` reports (changes, outputs, errors) and
what the cluster holds (the job object, its uid, its pods and their uids).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from pulumi import automation as auto

import t9k_sdk
from t9k_sdk.crds import generate_crds
from t9k_sdk.pulumi import GenericJob, GenericJobArgs, T9kOperator, deferred
from tests.cluster.e2e_helpers import E2E
from tests.pulumi.real_pulumi import PulumiEnv, ensure_binaries
from tools.kit import IMAGE, OWNER_LABEL, finish, read_job, wait_for

PROJECT = "t9k-components"


@pytest.fixture(scope="module")
def pulumi_env(kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory) -> PulumiEnv:
    return PulumiEnv(ensure_binaries(), tmp_path_factory.mktemp("pulumi"), kubeconfig)


@dataclass
class JobStack:
    """A stack holding one `t9k_sdk.pulumi.GenericJob` described by `settings`."""

    stack: auto.Stack
    settings: dict[str, Any]
    lines: list[str] = field(default_factory=list)

    def up(self, **changes: Any) -> auto.UpResult:
        self.settings.update(changes)
        self.lines.append(f"----- up {changes} -----")
        return self.stack.up(on_output=self.lines.append)

    def program(self) -> None:
        s = self.settings
        template = None
        if "run_for" in s:
            template = {"metadata": {"annotations": finish(s.get("exit_code", 0), s["run_for"])}}
        image = s.get("image", IMAGE)
        if s.get("image_from_config_map"):
            # Another resource of the stack holds the image, as a docker.Image would build it.
            config = k8s.core.v1.ConfigMap(
                "build",
                metadata={"namespace": s["namespace"]},
                data={"image": image},
            )
            data: pulumi.Output[Any] = config.data
            image = deferred(data.apply(lambda d: str(d["image"])))
        job = t9k_sdk.GenericJob(
            name=s["name"],
            namespace=s["namespace"],
            paused=s.get("paused", False),
            replicas=[
                t9k_sdk.Replica(
                    type="worker",
                    count=2,
                    image=image,
                    command=["train", "--rank=$(rank)"],
                    template=template,
                )
            ],
        )
        args: GenericJobArgs = {"job": job}
        if s.get("await_phase"):
            args["await_phase"] = s["await_phase"]
            args["timeout"] = s.get("timeout", "2m")
        component = GenericJob("train", args)
        pulumi.export("name", component.name)
        pulumi.export("namespace", component.namespace)
        pulumi.export("uid", component.uid)
        pulumi.export("phase", component.phase)


@dataclass
class Stacks:
    """Makes stacks for one test; destroys and removes them afterwards."""

    env: PulumiEnv
    namespace: str
    made: list[JobStack] = field(default_factory=list)

    def new(self, **settings: Any) -> JobStack:
        name = f"t{uuid.uuid4().hex[:8]}"
        holder: list[JobStack] = []
        stack = self.env.inline_stack(PROJECT, name, lambda: holder[0].program(), {})
        job_stack = JobStack(stack, {"namespace": self.namespace, **settings})
        holder.append(job_stack)
        self.made.append(job_stack)
        return job_stack

    def close(self) -> None:
        for job_stack in self.made:
            try:
                job_stack.stack.destroy(on_output=job_stack.lines.append)
                job_stack.stack.workspace.remove_stack(job_stack.stack.name)
            finally:
                print(f"===== pulumi output of stack {job_stack.stack.name} =====")
                print("\n".join(job_stack.lines))


@pytest.fixture
def stacks(pulumi_env: PulumiEnv, e2e: E2E) -> Iterator[Stacks]:
    made = Stacks(pulumi_env, e2e.namespace)
    try:
        yield made
    finally:
        made.close()


def pods_of(core_v1: client.CoreV1Api, namespace: str, job: str) -> dict[str, Any]:
    """name -> pod of the job's pods that are not being deleted."""
    pods = core_v1.list_namespaced_pod(namespace, label_selector=f"{OWNER_LABEL}={job}").items
    return {p.metadata.name: p for p in pods if p.metadata.deletion_timestamp is None}


def running_pods(core_v1: client.CoreV1Api, namespace: str, job: str) -> dict[str, Any]:
    return wait_for(
        lambda: pods_of(core_v1, namespace, job),
        lambda pods: set(pods) == {f"{job}-worker-0", f"{job}-worker-1"}
        and all(p.status.phase == "Running" for p in pods.values()),
        f"the two pods of {job} running",
        timeout=30,
    )


def uids(pods: dict[str, Any]) -> dict[str, str]:
    return {name: pod.metadata.uid for name, pod in pods.items()}


def job_gone(custom: client.CustomObjectsApi, namespace: str, name: str) -> bool:
    try:
        read_job(custom, namespace, name)
    except ApiException as err:
        if err.status == 404:
            return True
        raise
    return False


def test_up_creates_the_job_the_operator_runs_it_and_a_second_up_changes_nothing(
    stacks: Stacks, custom: client.CustomObjectsApi, core_v1: client.CoreV1Api
) -> None:
    ns = stacks.namespace
    s = stacks.new(name="lifecycle", await_phase="Running")
    first = s.up()
    assert first.summary.resource_changes == {"create": 3}  # stack, component, job object
    live = read_job(custom, ns, "lifecycle")
    assert first.outputs["uid"].value == live["metadata"]["uid"]
    assert first.outputs["namespace"].value == ns
    # `up` returned once the operator had every replica running.
    assert first.outputs["phase"].value == "Running"
    assert live["status"]["phase"] == "Running"
    container = live["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    assert container["command"] == ["train", "--rank=$(rank)"]  # camelCase spec, as rendered
    pods = running_pods(core_v1, ns, "lifecycle")
    for pod in pods.values():
        (owner,) = pod.metadata.owner_references
        assert (owner.kind, owner.uid) == ("GenericJob", live["metadata"]["uid"])

    second = s.up()
    assert second.summary.resource_changes == {"same": 3}
    assert second.outputs["uid"].value == live["metadata"]["uid"]
    assert uids(pods_of(core_v1, ns, "lifecycle")) == uids(pods)
    assert s.stack.preview().change_summary == {"same": 3}


def test_pausing_updates_the_job_in_place_and_the_operator_acts_on_it(
    stacks: Stacks, custom: client.CustomObjectsApi, core_v1: client.CoreV1Api
) -> None:
    """runMode.pause updates in place: same job object, its pods deleted, then recreated."""
    ns = stacks.namespace
    s = stacks.new(name="pausable", await_phase="Running")
    uid = s.up().outputs["uid"].value
    before = uids(running_pods(core_v1, ns, "pausable"))

    paused = s.up(paused=True)
    assert paused.summary.resource_changes == {"update": 1, "same": 2}
    assert paused.outputs["uid"].value == uid
    # Awaiting a paused job waits until its replicas are gone.
    assert paused.outputs["phase"].value == "Paused"
    assert pods_of(core_v1, ns, "pausable") == {}

    resumed = s.up(paused=False)
    assert resumed.summary.resource_changes == {"update": 1, "same": 2}
    assert resumed.outputs["uid"].value == uid
    assert resumed.outputs["phase"].value == "Running"
    after = uids(running_pods(core_v1, ns, "pausable"))
    assert set(after) == set(before)
    assert not set(after.values()) & set(before.values())  # new pods


def test_a_changed_pod_template_replaces_the_job(
    stacks: Stacks, custom: client.CustomObjectsApi, core_v1: client.CoreV1Api
) -> None:
    """The operator never recreates running pods for a new template, so the job is replaced."""
    ns = stacks.namespace
    s = stacks.new(name="replaced", await_phase="Running", image=f"{IMAGE}-v1")
    old_uid = s.up().outputs["uid"].value
    old_pods = uids(running_pods(core_v1, ns, "replaced"))

    result = s.up(image=f"{IMAGE}-v2")
    assert result.summary.resource_changes == {"replace": 1, "same": 2}
    new_uid = result.outputs["uid"].value
    assert new_uid != old_uid
    assert read_job(custom, ns, "replaced")["metadata"]["uid"] == new_uid
    new_pods = running_pods(core_v1, ns, "replaced")
    assert {p.spec.containers[0].image for p in new_pods.values()} == {f"{IMAGE}-v2"}
    assert not set(uids(new_pods).values()) & set(old_pods.values())


def test_destroy_deletes_the_job_and_its_pods_are_garbage_collected(
    stacks: Stacks, custom: client.CustomObjectsApi, core_v1: client.CoreV1Api
) -> None:
    ns = stacks.namespace
    s = stacks.new(name="destroyed", await_phase="Running")
    s.up()
    running_pods(core_v1, ns, "destroyed")

    result = s.stack.destroy(on_output=s.lines.append)
    assert result.summary.resource_changes == {"delete": 3}
    assert job_gone(custom, ns, "destroyed")
    # The provider deletes in the foreground: the garbage collector removes the pods (owner
    # references) before the job object goes, so nothing is left once `destroy` returns.
    wait_for(lambda: pods_of(core_v1, ns, "destroyed"), lambda p: p == {}, "pods GC'd", 30)


def test_an_awaited_job_that_fails_fails_up_with_its_reason_before_the_timeout(
    stacks: Stacks, custom: client.CustomObjectsApi
) -> None:
    ns = stacks.namespace
    s = stacks.new(name="failing", await_phase="Succeeded", timeout="5m", run_for="1s", exit_code=3)
    started = time.monotonic()
    with pytest.raises(auto.CommandError) as err:
        s.up()
    elapsed = time.monotonic() - started
    assert elapsed < 60, f"`up` took {elapsed:.0f}s: it waited instead of failing fast"
    message = str(err.value)
    assert (
        f"GenericJob 'failing' in namespace {ns} failed while `up` waited for it to be"
        " Succeeded: Pod[failing-worker-" in message
    )
    assert "exited with error code 3" in message
    assert f"Details: t9k-sdk describe GenericJob failing -n {ns}" in message
    assert "Traceback" not in message
    assert read_job(custom, ns, "failing")["status"]["phase"] == "Failed"


def test_a_job_awaited_to_success_returns_when_it_succeeded(
    stacks: Stacks, custom: client.CustomObjectsApi, core_v1: client.CoreV1Api
) -> None:
    ns = stacks.namespace
    s = stacks.new(name="finishing", await_phase="Succeeded", run_for="3s")
    result = s.up()
    assert result.outputs["phase"].value == "Succeeded"
    assert read_job(custom, ns, "finishing")["status"]["phase"] == "Succeeded"
    assert {p.status.phase for p in pods_of(core_v1, ns, "finishing").values()} == {"Succeeded"}


def test_the_image_can_come_from_an_output_of_another_resource_of_the_stack(
    stacks: Stacks, custom: client.CustomObjectsApi, core_v1: client.CoreV1Api
) -> None:
    """A ConfigMap created by the same `up` holds the image; the job's pods run that image. A
    bad value from the Output fails the next `up` with the field named, and the job is kept."""
    ns = stacks.namespace
    image = f"{IMAGE}-from-output"
    s = stacks.new(name="from-output", await_phase="Running", image_from_config_map=True)
    first = s.up(image=image)
    assert first.summary.resource_changes == {"create": 4}  # + the ConfigMap
    live = read_job(custom, ns, "from-output")
    container = live["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    assert container["image"] == image
    pods = running_pods(core_v1, ns, "from-output")
    assert {p.spec.containers[0].image for p in pods.values()} == {image}

    with pytest.raises(auto.CommandError) as err:
        s.up(image="")
    message = str(err.value)
    assert "GenericJob 'train' (with the values of its Outputs) is invalid:" in message
    assert (
        "spec.replicaSpecs[0].template.spec.containers[0].image: every container needs an image;"
        " got ''" in message
    )
    assert "Traceback" not in message
    assert read_job(custom, ns, "from-output")["metadata"]["uid"] == live["metadata"]["uid"]
    s.settings["image"] = image  # so that destroy runs a valid program


def test_outputs_of_another_resource_fill_the_string_arguments_of_the_operator_and_a_job(
    pulumi_env: PulumiEnv,
    e2e: E2E,
    api_client: client.ApiClient,
    custom: client.CustomObjectsApi,
    core_v1: client.CoreV1Api,
) -> None:
    """One stack: a ConfigMap (a stand-in for a docker.Image: it builds nothing) holds the
    operator's image and namespaces and the job's name, image, namespace, await phase and
    timeout; its Outputs go into T9kOperator and GenericJob. The cluster gets the values, never
    a placeholder. A bad value from an Output fails the next `up` with the component's message.
    """
    ns = e2e.namespace
    settings = {
        "operatorImage": "registry.example/t9k-operator:from-output",
        "operatorNamespace": f"{ns}-out",
        "namespace": ns,
        "jobName": "from-outputs",
        "jobImage": f"{IMAGE}-from-output",
        "awaitPhase": "Running",
        "timeout": "2m",
    }

    def program() -> None:
        config = k8s.core.v1.ConfigMap("settings", metadata={"namespace": ns}, data=dict(settings))
        data: pulumi.Output[Any] = config.data

        def value(key: str) -> pulumi.Output[str]:
            return data.apply(lambda d: str(d[key]))

        operator = T9kOperator(
            "t9k",
            {
                "image": value("operatorImage"),
                "namespace": value("operatorNamespace"),
                "watch_namespace": value("namespace"),
            },
        )
        job = t9k_sdk.GenericJob(
            name=deferred(value("jobName")),
            replicas=[
                t9k_sdk.Replica(
                    type="worker", count=2, image=deferred(value("jobImage")), command=["train"]
                )
            ],
        )
        args: GenericJobArgs = {
            "job": job,
            "namespace": value("namespace"),
            "await_phase": value("awaitPhase"),  # type: ignore[typeddict-item]
            "timeout": value("timeout"),
            "operator": operator,
        }
        component = GenericJob("train", args)
        pulumi.export("operatorNamespace", operator.namespace)
        pulumi.export("name", component.name)
        pulumi.export("namespace", component.namespace)
        pulumi.export("phase", component.phase)

    lines: list[str] = []
    stack = pulumi_env.inline_stack(PROJECT, f"t{uuid.uuid4().hex[:8]}", program, {})
    operator_ns = settings["operatorNamespace"]
    apps = client.AppsV1Api(api_client)
    rbac = client.RbacAuthorizationV1Api(api_client)
    try:
        result = stack.up(on_output=lines.append)
        # The stack, the ConfigMap, the operator (component, Namespace, 3 CRDs, ServiceAccount,
        # 2 Roles, 2 RoleBindings, Deployment) and the job (component, job object).
        assert result.summary.resource_changes == {"create": 15}
        assert {k: v.value for k, v in result.outputs.items()} == {
            "operatorNamespace": operator_ns,
            "name": "from-outputs",
            "namespace": ns,
            "phase": "Running",
        }
        deployment = apps.read_namespaced_deployment("t9k-operator", operator_ns)
        (container,) = deployment.spec.template.spec.containers
        assert container.image == "registry.example/t9k-operator:from-output"
        assert f"--namespace={ns}" in container.args
        # The operator's permissions are a Role in the watched namespace, bound to its account.
        role_binding = rbac.read_namespaced_role_binding("t9k-operator", ns)
        assert [(s.name, s.namespace) for s in role_binding.subjects] == [
            ("t9k-operator", operator_ns)
        ]
        rbac.read_namespaced_role("t9k-operator-leader-election", operator_ns)

        live = read_job(custom, ns, "from-outputs")
        job_container = live["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
        assert job_container["image"] == f"{IMAGE}-from-output"
        annotations = live["metadata"]["annotations"]
        assert annotations["pulumi.com/timeoutSeconds"] == "120"
        assert "@.type=='Running'" in annotations["pulumi.com/waitFor"]
        pods = running_pods(core_v1, ns, "from-outputs")
        assert {p.spec.containers[0].image for p in pods.values()} == {f"{IMAGE}-from-output"}
        stored = json.dumps([api_client.sanitize_for_serialization(deployment), live])
        assert "t9k-output-" not in stored

        settings["operatorNamespace"] = "Not_A_Namespace"
        with pytest.raises(auto.CommandError) as err:
            stack.up(on_output=lines.append)
        message = str(err.value)
        assert (
            "T9kOperator 't9k': namespace 'Not_A_Namespace' is not a valid namespace name"
            in message
        )
        assert "Traceback" not in message
        assert apps.read_namespaced_deployment("t9k-operator", operator_ns).metadata.uid == (
            deployment.metadata.uid
        )
    finally:
        try:
            stack.destroy(on_output=lines.append)
            stack.workspace.remove_stack(stack.name)
        finally:
            print("\n".join(lines))
    assert job_gone(custom, ns, "from-outputs")
    wait_for(
        lambda: [d.metadata.name for d in apps.list_namespaced_deployment(operator_ns).items],
        lambda names: names == [],
        "the operator's Deployment deleted",
        30,
    )
    # The CRDs are kept (retain_crds): deleting them would delete every job of their kinds.
    extensions = client.ApiextensionsV1Api(api_client)
    for crd in generate_crds():
        extensions.read_custom_resource_definition(crd["metadata"]["name"])
