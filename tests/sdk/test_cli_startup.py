"""`t9k-sdk --help`, `--version` and `completion` answer at once: they import no pydantic, no
models, no YAML and no Kubernetes client; each command imports its own code when it runs.

Each case runs in a fresh interpreter, as a shell runs the command: what is imported is a property
of the whole process. (The CPU time itself is measured by bench/startup.py, not here.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "deepspeed_bert.yaml"

HEAVY = ("pydantic", "pydantic_core", "yaml", "kubernetes", "urllib3", "pulumi", "t9k_sdk.models")
"""What the parser must not need: each of these costs tens of milliseconds to import."""

RUN = """
import contextlib, io, json, sys
from t9k_sdk.cli import main
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    status = main(sys.argv[1:])
print(json.dumps({"status": status, "out": out.getvalue(), "err": err.getvalue(),
                  "modules": sorted(sys.modules)}))
"""


def t9k_sdk(*argv: str) -> dict[str, object]:
    """Run `t9k-sdk ARGV` in a fresh interpreter: its status, output and every module loaded."""
    done = subprocess.run(
        [sys.executable, "-c", RUN, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def loaded(result: dict[str, object], names: tuple[str, ...]) -> list[str]:
    """The packages of `names` that the run imported (a package or any of its modules)."""
    modules = result["modules"]
    assert isinstance(modules, list)
    return sorted({n for n in names for m in modules if m == n or m.startswith(n + ".")})


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["--help"], "Render, validate and describe T9k training jobs"),
        (["--version"], "t9k-sdk 0.1.0"),
        (["validate", "--help"], "Check every YAML document of every FILE"),
        (["wait", "--help"], "--for phase=PHASE|condition=TYPE"),
        (["completion", "bash"], "complete -o default -o bashdefault -F _t9k_sdk t9k-sdk"),
        (["completion", "zsh"], "bashcompinit"),
        (["completion", "fish"], "complete -c t9k-sdk"),
    ],
)
def test_help_version_and_completion_import_nothing_heavy(argv: list[str], shown: str) -> None:
    result = t9k_sdk(*argv)
    assert result["status"] == 0
    assert shown in str(result["out"])
    assert loaded(result, HEAVY) == []


def test_a_usage_error_imports_nothing_heavy() -> None:
    result = t9k_sdk("valdate", "x.yaml")
    assert result["status"] == 2
    assert "did you mean 'validate'?" in str(result["err"])
    assert loaded(result, HEAVY) == []


def test_validate_imports_no_builders_and_no_cluster_client() -> None:
    """A YAML file needs the models and the YAML reader, not the Python builders (which only
    Python job files use) nor the Kubernetes client."""
    result = t9k_sdk("validate", str(EXAMPLE))
    assert result["status"] == 0
    assert "1 document valid" in str(result["out"])
    assert loaded(result, ("t9k_sdk.builders", "kubernetes", "urllib3", "t9k_sdk.client")) == []


NO_CLUSTER = ["--kubeconfig", "/nonexistent/kubeconfig"]
NO_KUBECONFIG = "kubeconfig /nonexistent/kubeconfig: no such file"
DS = "examples/deepspeed_bert.yaml"

COMMANDS = [
    (["render", "examples/deepspeed_bert.py"], 0, "kind: DeepSpeedJob"),
    (["validate", DS], 0, "1 document valid"),
    (["crds", "-o", "json"], 0, '"kind": "CustomResourceDefinition"'),
    (["convert", DS], 0, "kind: DeepSpeedJob"),
    (["plan", DS], 0, "Pod        bert-worker-0"),
    (["install"], 0, "kind: Deployment"),
    (["argocd-health", "-o", "lua"], 0, "-- Argo CD health of a T9k job"),
    (["completion", "bash"], 0, "complete -o default"),
    (["apply", "-f", DS, *NO_CLUSTER], 1, NO_KUBECONFIG),
    (["diff", "-f", DS, *NO_CLUSTER], 2, NO_KUBECONFIG),
    (["get", *NO_CLUSTER], 1, NO_KUBECONFIG),
    (["describe", "dj", "bert", *NO_CLUSTER], 1, NO_KUBECONFIG),
    (["wait", "dj", "bert", *NO_CLUSTER], 1, NO_KUBECONFIG),
    (["logs", "dj", "bert", *NO_CLUSTER], 1, NO_KUBECONFIG),
    (["pause", "dj", "bert", *NO_CLUSTER], 1, NO_KUBECONFIG),
    (["resume", "dj", "bert", *NO_CLUSTER], 1, NO_KUBECONFIG),
    (["scale", "dj", "bert", "--replicas", "2", *NO_CLUSTER], 1, NO_KUBECONFIG),
    (["delete", "dj", "bert", *NO_CLUSTER], 1, NO_KUBECONFIG),
]


@pytest.mark.parametrize(
    ("argv", "status", "shown"), COMMANDS, ids=[argv[0] for argv, _, _ in COMMANDS]
)
def test_every_command_runs_its_code(argv: list[str], status: int, shown: str) -> None:
    """Each command's code is imported when it runs: every command reaches it (the cluster
    commands up to reading the kubeconfig) and ends with its own status, not a traceback."""
    result = t9k_sdk(*argv)
    assert result["status"] == status, result["err"]
    assert shown in str(result["out"] if status == 0 else result["err"])


def test_wait_for_is_checked_when_the_command_line_is_read() -> None:
    result = t9k_sdk("wait", "gj", "mnist", "--for", "phase=Done")
    assert result["status"] == 2
    assert "argument --for:" in str(result["err"])
    assert "Done" in str(result["err"])


def test_the_package_imports_each_public_name_on_first_use() -> None:
    """`import t9k_sdk` is cheap (the CLI imports it for its version); every public name is
    there when asked for, the same object as in its module, and listed by `dir()`."""
    code = """
import json, sys
import t9k_sdk
before = sorted(m for m in ("pydantic", "yaml", "t9k_sdk.models") if m in sys.modules)
from t9k_sdk import DeepSpeedJob
from t9k_sdk.builders import DeepSpeedJob as Builder
import t9k_sdk.codecs, t9k_sdk.errors, t9k_sdk.models, t9k_sdk.validation
homes = [t9k_sdk.builders, t9k_sdk.codecs, t9k_sdk.errors, t9k_sdk.validation]
print(json.dumps({
    "before": before,
    "same": DeepSpeedJob is Builder and t9k_sdk.models is sys.modules["t9k_sdk.models"],
    "unresolved": [n for n in t9k_sdk.__all__ if n not in ("models", "__version__")
                   and not any(getattr(h, n, None) is getattr(t9k_sdk, n) for h in homes)],
    "unlisted": sorted(set(t9k_sdk.__all__) - set(dir(t9k_sdk))),
}))
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"before": [], "same": True, "unresolved": [], "unlisted": []}
