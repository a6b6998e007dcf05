"""The cluster verbs of `t9k-sdk` end to end: real API server, real operator, kwok's pods."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s

from t9k_sdk import codecs, models
from t9k_sdk.cli import main
from t9k_sdk.client import Client, ClientError
from tests.cluster.client_helpers import (
    FAILS,
    SUCCEEDS,
    client_fixture,  # noqa: F401  (fixture `client`)
    generic_job,
    operator_fixture,  # noqa: F401  (fixture `operator`)
)
from tools.kit import wait_for

Cli = Callable[..., tuple[int, str, str]]
"""`cli("get", "gj")` runs `t9k-sdk get gj` on the test's namespace: (exit status, out, err)."""


@pytest.fixture
def cli(kubeconfig: Path, namespace: str, capsys: pytest.CaptureFixture[str]) -> Cli:
    def run(*argv: str) -> tuple[int, str, str]:
        code = main([*argv, "--kubeconfig", str(kubeconfig), "-n", namespace])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def write_yaml(path: Path, *manifests: dict[str, object]) -> Path:
    path.write_text(codecs.dump_all_yaml(manifests))
    return path


@pytest.mark.usefixtures("operator")
def test_apply_wait_get_describe_delete(cli: Cli, tmp_path: Path, namespace: str) -> None:
    manifest = write_yaml(tmp_path / "ok.yaml", generic_job("ok", annotations=SUCCEEDS))
    assert cli("apply", "-f", str(manifest)) == (0, "genericjob/ok created\n", "")
    assert cli("apply", "-f", str(manifest)) == (0, "genericjob/ok unchanged\n", "")
    elsewhere = generic_job("other")
    elsewhere["metadata"]["namespace"] = "elsewhere"
    code, out, err = cli("apply", "-f", str(write_yaml(tmp_path / "other.yaml", elsewhere)))
    assert (code, out) == (1, "")
    assert "declares namespace 'elsewhere' but namespace" in err

    code, out, err = cli("wait", "gj", "ok", "--timeout", "30s")
    assert code == 0
    assert out.startswith("genericjob/ok phase=Succeeded reached after ")
    assert "genericjob/ok Succeeded: The job has finished successfully." in err  # progress

    code, out, _ = cli("get")
    assert code == 0
    header, row = out.splitlines()
    assert header.split() == ["NAME", "KIND", "PHASE", "REPLICAS", "RESTARTS", "AGE"]
    assert row.split()[:5] == ["ok", "GenericJob", "Succeeded", "0/2", "0"]

    code, out, _ = cli("get", "gj", "ok", "-o", "yaml")
    assert code == 0
    doc = yaml.safe_load(out)
    assert (doc["kind"], doc["metadata"]["name"], doc["status"]["phase"]) == (
        "GenericJob",
        "ok",
        "Succeeded",
    )
    assert "managedFields" not in doc["metadata"]
    code, out, _ = cli("get", "gj", "-o", "json")
    assert [i["metadata"]["name"] for i in json.loads(out)["items"]] == ["ok"]
    assert cli("get", "genericjobs", "-o", "name")[1] == "genericjob/ok\n"

    code, out, _ = cli("describe", "gj/ok")
    assert code == 0
    for heading in (
        "Name:        ok",
        "Phase:       Succeeded",
        "Spec:",
        "Conditions:",
        "Pods:",
        "Events:",
        "Diagnosis:",
    ):
        assert heading in out
    assert "info: job: finished successfully" in out
    assert "SimulatedExit" in out

    # delete waits by default, as kubectl's does: the job is gone when it returns
    assert cli("delete", "gj", "ok") == (0, "genericjob/ok deleted\n", "")
    code, _, err = cli("get", "gj", "ok")
    assert code == 1
    assert err == f"t9k-sdk: error: GenericJob 'ok' not found in namespace '{namespace}'\n"
    assert cli("delete", "gj", "ok", "--ignore-not-found") == (0, "", "")


