"""The operator installed as a platform team installs it, running only as a pod on the real node
from its own image (`make operator-image`), with its ServiceAccount's token: each install path
brings up a Ready operator that trains the real-node torchrun job to Succeeded.

No host operator watches these namespaces; the operator's pod reaches the API server at the
`kubernetes` Service's address (tools/apirelay.py stands in for kube-proxy there) and verifies
it with its ServiceAccount's CA, as on any cluster.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from t9k_sdk import models
from t9k_sdk.install import DEFAULT_IMAGE, HEALTH_PORT, NAME
from tests.cluster.incluster_helpers import (
    PLACEMENT,
    create_job,
    denied,
    job_status,
    leader,
    operator_log,
    operator_namespace,
    operator_pods,
    scrape,
    wait_operator_ready,
    wait_phase,
)
from tests.cluster.real_helpers import (
    REAL_TIMEOUT,
    RealNode,
    base_image,
    logs,
    placement,
    scripts_configmap,
)
from tests.cluster.test_real_training import deepspeed_job, torchrun_job
from tools import images, realnode
from tools.kit import OWNER_LABEL, wait_for

pytestmark = pytest.mark.realnode

REPO = Path(__file__).resolve().parents[2]


def _tool_dir(script: str, flag: str) -> Path:
    proc = subprocess.run(
        ["bash", str(REPO / "tools" / script), flag], capture_output=True, text=True, check=True
    )
    return Path(proc.stdout.strip())


@pytest.fixture(scope="module")
def kubectl() -> Path:
    return _tool_dir("ensure-binaries.sh", "--print-dir") / "kubectl"


def _sh(*argv: str | Path, stdin: str | None = None, timeout: float = 180) -> str:
    proc = subprocess.run(
        [str(a) for a in argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(map(str, argv))} exited {proc.returncode}:\n{proc.stderr}")
    return proc.stdout


def _trains(
    core_v1: client.CoreV1Api, custom: client.CustomObjectsApi, ops: str, namespace: str
) -> str:
    """The torchrun job of the real-node tests, run to Succeeded by the operator in `ops`;
    returns the leader's pod name."""
    pods = wait_operator_ready(core_v1, ops)
    (container,) = pods[0].spec.containers
    assert container.image == DEFAULT_IMAGE  # the release's name, imported, never pulled
    scripts_configmap(core_v1, namespace)
    create_job(custom, namespace, torchrun_job("tr"))
    status = wait_phase(
        custom, namespace, "GenericJob", "tr", ("Succeeded", "Failed"), REAL_TIMEOUT
    )
    if status["phase"] != "Succeeded":
        text = "\n".join(logs(core_v1, namespace, f"tr-worker-{i}") for i in range(2))
        pytest.fail(f"{json.dumps(status, indent=1)}\n{text[-4000:]}")
    return leader(core_v1, ops)


def _in_cluster_and_allowed(core_v1: client.CoreV1Api, ops: str, pod: str) -> list[dict[str, Any]]:
    """The pod's log: it talked to the API server's Service address with its token, and no
    request it made was refused."""
    lines = operator_log(core_v1, ops, pod)
    start = next(x for x in lines if x.get("msg") == "starting")
    assert start["server"] == f"https://{realnode.API_SERVICE_IP}:{realnode.API_SERVICE_PORT}"
    assert denied(lines) == []
    return lines


