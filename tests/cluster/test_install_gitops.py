"""The operator's kustomize tree (deploy/kustomize) and Helm chart (deploy/helm/t9k-operator),
read by the real tools: kubectl (with its kustomize) and helm, both built here
(tools/ensure-binaries.sh, tools/ensure-gitops-binaries.sh), against the local control plane.

Every rendering is compared, as parsed objects, with what `t9k-sdk install` prints for the
same options. Nothing here waits for the operator to run: kwok runs no images, and the
Deployment object is what the install is responsible for.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from t9k_sdk._yaml import load_documents

REPO = Path(__file__).resolve().parents[2]
KUSTOMIZE = REPO / "deploy" / "kustomize"
CHART = REPO / "deploy" / "helm" / "t9k-operator"
Objects = list[dict[str, Any]]


def _tool_dir(script: str, flag: str) -> Path:
    proc = subprocess.run(
        ["bash", str(REPO / "tools" / script), flag], capture_output=True, text=True, check=True
    )
    return Path(proc.stdout.strip())


@pytest.fixture(scope="session")
def kubectl() -> Path:
    path = _tool_dir("ensure-binaries.sh", "--print-dir") / "kubectl"
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make cluster-binaries`", pytrace=False)
    return path


@pytest.fixture(scope="session")
def helm() -> Path:
    path = _tool_dir("ensure-gitops-binaries.sh", "--print-helm-dir") / "helm"
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make gitops-binaries`", pytrace=False)
    return path


@pytest.fixture
def helm_env(tmp_path: Path) -> dict[str, str]:
    """Helm's cache, config and data under the test's directory, not the user's home."""
    return {
        **os.environ,
        **{
            f"HELM_{d}_HOME": str(tmp_path / f"helm-{d.lower()}")
            for d in ("CACHE", "CONFIG", "DATA")
        },
    }


