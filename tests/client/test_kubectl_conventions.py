"""kubectl's conventions in the cluster verbs, where no cluster is needed: Python job files run
only with --python, the shapes of `delete`, `diff` and `apply --dry-run=client`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from t9k_sdk import load_all_yaml
from tests.client.test_commands import run

REPO = Path(__file__).resolve().parents[2]

JOB_FILE = """\
from pathlib import Path
Path(__file__).with_name("ran").write_text("the job file was executed")
from t9k_sdk import GenericJob, Replica
job = GenericJob(name="py", replicas=[Replica(type="worker", count=1, image="pt:2")])
"""


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """A directory with a YAML manifest and a Python job file that leaves a mark when run."""
    directory = tmp_path / "jobs"
    directory.mkdir()
    shutil.copy(REPO / "examples" / "genericjob_mnist.yaml", directory / "mnist.yaml")
    (directory / "job.py").write_text(JOB_FILE)
    return directory


def test_apply_of_a_directory_skips_its_python_files_with_a_note(
    capsys: pytest.CaptureFixture[str], mixed: Path
) -> None:
    code, out, err = run(capsys, "apply", "-f", str(mixed), "--dry-run=client")
    assert code == 0
    assert out == "genericjob/mnist valid (client dry run: not sent to the cluster)\n"
    assert f"note: skipped 1 Python file(s) in {mixed} (pass --python" in err
    assert not (mixed / "ran").exists()  # the Python file was not executed


def test_apply_of_a_directory_with_python_runs_them(
    capsys: pytest.CaptureFixture[str], mixed: Path
) -> None:
    code, out, _ = run(capsys, "apply", "-f", str(mixed), "--python", "--dry-run=client")
    assert code == 0
    assert out.splitlines() == [
        "genericjob/mnist valid (client dry run: not sent to the cluster)",
        "genericjob/py valid (client dry run: not sent to the cluster)",
    ]
    assert (mixed / "ran").exists()


@pytest.mark.parametrize("verb", ["apply", "delete", "diff"])
def test_a_python_file_named_without_python_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], mixed: Path, unreachable: Path, verb: str
) -> None:
    source = mixed / "job.py"
    code, out, err = run(capsys, verb, "-f", str(source), "--kubeconfig", str(unreachable))
    assert (code, out) == (2, "")
    assert f"{source}: a Python file; Python job files are executed as code" in err
    assert "add --python" in err
    assert f"t9k-sdk render {source} | t9k-sdk {verb} -f -" in err
    assert not (mixed / "ran").exists()


def test_apply_dry_run_client_reports_invalid_input_without_a_cluster(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, unreachable: Path
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: batch.tensorstack.dev/v1beta1\nkind: GenericJob\nmetadata: {name: b}\n"
        "spec: {replicaSpecs: [{type: worker, replicaz: 1,"
        " template: {spec: {containers: [{name: w, image: i}]}}}]}\n"
    )
    code, out, err = run(
        capsys, "apply", "-f", str(bad), "--dry-run=client", "--kubeconfig", str(unreachable)
    )
    assert (code, out) == (1, "")
    assert "replicaz" in err
    assert "nothing was applied" in err


def test_apply_dry_run_client_prints_the_jobs_with_o(
    capsys: pytest.CaptureFixture[str], mixed: Path, unreachable: Path
) -> None:
    """`apply --dry-run=client -o yaml`: the validated job, in -n's namespace, without a cluster
    (kubectl's way to see what apply would send)."""
    manifest = mixed / "mnist.yaml"
    argv = ["apply", "-f", str(manifest), "--dry-run=client", "-n", "team-a"]
    code, out, err = run(capsys, *argv, "-o", "yaml", "--kubeconfig", str(unreachable))
    assert (code, err) == (0, "")
    [job] = load_all_yaml(out)
    assert (job.kind, job.metadata.name, job.metadata.namespace) == (
        "GenericJob",
        "mnist",
        "team-a",
    )
    assert job.spec == load_all_yaml(manifest.read_text())[0].spec
    code, out, _ = run(capsys, *argv, "-o", "json")
    assert (code, json.loads(out)["metadata"]["namespace"]) == (0, "team-a")
    assert run(capsys, *argv, "-o", "name") == (0, "genericjob/mnist\n", "")


def test_apply_dry_run_takes_only_kubectls_values(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "apply", "-f", "x.yaml", "--dry-run=yes")
    assert code == 2
    assert "invalid choice: 'yes' (choose from 'none', 'client', 'server')" in err


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["delete"], "delete needs KIND and NAME (e.g. `gj mnist`), -l SELECTOR, or -f FILE"),
        (["delete", "gj", "a", "-l", "x=y"], "-l (--selector) takes no NAME"),
        (["delete", "gj", "-f", "x.yaml"], "-f (--filename) cannot be combined with KIND"),
        (["get", "gj", "a", "-l", "x=y"], "a NAME cannot be combined with -l (--selector)"),
        (["get", "gj", "-l", "x=y", "-w"], "-l (--selector) cannot be combined with -w"),
    ],
)
def test_selector_and_filename_usage_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str], complaint: str
) -> None:
    code, out, err = run(capsys, *argv, "--kubeconfig", "/nonexistent/kubeconfig")
    assert (code, out) == (2, "")
    assert complaint in err


def test_diff_exits_2_on_invalid_input_and_an_unreachable_cluster(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, unreachable: Path
) -> None:
    code, out, err = run(capsys, "diff", "-f", str(tmp_path / "none.yaml"))
    assert (code, out) == (2, "")
    assert "no such file" in err
    good = REPO / "examples" / "genericjob_mnist.yaml"
    code, out, err = run(capsys, "diff", "-f", str(good), "--kubeconfig", str(unreachable))
    assert (code, out) == (2, "")
    assert "cannot reach the Kubernetes API server" in err


def test_diff_help_documents_kubectls_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "diff", "--help")
    assert code == 0
    assert "0    no differences" in out
    assert "1    differences found" in out


def test_client_methods_name_what_is_missing_or_contradictory(unreachable: Path) -> None:
    """Checked before any request: the kubeconfig's server does not even exist."""
    from t9k_sdk import GenericJob, Replica
    from t9k_sdk.client import Client, ClientError

    job = GenericJob(
        name="mnist", namespace="team-b", replicas=[Replica(type="worker", count=1, image="i")]
    )
    with Client(kubeconfig=unreachable) as client:
        with pytest.raises(ClientError, match="a job name is needed after the kind 'gj'"):
            client.get("gj")
        with pytest.raises(ClientError, match="GenericJob 'mnist' was given with the name 'x'"):
            client.wait(job, "x")
        with pytest.raises(
            ClientError,
            match="GenericJob 'mnist' declares namespace 'team-b' but namespace 'team-c' was"
            " asked for",
        ):
            client.logs(job, namespace="team-c")
