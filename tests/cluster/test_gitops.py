"""examples/gitops/ and `render --kustomization` with the real tools: kubectl's kustomize builds
every kustomization of the example, and the API server accepts every object in a server-side dry
run: the jobs with our CRDs, the operator's install, and Argo CD's and Flux's objects with their
real CRDs (from their Go modules: `make gitops-binaries`) installed. `t9k-sdk diff` reads a
rendered directory with its kustomization.yaml.

kubectl is the one built beside the cluster binaries (`make cluster-binaries`)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from t9k_sdk.cli import main
from tests.gitops_tools import gitops_crds, kubectl

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "gitops"
KUSTOMIZATIONS = sorted(
    str(p.parent.relative_to(EXAMPLE)) for p in EXAMPLE.rglob("kustomization.yaml")
)


def _kubectl(*args: str, kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [str(kubectl()), *args]
    if kubeconfig is not None:
        cmd += ["--kubeconfig", str(kubeconfig)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def _build(directory: Path) -> list[dict[str, Any]]:
    proc = _kubectl("kustomize", str(directory))
    assert proc.returncode == 0, f"kubectl kustomize {directory} failed:\n{proc.stderr}"
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def _ref(obj: dict[str, Any]) -> tuple[str, str]:
    return obj["kind"], obj["metadata"]["name"]


def test_the_example_has_its_kustomizations() -> None:
    assert KUSTOMIZATIONS == [
        "clusters/dev/argocd",
        "clusters/dev/flux",
        "manifests",
        "platform/t9k-operator",
    ]


@pytest.mark.parametrize("directory", KUSTOMIZATIONS)
def test_every_kustomization_builds_and_lists_every_file_beside_it(directory: str) -> None:
    path = EXAMPLE / directory
    built = _build(path)
    assert built
    listed = yaml.safe_load((path / "kustomization.yaml").read_text())["resources"]
    files = sorted(p.name for p in path.glob("*.yaml") if p.name != "kustomization.yaml")
    local = sorted(r for r in listed if "/" not in r)
    assert local == files, "a file beside the kustomization is not in its resources"


def test_kustomize_builds_exactly_the_rendered_jobs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", str(EXAMPLE / "jobs")]) == 0
    rendered = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]

    built = _build(EXAMPLE / "manifests")

    assert sorted(built, key=_ref) == sorted(rendered, key=_ref)


def test_the_operator_kustomization_installs_the_crds_and_the_image() -> None:
    built = _build(EXAMPLE / "platform" / "t9k-operator")
    crds = sorted(o["metadata"]["name"] for o in built if o["kind"] == "CustomResourceDefinition")
    assert crds == [
        "colossalaijobs.batch.tensorstack.dev",
        "deepspeedjobs.batch.tensorstack.dev",
        "genericjobs.batch.tensorstack.dev",
    ]
    (deployment,) = (o for o in built if o["kind"] == "Deployment")
    images = [c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]]
    assert images == ["registry.example.com/platform/t9k-operator:0.1.0"]


def test_flux_orders_the_operator_before_the_jobs_and_waits_for_both() -> None:
    built = {_ref(o): o for o in _build(EXAMPLE / "clusters" / "dev" / "flux")}
    operator = built["Kustomization", "t9k-operator"]["spec"]
    jobs = built["Kustomization", "ml-team-jobs"]["spec"]
    assert jobs["dependsOn"] == [{"name": "t9k-operator"}]
    assert operator["wait"] is True
    assert jobs["wait"] is True
    assert operator["path"] == "./examples/gitops/platform/t9k-operator"
    assert jobs["path"] == "./examples/gitops/manifests"
    for spec in (operator, jobs):
        assert (REPO / spec["path"] / "kustomization.yaml").is_file()
    # the source's .sourceignore-style `ignore` keeps every directory the builds read
    source = built["GitRepository", "t9k-gitops"]["spec"]
    kept = [line[1:] for line in source["ignore"].splitlines() if line.startswith("!")]
    overlay = (EXAMPLE / "platform" / "t9k-operator" / "../../../../deploy/kustomize").resolve()
    for needed in (operator["path"], jobs["path"], "/" + str(overlay.relative_to(REPO))):
        path = "/" + needed.removeprefix("./").removeprefix("/") + "/"
        assert any(path.startswith(k) for k in kept), f"{path} is ignored by the GitRepository"


def test_argocd_syncs_the_operator_in_an_earlier_wave() -> None:
    built = {_ref(o): o for o in _build(EXAMPLE / "clusters" / "dev" / "argocd")}
    waves = {
        name: int(o["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])
        for (kind, name), o in built.items()
        if kind == "Application"
    }
    assert waves["t9k-operator"] < waves["ml-team-jobs"]
    for (kind, _), o in built.items():
        if kind == "Application":
            assert (REPO / o["spec"]["source"]["path"] / "kustomization.yaml").is_file()


# -- server-side dry runs against the local control plane --------------------------------------


def _ensure_namespace(core_v1: client.CoreV1Api, name: str) -> bool:
    """Create namespace `name` unless it exists; whether it was created. One still being deleted
    (another test's, deleted in the background) is waited for, then created again."""
    deadline = time.monotonic() + 120
    while True:
        try:
            ns = core_v1.read_namespace(name)
        except ApiException as exc:
            if exc.status != 404:
                raise
        else:
            if ns.status is None or ns.status.phase != "Terminating":
                return False
            assert time.monotonic() < deadline, f"namespace {name} stays Terminating"
            time.sleep(0.5)
            continue
        try:
            core_v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
        except ApiException as exc:
            if exc.status == 409:  # created meanwhile, or terminating: look again
                continue
            raise
        return True


@pytest.fixture(scope="module")
def gitops_crds_installed(kubeconfig: Path, core_v1: client.CoreV1Api) -> Iterator[None]:
    """Argo CD's and Flux's CRDs in the cluster, and their namespaces (argocd, flux-system)."""
    crds = gitops_crds()
    proc = _kubectl("apply", "--server-side", "-f", str(crds), kubeconfig=kubeconfig)
    assert proc.returncode == 0, proc.stderr
    names = [yaml.safe_load(p.read_text())["metadata"]["name"] for p in sorted(crds.glob("*.yaml"))]
    proc = _kubectl(
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        *(f"crd/{n}" for n in names),
        kubeconfig=kubeconfig,
    )
    assert proc.returncode == 0, proc.stderr
    created = [n for n in ("argocd", "flux-system") if _ensure_namespace(core_v1, n)]
    yield
    for name in created:
        core_v1.delete_namespace(name, propagation_policy="Background")


def _dry_run(kubeconfig: Path, *args: str) -> str:
    proc = _kubectl("apply", "--server-side", "--dry-run=server", *args, kubeconfig=kubeconfig)
    assert proc.returncode == 0, f"kubectl apply --dry-run=server {' '.join(args)}:\n{proc.stderr}"
    return proc.stdout


@pytest.mark.usefixtures("gitops_crds_installed")
@pytest.mark.parametrize("directory", ["clusters/dev/argocd", "clusters/dev/flux"])
def test_argocd_and_flux_objects_pass_a_server_side_dry_run(
    kubeconfig: Path, directory: str
) -> None:
    out = _dry_run(kubeconfig, "-k", str(EXAMPLE / directory))

    built = _build(EXAMPLE / directory)
    assert len(out.splitlines()) == len(built)
    assert "(server dry run)" in out


@pytest.mark.usefixtures("gitops_crds_installed")
def test_a_misspelled_flux_field_is_refused_by_the_real_crd(
    kubeconfig: Path, tmp_path: Path
) -> None:
    """The dry run checks against the real schema: it is not a rubber stamp."""
    bad = (EXAMPLE / "clusters" / "dev" / "flux" / "jobs.yaml").read_text()
    (tmp_path / "jobs.yaml").write_text(bad.replace("dependsOn:", "dependsOnn:"))
    proc = _kubectl(
        "apply",
        "--server-side",
        "--dry-run=server",
        "--validate=strict",
        "-f",
        str(tmp_path / "jobs.yaml"),
        kubeconfig=kubeconfig,
    )
    assert proc.returncode != 0
    assert "dependsOnn" in proc.stderr


def test_the_jobs_pass_a_server_side_dry_run(kubeconfig: Path, namespace: str) -> None:
    out = _dry_run(kubeconfig, "-n", namespace, "-k", str(EXAMPLE / "manifests"))

    assert sorted(out.splitlines()) == [
        "deepspeedjob.batch.tensorstack.dev/llm-finetune serverside-applied (server dry run)",
        "genericjob.batch.tensorstack.dev/cifar10-resnet serverside-applied (server dry run)",
    ]


def test_the_operator_install_passes_a_server_side_dry_run(
    kubeconfig: Path, core_v1: client.CoreV1Api
) -> None:
    # a dry-run Namespace is not created, so the namespaced objects need it to exist already
    created = _ensure_namespace(core_v1, "t9k-system")
    try:
        out = _dry_run(kubeconfig, "-k", str(EXAMPLE / "platform" / "t9k-operator"))
    finally:
        if created:
            core_v1.delete_namespace("t9k-system", propagation_policy="Background")
    assert "deployment.apps/t9k-operator serverside-applied (server dry run)" in out


# -- t9k-sdk diff on a rendered directory ------------------------------------------------------


def test_diff_reads_a_rendered_directory_with_its_kustomization(
    kubeconfig: Path, namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    for p in (EXAMPLE / "jobs").glob("*.py"):
        (jobs / p.name).write_text(p.read_text())
    out = tmp_path / "manifests"
    assert main(["render", str(jobs), "--out-dir", str(out), "--kustomization"]) == 0
    cluster = ["--kubeconfig", str(kubeconfig), "-n", namespace]
    capsys.readouterr()

    code = main(["diff", "-f", str(out), *cluster])
    diff, err = capsys.readouterr()
    assert code == 1, err  # new objects, as kubectl diff
    assert "+++ merged/genericjob/cifar10-resnet" in diff
    assert "+++ merged/deepspeedjob/llm-finetune" in diff
    assert "kustomization" not in diff + err

    assert main(["apply", "-f", str(out), *cluster]) == 0
    assert main(["diff", "-f", str(out), *cluster]) == 0
    capsys.readouterr()

    # a spec change in Python shows up, and only it
    (jobs / "cifar10.py").write_text(
        (jobs / "cifar10.py").read_text().replace("--epochs=30", "--epochs=40")
    )
    assert main(["render", str(jobs), "--out-dir", str(out), "--kustomization"]) == 0
    capsys.readouterr()
    code = main(["diff", "-f", str(out), *cluster])
    diff, err = capsys.readouterr()
    assert code == 1, err
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in "+++---"]
    assert [line.replace(" ", "") for line in changed if "epochs" in line] == [
        "----epochs=30",
        "+---epochs=40",
    ]
    assert "llm-finetune" not in diff

    # what kustomize builds is what t9k-sdk reads: the same diff through a pipe
    built = _kubectl("kustomize", str(out))
    assert built.returncode == 0, built.stderr
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "t9k-sdk"), "diff", "-f", "-", *cluster],
        input=built.stdout,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == diff


