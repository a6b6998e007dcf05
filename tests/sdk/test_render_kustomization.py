"""`t9k-sdk render --out-dir DIR --kustomization [--prune]` as a GitOps user runs it: the files it
writes, what it keeps of a kustomization of theirs, what it prunes and what it never touches, and
how the other commands read such a directory. kubectl's own build of it is checked in
tests/cluster/test_gitops.py."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from t9k_sdk.cli import main
from t9k_sdk.cli._kustomize import JOB_HEADER, KUSTOMIZATION_HEADER

JOBS = """\
from t9k_sdk import GenericJob, Replica

mnist = GenericJob(name="mnist", replicas=[Replica(type="worker", count=2, image="pt:2")])
bert = GenericJob(name="bert", replicas=[Replica(type="worker", count=1, image="pt:2")])
"""


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def jobs(tmp_path: Path) -> Path:
    path = tmp_path / "jobs" / "train.py"
    path.parent.mkdir()
    path.write_text(JOBS, encoding="utf-8")
    return path.parent


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if not p.is_symlink()}


def test_kustomization_lists_the_rendered_files_sorted_and_is_stable(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "manifests"

    status, stdout, err = _run(
        capsys, "render", str(jobs), "--out-dir", str(out), "--kustomization"
    )

    assert (status, stdout) == (0, "")
    assert f"wrote {out / 'kustomization.yaml'}" in err
    text = (out / "kustomization.yaml").read_text()
    assert text.startswith(KUSTOMIZATION_HEADER)
    assert yaml.safe_load(text) == {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["genericjob-bert.yaml", "genericjob-mnist.yaml"],
    }
    assert (out / "genericjob-mnist.yaml").read_text().startswith(JOB_HEADER)
    before = _snapshot(out)
    status, _, err = _run(capsys, "render", str(jobs), "--out-dir", str(out), "--kustomization")
    assert status == 0
    assert f"{out / 'kustomization.yaml'} unchanged" in err
    assert _snapshot(out) == before  # a second render changes no byte: nothing for git to show


def test_an_existing_kustomization_keeps_the_users_keys_and_entries(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "manifests"
    out.mkdir()
    (out / "kustomization.yaml").write_text(textwrap.dedent("""\
            namespace: team-a
            resources:
            - quota.yaml
            - ./genericjob-mnist.yaml
            commonLabels:
              team: a
            """))

    status, _, err = _run(capsys, "render", str(jobs), "--out-dir", str(out), "--kustomization")

    assert status == 0
    assert f"updated resources in {out / 'kustomization.yaml'}" in err
    doc = yaml.safe_load((out / "kustomization.yaml").read_text())
    assert doc == {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "namespace": "team-a",
        "resources": ["quota.yaml", "genericjob-bert.yaml", "genericjob-mnist.yaml"],
        "commonLabels": {"team": "a"},
    }
    assert list(doc) == ["apiVersion", "kind", "namespace", "resources", "commonLabels"]


def test_an_existing_kustomization_changes_only_in_its_job_entries(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The user's comments, quoting, order and indentation stay byte for byte: a render shows
    in `git diff` as the job entries it added or removed, nothing else."""
    out = tmp_path / "manifests"
    out.mkdir()
    theirs = textwrap.dedent("""\
        # Team A's training jobs (reviewed by @lead)
        apiVersion: kustomize.config.k8s.io/v1beta1
        kind: Kustomization
        namespace: "team-a"   # the quota is per namespace
        resources:
            - quota.yaml    # ours, not rendered
            - ./genericjob-old.yaml
        commonLabels: {team: a}

        # patches last
        patches:
            - path: gpu.yaml
        """)
    (out / "kustomization.yaml").write_text(theirs)
    (out / "genericjob-old.yaml").write_text(JOB_HEADER + "kind: GenericJob\n")

    status, _, err = _run(capsys, "render", str(jobs), "--out-dir", str(out), "--kustomization")

    assert status == 0, err
    assert (out / "kustomization.yaml").read_text() == theirs.replace(
        "    - ./genericjob-old.yaml\n",
        "    - genericjob-bert.yaml\n    - genericjob-mnist.yaml\n",
    )


