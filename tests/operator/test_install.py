"""`install_manifests()` (behind `t9k-sdk install`) and the rendered files in operator/deploy/."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from t9k_sdk._yaml import load_documents
from t9k_sdk.install import DEFAULT_IMAGE, LEASE_ROLE, deploy_files, install_manifests

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "operator" / "deploy"


def by_kind(manifests: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [m for m in manifests if m["kind"] == kind]
    return found


def test_objects_come_in_apply_order() -> None:
    kinds = [m["kind"] for m in install_manifests()]
    assert kinds == [
        "Namespace",
        "CustomResourceDefinition",
        "CustomResourceDefinition",
        "CustomResourceDefinition",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
    ]


def test_the_crds_are_the_three_job_kinds_and_not_the_schedulers_podgroup() -> None:
    names = sorted(
        m["metadata"]["name"]
        for m in install_manifests()
        if m["kind"] == "CustomResourceDefinition"
    )
    assert names == [
        "colossalaijobs.batch.tensorstack.dev",
        "deepspeedjobs.batch.tensorstack.dev",
        "genericjobs.batch.tensorstack.dev",
    ]


def test_image_and_namespace_reach_every_object_that_names_them() -> None:
    manifests = install_manifests(image="registry.example/t9k-operator:9", namespace="ops")
    assert by_kind(manifests, "Namespace")["metadata"]["name"] == "ops"
    assert by_kind(manifests, "ServiceAccount")["metadata"]["namespace"] == "ops"
    assert by_kind(manifests, "ClusterRoleBinding")["subjects"] == [
        {"kind": "ServiceAccount", "name": "t9k-operator", "namespace": "ops"}
    ]
    deployment = by_kind(manifests, "Deployment")
    assert deployment["metadata"]["namespace"] == "ops"
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example/t9k-operator:9"


def test_the_deployment_runs_one_leader_electing_locked_down_replica_with_probes() -> None:
    deployment = by_kind(install_manifests(), "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert deployment["spec"]["replicas"] == 1
    assert pod["serviceAccountName"] == "t9k-operator"
    assert "--leader-elect" in container["args"]
    assert {
        "name": "POD_NAMESPACE",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
    } in container["env"]
    port = next(p["containerPort"] for p in container["ports"] if p["name"] == "health")
    assert f"--health-port={port}" in container["args"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert set(container["resources"]) == {"requests", "limits"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}


def test_the_operator_gets_its_token_from_a_projected_volume_of_its_own() -> None:
    pod = by_kind(install_manifests(), "Deployment")["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    (container,) = pod["containers"]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "api-access")
    assert mount == {
        "name": "api-access",
        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
        "readOnly": True,
    }
    volume = next(v for v in pod["volumes"] if v["name"] == "api-access")
    sources = volume["projected"]["sources"]
    assert sources[0]["serviceAccountToken"]["path"] == "token"
    assert sources[1]["configMap"]["name"] == "kube-root-ca.crt"
    assert sources[2]["downwardAPI"]["items"][0]["path"] == "namespace"


@pytest.mark.parametrize(("image", "namespace"), [("", "ns"), ("img", " ")])
def test_empty_arguments_are_rejected(image: str, namespace: str) -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        install_manifests(image=image, namespace=namespace)


@pytest.mark.parametrize("bad", ["Team_A", "team.a", "-team", "team-", "a" * 64, "ops system"])
@pytest.mark.parametrize("which", ["namespace", "watch_namespace"])
def test_an_invalid_namespace_is_rejected_naming_the_value_and_the_rule(
    bad: str, which: str
) -> None:
    with pytest.raises(ValueError, match="DNS-1123 label") as caught:
        install_manifests(**{which: bad})  # type: ignore[arg-type]
    assert repr(bad) in str(caught.value)
    assert "lowercase letters, digits and '-'" in str(caught.value)


def rules_of(manifests: list[dict[str, Any]], kind: str, name: str) -> list[dict[str, Any]]:
    (role,) = [m for m in manifests if m["kind"] == kind and m["metadata"]["name"] == name]
    rules: list[dict[str, Any]] = role["rules"]
    return rules


def test_the_lease_is_granted_only_in_the_operators_namespace_and_by_name() -> None:
    manifests = install_manifests(namespace="ops")
    cluster_wide = rules_of(manifests, "ClusterRole", "t9k-operator")
    assert not [r for r in cluster_wide if "leases" in r["resources"]]
    lease_role = by_kind([m for m in manifests if m["metadata"]["name"] == LEASE_ROLE], "Role")
    assert lease_role["metadata"]["namespace"] == "ops"
    by_name, create = lease_role["rules"]
    assert (by_name["resourceNames"], by_name["verbs"]) == (["t9k-operator"], ["get", "update"])
    # RBAC cannot tie `create` to a name: the only rule without resourceNames, and only create.
    assert "resourceNames" not in create
    assert create["verbs"] == ["create"]
    binding = by_kind(manifests, "RoleBinding")
    assert binding["metadata"]["namespace"] == "ops"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": LEASE_ROLE,
    }


def test_pods_and_secrets_are_never_updated_so_update_is_not_granted() -> None:
    rules = rules_of(install_manifests(), "ClusterRole", "t9k-operator")
    for resource in ("pods", "secrets"):
        verbs = {v for r in rules if resource in r["resources"] for v in r["verbs"]}
        assert verbs == {"get", "list", "watch", "create", "delete"}, resource


def test_a_namespace_scoped_install_has_no_cluster_role_and_watches_one_namespace() -> None:
    manifests = install_manifests(namespace="ops", watch_namespace="team-a")
    kinds = [m["kind"] for m in manifests]
    assert "ClusterRole" not in kinds
    assert "ClusterRoleBinding" not in kinds
    work = [m for m in manifests if m["metadata"]["name"] == "t9k-operator"]
    role, binding = by_kind(work, "Role"), by_kind(work, "RoleBinding")
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == "team-a"
    assert role["rules"] == rules_of(install_manifests(), "ClusterRole", "t9k-operator")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "t9k-operator", "namespace": "ops"}
    ]
    assert binding["roleRef"]["kind"] == "Role"
    lease = [m for m in manifests if m["metadata"]["name"] == LEASE_ROLE]
    assert {m["metadata"]["namespace"] for m in lease} == {"ops"}
    (container,) = by_kind(manifests, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert "--namespace=team-a" in container["args"]
    assert "--namespace=team-a" not in str(install_manifests(namespace="ops"))


@pytest.mark.parametrize("name", sorted(deploy_files()))
def test_committed_deploy_files_match_install_manifests(name: str) -> None:
    rendered = deploy_files()[name]
    path = DEPLOY / name
    if os.environ.get("T9K_REGENERATE") and not os.environ.get("CI"):
        path.write_text(rendered)
    assert path.exists(), f"{path} is missing; run T9K_REGENERATE=1 pytest {__file__}"
    assert path.read_text() == rendered, f"{path} is stale; run T9K_REGENERATE=1 pytest {__file__}"


def test_deploy_directory_holds_the_whole_install() -> None:
    """`kubectl apply -R -f operator/deploy/` installs what `t9k-sdk install` prints."""
    on_disk = [
        doc
        for path in sorted(DEPLOY.rglob("*.yaml"))
        for doc in load_documents(path.read_text())
        if doc
    ]
    key = lambda m: (m["kind"], m["metadata"]["name"])  # noqa: E731
    assert sorted(map(key, on_disk)) == sorted(map(key, install_manifests()))
    assert (
        by_kind(on_disk, "Deployment")["spec"]["template"]["spec"]["containers"][0]["image"]
        == DEFAULT_IMAGE
    )
