"""The real Pulumi CLI, language host and Kubernetes provider, for tests/cluster/test_pulumi_*.py.

* `ensure_binaries()` runs tools/ensure-pulumi-binaries.sh: it builds what is missing (a cold
  build takes minutes) and returns the cache directory. If that fails, the test fails under
  T9K_REQUIRE_CLUSTER=1 (`make test`, CI) and is skipped with the build's output otherwise, as the
  cluster fixture does for the control plane.
* `PulumiEnv`: an isolated Pulumi installation per test module: PULUMI_HOME and a file backend in
  a temporary directory, a passphrase, no update checks, no plugin downloads (the provider is
  found on PATH), KUBECONFIG of the local control plane, and automatic logs turned off (see
  docs/contributing/pulumi-binaries.md: they cost two thirds of the CLI's time for stacks with the
  CRDs). `cli(...)` runs `pulumi` in a project directory; `inline_stack(...)` makes an Automation
  API stack for an inline program (no language host involved).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pulumi import automation as auto

REPO = Path(__file__).resolve().parents[2]
ENSURE = REPO / "tools" / "ensure-pulumi-binaries.sh"
CLI_TIMEOUT = 300.0
"""Bound on one `pulumi` command (an `up` that awaits jobs included)."""


def _required() -> bool:
    return os.environ.get("T9K_REQUIRE_CLUSTER", "") == "1"


def ensure_binaries() -> Path:
    """The directory with `pulumi`, `pulumi-language-python` and `pulumi-resource-kubernetes`."""
    try:
        proc = subprocess.run(
            [str(ENSURE)], capture_output=True, text=True, timeout=None, check=False
        )
    except OSError as err:
        proc = subprocess.CompletedProcess([str(ENSURE)], 127, "", str(err))
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        message = (
            f"tools/ensure-pulumi-binaries.sh failed (exit {proc.returncode}); the Pulumi tests"
            f" need the CLI, the language host and the provider:\n{proc.stdout}{proc.stderr}"
        )
        if _required():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    bin_dir = Path(lines[-1])
    for name in ("pulumi", "pulumi-language-python", "pulumi-resource-kubernetes"):
        assert (bin_dir / name).is_file(), f"{name} missing in {bin_dir} after the build"
    return bin_dir


@dataclass
class PulumiEnv:
    """One isolated Pulumi installation (home and state in `root`) against one cluster."""

    bin_dir: Path
    root: Path
    kubeconfig: Path

    def __post_init__(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.state.mkdir(parents=True, exist_ok=True)
        # The CLI writes no automatic logs when it cannot create this directory.
        (self.home / "logs").touch()
        # PulumiCommand(root=...) runs <root>/bin/pulumi.
        command_root = self.root / "cli"
        command_root.mkdir(exist_ok=True)
        if not (command_root / "bin").exists():
            (command_root / "bin").symlink_to(self.bin_dir)
        self.command_root = command_root

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def state(self) -> Path:
        return self.root / "state"

    def env(self) -> dict[str, str]:
        """Variables for the CLI and the plugins it starts."""
        return {
            "PULUMI_HOME": str(self.home),
            "PULUMI_BACKEND_URL": f"file://{self.state}",
            "PULUMI_CONFIG_PASSPHRASE": "test",
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true",
            "KUBECONFIG": str(self.kubeconfig),
            # The language host (v3.79.0) ignores Pulumi.yaml's runtime options: run the
            # programs with this venv's Python, which has t9k-sdk[pulumi] installed.
            "PULUMI_PYTHON_CMD": sys.executable,
            "PYTHONDONTWRITEBYTECODE": "1",
        }

    # -- the CLI in a project directory ----------------------------------------------------

    def cli(
        self, project: Path, *args: str, check: bool = True, timeout: float = CLI_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        """`pulumi <args>` in `project`, with the bin dir first on PATH."""
        env = {
            **os.environ,
            **self.env(),
            "PATH": f"{self.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        proc = subprocess.run(
            [str(self.bin_dir / "pulumi"), "--non-interactive", *args],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"`pulumi {' '.join(args)}` in {project} exited {proc.returncode}:\n"
                f"{proc.stdout}\n{proc.stderr}"
            )
        return proc

    def outputs(self, project: Path, stack: str) -> dict[str, Any]:
        proc = self.cli(project, "stack", "output", "--json", "--stack", stack)
        result: dict[str, Any] = json.loads(proc.stdout)
        return result

    # -- Automation API, inline programs ---------------------------------------------------

    def inline_stack(
        self, project: str, stack: str, program: Callable[[], None], config: Mapping[str, str]
    ) -> auto.Stack:
        """A stack of `project` running `program` in this process (no language host)."""
        options = auto.LocalWorkspaceOptions(
            pulumi_home=str(self.home),
            env_vars=self.env(),
            pulumi_command=auto.PulumiCommand(root=str(self.command_root)),
            project_settings=auto.ProjectSettings(name=project, runtime="python"),
        )
        created = auto.create_or_select_stack(
            stack_name=stack, project_name=project, program=program, opts=options
        )
        for key, value in config.items():
            created.set_config(key, auto.ConfigValue(value))
        return created
