"""The GitHub Actions workflows in .github/workflows, read as a maintainer reviews them.

They cannot run here (no GitHub, no registry to push to), so these tests check what a release
depends on: it starts from a `v*` tag only, the tag must be the version of pyproject.toml (the
check itself is run), PyPI is reached by trusted publishing with no secret, the operator's
image is pushed by digest and its SBOM attested to that digest, the chart and the GitHub release
carry the same version, permissions are widened per job only, actions are pinned, and every
make target and tools/ script a `run:` step names exists. `make lint` runs actionlint on them,
and `make test` runs what they call (`python -m build` in dist-check; `helm package` below).
"""

from __future__ import annotations

import os
import re
import subprocess
import tarfile
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import cluster_required

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
RELEASE = WORKFLOWS / "release.yml"
CI = WORKFLOWS / "ci.yml"
IMAGE = "ghcr.io/t9k/t9k-operator"
CHARTS = "oci://ghcr.io/t9k/charts"
PINNED_BY_BRANCH = {"pypa/gh-action-pypi-publish": "release/v1"}
"""Actions not pinned to a commit, and the ref each is pinned to instead."""


def _load(path: Path) -> dict[Any, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), f"{path} is not a mapping"
    return data


def _triggers(workflow: dict[Any, Any]) -> Any:
    # YAML 1.1, which PyYAML reads, takes the bare key `on` for the boolean true.
    return workflow["on"] if "on" in workflow else workflow[True]


def _jobs(workflow: dict[Any, Any]) -> dict[str, dict[str, Any]]:
    jobs = workflow["jobs"]
    assert isinstance(jobs, dict)
    return jobs


def _needs(job: dict[str, Any]) -> set[str]:
    needs = job.get("needs", [])
    return {needs} if isinstance(needs, str) else set(needs)


def _uses(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in job["steps"] if str(s.get("uses", "")).startswith(action + "@")]


def _scripts(path: Path) -> Iterator[tuple[str, str]]:
    """(job name, run script) of every `run:` step, continuation lines joined."""
    for name, job in _jobs(_load(path)).items():
        for step in job.get("steps", []):
            if "run" in step:
                yield name, str(step["run"]).replace("\\\n", " ")


def _script(job: dict[str, Any], needle: str) -> str:
    found = [str(s["run"]) for s in job["steps"] if needle in str(s.get("run", ""))]
    assert len(found) == 1, f"{len(found)} run steps contain {needle!r}"
    return found[0].replace("\\\n", " ")


def _project_version() -> str:
    with (REPO / "pyproject.toml").open("rb") as f:
        version = tomllib.load(f)["project"]["version"]
    assert isinstance(version, str)
    return version


def _make_targets() -> set[str]:
    targets: set[str] = set()
    for m in re.finditer(
        r"^([A-Za-z0-9][\w.-]*(?:[ \t]+[A-Za-z0-9][\w.-]*)*)[ \t]*:(?![:=])",
        (REPO / "Makefile").read_text(),
        re.M,
    ):
        targets.update(m.group(1).split())
    return targets


def _subcommands(script: Path) -> set[str]:
    """The argparse subcommands a tools/ script defines (none: it takes no subcommand)."""
    return set(re.findall(r"add_parser\(\s*\"([\w-]+)\"", script.read_text()))


# -- when a release happens -------------------------------------------------------------------


def test_a_release_starts_from_a_v_tag_and_nothing_else() -> None:
    assert _triggers(_load(RELEASE)) == {"push": {"tags": ["v*"]}}