def test_t9k_sdk_install_piped_to_kubectl_apply_runs_an_operator_that_trains_a_job(
    real_node: RealNode,
    kubectl: Path,
    kubeconfig: Path,
    core_v1: client.CoreV1Api,
    custom: client.CustomObjectsApi,
    namespace: str,
) -> None:
    with operator_namespace(core_v1, "cli") as ops:
        manifests = _sh(
            sys.executable, "-m", "t9k_sdk.cli", "install",
            "--namespace", ops, "--watch-namespace", namespace,
        )  # fmt: skip
        _sh(kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side", "-f", "-",
            stdin=manifests)  # fmt: skip
        pod = _trains(core_v1, custom, ops, namespace)
        _in_cluster_and_allowed(core_v1, ops, pod)

        # /metrics, scraped from the pod through the API server, counts the job
        samples = scrape(core_v1, ops, pod)
        kind = {"controller": "GenericJob"}
        assert (
            samples[
                ("t9k_operator_reconcile_total", frozenset({**kind, "result": "success"}.items()))
            ]
            >= 1
        )
        assert (
            samples[
                (
                    "t9k_operator_job_launch_duration_seconds_count",
                    frozenset({"kind": "GenericJob"}.items()),
                )
            ]
            == 1
        )

        # what the ServiceAccount may not do: anything outside the watched namespace
        sa = f"system:serviceaccount:{ops}:{NAME}"
        review = _sh(kubectl, "--kubeconfig", kubeconfig, "auth", "can-i", "--list", "--as", sa,
                     "-n", "default")  # fmt: skip
        assert "pods" not in review, review
        assert "secrets" not in review, review
        for verb, what, where in (
            ("create", "pods", "default"),
            ("get", "secrets", "kube-system"),
            ("list", "genericjobs.batch.tensorstack.dev", "default"),
            ("update", "deployments.apps", ops),
            ("delete", "nodes", ""),
        ):
            args = ["-n", where] if where else []
            proc = subprocess.run(
                [str(kubectl), "--kubeconfig", str(kubeconfig), "auth", "can-i", verb, what,
                 "--as", sa, *args],
                capture_output=True, text=True, timeout=30, check=False,
            )  # fmt: skip
            assert proc.stdout.strip() == "no", (verb, what, where, proc.stdout, proc.stderr)
        assert len(operator_pods(core_v1, ops)) == 1


def test_kubectl_apply_k_of_the_namespace_scoped_kustomize_overlay_runs_an_operator_that_trains(
    real_node: RealNode,
    kubectl: Path,
    kubeconfig: Path,
    core_v1: client.CoreV1Api,
    custom: client.CustomObjectsApi,
    namespace: str,
    tmp_path: Path,
) -> None:
    with operator_namespace(core_v1, "kustomize") as ops:
        tree = tmp_path / "t9k"
        _sh(sys.executable, "-m", "t9k_sdk.cli", "install", "--kustomize", tree,
            "--namespace", ops, "--watch-namespace", namespace)  # fmt: skip
        _sh(kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side", "-k",
            tree / "overlays" / "namespace-scoped")  # fmt: skip
        pod = _trains(core_v1, custom, ops, namespace)
        _in_cluster_and_allowed(core_v1, ops, pod)


@pytest.fixture(scope="module")
def helm() -> Path:
    return _tool_dir("ensure-gitops-binaries.sh", "--print-helm-dir") / "helm"


def test_helm_install_of_the_chart_runs_an_operator_that_trains_and_uninstall_keeps_the_crds(
    real_node: RealNode,
    helm: Path,
    kubeconfig: Path,
    core_v1: client.CoreV1Api,
    custom: client.CustomObjectsApi,
    namespace: str,
    tmp_path: Path,
) -> None:
    env_home = {f"HELM_{d}_HOME": str(tmp_path / d.lower()) for d in ("CACHE", "CONFIG", "DATA")}
    chart = REPO / "deploy" / "helm" / "t9k-operator"
    with operator_namespace(core_v1, "helm") as ops:
        base = [str(helm), "--kubeconfig", str(kubeconfig), "-n", ops]
        install = [*base, "install", "t9k", str(chart), "--set", f"namespace={ops}",
                   "--set", f"watchNamespace={namespace}", "--set", "createNamespace=false",
                   "--wait", "--timeout", "2m"]  # fmt: skip
        proc = subprocess.run(install, capture_output=True, text=True, timeout=180,
                              env={**os.environ, **env_home}, check=False)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        pod = _trains(core_v1, custom, ops, namespace)
        _in_cluster_and_allowed(core_v1, ops, pod)


