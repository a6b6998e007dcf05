"""kubectl's conventions in the offline commands: `-o` is an output format everywhere,
`--out-dir` a directory, and `t9k-sdk completion` makes the shell complete the commands."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from t9k_sdk.cli import main

REPO = Path(__file__).resolve().parents[2]
MNIST = REPO / "examples" / "genericjob_mnist.yaml"

JOBS = """\
from t9k_sdk import GenericJob, Replica

a = GenericJob(name="a", replicas=[Replica(type="worker", count=1, image="pt:2")])
b = GenericJob(name="b", replicas=[Replica(type="worker", count=1, image="pt:2")])
"""

BROKEN = """\
apiVersion: batch.tensorstack.dev/v1beta1
kind: GenericJob
metadata: {name: broken}
spec:
  replicaSpecs:
  - type: worker
    replicaz: 2
    template: {spec: {containers: [{name: w, image: i}]}}
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def jobs(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.py"
    path.write_text(JOBS)
    return path


# -- -o FORMAT and --out-dir DIR -------------------------------------------------------------


def test_render_out_dir_writes_files_without_a_warning(
    capsys: pytest.CaptureFixture[str], jobs: Path, tmp_path: Path
) -> None:
    code, out, err = run(capsys, "render", str(jobs), "--out-dir", str(tmp_path / "m"))
    assert (code, out) == (0, "")
    assert "warning" not in err
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == [
        "genericjob-a.yaml",
        "genericjob-b.yaml",
    ]


@pytest.mark.parametrize(
    ("value", "hint"),
    [
        ("yml", "did you mean -o yaml?"),
        ("JSON", "did you mean -o json?"),
        ("manifests", "to write files into a directory, use --out-dir manifests"),
    ],
)
def test_render_o_takes_only_a_format_and_a_typo_writes_nothing(
    capsys: pytest.CaptureFixture[str],
    jobs: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    value: str,
    hint: str,
) -> None:
    """`render jobs.py -o yml > out.yaml` used to create a directory `yml/` and an empty
    out.yaml, exit 0: now a usage error, nothing written, and what was probably meant."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "render", str(jobs), "-o", value)
    assert (code, out) == (2, "")
    assert f"-o {value}: unknown output format; -o takes yaml or json" in err
    assert hint in err
    assert [p.name for p in tmp_path.iterdir()] == [jobs.name]  # no directory, no file


def test_render_o_json_prints_a_list_and_one_job_as_itself(
    capsys: pytest.CaptureFixture[str], jobs: Path
) -> None:
    code, out, _ = run(capsys, "render", str(jobs), "-o", "json")
    assert code == 0
    data = json.loads(out)
    assert data["kind"] == "List"
    assert [i["metadata"]["name"] for i in data["items"]] == ["a", "b"]
    code, out, _ = run(
        capsys, "render", str(REPO / "examples" / "genericjob_mnist.py"), "-o", "json"
    )
    assert code == 0
    assert json.loads(out)["kind"] == "GenericJob"


def test_render_refuses_a_directory_in_both_o_and_out_dir(
    capsys: pytest.CaptureFixture[str], jobs: Path, tmp_path: Path
) -> None:
    code, _, err = run(capsys, "render", str(jobs), "-o", "x", "--out-dir", str(tmp_path))
    assert code == 2
    assert "-o x: unknown output format; -o takes yaml or json" in err


def test_crds_out_dir_and_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "crds", "--out-dir", str(tmp_path / "crds"))
    assert code == 0
    assert "deprecated" not in err
    assert len(list((tmp_path / "crds").iterdir())) == 3
    code, out, _ = run(capsys, "crds", "-o", "json")
    assert code == 0
    assert [i["kind"] for i in json.loads(out)["items"]] == ["CustomResourceDefinition"] * 3


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_plan_prints_the_objects_as_json_or_yaml(
    capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    code, out, _ = run(capsys, "plan", str(MNIST), "-o", fmt)
    assert code == 0
    objects = json.loads(out)["items"] if fmt == "json" else list(yaml.safe_load_all(out))
    workers = [f"mnist-worker-{i}" for i in range(4)]
    # the mnist example is a TorchrunJob: a service per worker (MASTER_ADDR), created first
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        *(("Service", w) for w in workers),
        *(("Pod", w) for w in workers),
    ]


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_validate_reports_problems_as_data(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fmt: str
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BROKEN)
    code, out, _ = run(capsys, "validate", str(MNIST), str(bad), "-o", fmt)
    assert code == 1
    report = json.loads(out) if fmt == "json" else yaml.safe_load(out)
    assert report["valid"] is False
    assert (report["files"], report["documents"], report["invalidDocuments"]) == (2, 2, 1)
    (problem,) = report["problems"]
    assert problem["file"] == str(bad)
    assert problem["document"] == 0
    assert problem["object"] == "GenericJob 'broken'"
    assert "replicaz" in problem["path"] + problem["message"]

    code, out, _ = run(capsys, "validate", str(MNIST), "-o", fmt)
    assert code == 0
    report = json.loads(out) if fmt == "json" else yaml.safe_load(out)
    assert (report["valid"], report["problems"]) == (True, [])


def test_validate_o_rejects_an_unknown_format(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "validate", str(MNIST), "-o", "xml")
    assert code == 2
    assert "invalid choice: 'xml'" in err


# -- completion ------------------------------------------------------------------------------


def _complete(script: str, words: list[str]) -> list[str]:
    """What bash offers for the last of `words` (the word being typed), with the script sourced."""
    program = (
        f"{script}\n"
        f"COMP_WORDS=({' '.join(repr(w) for w in words)})\n"
        "COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))\n"
        "_t9k_sdk\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    proc = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", program],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return [line for line in proc.stdout.splitlines() if line]


@pytest.fixture(scope="module")
def bash_script() -> str:
    if shutil.which("bash") is None:  # pragma: no cover - bash is on every CI image
        pytest.skip("bash is not installed")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["completion", "bash"]) == 0
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("words", "offered"),
    [
        (["t9k-sdk", "ge"], ["get"]),
        (["t9k-sdk", "d"], ["delete", "describe", "diff"]),
        (["t9k-sdk", "get", "-o", ""], ["table", "wide", "yaml", "json", "name"]),
        (["t9k-sdk", "apply", "--dry"], ["--dry-run"]),
        (["t9k-sdk", "apply", "--dry-run", "=", ""], ["none", "client", "server"]),
        (["t9k-sdk", "get", "--sel"], ["--selector"]),
        (["t9k-sdk", "logs", ""], ["gj", "dj", "caij"]),
        (["t9k-sdk", "completion", ""], ["bash", "zsh", "fish"]),
        (["t9k-sdk", "render", "--o"], ["--output", "--out-dir"]),
    ],
)
def test_bash_completes_commands_flags_and_values(
    bash_script: str, words: list[str], offered: list[str]
) -> None:
    assert sorted(_complete(bash_script, words)) == sorted(offered)


def test_bash_completes_file_names_after_f(bash_script: str, tmp_path: Path) -> None:
    (tmp_path / "jobs.yaml").write_text("")
    prefix = str(tmp_path / "jo")
    assert _complete(bash_script, ["t9k-sdk", "apply", "-f", prefix]) == [
        str(tmp_path / "jobs.yaml")
    ]


def test_zsh_and_fish_scripts_cover_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, zsh, _ = run(capsys, "completion", "zsh")
    assert code == 0
    assert zsh.startswith("# zsh completion")
    assert "bashcompinit" in zsh
    assert "complete -o default -o bashdefault -F _t9k_sdk t9k-sdk" in zsh
    code, fish, _ = run(capsys, "completion", "fish")
    assert code == 0
    for command in ("render", "apply", "diff", "delete", "completion"):
        assert f"-n __fish_use_subcommand -a {command} " in fish
    assert "-l dry-run -r -a 'none client server'" in fish
    # a job's NAME after its KIND comes from the cluster (tests/cluster/test_client_cli.py)
    assert "complete -c t9k-sdk -n '__fish_seen_subcommand_from get' -a '(_t9k_sdk_names)'" in fish
    assert "-s l -l selector -r" in fish


def test_completion_of_an_unknown_shell_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "completion", "tcsh")
    assert (code, out) == (2, "")
    assert "invalid choice: 'tcsh'" in err


# -- kubectl habits: "did you mean", and the command's own usage --------------------------------


def test_a_mistyped_command_gets_a_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "valdate", "x.yaml")
    assert (code, out) == (2, "")
    assert "invalid choice: 'valdate'" in err
    assert err.rstrip().endswith("did you mean 'validate'?")


@pytest.mark.parametrize(
    ("argv", "usage", "hint"),
    [
        (["render", "x.py", "--ouput", "json"], "usage: t9k-sdk render", "did you mean --output?"),
        (["get", "gj", "--namspace", "ns"], "usage: t9k-sdk get", "did you mean --namespace?"),
        (["validate", "--strictt", "x.yaml"], "usage: t9k-sdk validate", "did you mean --strict?"),
    ],
)
def test_a_mistyped_flag_gets_the_commands_usage_and_a_did_you_mean(
    capsys: pytest.CaptureFixture[str], argv: list[str], usage: str, hint: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith(usage), err
    assert "unrecognized arguments" in err
    assert hint in err


# -- which objects of a Python file are jobs ------------------------------------------------------

SWEEP = """\
from t9k_sdk import DeepSpeedJob

{template} = DeepSpeedJob(
    name="bert", image="img:1", workers=4, gpus_per_worker=8, run=["train.py", "--lr", "1e-4"]
)
sweep = [
    {template}.replace(name=f"bert-lr{{i}}", run=["train.py", "--lr", lr])
    for i, lr in enumerate(["1e-4", "3e-4"])
]
{extra}
"""


@pytest.mark.parametrize(
    ("template", "extra"),
    [("_base", ""), ("base", '__all__ = ["sweep"]')],
    ids=["underscore", "__all__"],
)
def test_render_writes_exactly_the_jobs_a_file_exports(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, template: str, extra: str
) -> None:
    """A sweep's template is not a job: a leading underscore or `__all__` says so, as Python's
    own `from module import *` reads a module."""
    path = tmp_path / "sweep.py"
    path.write_text(SWEEP.format(template=template, extra=extra))
    code, out, err = run(capsys, "render", str(path))
    assert code == 0, err
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(out)]
    assert names == ["bert-lr0", "bert-lr1"]
    # without either, the template is a job too (and its name is not the sweep's)
    path.write_text(SWEEP.format(template="base", extra=""))
    code, out, err = run(capsys, "render", str(path))
    assert code == 0, err
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(out)] == [
        "bert",
        "bert-lr0",
        "bert-lr1",
    ]