def _run(
    *argv: str | Path, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    if check and proc.returncode != 0:
        pytest.fail(f"{' '.join(map(str, argv))} failed:\n{proc.stdout}{proc.stderr}")
    return proc


def t9k_install(*options: str) -> Objects:
    """What `t9k-sdk install OPTIONS` prints, parsed."""
    proc = _run(sys.executable, "-m", "t9k_sdk.cli", "install", *options)
    return [d for d in load_documents(proc.stdout) if d]


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    return (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def assert_same_objects(got: Objects, expected: Objects) -> None:
    got, expected = sorted(got, key=_key), sorted(expected, key=_key)
    assert [_key(o) for o in got] == [_key(o) for o in expected]
    for mine, theirs in zip(got, expected, strict=True):
        assert mine == theirs, f"{_key(mine)} differs"


def kustomize(kubectl: Path, directory: Path) -> Objects:
    return [d for d in load_documents(_run(kubectl, "kustomize", directory).stdout) if d]


def downstream(tmp_path: Path, resource: Path, body: str) -> Path:
    """A user's own kustomization.yaml on top of one of ours (as with a remote base URL)."""
    directory = tmp_path / f"mine-{uuid.uuid4().hex[:6]}"
    directory.mkdir()
    (directory / "kustomization.yaml").write_text(
        f"resources:\n- {os.path.relpath(resource, directory)}\n{body}"
    )
    return directory


def _ensure_namespace(core_v1: client.CoreV1Api, name: str) -> bool:
    """`name` exists (and is not being deleted) afterwards; True if it was created here."""
    deadline = time.monotonic() + 120
    while True:
        try:
            found = core_v1.read_namespace(name)
        except client.ApiException as err:
            if err.status != 404:
                raise
            core_v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
            return True
        if found.status.phase != "Terminating":
            return False
        assert time.monotonic() < deadline, f"namespace {name} stays Terminating"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def install_namespaces(core_v1: client.CoreV1Api) -> Iterator[None]:
    """The namespaces the committed overlays name (`t9k-system`, the placeholder `team-a`)
    exist for this module: a dry run creates nothing, so the objects need them already."""
    created = [name for name in ("t9k-system", "team-a") if _ensure_namespace(core_v1, name)]
    yield
    for name in created:
        core_v1.delete_namespace(name, propagation_policy="Background")


# -- kustomize ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tree", "options"),
    [
        ("base", ()),
        ("overlays/cluster-wide", ()),
        ("overlays/namespace-scoped", ("--watch-namespace", "team-a")),
    ],
)
def test_kubectl_kustomize_gives_what_t9k_sdk_install_prints(
    kubectl: Path, tree: str, options: tuple[str, ...]
) -> None:
    assert_same_objects(kustomize(kubectl, KUSTOMIZE / tree), t9k_install(*options))


def test_the_network_policy_component_adds_what_install_network_policy_prints(
    kubectl: Path, tmp_path: Path
) -> None:
    component = KUSTOMIZE / "components" / "network-policy"
    mine = downstream(tmp_path, KUSTOMIZE / "overlays/cluster-wide", "components:\n- COMPONENT\n")
    text = (mine / "kustomization.yaml").read_text()
    (mine / "kustomization.yaml").write_text(
        text.replace("COMPONENT", os.path.relpath(component, mine))
    )
    assert_same_objects(kustomize(kubectl, mine), t9k_install("--network-policy"))


def test_the_base_takes_a_kustomize_image_override(kubectl: Path, tmp_path: Path) -> None:
    mine = downstream(
        tmp_path,
        KUSTOMIZE / "base",
        "images:\n- name: ghcr.io/t9k/t9k-operator\n  newName: registry.example.com/t9k/op\n  newTag: '1.2'\n",
    )
    assert_same_objects(
        kustomize(kubectl, mine), t9k_install("--image", "registry.example.com/t9k/op:1.2")
    )


def test_an_image_pinned_by_digest_through_kustomize(kubectl: Path, tmp_path: Path) -> None:
    digest = "sha256:" + "0123456789abcdef" * 4
    mine = downstream(
        tmp_path,
        KUSTOMIZE / "overlays" / "cluster-wide",
        f"images:\n- name: ghcr.io/t9k/t9k-operator\n  newName: registry.example.com/op\n  digest: {digest}\n",
    )
    assert_same_objects(
        kustomize(kubectl, mine), t9k_install("--image", f"registry.example.com/op@{digest}")
    )


def test_kustomize_namespace_moves_the_cluster_wide_install_like_t9k_sdk_install_namespace(
    kubectl: Path, tmp_path: Path
) -> None:
    """`namespace:` renames the Namespace and fixes the bindings' subjects too."""
    mine = downstream(tmp_path, KUSTOMIZE / "overlays" / "cluster-wide", "namespace: ops\n")
    assert_same_objects(kustomize(kubectl, mine), t9k_install("--namespace", "ops"))


def test_editing_the_one_watch_namespace_line_retargets_the_namespace_scoped_overlay(
    kubectl: Path, tmp_path: Path
) -> None:
    """The docs' edit: the `namespace=` literal of the overlay's kustomization.yaml."""
    copy = tmp_path / "kustomize"
    for path in KUSTOMIZE.rglob("*"):
        if path.is_file():
            (copy / path.relative_to(KUSTOMIZE)).parent.mkdir(parents=True, exist_ok=True)
            (copy / path.relative_to(KUSTOMIZE)).write_text(path.read_text())
    kustomization = copy / "overlays" / "namespace-scoped" / "kustomization.yaml"
    text = kustomization.read_text()
    assert text.count("namespace=team-a") == 1
    kustomization.write_text(text.replace("namespace=team-a", "namespace=ml-jobs"))
    assert_same_objects(
        kustomize(kubectl, copy / "overlays" / "namespace-scoped"),
        t9k_install("--watch-namespace", "ml-jobs"),
    )


def test_namespace_on_top_of_the_namespace_scoped_overlay_moves_the_role_as_the_docs_warn(
    kubectl: Path, tmp_path: Path
) -> None:
    """The misreading docs/operator/install.md warns against: `namespace:` moves every
    namespaced object, the watched namespace's Role too, and the operator's argument stays."""
    mine = downstream(tmp_path, KUSTOMIZE / "overlays" / "namespace-scoped", "namespace: ops\n")
    objects = kustomize(kubectl, mine)
    role = [o for o in objects if _key(o)[0] == "Role" and _key(o)[2] == "t9k-operator"]
    assert [o["metadata"]["namespace"] for o in role] == ["ops"]
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    assert "--namespace=team-a" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]


