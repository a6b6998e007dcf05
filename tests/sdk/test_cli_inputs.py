"""One reader of job inputs for every command (t9k_sdk.cli._sources), one exit-code table
(t9k_sdk.cli._errors), and `wait --for` parsed once into a WaitTarget that reaches the client as
is, with progress as one typed value (no cluster: the client is a stand-in)."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from t9k_sdk import codecs
from t9k_sdk.cli import _cluster, main
from t9k_sdk.cli._errors import DIFF_EXIT_CODES, EXIT_CODES
from t9k_sdk.cli._sources import COMMANDS
from t9k_sdk.client.errors import JobFailedError, WaitTimeoutError
from t9k_sdk.client.job_state import Progress, WaitTarget

REPO = Path(__file__).resolve().parents[2]
MNIST = (REPO / "examples" / "genericjob_mnist.yaml").read_text()
PYTHON_JOB = """\
from t9k_sdk import GenericJob, Replica
job = GenericJob(name="mnist", replicas=[Replica(type="worker", count=1, image="pt:2")])
"""

# -- the inputs -------------------------------------------------------------------------------


@pytest.fixture
def inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Each input kind, as an argument: a YAML file, a JSON file, a directory of YAML, standard
    input, a Python file, a Python module, a directory of Python."""
    yaml_dir = tmp_path / "yaml"
    yaml_dir.mkdir()
    (yaml_dir / "mnist.yaml").write_text(MNIST)
    (tmp_path / "mnist.json").write_text(
        json.dumps(codecs.to_manifest(codecs.load_all_yaml(MNIST)[0]))
    )
    py_dir = tmp_path / "py"
    (py_dir / "sub").mkdir(parents=True)
    (py_dir / "sub" / "jobs.py").write_text(PYTHON_JOB)
    (tmp_path / "pkg_t9k_inputs").mkdir()
    (tmp_path / "pkg_t9k_inputs" / "__init__.py").write_text("")
    (tmp_path / "pkg_t9k_inputs" / "jobs.py").write_text(PYTHON_JOB)
    monkeypatch.chdir(tmp_path)  # modules are imported from the current directory
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(MNIST.encode())))
    return {
        "yaml file": str(yaml_dir / "mnist.yaml"),
        "json file": str(tmp_path / "mnist.json"),
        "yaml directory": str(yaml_dir),
        "stdin": "-",
        "python file": str(py_dir / "sub" / "jobs.py"),
        "python module": "pkg_t9k_inputs.jobs",
        "python directory": str(py_dir),
    }


MANIFEST_KINDS = ("yaml file", "json file", "yaml directory", "stdin")
PYTHON_KINDS = ("python file", "python module", "python directory")

# (argv before the input, argv after it, whether the output shows the job was read)
OFFLINE: dict[str, tuple[list[str], list[str], Callable[[str], bool]]] = {
    "render": (["render"], [], lambda out: "name: mnist" in out),
    "validate": (["validate"], [], lambda out: "1 document valid" in out),
    # a JSON file is written back as JSON (convert keeps a file's formatting)
    "convert": (
        ["convert"],
        [],
        lambda out: [j.name for j in codecs.load_all_yaml(out)] == ["mnist"],
    ),
    "plan": (["plan"], ["--python"], lambda out: "mnist" in out),
    "apply": (
        ["apply", "--dry-run=client", "-f"],
        ["--python"],
        lambda out: out == "genericjob/mnist valid (client dry run: not sent to the cluster)\n",
    ),
}


def _accepts(command: str, kind: str) -> bool:
    if command == "render":
        return kind in PYTHON_KINDS
    if command in ("validate", "convert"):
        return kind in MANIFEST_KINDS
    return True


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


RUNS = """\
import pathlib
pathlib.Path("RAN").write_text(__file__)
"""