@pytest.mark.usefixtures("operator")
def test_wait_exit_status_tells_failed_stuck_and_timed_out_apart(cli: Cli, client: Client) -> None:
    client.apply(generic_job("bad", annotations=FAILS))
    code, _, err = cli("wait", "gj", "bad", "-q", "--timeout", "60s")
    assert code == 1
    assert "t9k-sdk: error: genericjob/bad: Failed: The job is failed: Pod[bad-worker-" in err
    assert "exited with error code 3" in err
    assert "see `t9k-sdk describe gj bad -n t-test-wait-exit-status" in err

    client.apply(generic_job("huge", replicas=1, limits={"nvidia.com/gpu": "99"}))
    code, _, err = cli("wait", "gj", "huge", "--stuck-grace", "0", "--timeout", "60s")
    assert code == 1
    assert "genericjob/huge: Unschedulable: Pod[huge-worker-0] cannot be scheduled" in err
    assert "Insufficient nvidia.com/gpu" in err
    code, out, _ = cli("describe", "gj", "huge")
    assert "error: pod huge-worker-0 (worker-0): cannot be scheduled" in out
    assert "-> it asks for nvidia.com/gpu=99" in out

    client.apply(generic_job("slow", replicas=1))
    code, _, err = cli("wait", "gj", "slow", "--timeout", "1s")
    assert code == 3
    assert "genericjob/slow: timed out: phase=Succeeded not reached within 1s" in err
    code, _, _ = cli("wait", "gj", "slow", "--for", "phase=Running", "--timeout", "30s")
    assert code == 0


@pytest.mark.usefixtures("operator")
def test_apply_a_python_file_then_pause_resume_and_scale(
    cli: Cli, tmp_path: Path, client: Client
) -> None:
    source = tmp_path / "jobs.py"
    source.write_text(textwrap.dedent("""\
            from t9k_sdk import DeepSpeedJob, Elastic

            gpt = DeepSpeedJob(name="gpt", image="ds:1", workers=2, elastic=Elastic(min=1, max=3),
                               run=["train.py"])
            """))
    assert cli("apply", "-f", str(source), "--python") == (0, "deepspeedjob/gpt created\n", "")
    assert cli("wait", "dj", "gpt", "--for", "phase=Running", "-q", "--timeout", "30s")[0] == 0

    code, out, _ = cli("pause", "dj", "gpt")
    assert (code, out.split(" (")[0]) == (0, "deepspeedjob/gpt paused")
    assert cli("wait", "dj", "gpt", "--for", "condition=Paused", "-q", "--timeout", "30s")[0] == 0
    assert cli("resume", "dj", "gpt") == (0, "deepspeedjob/gpt resumed\n", "")
    assert cli("wait", "dj", "gpt", "--for", "phase=Running", "-q", "--timeout", "30s")[0] == 0

    assert cli("scale", "gpt", "--replicas", "3") == (
        0,
        "deepspeedjob/gpt scaled to 3 workers (elastic 1..3)\n",
        "",
    )
    wait_for(lambda: len(client.pods("dj", "gpt")), lambda n: n == 3, "three workers")
    code, _, err = cli("scale", "dj", "gpt", "--replicas", "4")
    assert code == 1
    assert "can run on 1 to 3 workers" in err


@pytest.mark.usefixtures("operator")
def test_get_watch_follows_one_job_until_it_finishes(cli: Cli, client: Client) -> None:
    client.apply(generic_job("watched", annotations=SUCCEEDS))
    code, out, _ = cli("get", "gj", "watched", "-w", "--watch-timeout", "30s")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "KIND", "PHASE", "REPLICAS", "RESTARTS", "AGE"]
    phases = [line.split()[2] for line in lines[1:]]
    assert phases[-1] == "Succeeded"
    assert len(phases) >= 2  # the state it had first, then the changes


def test_the_console_script_runs(kubeconfig: Path, namespace: str, client: Client) -> None:
    client.apply(generic_job("script"))
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "t9k-sdk"),
            "get",
            "gj",
            "--kubeconfig",
            str(kubeconfig),
            "-n",
            namespace,
            "-o",
            "name",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "genericjob/script\n", "")


# -- kubectl conventions: selectors, server-side dry run, diff, delete -f, job objects ----------