@pytest.mark.parametrize("tree", ["overlays/cluster-wide", "overlays/namespace-scoped"])
@pytest.mark.usefixtures("install_namespaces")
def test_each_overlay_passes_a_server_side_dry_run(
    kubectl: Path, kubeconfig: Path, tree: str
) -> None:
    rendered = _run(kubectl, "kustomize", KUSTOMIZE / tree).stdout
    proc = subprocess.run(
        [str(kubectl), "--kubeconfig", str(kubeconfig), "apply", "--server-side",
         "--dry-run=server", "--field-manager=t9k-install-test", "-f", "-"],
        input=rendered, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    applied = proc.stdout.splitlines()
    assert len(applied) == len(t9k_install()), applied
    assert all(line.endswith("serverside-applied (server dry run)") for line in applied), applied


def test_a_generated_namespace_scoped_overlay_applies_for_real(
    kubectl: Path,
    kubeconfig: Path,
    core_v1: client.CoreV1Api,
    api_client: client.ApiClient,
    namespace: str,
    tmp_path: Path,
) -> None:
    """`t9k-sdk install --kustomize` with your namespaces, then `kubectl apply -k` (docs)."""
    operator_ns = f"t9k-op-{uuid.uuid4().hex[:6]}"
    tree = tmp_path / "t9k"
    _run(
        sys.executable, "-m", "t9k_sdk.cli", "install", "--kustomize", tree,
        "--namespace", operator_ns, "--watch-namespace", namespace,
        "--image", "registry.example.com/t9k-operator:9.9",
    )  # fmt: skip
    try:
        _run(
            kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side",
            "--field-manager=t9k-install-test", "-k", tree / "overlays" / "namespace-scoped",
        )  # fmt: skip
        deployment = client.AppsV1Api(api_client).read_namespaced_deployment(
            "t9k-operator", operator_ns
        )
        (container,) = deployment.spec.template.spec.containers
        assert container.image == "registry.example.com/t9k-operator:9.9"
        assert f"--namespace={namespace}" in container.args
        rbac = client.RbacAuthorizationV1Api(api_client)
        binding = rbac.read_namespaced_role_binding("t9k-operator", namespace)
        assert [(s.name, s.namespace) for s in binding.subjects] == [("t9k-operator", operator_ns)]
        rbac.read_namespaced_role("t9k-operator-leader-election", operator_ns)
    finally:
        # Not `kubectl delete -k`: that would delete the CRDs, and every job with them.
        core_v1.delete_namespace(operator_ns, propagation_policy="Background")


def test_the_cluster_wide_overlay_applies_for_real_under_a_users_kustomization(
    kubectl: Path,
    kubeconfig: Path,
    core_v1: client.CoreV1Api,
    api_client: client.ApiClient,
    tmp_path: Path,
) -> None:
    """The GitOps way: the committed overlay as a base, with your namespace and image."""
    operator_ns = f"t9k-op-{uuid.uuid4().hex[:6]}"
    mine = downstream(
        tmp_path,
        KUSTOMIZE / "overlays" / "cluster-wide",
        f"namespace: {operator_ns}\nimages:\n- name: ghcr.io/t9k/t9k-operator\n"
        "  newName: registry.example.com/t9k-operator\n  newTag: '9.9'\n",
    )
    rbac = client.RbacAuthorizationV1Api(api_client)
    try:
        _run(
            kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side",
            "--field-manager=t9k-install-test", "-k", mine,
        )  # fmt: skip
        deployment = client.AppsV1Api(api_client).read_namespaced_deployment(
            "t9k-operator", operator_ns
        )
        assert deployment.spec.template.spec.containers[0].image == (
            "registry.example.com/t9k-operator:9.9"
        )
        binding = rbac.read_cluster_role_binding("t9k-operator")
        assert [(s.name, s.namespace) for s in binding.subjects] == [("t9k-operator", operator_ns)]
    finally:
        for delete in (rbac.delete_cluster_role_binding, rbac.delete_cluster_role):
            with contextlib.suppress(client.ApiException):
                delete("t9k-operator")
        core_v1.delete_namespace(operator_ns, propagation_policy="Background")


# -- Helm --------------------------------------------------------------------------------------


def helm_template(helm: Path, env: dict[str, str], *args: str) -> Objects:
    proc = _run(helm, "template", "t9k-operator", CHART, "--include-crds", *args, env=env)
    return [d for d in load_documents(proc.stdout) if d]


def test_helm_lint_passes_strict(helm: Path, helm_env: dict[str, str]) -> None:
    proc = _run(helm, "lint", "--strict", CHART, env=helm_env)
    assert "1 chart(s) linted, 0 chart(s) failed" in proc.stdout


@pytest.mark.parametrize(
    ("values", "options"),
    [
        ((), ()),
        (("--set", "watchNamespace=team-a"), ("--watch-namespace", "team-a")),
        (
            ("--set", "namespace=ops", "--set", "image.repository=registry.example.com/op",
             "--set", "image.tag=2.0"),
            ("--namespace", "ops", "--image", "registry.example.com/op:2.0"),
        ),
        (
            ("--set", "image.digest=sha256:" + "ab" * 32),
            ("--image", "ghcr.io/t9k/t9k-operator@sha256:" + "ab" * 32),
        ),
        (
            ("--set", "networkPolicy=true", "--set", "namespace=ops"),
            ("--network-policy", "--namespace", "ops"),
        ),
    ],
    ids=["defaults", "watchNamespace", "namespace-and-image", "digest", "networkPolicy"],
)  # fmt: skip
def test_helm_template_gives_what_t9k_sdk_install_prints(
    helm: Path, helm_env: dict[str, str], values: tuple[str, ...], options: tuple[str, ...]
) -> None:
    assert_same_objects(helm_template(helm, helm_env, *values), t9k_install(*options))


def test_helm_values_beyond_the_install_options_reach_the_deployment(
    helm: Path, helm_env: dict[str, str]
) -> None:
    objects = helm_template(
        helm, helm_env,
        "--set", "replicas=2", "--set", "createNamespace=false",
        "--set", "resources.requests.cpu=250m", "--set", "resources.limits.memory=1Gi",
        "--set", "nodeSelector.pool=system", "--set", "imagePullSecrets[0].name=regcred",
    )  # fmt: skip
    assert "Namespace" not in [o["kind"] for o in objects]
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    assert deployment["spec"]["replicas"] == 2
    assert pod["containers"][0]["resources"] == {
        "requests": {"cpu": "250m", "memory": "128Mi"},
        "limits": {"cpu": "1", "memory": "1Gi"},
    }
    assert pod["nodeSelector"] == {"pool": "system"}
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]


