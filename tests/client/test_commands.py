"""The cluster verbs of `t9k-sdk` where no cluster is needed: usage, errors, help, summaries."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from t9k_sdk import GenericJob, Replica, load_all_yaml
from t9k_sdk.cli import main
from t9k_sdk.cli._commands.describe import spec_summary

REPO = Path(__file__).resolve().parents[2]
VERBS = ("apply", "get", "describe", "wait", "logs", "pause", "resume", "scale", "delete")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_help_lists_every_verb_and_each_documents_its_exit_status(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for verb in VERBS:
        assert f"\n    {verb}" in out
    for verb in VERBS:
        code, out, _ = run(capsys, verb, "--help")
        assert code == 0
        assert "--kubeconfig FILE" in out
        assert "3    wait: the timeout passed" in out


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["get", "jobz"], "unknown job kind 'jobz'"),
        (["get", "gj", "a", "b"], "get takes at most KIND and NAME"),
        (["get", "gj", "a", "-A"], "cannot be combined with -A"),
        (["describe", "gj"], "describe needs KIND and NAME"),
        (["wait", "gj", "x", "--for", "phase=Done"], "unknown phase 'Done'"),
        (["wait", "gj", "x", "--timeout", "ten"], "invalid duration 'ten'"),
        (["logs", "gj", "x", "--tail", "-1"], "--tail must be >= 0"),
        (["scale", "gj", "x", "--replicas", "2"], "only elastic DeepSpeedJobs"),
        (["pause", "dj/"], "pause needs KIND and NAME"),
    ],
)
def test_usage_errors_exit_2_before_contacting_a_cluster(
    capsys: pytest.CaptureFixture[str], argv: list[str], complaint: str
) -> None:
    code, out, err = run(capsys, *argv, "--kubeconfig", "/nonexistent/kubeconfig")
    assert code == 2
    assert out == ""
    assert complaint in err
    assert err.startswith("usage: t9k-sdk")


def test_a_missing_kubeconfig_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "get", "--kubeconfig", "/nonexistent/kubeconfig")
    assert code == 1
    assert err == (
        "t9k-sdk: error: kubeconfig /nonexistent/kubeconfig: no such file; give the path of"
        " your cluster's kubeconfig (--kubeconfig FILE, kubeconfig= in Python)\n"
    )


def test_a_kubeconfig_variable_naming_no_file_is_named(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """kubectl skips missing KUBECONFIG files silently and then talks of localhost:8080; we say
    which paths the variable holds and what to do."""
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/a:/nonexistent/b")
    code, _, err = run(capsys, "get")
    assert code == 1
    assert "KUBECONFIG names no file that exists (/nonexistent/a, /nonexistent/b)" in err
    assert "--kubeconfig FILE" in err


def test_an_unreachable_api_server_is_named(
    capsys: pytest.CaptureFixture[str], unreachable: Path
) -> None:
    code, _, err = run(capsys, "get", "gj", "--kubeconfig", str(unreachable))
    assert code == 1
    assert "cannot reach the Kubernetes API server at https://127.0.0.1:1" in err


def test_an_unknown_context_is_named(capsys: pytest.CaptureFixture[str], unreachable: Path) -> None:
    code, _, err = run(capsys, "get", "--kubeconfig", str(unreachable), "--context", "prod")
    assert code == 1
    assert f"cannot load the kubeconfig {unreachable}" in err
    assert "prod" in err


def test_apply_validates_everything_before_contacting_the_cluster(
    capsys: pytest.CaptureFixture[str], unreachable: Path, tmp_path: Path
) -> None:
    good = tmp_path / "good.yaml"
    good.write_text((REPO / "examples" / "genericjob_mnist.yaml").read_text())
    bad = tmp_path / "bad.yaml"
    bad.write_text(textwrap.dedent("""\
            apiVersion: batch.tensorstack.dev/v1beta1
            kind: GenericJob
            metadata: {name: broken}
            spec:
              replicaSpecs:
              - type: worker
                replicaz: 2
                template: {spec: {containers: [{name: w, image: i}]}}
            """))
    code, out, err = run(
        capsys, "apply", "-f", str(good), "-f", str(bad), "--kubeconfig", str(unreachable)
    )
    assert code == 1
    assert out == ""
    assert "replicaz" in err
    assert "nothing was applied" in err
    assert "cannot reach" not in err  # the cluster was not contacted


def test_apply_of_a_python_file_with_an_error_reports_it_like_render(
    capsys: pytest.CaptureFixture[str], unreachable: Path, tmp_path: Path
) -> None:
    source = tmp_path / "jobs.py"
    source.write_text("raise RuntimeError('no data set configured')\n")
    code, _, err = run(
        capsys, "apply", "-f", str(source), "--python", "--kubeconfig", str(unreachable)
    )
    assert code == 1
    assert f"cannot import {source}" in err
    assert "RuntimeError: no data set configured" in err


def test_the_offline_commands_work_without_the_kubernetes_client(tmp_path: Path) -> None:
    """`render`, `validate`... must not need the [client] extra; the verbs say how to get it."""
    script = textwrap.dedent(f"""
        import sys
        sys.modules["kubernetes"] = None  # as if it were not installed
        from t9k_sdk.cli import main
        assert main(["validate", {str(REPO / "examples" / "genericjob_mnist.yaml")!r}]) == 0
        assert main(["get", "gj"]) == 1
        try:
            from t9k_sdk.client import Client
        except ImportError as exc:
            print("IMPORT:", exc)
        """)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "1 document valid" in proc.stdout
    assert 'pip install "t9k-sdk[client] @ git+https://github.com/t9k/t9k-sdk"' in proc.stderr
    assert 'pip install ".[client]"' in proc.stderr
    assert "IMPORT: t9k_sdk.client.Client needs the Kubernetes client" in proc.stdout


def test_describe_summarises_the_spec() -> None:
    (mnist,) = load_all_yaml(REPO / "examples" / "genericjob_mnist.yaml")
    (gpt,) = load_all_yaml(REPO / "examples" / "deepspeed_elastic.yaml")
    assert spec_summary(mnist) == [
        "worker: 4 x pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime, cpu=4, memory=8Gi,"
        " nvidia.com/gpu=1; restart OnFailure (up to 3 times)",
        "success when: worker[0]",
        "clean-up policy: Unfinished",
    ]
    two_rules = GenericJob(
        name="two-rules",
        replicas=[Replica(type="worker", count=2, image="i")],
        failure_rules=[{"worker": [0]}, {"worker": [1]}],
    ).build()
    assert "failure when: worker[0] or worker[1]" in spec_summary(two_rules)
    summary = spec_summary(gpt)
    assert "elastic: 2..8 workers, expected 4" in summary
    assert "run policy: backoff limit 5, deadline 7d" in summary


def test_in_cluster_configuration_outside_a_pod_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from t9k_sdk.client import Client, KubeconfigError

    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(KubeconfigError, match="cannot use the in-cluster configuration"):
        Client(in_cluster=True)