def test_pulumi_up_of_t9k_operator_and_a_job_component_trains_and_destroy_removes_both(
    real_node: RealNode,
    kubeconfig: Path,
    core_v1: client.CoreV1Api,
    custom: client.CustomObjectsApi,
    namespace: str,
    tmp_path: Path,
) -> None:
    from pulumi import automation as auto

    from t9k_sdk.pulumi import GenericJob, T9kOperator
    from tests.pulumi.real_pulumi import PulumiEnv, ensure_binaries

    manifest = torchrun_job("tr")
    scripts_configmap(core_v1, namespace)
    lines: list[str] = []
    with operator_namespace(core_v1, "pulumi") as ops:

        def program() -> None:
            operator = T9kOperator(
                "t9k", {"namespace": ops, "watch_namespace": namespace, "create_namespace": False}
            )
            GenericJob(
                "train",
                {
                    "job": models.GenericJob.model_validate(manifest),
                    "namespace": namespace,
                    "operator": operator,
                    "await_phase": "Succeeded",
                    "timeout": "4m",
                },
            )

        env = PulumiEnv(ensure_binaries(), tmp_path, kubeconfig)
        stack = env.inline_stack("t9k-in-cluster", f"t{uuid.uuid4().hex[:8]}", program, {})
        try:
            try:
                stack.up(on_output=lines.append)
            except auto.CommandError:
                pytest.fail("pulumi up failed:\n" + "\n".join(lines[-60:]))
            (pod,) = wait_operator_ready(core_v1, ops)
            assert pod.spec.containers[0].image == DEFAULT_IMAGE
            phase = wait_phase(custom, namespace, "GenericJob", "tr", ("Succeeded",), 10)
            assert phase["phase"] == "Succeeded"
            _in_cluster_and_allowed(core_v1, ops, leader(core_v1, ops))
            stack.destroy(on_output=lines.append)
            assert operator_pods(core_v1, ops) == [] or all(
                p.metadata.deletion_timestamp for p in operator_pods(core_v1, ops)
            )
        finally:
            stack.destroy(on_output=lines.append)
            stack.workspace.remove_stack(stack.name)


def _job_pods(core_v1: client.CoreV1Api, namespace: str, job: str) -> dict[str, str]:
    """name -> uid of the job's pods."""
    pods = core_v1.list_namespaced_pod(namespace, label_selector=f"{OWNER_LABEL}={job}").items
    return {p.metadata.name: p.metadata.uid for p in pods}