@pytest.mark.parametrize(
    ("values", "field", "shown"),
    [
        ({"namespace": "ops; rm -rf /"}, "/namespace", "'ops; rm -rf /'"),
        ({"namespace": "ops\nkind: Secret"}, "/namespace", "'ops\\nkind: Secret'"),
        ({"namespace": "{{ .Release.Name }}"}, "/namespace", "'{{ .Release.Name }}'"),
        ({"namespace": "a" * 64}, "/namespace", "'" + "a" * 64 + "'"),
        ({"watchNamespace": "Team_A"}, "/watchNamespace", "'Team_A'"),
        ({"replicas": 99999999999}, "/replicas", "want 10"),
        ({"replicas": -1}, "/replicas", "want 0"),
        ({"replicas": "1; rm -rf /"}, "/replicas", "want integer"),
        ({"image": {"repository": "op\nkind: Secret"}}, "/image/repository", "'op\\nkind: Secret'"),
        ({"image": {"repository": "op", "tag": "1\n---\nkind: Secret"}}, "/image/tag", "'1\\n---\\nkind: Secret'"),
        ({"image": {"repository": "op", "tag": "$(reboot)"}}, "/image/tag", "'$(reboot)'"),
        ({"resources": {"limits": {"cpu": "1\nkind: Secret"}}}, "/resources/limits/cpu", "'1\\nkind: Secret'"),
        ({"watchnamespace": "team-a"}, "watchnamespace", "additional properties"),
    ],
)  # fmt: skip
def test_hostile_values_are_refused_by_the_schema_naming_the_field_and_value(
    helm: Path,
    helm_env: dict[str, str],
    tmp_path: Path,
    values: dict[str, Any],
    field: str,
    shown: str,
) -> None:
    values_file = tmp_path / "values.yaml"
    values_file.write_text(json.dumps(values))  # JSON is YAML: the value arrives as written
    proc = _run(
        helm, "template", "t9k-operator", CHART, "-f", values_file, env=helm_env, check=False
    )
    assert proc.returncode != 0
    assert proc.stdout == "", "nothing is rendered"
    assert "values don't meet the specifications of the schema" in proc.stderr
    assert field in proc.stderr
    assert shown in proc.stderr