def test_reading_files_runs_no_python_the_user_did_not_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reviewing a pull request with `plan` (or validate, convert, apply --dry-run) runs none of
    its code: a directory's *.py files and module names need --python; a typo that names a
    missing file is not taken for a module name."""
    monkeypatch.chdir(tmp_path)
    pr = tmp_path / "pr"
    (pr / "deep" / "er").mkdir(parents=True)
    (pr / "job.yaml").write_text(MNIST)
    (pr / "deep" / "er" / "evil.py").write_text(RUNS)
    (tmp_path / "job.py").write_text(RUNS)  # what `job.yaml.orig` would import as a module
    for argv in (
        ["plan", str(pr)],
        ["validate", str(pr)],
        ["convert", str(pr)],
        ["apply", "--dry-run=client", "-f", str(pr)],
    ):
        code, out, err = _run(capsys, *argv)
        assert code == 0, (argv, err)
        assert "mnist" in out or "valid" in out, (argv, out)
        assert not (tmp_path / "RAN").exists(), argv
    code, _out, err = _run(capsys, "plan", "job.yaml.orig")
    assert code == 2
    assert "job.yaml.orig: no such file" in err
    assert "add --python" in err
    assert not (tmp_path / "RAN").exists()
    # asked for: a named file, or --python
    code, _out, err = _run(capsys, "plan", str(pr), "--python")
    assert (tmp_path / "RAN").read_text() == str(pr / "deep" / "er" / "evil.py")
    assert code == 0, err


@pytest.mark.parametrize("kind", [*MANIFEST_KINDS, *PYTHON_KINDS])
@pytest.mark.parametrize("command", list(OFFLINE))
def test_every_command_reads_the_same_input_kinds(
    capsys: pytest.CaptureFixture[str], inputs: dict[str, str], command: str, kind: str
) -> None:
    before, after, read = OFFLINE[command]
    code, out, err = _run(capsys, *before, inputs[kind], *after)
    if _accepts(command, kind):
        assert code == 0, err
        assert read(out), out
    elif kind.endswith("directory"):  # what the command does not take is left out: nothing
        assert code == 1
        assert "no jobs found" in err or "no documents found" in out or "no manifests" in err
    else:
        assert (code, out) == (2, "")
        assert err.startswith(f"usage: t9k-sdk {command}")
        assert f"error: {inputs[kind]}: " in err  # names the argument


@pytest.mark.parametrize("kind", [*MANIFEST_KINDS, *PYTHON_KINDS])
@pytest.mark.parametrize("verb", ["diff", "delete"])
def test_the_other_file_verbs_read_what_apply_reads(
    capsys: pytest.CaptureFixture[str], inputs: dict[str, str], verb: str, kind: str
) -> None:
    """Read, then the (missing) cluster: the error is the kubeconfig's, not the input's."""
    code, out, err = _run(
        capsys, verb, "-f", inputs[kind], "--python", "--kubeconfig", "/nonexistent/kubeconfig"
    )
    assert code == (2 if verb == "diff" else 1)
    assert out == ""
    assert err.startswith("t9k-sdk: error: kubeconfig /nonexistent/kubeconfig: no such file;")


@pytest.mark.parametrize(
    ("command", "kind", "complaint"),
    [
        ("validate", "python file", "a Python file; validate checks YAML manifests"),
        ("convert", "python file", "a Python file; convert rewrites YAML manifests"),
        ("render", "yaml file", "not a Python file (*.py); to check YAML manifests use"),
        ("render", "stdin", "render reads Python files, directories or modules"),
        ("plan", "missing", "no such file or directory"),
        ("validate", "missing module", "no such file or directory"),
        ("apply", "python module", "add --python"),
    ],
)
def test_an_input_a_command_does_not_take_is_a_usage_error_naming_it(
    capsys: pytest.CaptureFixture[str],
    inputs: dict[str, str],
    tmp_path: Path,
    command: str,
    kind: str,
    complaint: str,
) -> None:
    arg = {"missing": str(tmp_path / "nope.yaml"), "missing module": "no_such_t9k.jobs"}.get(
        kind
    ) or inputs.get(kind, "")
    argv = ["apply", "--dry-run=client", "-f", arg] if command == "apply" else [command, arg]
    code, out, err = _run(capsys, *argv)
    assert (code, out) == (2, "")
    assert f"t9k-sdk: error: {arg}: " in err
    assert complaint in err


def test_standard_input_is_read_once(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["validate", "-", "-"], ["plan", "-", "-"], ["apply", "-f", "-", "-f", "-"]):
        code, _, err = _run(capsys, *argv)
        assert code == 2, argv
        assert "standard input (-) can be given only once" in err


def test_convert_reads_a_directory_now_and_rewrites_each_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "a.yaml").write_text(MNIST)
    (tmp_path / "b.yml").write_text(MNIST.replace("name: mnist", "name: other", 1))
    code, _, err = _run(capsys, "convert", "-i", str(tmp_path))
    assert code == 0
    assert err.splitlines() == [f"rewrote {tmp_path / 'a.yaml'}", f"rewrote {tmp_path / 'b.yml'}"]


def test_the_reference_lists_every_command_that_reads_jobs() -> None:
    names = [name.split()[0] for name, _ in COMMANDS]
    assert names == ["render", "validate", "convert", "plan", "apply", "diff", "delete"]
    page = (REPO / "docs" / "reference" / "cli.md").read_text()
    for name, _ in COMMANDS:
        assert f"| `{name}` |" in page


# -- the exit codes ---------------------------------------------------------------------------


class _Client:
    """Stands in for t9k_sdk.client.Client: records the wait target, replays progress."""

    namespace = "default"

    def __init__(self, outcome: BaseException | None = None, diff: Any = None) -> None:
        self.outcome = outcome
        self.targets: list[WaitTarget] = []
        self._diff = diff

    def __enter__(self) -> _Client:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def wait(
        self,
        kind: Any,
        name: str,
        *,
        target: WaitTarget,
        timeout: float | None,
        stuck_grace: float,
        on_progress: Callable[[Progress], None] | None,
    ) -> Any:
        self.targets.append(target)
        manifest = {**codecs.to_manifest(_job()), "status": _RUNNING}
        job = codecs.from_manifest(manifest)
        if on_progress is not None:
            on_progress(Progress.of(manifest, job))
        if self.outcome is not None:
            raise self.outcome
        return job

    def diff(self, job: Any, namespace: str | None, *, field_manager: str = "t9k-sdk") -> Any:
        return self._diff


_RUNNING = {
    "phase": "Running",
    "conditions": [
        {"type": "Running", "status": "True", "message": "All pods are running normally."}
    ],
    "aggregate": {"running": 1},
}


def _job() -> Any:
    return codecs.load_all_yaml(MNIST)[0]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Callable[..., _Client]:
    def install(**kwargs: Any) -> _Client:
        client = _Client(**kwargs)
        monkeypatch.setattr(_cluster, "connect", lambda args: client)
        return client

    return install


def test_each_exit_code_of_the_table_is_reached(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    fake: Callable[..., _Client],
) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(MNIST)
    bad = tmp_path / "bad.yaml"
    bad.write_text(MNIST.replace("replicas: 4", "replicaz: 4"))
    reached: dict[int, int] = {}
    reached[0] = _run(capsys, "validate", str(good))[0]
    reached[1] = _run(capsys, "validate", str(bad))[0]
    reached[2] = _run(capsys, "validate", str(tmp_path / "nope.yaml"))[0]
    fake(outcome=WaitTimeoutError("GenericJob", "mnist", "default", "Timeout", "too slow"))
    reached[3] = _run(capsys, "wait", "gj", "mnist", "-q")[0]
    fake(outcome=KeyboardInterrupt())
    reached[130] = _run(capsys, "wait", "gj", "mnist", "-q")[0]
    assert reached == {code: code for code, _, _ in EXIT_CODES}

    manifest = codecs.to_manifest(_job())
    fake(diff=(manifest, manifest))
    assert _run(capsys, "diff", "-f", str(good))[0] == 0
    fake(diff=(None, manifest))
    assert _run(capsys, "diff", "-f", str(good))[0] == 1
    assert _run(capsys, "diff", "-f", str(bad))[0] == 2
    assert [code for code, _, _ in DIFF_EXIT_CODES] == [0, 1, 2, 130]


def test_every_command_documents_the_one_exit_code_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = _run(capsys, "wait", "--help")
    for code, _, _ in EXIT_CODES:
        assert f"\n  {code:<4} " in out
    _, out, _ = _run(capsys, "--help")
    assert "exit status (all codes):" in out
    assert "exit status of diff (as kubectl diff):" in out


# -- wait targets and progress ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "target"),
    [
        (None, WaitTarget.phase("Succeeded")),
        ("phase=running", WaitTarget.phase("Running")),
        ("condition=Completed", WaitTarget.condition("Completed")),
        ("condition=paused=false", WaitTarget.condition("Paused", False)),
    ],
)
def test_wait_passes_the_parsed_target_to_the_client_as_is(
    capsys: pytest.CaptureFixture[str],
    fake: Callable[..., _Client],
    text: str | None,
    target: WaitTarget,
) -> None:
    client = fake()
    argv = ["wait", "gj", "mnist", "-q"] + (["--for", text] if text else [])
    code, out, _ = _run(capsys, *argv)
    assert code == 0
    assert client.targets == [target]
    assert isinstance(client.targets[0], WaitTarget)
    assert out.startswith(f"genericjob/mnist {target} reached after")


@pytest.mark.parametrize("text", ["phase", "running", "phase=Done", "condition=Ready=maybe"])
def test_a_bad_for_names_the_value_and_the_accepted_forms(
    capsys: pytest.CaptureFixture[str], fake: Callable[..., _Client], text: str
) -> None:
    client = fake()
    code, out, err = _run(capsys, "wait", "gj", "mnist", "--for", text)
    assert (code, out) == (2, "")
    assert err.startswith("usage: t9k-sdk wait")
    assert "argument --for: " in err
    assert repr(text) in err  # the value
    assert "phase=PHASE or condition=TYPE[=True|False]" in err  # the accepted forms
    assert client.targets == []


def test_progress_reaches_the_printer_as_one_typed_value(
    capsys: pytest.CaptureFixture[str],
    fake: Callable[..., _Client],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake(outcome=JobFailedError("GenericJob", "mnist", "default", "Failed", "exit code 2"))

    def no_round_trip(job: Any) -> Any:
        raise AssertionError("the printer turned the job back into a dict")

    progress = Progress.of({"status": _RUNNING}, _job())
    monkeypatch.setattr(codecs, "to_manifest", no_round_trip)
    monkeypatch.setattr(_cluster.codecs, "to_manifest", no_round_trip)
    monkeypatch.setattr(
        _Client, "wait", lambda self, *a, on_progress, **k: (on_progress(progress), _raise(self))
    )
    code, out, err = _run(capsys, "wait", "gj", "mnist")
    assert (code, out) == (1, "")
    first = err.splitlines()[0]
    assert first.endswith("genericjob/mnist Running: All pods are running normally. (running 1)")
    assert "t9k-sdk: error: genericjob/mnist: Failed: exit code 2" in err


def _raise(client: _Client) -> None:
    assert client.outcome is not None
    raise client.outcome


def test_progress_is_read_once_from_the_watched_object() -> None:
    job = _job()
    progress = Progress.of({"status": _RUNNING}, job)
    assert progress.job is job
    assert progress.phase == "Running"
    assert progress.line == "Running: All pods are running normally. (running 1)"
    assert progress.stuck is None
    stuck = {
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "Running",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/4 nodes are available",
                }
            ],
        }
    }
    step = Progress.of(stuck, job)
    assert step.phase == "Pending"
    assert step.stuck is not None
    assert step.stuck.reason == "Unschedulable"