def test_a_kustomization_of_only_comments_keeps_them(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "manifests"
    out.mkdir()
    (out / "kustomization.yaml").write_text("# to be filled by t9k-sdk render\n")

    assert _run(capsys, "render", str(jobs), "--out-dir", str(out), "--kustomization")[0] == 0

    text = (out / "kustomization.yaml").read_text()
    assert text.startswith("# to be filled by t9k-sdk render\napiVersion: kustomize.config")
    assert yaml.safe_load(text)["resources"] == ["genericjob-bert.yaml", "genericjob-mnist.yaml"]


def test_a_removed_job_is_unlisted_warned_about_and_deleted_only_with_prune(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "manifests"
    assert _run(capsys, "render", str(jobs), "--out-dir", str(out), "--kustomization")[0] == 0
    mine = out / "notes.yaml"  # a file of the user's: no header
    mine.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\n")
    hand = out / "genericjob-hand.yaml"  # a job file written by hand: no header either
    hand.write_text("kind: GenericJob\n")
    (jobs / "train.py").write_text(JOBS.replace('bert = GenericJob(name="bert"', "# gone ="))

    status, _, err = _run(capsys, "render", str(jobs), "--out-dir", str(out), "--kustomization")

    assert status == 0
    assert (out / "genericjob-bert.yaml").exists()
    assert "genericjob-bert.yaml was rendered earlier but its job is gone" in err
    assert "--prune" in err
    doc = yaml.safe_load((out / "kustomization.yaml").read_text())
    assert doc["resources"] == ["genericjob-mnist.yaml"]

    status, _, err = _run(
        capsys, "render", str(jobs), "--out-dir", str(out), "--kustomization", "--prune"
    )

    assert status == 0
    assert f"deleted {out / 'genericjob-bert.yaml'}" in err
    assert sorted(p.name for p in out.iterdir()) == [
        "genericjob-hand.yaml",
        "genericjob-mnist.yaml",
        "kustomization.yaml",
        "notes.yaml",
    ]


def test_prune_without_kustomization_deletes_only_files_it_wrote(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "manifests"
    assert _run(capsys, "render", str(jobs), "--out-dir", str(out))[0] == 0
    outside = tmp_path / "precious.yaml"
    outside.write_text(JOB_HEADER + "kind: GenericJob\n")  # marked, but outside DIR
    (out / "genericjob-old.yaml").symlink_to(outside)  # a link into it is never followed
    (out / "sub").mkdir()
    (out / "sub" / "genericjob-deep.yaml").write_text(JOB_HEADER)  # below DIR: not ours
    (jobs / "train.py").write_text(JOBS.replace('bert = GenericJob(name="bert"', "# gone ="))

    assert _run(capsys, "render", str(jobs), "--out-dir", str(out), "--prune")[0] == 0

    assert not (out / "genericjob-bert.yaml").exists()
    assert outside.exists()
    assert (out / "genericjob-old.yaml").is_symlink()
    assert (out / "sub" / "genericjob-deep.yaml").exists()
    assert not (out / "kustomization.yaml").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("resources: [\n", "kustomization.yaml: not valid YAML: line 2"),
        (
            'a: &a ["x","x","x","x","x","x","x","x","x","x"]\n'
            + "".join(
                f"{c}: &{c} [{','.join(['*' + p] * 10)}]\n"
                for p, c in zip("abcdefgh", "bcdefghi", strict=True)
            ),
            "more than 250,000 values",
        ),
        ("- a\n- b\n", "expected a mapping (apiVersion, kind, resources, ...); got a list"),
        ("kind: Component\n", "kind is 'Component'"),
        ("resources: quota.yaml\n", "resources: expected a list of file names or paths"),
        ("kind: Kustomization\n---\nkind: Kustomization\n", "holds 2 YAML documents"),
    ],
    ids=["unparsable", "yaml-bomb", "a-list", "component", "resources-string", "two-documents"],
)
def test_a_bad_kustomization_is_an_error_and_nothing_is_written(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    out = tmp_path / "manifests"
    out.mkdir()
    (out / "kustomization.yaml").write_text(content)

    status, _, err = _run(capsys, "render", str(jobs), "--out-dir", str(out), "--kustomization")

    assert status == 1
    assert message in err
    assert "nothing was written" in err
    assert _snapshot(out) == {"kustomization.yaml": content.encode()}


def test_links_and_files_in_the_way_are_refused(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "manifests"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text("resources: []\n")
    (out / "kustomization.yaml").symlink_to(elsewhere)

    status, _, err = _run(capsys, "render", str(jobs), "--out-dir", str(out), "--kustomization")

    assert status == 1
    assert "kustomization.yaml: is a symbolic link" in err
    assert elsewhere.read_text() == "resources: []\n"
    assert [p.name for p in out.iterdir()] == ["kustomization.yaml"]

    (out / "kustomization.yaml").unlink()
    (out / "genericjob-mnist.yaml").symlink_to(elsewhere)
    status, _, err = _run(capsys, "render", str(jobs), "--out-dir", str(out))
    assert status == 1
    assert "genericjob-mnist.yaml: is a symbolic link or not a regular file" in err
    assert elsewhere.read_text() == "resources: []\n"

    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    status, _, err = _run(capsys, "render", str(jobs), "--out-dir", str(a_file), "--kustomization")
    assert status == 1
    assert "exists and is not a directory" in err


def test_two_kustomization_files_are_refused_as_kustomize_does(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "manifests"
    out.mkdir()
    (out / "kustomization.yaml").write_text("resources: []\n")
    (out / "kustomization.yml").write_text("resources: []\n")

    status, _, err = _run(capsys, "render", str(jobs), "--out-dir", str(out), "--kustomization")

    assert status == 1
    assert "has both kustomization.yaml and kustomization.yml" in err


def test_kustomization_and_prune_need_an_out_dir(
    jobs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for flag in ("--kustomization", "--prune"):
        status, out, err = _run(capsys, "render", str(jobs), flag)
        assert (status, out) == (2, "")
        assert f"{flag} works with --out-dir DIR" in err


# -- reading such a directory: validate, plan, apply/diff -f ---------------------------------


def test_the_other_commands_skip_a_kustomization_that_only_lists_the_files(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "manifests"
    assert _run(capsys, "render", str(jobs), "--out-dir", str(out), "--kustomization")[0] == 0

    status, stdout, err = _run(capsys, "validate", str(out))
    assert (status, stdout, err) == (0, "2 documents valid\n", "")

    status, _, err = _run(capsys, "apply", "-f", str(out), "--dry-run=client")
    assert status == 0, err
    assert err == ""


def test_a_kustomization_that_changes_the_files_is_named_in_a_note(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "manifests"
    assert _run(capsys, "render", str(jobs), "--out-dir", str(out), "--kustomization")[0] == 0
    with (out / "kustomization.yaml").open("a") as file:
        file.write("namespace: team-a\n")
    (out / "extra.yaml").write_text((out / "genericjob-bert.yaml").read_text().replace("bert", "x"))

    status, _, err = _run(capsys, "validate", str(out))

    assert status == 0
    assert "it also sets namespace" in err
    assert "it does not list extra.yaml" in err
    assert f"`kubectl kustomize {out} | t9k-sdk validate -`" in err


def test_a_kustomization_named_as_a_file_is_a_usage_error_that_says_what_to_do(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "manifests"
    assert _run(capsys, "render", str(jobs), "--out-dir", str(out), "--kustomization")[0] == 0

    status, _, err = _run(capsys, "diff", "-f", str(out / "kustomization.yaml"))

    assert status == 2
    assert "kustomize's file, not a job manifest" in err
    assert f"kubectl kustomize {out} | t9k-sdk diff -f -" in err


# -- a hostile or unusual kustomization --------------------------------------------------------


def test_the_users_values_survive_the_rewrite_exactly(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Strings YAML would read as something else, multi-line patches, numbers: all kept as they
    were (loaded back to the same values), whatever the emitter has to quote."""
    out = tmp_path / "manifests"
    out.mkdir()
    theirs = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "namespace": "on",
        "resources": [
            "yes",
            "a: b.yaml",
            "#x.yaml",
            "https://github.com/t9k/t9k-sdk//deploy/kustomize/base?ref=v0.1.0",
            "../base",
            "$(rm -rf /).yaml",
        ],
        "patches": [
            {
                "target": {"kind": "GenericJob"},
                "patch": "- op: add\n  path: /metadata/labels/x\n  value: '1'\n",
            }
        ],
        "replicas": [{"name": "x", "count": 9223372036854775807}],
        "buildMetadata": ["originAnnotations"],
        "labels": [{"pairs": {"team": "null"}, "includeSelectors": False}],
    }
    (out / "kustomization.yaml").write_text(yaml.safe_dump(theirs, sort_keys=False))

    assert _run(capsys, "render", str(jobs), "--out-dir", str(out), "--kustomization")[0] == 0

    doc = yaml.safe_load((out / "kustomization.yaml").read_text())
    assert doc == {
        **theirs,
        "resources": [*theirs["resources"], "genericjob-bert.yaml", "genericjob-mnist.yaml"],
    }


def test_a_kustomization_larger_than_a_mebibyte_is_refused(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "manifests"
    out.mkdir()
    big = "resources:\n" + "- x.yaml\n" * 200_000
    (out / "kustomization.yaml").write_text(big)

    status, _, err = _run(capsys, "render", str(jobs), "--out-dir", str(out), "--kustomization")

    assert status == 1
    assert "larger than 1 MiB" in err
    assert (out / "kustomization.yaml").read_text() == big


def test_diffs_default_field_manager_is_the_clients() -> None:
    from t9k_sdk.cli._app import _parser
    from t9k_sdk.client.client import FIELD_MANAGER

    args = _parser().parse_args(["diff", "-f", "x.yaml"])
    assert args.field_manager == FIELD_MANAGER


def test_prune_with_no_job_left_deletes_nothing(
    jobs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A newcomer empties jobs/ (or points render at the wrong directory): nothing is wiped."""
    out = tmp_path / "manifests"
    assert _run(capsys, "render", str(jobs), "--out-dir", str(out), "--kustomization")[0] == 0
    before = _snapshot(out)
    (jobs / "train.py").write_text("# no jobs here any more\n")

    status, _, err = _run(
        capsys, "render", str(jobs), "--out-dir", str(out), "--kustomization", "--prune"
    )

    assert status == 1
    assert "no jobs found" in err
    assert _snapshot(out) == before