def test_with_the_schema_skipped_the_templates_still_refuse_a_bad_namespace(
    helm: Path, helm_env: dict[str, str]
) -> None:
    proc = _run(
        helm, "template", "t9k-operator", CHART, "--skip-schema-validation",
        "--set-string", "namespace=ops\nkind: Secret", env=helm_env, check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    assert 'namespace "ops\\nkind: Secret" is not a valid namespace name' in proc.stderr


def test_create_namespace_in_helms_own_release_namespace_is_refused_with_the_way_out(
    helm: Path, helm_env: dict[str, str]
) -> None:
    """A newcomer's `helm install -n t9k-system --create-namespace` with the defaults."""
    proc = _run(
        helm, "template", "t9k-operator", CHART, "-n", "t9k-system", env=helm_env, check=False
    )
    assert proc.returncode != 0
    assert "set createNamespace=false" in proc.stderr
    ok = helm_template(helm, helm_env, "-n", "t9k-system", "--set", "createNamespace=false")
    assert_same_objects(ok, [o for o in t9k_install() if o["kind"] != "Namespace"])


@pytest.mark.parametrize("watch", [False, True], ids=["cluster-wide", "namespace-scoped"])
def test_helm_install_upgrade_and_uninstall_for_real(
    helm: Path,
    helm_env: dict[str, str],
    kubectl: Path,
    kubeconfig: Path,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    namespace: str,
    watch: bool,
) -> None:
    """The release record lives in the test's namespace; the operator in a namespace the chart
    creates. The CRDs exist already (the cluster tool applies them): Helm leaves them be."""
    operator_ns = f"t9k-op-{uuid.uuid4().hex[:6]}"
    release = f"t9k-{uuid.uuid4().hex[:6]}"
    helm_args = ("--kubeconfig", str(kubeconfig), "-n", namespace)
    values = ["--set", f"namespace={operator_ns}", "--set", "image.tag=9.9"]
    if watch:
        values += ["--set", f"watchNamespace={namespace}"]
    apps, rbac = client.AppsV1Api(api_client), client.RbacAuthorizationV1Api(api_client)
    ext = client.ApiextensionsV1Api(api_client)
    try:
        _run(helm, "install", release, CHART, *helm_args, *values, env=helm_env)
        deployment = apps.read_namespaced_deployment("t9k-operator", operator_ns)
        (container,) = deployment.spec.template.spec.containers
        assert container.image == "ghcr.io/t9k/t9k-operator:9.9"
        assert (f"--namespace={namespace}" in container.args) is watch
        assert deployment.metadata.annotations["meta.helm.sh/release-name"] == release
        if watch:
            rbac.read_namespaced_role("t9k-operator", namespace)
        else:
            rbac.read_cluster_role("t9k-operator")
        status = _run(helm, "status", release, *helm_args, env=helm_env).stdout
        assert "STATUS: deployed" in status

        # the upgrade of docs/operator/install.md: the CRDs by hand, then helm upgrade
        crds = _run(helm, "show", "crds", CHART, env=helm_env).stdout
        proc = subprocess.run(
            [str(kubectl), "--kubeconfig", str(kubeconfig), "apply", "--server-side",
             "--field-manager=t9k-install-test", "-f", "-"],
            input=crds, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.count("customresourcedefinition") == 3
        _run(
            helm, "upgrade", release, CHART, *helm_args, "--reuse-values",
            "--set", "replicas=2", env=helm_env,
        )  # fmt: skip
        deployment = apps.read_namespaced_deployment("t9k-operator", operator_ns)
        assert deployment.spec.replicas == 2
        assert deployment.spec.template.spec.containers[0].image == "ghcr.io/t9k/t9k-operator:9.9"

        _run(helm, "uninstall", release, *helm_args, "--wait", env=helm_env)
        with pytest.raises(client.ApiException) as gone:
            apps.read_namespaced_deployment("t9k-operator", operator_ns)
        assert gone.value.status == 404
        if not watch:
            with pytest.raises(client.ApiException) as gone:
                rbac.read_cluster_role("t9k-operator")
            assert gone.value.status == 404
        # crds/ is never deleted by Helm: the jobs survive an uninstall
        ext.read_custom_resource_definition("genericjobs.batch.tensorstack.dev")
    finally:
        _run(
            helm, "uninstall", release, *helm_args, "--ignore-not-found", env=helm_env, check=False
        )
        for delete in (rbac.delete_cluster_role_binding, rbac.delete_cluster_role):
            if not watch:
                with contextlib.suppress(client.ApiException):
                    delete("t9k-operator")
        with contextlib.suppress(client.ApiException):
            core_v1.delete_namespace(operator_ns, propagation_policy="Background")


def test_a_foreign_cluster_role_with_our_name_is_neither_taken_over_nor_changed(
    helm: Path,
    helm_env: dict[str, str],
    kubectl: Path,
    kubeconfig: Path,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    namespace: str,
    tmp_path: Path,
) -> None:
    """Someone else's ClusterRole `t9k-operator` (here: one that grants reading secrets
    everywhere) must not silently become, or stay, the operator's."""
    rbac = client.RbacAuthorizationV1Api(api_client)
    foreign_rules = [
        client.V1PolicyRule(api_groups=[""], resources=["secrets"], verbs=["get", "list"])
    ]
    rbac.create_cluster_role(
        client.V1ClusterRole(metadata=client.V1ObjectMeta(name="t9k-operator"), rules=foreign_rules)
    )
    operator_ns = f"t9k-op-{uuid.uuid4().hex[:6]}"
    release = f"t9k-{uuid.uuid4().hex[:6]}"
    helm_args = ("--kubeconfig", str(kubeconfig), "-n", namespace)
    try:
        proc = _run(
            helm, "install", release, CHART, *helm_args, "--set", f"namespace={operator_ns}",
            env=helm_env, check=False,
        )  # fmt: skip
        assert proc.returncode != 0
        assert 'ClusterRole "t9k-operator"' in proc.stderr
        assert "exists and cannot be imported into the current release" in proc.stderr

        mine = downstream(
            tmp_path, KUSTOMIZE / "overlays" / "cluster-wide", f"namespace: {operator_ns}\n"
        )
        proc = _run(
            kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side",
            "--field-manager=t9k-install-test", "-k", mine, check=False,
        )  # fmt: skip
        assert proc.returncode != 0
        assert "conflict" in proc.stderr
        assert ".rules" in proc.stderr

        role = rbac.read_cluster_role("t9k-operator")
        assert [(r.resources, r.verbs) for r in role.rules] == [(["secrets"], ["get", "list"])]
    finally:
        _run(
            helm, "uninstall", release, *helm_args, "--ignore-not-found", env=helm_env, check=False
        )
        for delete in (rbac.delete_cluster_role_binding, rbac.delete_cluster_role):
            with contextlib.suppress(client.ApiException):
                delete("t9k-operator")
        with contextlib.suppress(client.ApiException):
            core_v1.delete_namespace(operator_ns, propagation_policy="Background")


def test_trees_generated_with_options_render_what_t9k_sdk_install_prints_with_them(
    kubectl: Path, helm: Path, helm_env: dict[str, str], tmp_path: Path
) -> None:
    """`t9k-sdk install --kustomize/--helm-chart DIR` with your options: the tree's defaults are
    those options."""
    options = ("--image", "registry.example.com/op:2.1", "--namespace", "ops")
    watch = ("--watch-namespace", "ml-jobs")
    cli = (sys.executable, "-m", "t9k_sdk.cli", "install")
    _run(*cli, "--kustomize", tmp_path / "k", *options, *watch)
    _run(*cli, "--helm-chart", tmp_path / "chart", *options)
    assert_same_objects(kustomize(kubectl, tmp_path / "k" / "base"), t9k_install(*options))
    assert_same_objects(
        kustomize(kubectl, tmp_path / "k" / "overlays" / "namespace-scoped"),
        t9k_install(*options, *watch),
    )
    _run(helm, "lint", "--strict", tmp_path / "chart", env=helm_env)
    rendered = _run(
        helm, "template", "t9k-operator", tmp_path / "chart", "--include-crds", env=helm_env
    ).stdout
    assert_same_objects([d for d in load_documents(rendered) if d], t9k_install(*options))
