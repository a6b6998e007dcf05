"""The pulumi_examples/ projects, run with `pulumi up` from their own directories.

This is how a user runs them: the real CLI reads the project's Pulumi.yaml and the stack's
config, starts the Python language host (pulumi-language-python v3.79.0, built by
tools/ensure-pulumi-binaries.sh), which runs `__main__.py` with this venv's Python
(PULUMI_PYTHON_CMD: it has the examples' requirements, t9k-sdk[pulumi] from this repository),
and the Kubernetes provider applies the objects to the local control plane.

The jobs are reconciled by this module's local `t9k-operator` process (fixture `e2e`), not by
the operator Deployment the deepspeed-with-operator example installs: kwok gives that Deployment
a pod that looks Running but runs nothing. The examples make their fake pods finish through the
config key `simulateRunSeconds`, which exists for this local kwok cluster only.

Each test uses a stack of its own name. `pulumi stack init` writes Pulumi.<stack>.yaml into the
example's directory (git-ignored); `pulumi stack rm` at the end removes it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from t9k_sdk.crds import generate_crds
from tests.cluster.e2e_helpers import E2E
from tests.pulumi.real_pulumi import REPO, PulumiEnv, ensure_binaries
from tools.kit import OWNER_LABEL, read_job, wait_for

EXAMPLES = REPO / "pulumi_examples"


@pytest.fixture(scope="module")
def pulumi_env(kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory) -> PulumiEnv:
    return PulumiEnv(ensure_binaries(), tmp_path_factory.mktemp("pulumi"), kubeconfig)


class Example:
    """One example project and a stack of it."""

    def __init__(self, env: PulumiEnv, name: str) -> None:
        self.env = env
        self.dir = EXAMPLES / name
        self.stack = f"ci-{uuid.uuid4().hex[:8]}"
        self.env.cli(self.dir, "stack", "init", self.stack)

    def config(self, key: str, value: str, *, path: bool = False) -> None:
        flags = ["--path"] if path else []
        self.env.cli(self.dir, "config", "set", "--stack", self.stack, *flags, key, value)

    def up(self, *flags: str) -> str:
        proc = self.env.cli(
            self.dir, "up", "--yes", "--skip-preview", "--stack", self.stack, *flags
        )
        return proc.stdout

    def outputs(self) -> dict[str, Any]:
        return self.env.outputs(self.dir, self.stack)

    def destroy(self) -> str:
        return self.env.cli(
            self.dir, "destroy", "--yes", "--skip-preview", "--stack", self.stack
        ).stdout

    def remove(self) -> None:
        self.env.cli(
            self.dir, "stack", "rm", "--yes", "--force", "--stack", self.stack, check=False
        )
        (self.dir / f"Pulumi.{self.stack}.yaml").unlink(missing_ok=True)


@pytest.fixture
def example(pulumi_env: PulumiEnv) -> Iterator[Any]:
    made: list[Example] = []

    def make(name: str) -> Example:
        made.append(Example(pulumi_env, name))
        return made[-1]

    try:
        yield make
    finally:
        for ex in made:
            ex.env.cli(
                ex.dir, "destroy", "--yes", "--skip-preview", "--stack", ex.stack, check=False
            )
            ex.remove()


def phases(custom: client.CustomObjectsApi, namespace: str, jobs: dict[str, str]) -> dict[str, str]:
    """name -> phase of the jobs (name -> kind)."""
    return {n: read_job(custom, namespace, n, k)["status"]["phase"] for n, k in jobs.items()}


def pods_of(core_v1: client.CoreV1Api, namespace: str, job: str) -> dict[str, str]:
    pods = core_v1.list_namespaced_pod(namespace, label_selector=f"{OWNER_LABEL}={job}").items
    return {p.metadata.name: p.status.phase for p in pods}


def gone(read: Any) -> bool:
    try:
        read()
    except ApiException as err:
        if err.status == 404:
            return True
        raise
    return False


def test_the_genericjob_example_runs_a_job_to_success(
    example: Any, e2e: E2E, custom: client.CustomObjectsApi, core_v1: client.CoreV1Api
) -> None:
    ns = e2e.namespace
    ex = example("genericjob")
    ex.config("namespace", ns)
    ex.config("awaitPhase", "Succeeded")
    ex.config("simulateRunSeconds", "2")
    out = ex.up()
    assert "+ 3 created" in out
    assert ex.outputs() == {
        "name": "mnist",
        "namespace": ns,
        "phase": "Succeeded",
        "uid": read_job(custom, ns, "mnist")["metadata"]["uid"],
    }
    assert pods_of(core_v1, ns, "mnist") == {
        "mnist-worker-0": "Succeeded",
        "mnist-worker-1": "Succeeded",
    }
    # A second `up` of the same program and config changes nothing (exit 1 if it would).
    assert "3 unchanged" in ex.up("--expect-no-changes")

    assert "- 3 deleted" in ex.destroy()
    assert gone(lambda: read_job(custom, ns, "mnist"))
    wait_for(lambda: pods_of(core_v1, ns, "mnist"), lambda p: p == {}, "pods GC'd", 30)


def test_the_deepspeed_example_installs_the_operator_and_runs_a_job(
    example: Any,
    e2e: E2E,
    custom: client.CustomObjectsApi,
    core_v1: client.CoreV1Api,
    api_client: client.ApiClient,
) -> None:
    ns = e2e.namespace
    operator_ns = f"{ns}-op"
    ex = example("deepspeed-with-operator")
    ex.config("namespace", ns)
    ex.config("operatorNamespace", operator_ns)
    ex.config("operatorImage", "registry.example/t9k-operator:ci")
    ex.config("awaitPhase", "Succeeded")
    ex.config("simulateRunSeconds", "2")
    out = ex.up()
    assert "+ 14 created" in out
    outputs = ex.outputs()
    assert outputs == {
        "operatorNamespace": operator_ns,
        "name": "bert",
        "namespace": ns,
        "phase": "Succeeded",
    }
    apps = client.AppsV1Api(api_client)
    deployment = apps.read_namespaced_deployment("t9k-operator", operator_ns)
    assert deployment.spec.template.spec.containers[0].image == "registry.example/t9k-operator:ci"
    assert deployment.status.available_replicas == 1  # the provider waited for it (kwok's pod)
    rbac = client.RbacAuthorizationV1Api(api_client)
    binding = rbac.read_cluster_role_binding("t9k-operator")
    assert [(s.name, s.namespace) for s in binding.subjects] == [("t9k-operator", operator_ns)]
    lease = rbac.read_namespaced_role_binding("t9k-operator-leader-election", operator_ns)
    assert [(s.name, s.namespace) for s in lease.subjects] == [("t9k-operator", operator_ns)]
    assert phases(custom, ns, {"bert": "DeepSpeedJob"}) == {"bert": "Succeeded"}
    assert set(pods_of(core_v1, ns, "bert")) == {"bert-worker-0", "bert-worker-1"}

    assert "- 14 deleted" in ex.destroy()
    assert gone(lambda: read_job(custom, ns, "bert", "DeepSpeedJob"))
    assert gone(lambda: core_v1.read_namespace(operator_ns))  # provider waited for it
    assert gone(lambda: rbac.read_cluster_role("t9k-operator"))
    assert gone(lambda: rbac.read_cluster_role_binding("t9k-operator"))
    # The CRDs are kept (retain_crds): deleting them would delete every job of their kinds.
    extensions = client.ApiextensionsV1Api(api_client)
    for crd in generate_crds():
        extensions.read_custom_resource_definition(crd["metadata"]["name"])


def test_the_multi_job_example_runs_a_job_per_configured_learning_rate(
    example: Any, e2e: E2E, custom: client.CustomObjectsApi, core_v1: client.CoreV1Api
) -> None:
    ns = e2e.namespace
    ex = example("multi-job")
    ex.config("namespace", ns)
    ex.config("replicas", "1")
    ex.config("learningRates[0]", "0.01", path=True)
    ex.config("learningRates[1]", "0.001", path=True)
    ex.config("learningRates[2]", "0.0001", path=True)
    ex.config("awaitPhase", "Succeeded")
    ex.config("simulateRunSeconds", "2")
    ex.up()
    outputs = ex.outputs()
    assert outputs["sweep"] == ["sweep-0", "sweep-1", "sweep-2"]
    assert outputs["sweepPhases"] == ["Succeeded"] * 3
    assert outputs["finetunePhase"] == "Succeeded"
    jobs = {"sweep-0": "GenericJob", "sweep-1": "GenericJob", "sweep-2": "GenericJob"}
    jobs["finetune"] = "ColossalAIJob"
    assert phases(custom, ns, jobs) == dict.fromkeys(jobs, "Succeeded")
    sweep_2 = read_job(custom, ns, "sweep-2")
    assert sweep_2["metadata"]["labels"]["learning-rate"] == "0.0001"
    assert sweep_2["spec"]["replicaSpecs"][0]["replicas"] == 1
    assert pods_of(core_v1, ns, "sweep-2") == {"sweep-2-worker-0": "Succeeded"}

    # Fewer learning rates: the stack deletes the last sweep job and leaves the others alone.
    kept = {n: read_job(custom, ns, n)["metadata"]["uid"] for n in ("sweep-0", "sweep-1")}
    ex.env.cli(ex.dir, "config", "rm", "--stack", ex.stack, "--path", "learningRates[2]")
    out = ex.up()
    assert "- 2 deleted" in out  # the sweep-2 component and its job object
    assert ex.outputs()["sweep"] == ["sweep-0", "sweep-1"]
    assert gone(lambda: read_job(custom, ns, "sweep-2"))
    assert {n: read_job(custom, ns, n)["metadata"]["uid"] for n in kept} == kept
