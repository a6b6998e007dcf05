"""The real `t9k-operator` process against the local control plane.

Each test starts operator processes (`python -m t9k_operator`, through the `start_operator`
fixture of conftest.py) scoped to its namespace, with the Lease in that namespace too, so tests
and other runs never see each other's operators. An operator's log goes to a file; the fixture
prints it at teardown, which pytest shows only when the test failed.
"""

from __future__ import annotations

import contextlib
import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client

from t9k_sdk import models
from t9k_sdk.install import install_manifests
from tools.kit import (
    EXIT_CODE,
    RUN_FOR,
    Operator,
    create_job,
    job_events,
    job_pods,
    request,
    service_account_kubeconfig,
    wait_for,
    wait_job_phase,
)

TAKEOVER_SECONDS = 25.0  # lease duration 15 s + retry 2 s + start-up, with margin


def generic_job(
    name: str, replicas: int = 2, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    template: dict[str, Any] = {
        "spec": {
            "containers": [
                {
                    "name": "worker",
                    "image": "example.invalid/t9k:sim",
                    "command": ["train", "--rank=$(rank)"],
                }
            ]
        }
    }
    if annotations:
        template["metadata"] = {"annotations": annotations}
    return {
        "apiVersion": models.API_VERSION,
        "kind": "GenericJob",
        "metadata": {"name": name},
        "spec": {"replicaSpecs": [{"type": "worker", "replicas": replicas, "template": template}]},
    }


def lease_holder(api_client: client.ApiClient, namespace: str) -> str | None:
    lease = client.CoordinationV1Api(api_client).read_namespaced_lease("t9k-operator", namespace)
    return lease.spec.holder_identity


FINISH_OK = {RUN_FOR: "1s", EXIT_CODE: "0"}


def test_a_generic_job_runs_to_success_with_pods_status_and_events(
    start_operator: Callable[..., Operator],
    custom: client.CustomObjectsApi,
    core_v1: client.CoreV1Api,
    namespace: str,
) -> None:
    op = start_operator()
    assert op.wait_ready("leader") == "leader: caches synced, workers running"
    create_job(custom, namespace, generic_job("mnist", replicas=2, annotations=FINISH_OK))
    status = wait_job_phase(custom, namespace, "mnist", "Succeeded")
    assert set(job_pods(core_v1, namespace, "mnist")) == {"mnist-worker-0", "mnist-worker-1"}
    replicas = {r["name"]: r["phase"] for t in status["tasks"] for r in t["replicas"]}
    assert replicas == {"mnist-worker-0": "Succeeded", "mnist-worker-1": "Succeeded"}
    pod = core_v1.read_namespaced_pod("mnist-worker-1", namespace)
    assert pod.spec.containers[0].command == ["train", "--rank=1"]
    assert pod.metadata.owner_references[0].kind == "GenericJob"
    events = job_events(core_v1, namespace, "mnist")
    reasons = {e.reason for e in events}
    assert {"SuccessfulCreatePod", "Succeeded"} <= reasons
    assert {e.reporting_component for e in events} == {"t9k-operator"}


def test_many_jobs_are_reconciled_concurrently_each_with_exactly_its_pods(
    start_operator: Callable[..., Operator],
    custom: client.CustomObjectsApi,
    core_v1: client.CoreV1Api,
    namespace: str,
) -> None:
    op = start_operator("--workers", "4")
    op.wait_ready("leader")
    names = [f"job-{n}" for n in range(10)]
    for name in names:
        create_job(custom, namespace, generic_job(name, replicas=2, annotations=FINISH_OK))
    for name in names:
        wait_job_phase(custom, namespace, name, "Succeeded", timeout=60)
    pods = {p.metadata.name for p in core_v1.list_namespaced_pod(namespace).items}
    assert pods == {f"{name}-worker-{i}" for name in names for i in (0, 1)}


def test_only_the_leader_acts_and_a_standby_takes_over_when_it_dies(
    start_operator: Callable[..., Operator],
    custom: client.CustomObjectsApi,
    core_v1: client.CoreV1Api,
    api_client: client.ApiClient,
    namespace: str,
) -> None:
    first = start_operator()
    first.wait_ready("leader")
    second = start_operator()
    second.wait_ready("standby")
    # Ready as a standby from its first look at the lease, which may come before it has read
    # who holds it ("the leader is none yet"): within a retry period it names the leader.
    _code, text = wait_for(
        second.readyz, lambda r: "none yet" not in r[1], "the standby to name the leader", 10
    )
    assert first.identity() in text
    assert lease_holder(api_client, namespace) == first.identity()

    create_job(custom, namespace, generic_job("one", replicas=2, annotations=FINISH_OK))
    wait_job_phase(custom, namespace, "one", "Succeeded")
    events = job_events(core_v1, namespace, "one")
    assert {e.reporting_instance for e in events} == {first.identity()}
    assert "controller: create" not in second.log()  # the standby never wrote anything
    assert second.readyz()[1].startswith("standby")

    killed_at = time.monotonic()
    first.stop(signal.SIGKILL)  # no chance to release the lease: the standby waits it out
    second.wait_ready("leader", timeout=TAKEOVER_SECONDS)
    took = time.monotonic() - killed_at
    assert lease_holder(api_client, namespace) == second.identity()
    assert took >= 10, "took over before the dead leader's lease could have expired"

    create_job(custom, namespace, generic_job("two", replicas=1, annotations=FINISH_OK))
    wait_job_phase(custom, namespace, "two", "Succeeded")
    assert {e.reporting_instance for e in job_events(core_v1, namespace, "two")} == {
        second.identity()
    }


def test_sigterm_releases_the_lease_for_a_quick_hand_over(
    start_operator: Callable[..., Operator], api_client: client.ApiClient, namespace: str
) -> None:
    first = start_operator()
    first.wait_ready("leader")
    second = start_operator()
    second.wait_ready("standby")
    stopped_at = time.monotonic()
    assert first.stop(signal.SIGTERM) == 0
    assert "released the lease" in first.log()
    second.wait_ready("leader", timeout=10)
    assert time.monotonic() - stopped_at < 10  # no waiting for the 15 s lease to expire
    assert lease_holder(api_client, namespace) == second.identity()


def test_a_leader_that_loses_its_lease_exits_non_zero(
    start_operator: Callable[..., Operator], api_client: client.ApiClient, namespace: str
) -> None:
    op = start_operator()
    op.wait_ready("leader")
    leases = client.CoordinationV1Api(api_client)
    lease = leases.read_namespaced_lease("t9k-operator", namespace)
    lease.spec.holder_identity = "intruder"
    leases.replace_namespaced_lease("t9k-operator", namespace, lease)
    wait_for(lambda: op.proc.poll(), lambda rc: rc is not None, "the operator to exit", timeout=15)
    assert op.proc.returncode == 1
    assert "lost the lease" in op.log()


def test_an_operator_restart_mid_job_creates_no_duplicate_pods_and_status_converges(
    start_operator: Callable[..., Operator],
    custom: client.CustomObjectsApi,
    core_v1: client.CoreV1Api,
    namespace: str,
) -> None:
    first = start_operator()
    first.wait_ready("leader")
    create_job(custom, namespace, generic_job("long", replicas=3))  # pods run until told to stop
    wait_job_phase(custom, namespace, "long", "Running")
    wait_for(
        lambda: core_v1.list_namespaced_pod(namespace).items,
        lambda pods: len(pods) == 3 and all(p.status.phase == "Running" for p in pods),
        "three running pods",
    )
    before = job_pods(core_v1, namespace, "long")
    assert first.stop() == 0

    second = start_operator()
    second.wait_ready("leader")
    # The pods finish while the new operator watches: it must adopt them, not replace them.
    for name in before:
        core_v1.patch_namespaced_pod(
            name, namespace, {"metadata": {"annotations": {RUN_FOR: "0s", EXIT_CODE: "0"}}}
        )
    status = wait_job_phase(custom, namespace, "long", "Succeeded")
    assert job_pods(core_v1, namespace, "long") == before  # same names, same uids, no extras
    uids = {r["name"]: r["uid"] for t in status["tasks"] for r in t["replicas"]}
    assert uids == before
    assert "controller: create " not in second.log()


def test_the_install_cluster_role_is_enough_to_run_jobs(
    start_operator: Callable[..., Operator],
    custom: client.CustomObjectsApi,
    core_v1: client.CoreV1Api,
    api_client: client.ApiClient,
    kubeconfig: Path,
    namespace: str,
    tmp_path: Path,
) -> None:
    """The operator runs as a service account bound to exactly the roles of the install: the
    ClusterRole (renamed for this test) and the Lease's Role in its namespace."""
    suffix = uuid.uuid4().hex[:6]
    role_name = f"t9k-operator-test-{suffix}"
    manifests = {m["kind"]: m for m in install_manifests(namespace=namespace)}
    rbac = client.RbacAuthorizationV1Api(api_client)
    rbac.create_namespaced_role(namespace, manifests["Role"])
    rbac.create_namespaced_role_binding(namespace, manifests["RoleBinding"])
    role = {**manifests["ClusterRole"], "metadata": {"name": role_name}}
    binding = {
        **manifests["ClusterRoleBinding"],
        "metadata": {"name": role_name},
        "roleRef": {**manifests["ClusterRoleBinding"]["roleRef"], "name": role_name},
    }
    core_v1.create_namespaced_service_account(namespace, manifests["ServiceAccount"])
    rbac.create_cluster_role(role)
    try:
        rbac.create_cluster_role_binding(binding)
        try:
            sa_kubeconfig = service_account_kubeconfig(
                core_v1, kubeconfig, namespace, tmp_path / "sa-kubeconfig"
            )

            op = start_operator(kubeconfig_path=sa_kubeconfig)
            op.wait_ready("leader")
            create_job(custom, namespace, generic_job("rbac", replicas=2, annotations=FINISH_OK))
            wait_job_phase(custom, namespace, "rbac", "Succeeded")
            assert "Forbidden" not in op.log()
            assert {e.reporting_component for e in job_events(core_v1, namespace, "rbac")} == {
                "t9k-operator"
            }
        finally:
            with contextlib.suppress(client.ApiException):
                rbac.delete_cluster_role_binding(role_name)
    finally:
        with contextlib.suppress(client.ApiException):
            rbac.delete_cluster_role(role_name)


def test_the_whole_install_is_accepted_by_the_api_server(api_client: client.ApiClient) -> None:
    """Server-side dry run of every object `t9k-sdk install` prints (nothing is persisted)."""
    for manifest in install_manifests(namespace="default"):
        if manifest["kind"] in ("Namespace", "CustomResourceDefinition"):
            continue  # `default` exists; the CRDs are installed by the cluster tool already
        group_version = manifest["apiVersion"]
        plural = {
            "ServiceAccount": "serviceaccounts",
            "ClusterRole": "clusterroles",
            "ClusterRoleBinding": "clusterrolebindings",
            "Role": "roles",
            "RoleBinding": "rolebindings",
            "Deployment": "deployments",
        }[manifest["kind"]]
        root = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
        namespaced = "namespace" in manifest["metadata"]
        path = f"{root}/namespaces/default/{plural}" if namespaced else f"{root}/{plural}"
        request(
            api_client,
            "POST",
            path,
            query=[("dryRun", "All"), ("fieldValidation", "Strict")],
            headers={"Content-Type": "application/json", "Accept": "application/json"},
            body=manifest,
        )
