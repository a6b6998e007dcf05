"""The operator installed as a platform team installs it, running only as a pod on the real node
from its own image (`make operator-image`), with its ServiceAccount's token: each install path
brings up a Ready operator that trains the real-node torchrun job to Succeeded.

No host operator watches these namespaces; the operator's pod reaches the API server at the
`kubernetes` Service's address (tools/apirelay.py stands in for kube-proxy there) and verifies
it with its ServiceAccount's CA, as on any cluster.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from t9k_sdk.install import DEFAULT_IMAGE, NAME
from tests.cluster.incluster_helpers import (
    create_job,
    denied,
    leader,
    operator_log,
    operator_namespace,
    operator_pods,
    scrape,
    wait_operator_ready,
    wait_phase,
)
from tests.cluster.real_helpers import REAL_TIMEOUT, RealNode, logs, scripts_configmap
from tests.cluster.test_real_training import torchrun_job
from tools import realnode

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