def test_the_tag_must_be_the_version_of_pyproject(tmp_path: Path) -> None:
    """The check of the build job, run as the runner runs it: a tag that is not v + the version
    fails the release before anything is built, and the version goes to the other jobs."""
    jobs = _jobs(_load(RELEASE))
    (step,) = [s for s in jobs["build"]["steps"] if s.get("id") == "version"]
    assert jobs["build"]["outputs"]["version"] == "${{ steps.version.outputs.version }}"
    version = _project_version()

    def check(tag: str) -> tuple[subprocess.CompletedProcess[str], str]:
        out = tmp_path / f"output-{tag}"
        out.touch()
        env = {**os.environ, "GITHUB_REF_NAME": tag, "GITHUB_OUTPUT": str(out)}
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return proc, out.read_text()

    proc, output = check(f"v{version}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert output == f"version={version}\n"
    for wrong in (version, f"v{version}.1", "v0.0.0-not-this"):
        proc, output = check(wrong)
        assert proc.returncode == 1, (wrong, proc.stdout, proc.stderr)
        assert f"::error::the tag {wrong} is not v{version}" in proc.stdout
        assert output == ""
    # nothing is published before the check passed
    for name, job in jobs.items():
        assert name == "build" or "build" in _needs(job), name


# -- what it publishes ------------------------------------------------------------------------


def test_pypi_is_reached_by_trusted_publishing_with_no_secret() -> None:
    text = RELEASE.read_text()
    assert "secrets." not in text, "the release uses no stored secret: PyPI trusts its OIDC token"
    jobs = _jobs(_load(RELEASE))
    (name,) = [n for n, j in jobs.items() if _uses(j, "pypa/gh-action-pypi-publish")]
    job = jobs[name]
    assert job["permissions"] == {"id-token": "write"}
    assert job["environment"]["name"] == "pypi"
    (step,) = _uses(job, "pypa/gh-action-pypi-publish")
    assert not {"user", "password"} & set(step.get("with", {})), step
    # PyPI never takes a version twice: it comes after the image and the chart are pushed
    assert {"build", "image", "chart"} <= _needs(job)


def test_the_image_is_pushed_by_digest_and_its_sbom_attested_to_that_digest() -> None:
    job = _jobs(_load(RELEASE))["image"]
    assert job["permissions"] == {
        "contents": "read",
        "packages": "write",
        "attestations": "write",
        "id-token": "write",
    }
    # built as on the project's machines: Debian bookworm (its mirror, its python3.11), as root
    assert job["container"]["image"] == "debian:bookworm"
    assert _script(job, "operator-image").strip() == "make operator-image"

    (push,) = [s for s in job["steps"] if "skopeo copy" in str(s.get("run", ""))]
    script = str(push["run"]).replace("\\\n", " ")
    copy = re.search(r"skopeo copy .*--digestfile (\S+) .*\"docker://([^\"]+)\"", script)
    assert copy, script
    digestfile, destination = copy.groups()
    assert destination == f"{IMAGE}:$VERSION"
    assert '"oci-archive:$archive:$VERSION"' in script
    assert '"$(python3 tools/images.py path operator)"' in script
    assert f'echo "digest=$(cat {digestfile})" >> "$GITHUB_OUTPUT"' in script
    assert job["outputs"]["digest"] == f"${{{{ steps.{push['id']}.outputs.digest }}}}"

    sbom = re.search(r"tools/images.py sbom operator > (\S+)", _script(job, "images.py sbom"))
    assert sbom, "no step writes the SBOM"
    steps = job["steps"]
    attests = _uses(job, "actions/attest") + _uses(job, "actions/attest-sbom")
    assert len(attests) == 1, attests
    (attest,) = attests
    assert steps.index(push) < steps.index(attest)
    assert attest["with"] == {
        "subject-name": IMAGE,  # no tag: the digest names the image
        "subject-digest": f"${{{{ steps.{push['id']}.outputs.digest }}}}",
        "sbom-path": sbom.group(1),
        "push-to-registry": True,
        "create-storage-record": False,
    }


def test_the_chart_is_packaged_at_the_release_version_and_pushed() -> None:
    job = _jobs(_load(RELEASE))["chart"]
    assert job["permissions"] == {"contents": "read", "packages": "write"}
    script = _script(job, "package deploy/helm/t9k-operator")
    assert 'helm="$(tools/ensure-gitops-binaries.sh --print-helm-dir)/helm"' in script
    assert '[[ ! -f "chart/t9k-operator-$VERSION.tgz" ]]' in script
    assert f'"$helm" push "chart/t9k-operator-$VERSION.tgz" {CHARTS}' in script


def test_the_github_release_carries_the_wheel_sdist_chart_and_sbom() -> None:
    jobs = _jobs(_load(RELEASE))
    job = jobs["release"]
    assert job["permissions"] == {"contents": "write"}
    assert _needs(job) == {"build", "image", "chart", "pypi"}
    uploaded = {
        step["with"]["name"]: step["with"]["path"]
        for other in jobs.values()
        for step in _uses(other, "actions/upload-artifact")
    }
    assert uploaded == {"dist": "dist/", "sbom": "sbom.spdx.json", "chart": "chart/"}
    (download,) = _uses(job, "actions/download-artifact")
    assert download["with"] == {"path": "assets/", "merge-multiple": True}  # every artifact
    (step,) = [s for s in job["steps"] if "gh release create" in str(s.get("run", ""))]
    assert step["env"]["GH_TOKEN"] == "${{ github.token }}"
    script = str(step["run"]).replace("\\\n", " ")
    assert re.search(
        r'gh release create "\$GITHUB_REF_NAME" --verify-tag .* assets/\*$', script.strip()
    )


def test_the_sbom_is_verified_with_the_predicate_type_of_its_spdx_version() -> None:
    """actions/attest types an SPDX SBOM's attestation https://spdx.dev/Document/v<spdxVersion>,
    and `gh attestation verify` finds it only when asked for that type (the release notes and
    docs/operator/install.md say how)."""
    m = re.search(r'"spdxVersion":\s*"SPDX-([\d.]+)"', (REPO / "tools" / "images.py").read_text())
    assert m, "tools/images.py writes no spdxVersion"
    flag = f"--predicate-type https://spdx.dev/Document/v{m.group(1)}"
    assert flag in RELEASE.read_text()
    assert flag in (REPO / "docs" / "operator" / "install.md").read_text()


# -- how the workflows are written ------------------------------------------------------------


def test_permissions_are_read_only_unless_a_job_widens_them() -> None:
    release, ci = _load(RELEASE), _load(CI)
    assert release["permissions"] == {"contents": "read"}
    assert ci["permissions"] == {"contents": "read"}
    writes = {
        name: sorted(k for k, v in job.get("permissions", {}).items() if v == "write")
        for name, job in _jobs(release).items()
    }
    assert writes == {
        "build": [],
        "image": ["attestations", "id-token", "packages"],
        "chart": ["packages"],
        "pypi": ["id-token"],
        "release": ["contents"],
    }
    assert all("permissions" not in job for job in _jobs(ci).values())


def test_actions_are_pinned_to_a_commit_named_by_its_version() -> None:
    seen: dict[str, str] = {}
    for path in (RELEASE, CI):
        for line in path.read_text().splitlines():
            m = re.search(r"\buses:\s*([\w.-]+/[\w.-]+)@(\S+)(.*)$", line)
            if not m:
                continue
            action, ref, rest = m.groups()
            if action in PINNED_BY_BRANCH:
                assert ref == PINNED_BY_BRANCH[action], line
                continue
            assert re.fullmatch(r"[0-9a-f]{40}", ref), f"{path.name}: not a commit: {line.strip()}"
            assert re.fullmatch(r"\s+# v\d+(\.\d+)*", rest), f"{path.name}: no version: {line}"
            assert seen.setdefault(action, ref + rest) == ref + rest, f"two pins of {action}"
    assert "actions/checkout" in seen


def test_run_steps_name_make_targets_and_tools_that_exist() -> None:
    targets = _make_targets()
    named: list[str] = []
    for path in (RELEASE, CI):
        for job, script in _scripts(path):
            for line in script.splitlines():
                if line.lstrip().startswith("#"):
                    continue
                words = line.split()
                starts = ("&&", "||", ";", "|", "sudo", "then", "do")
                commands_at = (
                    i
                    for i, w in enumerate(words)
                    if w == "make" and (i == 0 or words[i - 1] in starts)
                )
                for i in commands_at:  # `make` the command, not `apt-get install make`
                    goals = []
                    for word in words[i + 1 :]:
                        if word in ("&&", "||", "|", ";"):
                            break
                        if not word.startswith("-") and "=" not in word:
                            goals.append(word)
                    assert goals, f"{path.name} {job}: `make` with no target: {line}"
                    for goal in goals:
                        assert goal in targets, f"{path.name} {job}: no make target {goal!r}"
                        named.append(f"make {goal}")
                for m in re.finditer(r"(?<![\w./-])((?:tools|\.ci)/[\w./-]*[\w])(.*)", line):
                    file, after = m.group(1), m.group(2).split()
                    assert (REPO / file).is_file(), f"{path.name} {job}: no {file}"
                    named.append(file)
                    commands = _subcommands(REPO / file) if file.endswith(".py") else set()
                    if commands:
                        given = after[0] if after else None
                        assert given in commands, (
                            f"{path.name} {job}: {file} has no subcommand {given!r}"
                            f" (it has {sorted(commands)})"
                        )
    assert {"make operator-image", "make gitops-binaries", "tools/images.py", ".ci/run"} <= set(
        named
    ), named


def test_the_workflows_go_builds_what_the_wrapper_modules_ask() -> None:
    """The binaries are built with GOTOOLCHAIN=local: a wrapper module whose `go` line is newer
    than the workflows' Go would fail the release's Helm build and CI."""
    versions = [
        step["with"]["go-version"]
        for path in (RELEASE, CI)
        for job in _jobs(_load(path)).values()
        for step in _uses(job, "actions/setup-go")
    ]
    assert versions, "no workflow sets up Go"
    newest = max(
        tuple(int(x) for x in re.findall(r"(?m)^go (\d+)\.(\d+)", mod.read_text())[0])
        for mod in (REPO / "tools" / "gobuild").glob("*/go.mod")
    )
    for version in versions:
        assert tuple(int(x) for x in str(version).split(".")[:2]) >= newest, (version, newest)


def test_ci_runs_dot_ci_run_on_every_push_and_pull_request_within_90_minutes() -> None:
    ci = _load(CI)
    assert set(_triggers(ci)) == {"push", "pull_request"}
    (job,) = _jobs(ci).values()
    assert job["runs-on"] == "ubuntu-latest"
    assert job["timeout-minutes"] == 90
    assert job["steps"][-1]["run"].endswith("bash .ci/run")


# -- what `make test` runs of the release: the chart as `helm package` makes it ---------------


@pytest.mark.binaries
def test_helm_package_makes_the_chart_of_the_release_version(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(REPO / "tools" / "ensure-gitops-binaries.sh"), "--print-helm-dir"],
        capture_output=True,
        text=True,
        check=True,
    )
    helm = Path(proc.stdout.strip()) / "helm"
    if not helm.is_file():
        message = f"{helm} is missing: run `make gitops-binaries`"
        if cluster_required():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    env = {
        **os.environ,
        **{f"HELM_{d}_HOME": str(tmp_path / d.lower()) for d in ("CACHE", "CONFIG", "DATA")},
    }
    out = tmp_path / "chart"
    subprocess.run(
        [
            str(helm),
            "package",
            str(REPO / "deploy" / "helm" / "t9k-operator"),
            "--destination",
            str(out),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    version = _project_version()
    assert [p.name for p in out.iterdir()] == [f"t9k-operator-{version}.tgz"]
    with tarfile.open(out / f"t9k-operator-{version}.tgz") as tgz:
        member = tgz.extractfile("t9k-operator/Chart.yaml")
        assert member is not None
        chart = yaml.safe_load(member.read())
    assert (chart["version"], chart["appVersion"]) == (version, version)
