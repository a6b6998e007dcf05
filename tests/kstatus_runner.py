"""Run the real kstatus (sigs.k8s.io/cli-utils `status.Compute`, what Flux and kpt read health
with) on job objects: `kstatus(obj, ...) -> [{"status", "message", "conditions", ...}, ...]`.

The binary is built by `make gitops-binaries` (tools/ensure-gitops-binaries.sh, from
tools/gobuild/kstatus) into $T9K_KSTATUS_BIN_DIR as tools/versions.sh sets it. A missing binary is
an error that says so, never a skip.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

__all__ = ["kstatus", "kstatus_binary"]


@cache
def kstatus_binary() -> Path:
    proc = subprocess.run(
        ["bash", "-c", 'source tools/versions.sh && printf %s "$T9K_KSTATUS_BIN_DIR"'],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    binary = Path(proc.stdout) / "kstatus"
    if not binary.is_file():
        raise AssertionError(
            f"kstatus is not built ({binary} is missing): run `make gitops-binaries`"
            " (tools/ensure-gitops-binaries.sh builds it from sigs.k8s.io/cli-utils in seconds"
            " with a warm Go module cache)"
        )
    return binary


def kstatus(*objects: Mapping[str, Any]) -> list[dict[str, Any]]:
    """kstatus' verdict on each object (JSON on stdin, one JSON line per object back)."""
    proc = subprocess.run(
        [str(kstatus_binary())],
        input="\n".join(json.dumps(obj) for obj in objects),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if proc.returncode != 0:
        raise AssertionError(f"kstatus failed ({proc.returncode}): {proc.stderr.strip()}")
    results: list[dict[str, Any]] = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(results) == len(objects), proc.stdout
    return results