def labelled(name: str, **labels: str) -> dict[str, object]:
    job = generic_job(name)
    job["metadata"]["labels"] = labels
    return job


def test_selector_dry_run_diff_and_delete_by_file(cli: Cli, client: Client, tmp_path: Path) -> None:
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    a = write_yaml(manifests / "a.yaml", labelled("a", team="nlp"))
    write_yaml(manifests / "b.yaml", labelled("b", team="cv"))

    # --dry-run=server: the API server answers as if it created the job, and stores nothing
    assert cli("apply", "-f", str(a), "--dry-run=server") == (
        0,
        "genericjob/a created (server dry run)\n",
        "",
    )
    assert client.list() == []
    # -o yaml: the job as the API server would store it (its defaults and uid filled in)
    code, out, err = cli("apply", "-f", str(a), "--dry-run=server", "-o", "yaml")
    assert (code, err) == (0, "")
    would_be = yaml.safe_load(out)
    assert (would_be["kind"], would_be["metadata"]["name"]) == ("GenericJob", "a")
    assert would_be["metadata"]["uid"]
    assert would_be["metadata"]["namespace"] == client.namespace
    assert "managedFields" not in would_be["metadata"]
    assert client.list() == []

    # diff against nothing: all new, exit status 1
    code, out, err = cli("diff", "-f", str(manifests))
    assert (code, err) == (1, "")
    assert "--- /dev/null\n+++ merged/genericjob/a\n" in out
    assert "+++ merged/genericjob/b\n" in out
    assert "+  name: a\n" in out

    assert cli("apply", "-f", str(manifests))[0] == 0
    assert cli("diff", "-f", str(manifests)) == (0, "", "")  # applied: nothing to show

    changed = labelled("a", team="nlp")
    changed["spec"]["replicaSpecs"][0]["replicas"] = 3  # type: ignore[index]
    write_yaml(a, changed)
    code, out, _ = cli("diff", "-f", str(a))
    assert code == 1
    assert out.startswith("--- live/genericjob/a\n+++ merged/genericjob/a\n")
    assert "-  - replicas: 2\n+  - replicas: 3\n" in out
    assert "-  generation: 1\n+  generation: 2\n" in out  # as kubectl diff shows it
    assert cli("apply", "-f", str(a), "--dry-run=server") == (
        0,
        "genericjob/a configured (server dry run)\n",
        "",
    )
    stored = client.get("gj", "a")
    assert isinstance(stored, models.GenericJob)
    assert stored.spec.replica_specs[0].replicas == 2  # not stored

    # describe -o json|yaml: the same facts as data
    code, out, _ = cli("describe", "gj", "a", "-o", "json")
    assert code == 0
    described = json.loads(out)
    assert sorted(described) == ["events", "findings", "job", "pods"]
    assert described["job"]["metadata"]["labels"] == {"team": "nlp"}
    assert "managedFields" not in described["job"]["metadata"]
    assert all(f["severity"] in ("error", "warning", "info") for f in described["findings"])
    assert yaml.safe_load(cli("describe", "gj/a", "-o", "yaml")[1])["job"]["kind"] == "GenericJob"

    # -l: the label selector goes to the API server
    assert cli("get", "-l", "team=nlp", "-o", "name") == (0, "genericjob/a\n", "")
    assert cli("get", "gj", "--selector", "team in (nlp,cv)", "-o", "name")[1] == (
        "genericjob/a\ngenericjob/b\n"
    )
    code, out, err = cli("get", "gj", "-l", "team=none")
    assert (code, out) == (0, "")
    assert "No GenericJobs matching 'team=none' found" in err
    code, _, err = cli("get", "-l", "team in nlp")
    assert code == 1
    assert "the label selector 'team in nlp' is invalid: unable to parse requirement" in err
    assert cli("delete", "-l", "team=cv") == (0, "genericjob/b deleted\n", "")
    assert [j.metadata.name for j in client.list()] == ["a"]

    # delete -f: the jobs the files define; b is already gone
    code, out, err = cli("delete", "-f", str(manifests), "--wait=false")
    assert (code, out) == (1, "genericjob/a deleted\n")
    assert "GenericJob 'b' not found" in err
    assert cli("delete", "-f", str(manifests), "--ignore-not-found") == (0, "", "")
    assert client.list() == []