def _install_cli(kubectl: Path, kubeconfig: Path, ops: str, namespace: str) -> None:
    manifests = _sh(sys.executable, "-m", "t9k_sdk.cli", "install",
                    "--namespace", ops, "--watch-namespace", namespace)  # fmt: skip
    _sh(kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side", "-f", "-", stdin=manifests)


def _phases_while(
    custom: client.CustomObjectsApi, namespace: str, kind: str, name: str, action: Any
) -> list[str]:
    """Runs `action()` in a thread while recording every phase the job shows, until it ends."""
    import threading

    seen: list[str] = []
    thread = threading.Thread(target=action)
    thread.start()
    deadline = time.monotonic() + REAL_TIMEOUT
    while time.monotonic() < deadline:
        phase = job_status(custom, namespace, kind, name).get("phase", "")
        if not seen or seen[-1] != phase:
            seen.append(phase)
        if phase in ("Succeeded", "Failed") and not thread.is_alive():
            break
        time.sleep(0.5)
    thread.join(timeout=1)
    return seen


def test_two_replicas_hand_over_when_the_leader_goes_and_the_job_trains_once(
    real_node: RealNode,
    kubectl: Path,
    kubeconfig: Path,
    core_v1: client.CoreV1Api,
    custom: client.CustomObjectsApi,
    namespace: str,
) -> None:
    with operator_namespace(core_v1, "failover") as ops:
        _install_cli(kubectl, kubeconfig, ops, namespace)
        _sh(kubectl, "--kubeconfig", kubeconfig, "-n", ops, "scale", "deployment", NAME,
            "--replicas=2")  # fmt: skip
        wait_operator_ready(core_v1, ops, replicas=2)
        first = leader(core_v1, ops)
        scripts_configmap(core_v1, namespace)
        create_job(custom, namespace, torchrun_job("tr", steps=200))
        wait_phase(custom, namespace, "GenericJob", "tr", ("Running",), REAL_TIMEOUT)
        pods = _job_pods(core_v1, namespace, "tr")

        during: list[str] = []

        def hand_over() -> None:
            core_v1.delete_namespaced_pod(first, ops)
            wait_for(lambda: leader(core_v1, ops), lambda who: who != first, "a new leader", 60)
            during.append(job_status(custom, namespace, "GenericJob", "tr").get("phase", ""))

        phases = _phases_while(custom, namespace, "GenericJob", "tr", hand_over)
        assert phases == ["Running", "Succeeded"], phases
        assert during == ["Running"]  # the hand-over happened while the job trained
        second = leader(core_v1, ops)
        assert second != first
        # one pod per worker, never recreated: the standby took the job over as it was
        assert _job_pods(core_v1, namespace, "tr") == pods
        _in_cluster_and_allowed(core_v1, ops, second)
        takeover = [
            x for x in operator_log(core_v1, ops, second) if x.get("msg") == "became the leader"
        ]
        assert len(takeover) == 1


def test_an_image_change_and_its_rollback_while_a_deepspeedjob_trains_spend_no_restart(
    real_node: RealNode,
    kubectl: Path,
    kubeconfig: Path,
    core_v1: client.CoreV1Api,
    custom: client.CustomObjectsApi,
    namespace: str,
) -> None:
    second_tag = images.IMAGES["operator"].ref  # the same build under its other name
    with operator_namespace(core_v1, "upgrade") as ops:
        _install_cli(kubectl, kubeconfig, ops, namespace)
        wait_operator_ready(core_v1, ops)
        scripts_configmap(core_v1, namespace)
        job = deepspeed_job("ds", ["deepspeed_train.py", "--steps=120", "--step-seconds=0.5"])
        create_job(custom, namespace, job)
        wait_phase(custom, namespace, "DeepSpeedJob", "ds", ("Running",), REAL_TIMEOUT)
        pods = _job_pods(core_v1, namespace, "ds")
        rollout = [str(kubectl), "--kubeconfig", str(kubeconfig), "-n", ops, "rollout"]

        def upgrade_and_roll_back() -> None:
            for change in (
                ["set", "image", f"deployment/{NAME}", f"operator={second_tag}"],
                ["rollout", "undo", f"deployment/{NAME}"],
            ):
                subprocess.run([str(kubectl), "--kubeconfig", str(kubeconfig), "-n", ops, *change],
                               check=True, capture_output=True, timeout=60)  # fmt: skip
                subprocess.run([*rollout, "status", f"deployment/{NAME}", "--timeout=120s"],
                               check=True, capture_output=True, timeout=150)  # fmt: skip
                wait_operator_ready(core_v1, ops)
                during.append(job_status(custom, namespace, "DeepSpeedJob", "ds").get("phase", ""))

        during: list[str] = []
        phases = _phases_while(custom, namespace, "DeepSpeedJob", "ds", upgrade_and_roll_back)
        assert phases == ["Running", "Succeeded"], phases
        assert during == ["Running", "Running"]  # both rollouts happened while it trained
        assert _job_pods(core_v1, namespace, "ds") == pods  # nothing recreated
        for pod in core_v1.list_namespaced_pod(namespace).items:
            assert all(c.restart_count == 0 for c in pod.status.container_statuses or ())
        (now,) = wait_operator_ready(core_v1, ops)
        assert now.spec.containers[0].image == DEFAULT_IMAGE  # rolled back
        history = _sh(*rollout, "history", f"deployment/{NAME}")
        assert len([x for x in history.splitlines() if x[:1].isdigit()]) == 2, history
        _in_cluster_and_allowed(core_v1, ops, leader(core_v1, ops))


def test_uninstalling_without_the_crds_leaves_jobs_training_and_a_new_install_takes_them_over(
    real_node: RealNode,
    kubectl: Path,
    kubeconfig: Path,
    core_v1: client.CoreV1Api,
    custom: client.CustomObjectsApi,
    namespace: str,
) -> None:
    """docs/operator/install.md, "Uninstall": `t9k-sdk install --no-crds | kubectl delete -f -`
    removes the operator and keeps every job; its pods train on, and the next operator
    installed takes the job over where it is."""
    scripts_configmap(core_v1, namespace)
    with operator_namespace(core_v1, "gone") as ops:
        _install_cli(kubectl, kubeconfig, ops, namespace)
        wait_operator_ready(core_v1, ops)
        job = deepspeed_job("ds", ["deepspeed_train.py", "--steps=120", "--step-seconds=0.5"])
        create_job(custom, namespace, job)
        wait_phase(custom, namespace, "DeepSpeedJob", "ds", ("Running",), REAL_TIMEOUT)
        pods = _job_pods(core_v1, namespace, "ds")
        printed = _sh(sys.executable, "-m", "t9k_sdk.cli", "install", "--no-crds",
                      "--namespace", ops, "--watch-namespace", namespace)  # fmt: skip
        _sh(kubectl, "--kubeconfig", kubeconfig, "delete", "--wait", "-f", "-", stdin=printed)
        assert operator_pods(core_v1, ops) == []
        # the job and its pods are as they were; the CRDs are there
        assert job_status(custom, namespace, "DeepSpeedJob", "ds")["phase"] == "Running"
        assert _job_pods(core_v1, namespace, "ds") == pods
        client.ApiextensionsV1Api(core_v1.api_client).read_custom_resource_definition(
            "deepspeedjobs.batch.tensorstack.dev"
        )
    with operator_namespace(core_v1, "again") as ops:
        _install_cli(kubectl, kubeconfig, ops, namespace)
        wait_phase(custom, namespace, "DeepSpeedJob", "ds", ("Succeeded",), REAL_TIMEOUT)
        assert _job_pods(core_v1, namespace, "ds") == pods
        _in_cluster_and_allowed(core_v1, ops, leader(core_v1, ops))


# A tenant's pod against the operator's health port: 64 connections that send one byte every
# 3 s and 64 that send header lines without end, each reopened as soon as the server closes it.
ATTACK = """
import socket, sys, threading, time
host, port, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
end = time.monotonic() + seconds
opened = [0]
def trickle():
    while time.monotonic() < end:
        try:
            s = socket.create_connection((host, port), timeout=5); opened[0] += 1
            for b in b"GET /healthz HTTP/1.1\\r\\nHost: x\\r\\n":
                s.send(bytes([b])); time.sleep(3)
                if time.monotonic() > end: break
        except OSError:
            time.sleep(0.2)
def stuff():
    while time.monotonic() < end:
        try:
            s = socket.create_connection((host, port), timeout=5); opened[0] += 1
            s.send(b"GET /healthz HTTP/1.1\\r\\n")
            while time.monotonic() < end:
                s.send(b"X-Stuffing: " + b"a" * 1000 + b"\\r\\n")
        except OSError:
            time.sleep(0.05)
threads = [threading.Thread(target=f, daemon=True) for f in [trickle] * 64 + [stuff] * 64]
for t in threads: t.start()
time.sleep(seconds + 1)
print("connections opened", opened[0], flush=True)
"""


def _rss(core_v1: client.CoreV1Api, ops: str, pod: str) -> float:
    return scrape(core_v1, ops, pod)[("process_resident_memory_bytes", frozenset())]


def test_a_pod_flooding_the_health_port_neither_restarts_the_operator_nor_stops_its_work(
    real_node: RealNode,
    kubectl: Path,
    kubeconfig: Path,
    core_v1: client.CoreV1Api,
    custom: client.CustomObjectsApi,
    namespace: str,
) -> None:
    with operator_namespace(core_v1, "flood") as ops:
        _install_cli(kubectl, kubeconfig, ops, namespace)
        (pod,) = wait_operator_ready(core_v1, ops)
        name, ip = pod.metadata.name, pod.status.pod_ip
        time.sleep(5)
        idle = _rss(core_v1, ops, name)
        attacker = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "attacker"},
            "spec": {
                **placement(),
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 1,
                "containers": [
                    {
                        "name": "attack",
                        "image": base_image(),
                        "imagePullPolicy": "Never",
                        "command": ["python3", "-c", ATTACK, ip, str(HEALTH_PORT), "45"],
                    }
                ],
            },
        }
        core_v1.create_namespaced_pod(namespace, attacker)
        wait_for(lambda: core_v1.read_namespaced_pod("attacker", namespace).status.phase,
                 lambda p: p == "Running", "the attacker running", 60)  # fmt: skip
        time.sleep(5)
        # another tenant's job, created under attack, is reconciled to its end
        scripts_configmap(core_v1, namespace)
        create_job(custom, namespace, torchrun_job("tr", steps=20))
        answers, peak = [], idle
        while core_v1.read_namespaced_pod("attacker", namespace).status.phase == "Running":
            proc = subprocess.run(
                [str(kubectl), "--kubeconfig", str(kubeconfig), "get", "--raw",
                 f"/api/v1/namespaces/{ops}/pods/{name}:{HEALTH_PORT}/proxy/healthz"],
                capture_output=True, text=True, timeout=30, check=False,
            )  # fmt: skip
            answers.append(proc.stdout.strip() if proc.returncode == 0 else proc.stderr.strip())
            peak = max(peak, _rss(core_v1, ops, name))
            time.sleep(1)
        assert "connections opened" in logs(core_v1, namespace, "attacker")
        status = wait_phase(custom, namespace, "GenericJob", "tr", ("Succeeded", "Failed"),
                            REAL_TIMEOUT)  # fmt: skip
        assert status["phase"] == "Succeeded"
        assert len(answers) >= 20
        assert answers == ["ok"] * len(answers), answers
        assert peak - idle < 128 * 2**20, (idle, peak)
        after = core_v1.read_namespaced_pod(name, ops)
        assert after.status.container_statuses[0].restart_count == 0
        assert any(c.type == "Ready" and c.status == "True" for c in after.status.conditions)
        print(f"operator RSS idle {idle / 2**20:.0f} MiB, peak under attack {peak / 2**20:.0f} MiB;"
              f" {len(answers)} of {len(answers)} /healthz answered")  # fmt: skip


