"""Where the GitOps checks find kubectl (tools/ensure-binaries.sh, `make cluster-binaries`) and
Argo CD's and Flux's CRDs (tools/ensure-gitops-binaries.sh, `make gitops-binaries`).

A missing one fails the test loudly, naming the make target that provides it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _print_dir(script: str, flag: str) -> Path:
    proc = subprocess.run(
        [str(REPO / "tools" / script), flag], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, f"tools/{script} {flag} failed:\n{proc.stderr}"
    return Path(proc.stdout.strip())


def kubectl() -> Path:
    """The kubectl built beside the cluster binaries (it has kustomize built in)."""
    path = _print_dir("ensure-binaries.sh", "--print-dir") / "kubectl"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `make cluster-binaries`", pytrace=False)
    return path


def gitops_crds() -> Path:
    """The directory of Argo CD's and Flux's CRDs taken from their Go modules (its name comes
    from tools/versions.sh, as in tools/ensure-gitops-binaries.sh)."""
    proc = subprocess.run(
        ["bash", "-c", 'source tools/versions.sh && echo "$T9K_GITOPS_CRDS_DIR"'],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    path = Path(proc.stdout.strip())
    if not (path / ".complete").is_file():
        pytest.fail(f"{path} is missing: run `make gitops-binaries`", pytrace=False)
    return path