def test_server_dry_run_surfaces_what_only_the_api_server_knows(
    cli: Cli, client: Client, tmp_path: Path, namespace: str, kubeconfig: Path
) -> None:
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    manifest = write_yaml(tmp_path / "job.yaml", generic_job("quota"))
    # valid for the SDK (and --dry-run=client), but this namespace allows no GenericJob
    api = k8s_config.new_client_from_config(str(kubeconfig))
    core = k8s.CoreV1Api(api)
    core.create_namespaced_resource_quota(
        namespace,
        {
            "metadata": {"name": "no-jobs"},
            "spec": {"hard": {f"count/{models.GenericJob.PLURAL}.{models.GROUP}": "0"}},
        },
    )
    wait_for(
        lambda: core.read_namespaced_resource_quota("no-jobs", namespace).status.hard,
        bool,
        "the quota's status",
    )
    api.close()
    assert cli("apply", "-f", str(manifest), "--dry-run=client")[0] == 0
    code, out, err = cli("apply", "-f", str(manifest), "--dry-run=server")
    assert (code, out) == (1, "")
    assert "genericjob/quota" in err
    assert "exceeded quota: no-jobs" in err
    code, out, err = cli("diff", "-f", str(manifest))
    assert (code, out) == (2, "")
    assert "exceeded quota: no-jobs" in err
    assert client.list() == []


@pytest.mark.usefixtures("operator")
def test_client_methods_take_the_job_object_given_to_apply(client: Client) -> None:
    from t9k_sdk import GenericJob, Replica
    from t9k_sdk.client import JobNotFoundError

    wire = codecs.from_manifest(generic_job("objects", replicas=1, annotations=SUCCEEDS))
    client.apply(wire)
    assert client.wait(wire, timeout=30).status.phase.value == "Succeeded"  # type: ignore[union-attr]
    assert client.get(wire).metadata.name == "objects"
    assert client.describe(wire).job.metadata.name == "objects"

    builder = GenericJob(
        name="built", replicas=[Replica(type="worker", count=1, image="example.invalid/t9k:sim")]
    )
    client.apply(builder)
    assert client.get(builder).kind == "GenericJob"
    assert client.get_manifest(builder)["metadata"]["namespace"] == client.namespace
    with pytest.raises(ClientError, match="pass either the job object or a kind and a name"):
        client.get(builder, "other")
    client.delete(builder, wait=True)
    with pytest.raises(JobNotFoundError):
        client.get(builder)
    client.delete(wire)


# What a tenant who can write to the namespace can put into text the CLI prints: an OSC 52
# (set the clipboard), an OSC 0 (window title), a CSI that clears the screen, an 8-bit CSI and a
# right-to-left override.
HOSTILE = "\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b]0;owned\x07\x1b[2J\x9b31m\u202edone"
SHOWN = "\\x1b]52;c;ZWNobyBwd25lZA==\\x07\\x1b]0;owned\\x07\\x1b[2J\\x9b31m\\u202edone"


def _no_terminal_controls(text: str) -> None:
    bad = sorted({c for c in text if (ord(c) < 32 and c not in "\n") or 0x7F <= ord(c) <= 0x9F})
    assert not {c for c in bad if c != "\x1b"}, bad
    # the CLI's own colours are the only escapes left: ESC [ digits ; m
    assert re.sub(r"\x1b\[[0-9;]*m", "", text).count("\x1b") == 0, text
    assert "\u202e" not in text


