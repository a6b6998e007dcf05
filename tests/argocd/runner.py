"""The Lua runner the Argo CD health tests run the scripts with (tools/gobuild/argocd-lua).

    lua = ArgoLua.ensure()                  # builds it if missing or stale
    lua.health(job)                          # {"status": ..., "message": ...} or None
    lua.health(job, script=path_or_text, open_libs=True)

It runs a script as Argo CD v3.6.1 does (gopher-lua v1.1.2, Argo CD's sandbox: no string, math or
io library, a 1 second timeout; `obj` converted from JSON as Argo CD converts it). A Lua error
raises `LuaError` with the message Argo CD would show as the resource's health.

The runner is built by tools/ensure-gitops-binaries.sh (`make gitops-binaries`, part of `make
binaries`). The tests that use it are marked `binaries` (tests/conftest.py): a missing or stale
runner skips them, saying which make target builds it, unless T9K_REQUIRE_CLUSTER=1 (`make test`,
CI), where it is built here and a failed build fails the test. A unit-test run never starts a Go
build.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import cluster_required

REPO = Path(__file__).resolve().parents[2]
ENSURE = REPO / "tools" / "ensure-gitops-binaries.sh"
SOURCE = REPO / "tools" / "gobuild" / "argocd-lua"
SCRIPT = REPO / "t9k_sdk" / "argocd" / "health.lua"
HEALTH_STATUSES = ("Unknown", "Progressing", "Suspended", "Healthy", "Degraded", "Missing")


class LuaError(Exception):
    """The script raised (Argo CD shows the message as the resource's health, status Unknown)."""


def _stamp() -> str:
    """What tools/ensure-gitops-binaries.sh records next to the binary it built."""
    parts = [SOURCE / "go.mod", SOURCE / "go.sum", *sorted(SOURCE.glob("*.go"))]
    return hashlib.sha256(b"".join(p.read_bytes() for p in parts)).hexdigest()[:16]


@dataclass(frozen=True)
class ArgoLua:
    binary: Path

    @classmethod
    def ensure(cls) -> ArgoLua:
        where = subprocess.run(
            ["bash", str(ENSURE), "--print-lua-dir"], capture_output=True, text=True, check=True
        ).stdout.strip()
        binary = Path(where) / "argocd-lua"
        stamp = Path(where) / "argocd-lua.source"
        current = binary.is_file() and stamp.is_file() and stamp.read_text().strip() == _stamp()
        if not current and not cluster_required():
            pytest.skip(
                f"the Argo CD Lua runner {binary} is missing or was built from other sources than"
                f" {SOURCE.relative_to(REPO)}: run `make gitops-binaries` (with"
                " T9K_REQUIRE_CLUSTER=1 the test builds it)"
            )
        if not current:
            proc = subprocess.run(
                ["bash", str(ENSURE)], capture_output=True, text=True, timeout=None, check=False
            )
            if proc.returncode != 0 or not binary.is_file():
                pytest.fail(
                    "the Argo CD Lua runner could not be built: `make gitops-binaries` builds it"
                    f" (tools/ensure-gitops-binaries.sh, exit {proc.returncode}):\n"
                    f"{proc.stdout}{proc.stderr}",
                    pytrace=False,
                )
        return cls(binary)

    def run(
        self, obj: Mapping[str, Any] | str, script: Path | str = SCRIPT, open_libs: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """Run `script` (a path, or the text of one) on `obj` (a mapping or JSON text)."""
        text = obj if isinstance(obj, str) else json.dumps(obj)
        if isinstance(script, str):
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "health.lua"
                path.write_text(script, encoding="utf-8")
                return self.run(text, path, open_libs)
        args = [str(self.binary), *(["--open-libs"] if open_libs else []), str(script), "-"]
        return subprocess.run(args, input=text, capture_output=True, text=True, timeout=30)

    def health(
        self, obj: Mapping[str, Any] | str, script: Path | str = SCRIPT, open_libs: bool = False
    ) -> dict[str, str] | None:
        proc = self.run(obj, script, open_libs)
        if proc.returncode == 1 and proc.stderr.startswith("lua error: "):
            raise LuaError(proc.stderr.removeprefix("lua error: ").strip())
        assert proc.returncode == 0, f"argocd-lua failed (exit {proc.returncode}): {proc.stderr}"
        result: dict[str, str] | None = json.loads(proc.stdout)
        return result