def test_the_gitops_examples_operator_overlay_applied_with_kubectl_trains(
    real_node: RealNode,
    kubectl: Path,
    kubeconfig: Path,
    core_v1: client.CoreV1Api,
    custom: client.CustomObjectsApi,
    namespace: str,
    tmp_path: Path,
) -> None:
    """examples/gitops/platform/t9k-operator as Argo CD or Flux would apply it, under the two
    changes a shared test cluster needs, made the way a platform repository makes them (a
    kustomization on top): the image mirror it names is the release here, and the operator
    reconciles the test's namespace only (the overlay is cluster-wide; other tests' jobs are
    not its business)."""
    overlay = REPO / "examples" / "gitops" / "platform" / "t9k-operator"
    (tmp_path / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources:\n- {os.path.relpath(overlay, tmp_path)}\n"
        "images:\n- name: registry.example.com/platform/t9k-operator\n"
        f"  newName: {DEFAULT_IMAGE.rsplit(':', 1)[0]}\n  newTag: '{DEFAULT_IMAGE.rsplit(':', 1)[1]}'\n"
        "patches:\n- target: {kind: Deployment, name: t9k-operator}\n  patch: |\n"
        "    - op: add\n      path: /spec/template/spec/containers/0/args/-\n"
        f"      value: --namespace={namespace}\n"
    )  # fmt: skip
    rbac = client.RbacAuthorizationV1Api(core_v1.api_client)
    body = {"metadata": {"name": "t9k-system", "annotations": PLACEMENT}}
    core_v1.create_namespace(body)
    try:
        _sh(kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side", "-k", tmp_path)
        pod = _trains(core_v1, custom, "t9k-system", namespace)
        _in_cluster_and_allowed(core_v1, "t9k-system", pod)
    finally:
        for delete in (rbac.delete_cluster_role_binding, rbac.delete_cluster_role):
            with contextlib.suppress(ApiException):
                delete(NAME)
        with contextlib.suppress(ApiException):
            core_v1.delete_namespace("t9k-system")
        wait_for(lambda: _gone(core_v1, "t9k-system"), bool, "t9k-system deleted", 120)


def _gone(core_v1: client.CoreV1Api, name: str) -> bool:
    try:
        core_v1.read_namespace(name)
    except ApiException as err:
        return bool(err.status == 404)
    return False