@pytest.mark.usefixtures("operator")
def test_text_from_the_cluster_reaches_the_terminal_with_its_controls_escaped(
    cli: Cli,
    client: Client,
    core_v1: k8s.CoreV1Api,
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client.apply(codecs.from_manifest(generic_job("esc", replicas=1, annotations=FAILS)))
    wait_for(
        lambda: client.get("gj", "esc").status,
        lambda s: s is not None and s.phase is not None and s.phase.value == "Failed",
        "the job failed",
        60,
    )
    job = client.get("gj", "esc")
    # what the container wrote as its termination message (a pod's status holds it)
    pod = core_v1.read_namespaced_pod("esc-worker-0", namespace)
    terminated = pod.status.container_statuses[0].state.terminated
    core_v1.patch_namespaced_pod_status(
        "esc-worker-0",
        namespace,
        {
            "status": {
                "containerStatuses": [
                    {
                        "name": "worker",
                        "image": pod.status.container_statuses[0].image,
                        "imageID": "",
                        "ready": False,
                        "restartCount": 0,
                        "state": {
                            "terminated": {
                                "exitCode": terminated.exit_code,
                                "reason": "Error",
                                "message": "bye" + HOSTILE,
                            }
                        },
                    }
                ]
            }
        },
    )
    core_v1.create_namespaced_event(
        namespace,
        k8s.CoreV1Event(
            metadata=k8s.V1ObjectMeta(name="esc.planted"),
            involved_object=k8s.V1ObjectReference(
                api_version=models.API_VERSION,
                kind="GenericJob",
                name="esc",
                namespace=namespace,
                uid=job.metadata.uid,
            ),
            reason="Planted" + HOSTILE,
            message="look" + HOSTILE,
            type="Warning",
            count=1,
        ),
    )
    # colour on, as on a terminal: the CLI's own escapes are there, the tenant's are not
    monkeypatch.setattr("t9k_sdk.cli._cluster.colour_wanted", lambda _stream: True)
    code, out, err = cli("describe", "gj", "esc")
    assert code == 0, err
    _no_terminal_controls(out)
    assert "\x1b[" in out  # the phase is coloured
    assert "look" + SHOWN in out  # the planted Event's message, shown with its escapes visible
    code, out, _ = cli("get", "gj")
    assert code == 0
    _no_terminal_controls(out)
    code, out, err = cli("wait", "gj", "esc", "--for", "phase=Failed", "--timeout", "10s")
    _no_terminal_controls(out + err)


# -- completion of job names from the cluster --------------------------------------------------


def test_bash_completes_job_names_from_the_cluster(
    cli: Cli, kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    """`t9k-sdk get gj <Tab>`: the script asks the API server (with the -n and --kubeconfig of the
    command line) for the names of that kind, as kubectl's completion does."""
    manifests = write_yaml(tmp_path / "jobs.yaml", generic_job("mnist"), generic_job("mlp"))
    assert cli("apply", "-f", str(manifests))[0] == 0
    script = subprocess.run(
        [sys.executable, "-m", "t9k_sdk.cli", "completion", "bash"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    context = ["--kubeconfig", str(kubeconfig), "-n", namespace]

    def offered(*words: str) -> list[str]:
        program = (
            f"{script}\nCOMP_WORDS=({' '.join(repr(w) for w in words)})\n"
            'COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))\n_t9k_sdk\nprintf "%s\\n" "${COMPREPLY[@]}"\n'
        )
        path = f"{Path(sys.executable).parent}:/usr/bin:/bin"  # the t9k-sdk of this venv
        proc = subprocess.run(
            ["bash", "--norc", "--noprofile", "-c", program],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
            env={"PATH": path, "HOME": str(tmp_path)},
        )
        return sorted(line for line in proc.stdout.splitlines() if line)

    assert offered("t9k-sdk", "get", "gj", *context, "") == ["mlp", "mnist"]
    assert offered("t9k-sdk", "describe", *context, "gj", "mn") == ["mnist"]
    assert offered("t9k-sdk", "delete", "gj", "mlp", *context, "") == ["mlp", "mnist"]
    assert offered("t9k-sdk", "get", *context, "") == ["caij", "dj", "gj"]  # no KIND yet
    assert offered("t9k-sdk", "get", "dj", *context, "") == []  # no DeepSpeedJobs here
    # no cluster to ask (a kubeconfig that does not exist): nothing offered, no error shown
    broken = ["--kubeconfig", str(tmp_path / "none"), "-n", namespace]
    assert offered("t9k-sdk", "logs", "gj", *broken, "") == []