def test_apply_f_fails_on_the_kustomization_as_the_guide_warns(
    kubeconfig: Path, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/how-to/gitops.md: `kubectl apply -f DIR` stops at kustomization.yaml; `-k` and
    `t9k-sdk apply -f DIR` do not."""
    manifests = str(EXAMPLE / "manifests")
    proc = _kubectl(
        "apply", "--dry-run=server", "-n", namespace, "-f", manifests, kubeconfig=kubeconfig
    )
    assert proc.returncode != 0
    assert 'no matches for kind "Kustomization"' in proc.stderr

    cluster = ["--kubeconfig", str(kubeconfig), "-n", namespace]
    assert main(["apply", "-f", manifests, "--dry-run=server", *cluster]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert sorted(out.splitlines()) == [
        "deepspeedjob/llm-finetune created (server dry run)",
        "genericjob/cifar10-resnet created (server dry run)",
    ]


def test_diff_as_fluxs_field_manager_shows_the_fields_a_merge_removes(
    kubeconfig: Path, namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Flux applied a job with a label (server-side apply as kustomize-controller); the label is
    gone from the file. Only a diff as Flux's field manager shows that the merge removes it."""
    job = yaml.safe_load((EXAMPLE / "manifests" / "genericjob-cifar10-resnet.yaml").read_text())
    job["metadata"]["labels"] = {"team": "vision"}
    applied = tmp_path / "applied.yaml"
    applied.write_text(yaml.safe_dump(job))
    proc = _kubectl(
        "apply",
        "--server-side",
        "--field-manager=kustomize-controller",
        "-n",
        namespace,
        "-f",
        str(applied),
        kubeconfig=kubeconfig,
    )
    assert proc.returncode == 0, proc.stderr
    file = str(EXAMPLE / "manifests" / "genericjob-cifar10-resnet.yaml")
    cluster = ["--kubeconfig", str(kubeconfig), "-n", namespace]

    assert main(["diff", "-f", file, *cluster]) == 0  # as t9k-sdk: the label is not its own
    capsys.readouterr()
    code = main(["diff", "-f", file, *cluster, "--field-manager", "kustomize-controller"])
    out, err = capsys.readouterr()

    assert code == 1, err
    removed = [line for line in out.splitlines() if line.startswith("-") and "---" not in line]
    assert [line.strip() for line in removed] == ["-  labels:", "-    team: vision"]
