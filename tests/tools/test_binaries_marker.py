"""A unit-test run never starts a Go build: the tests that run a Go binary are marked `binaries`
(tests/conftest.py), `make unit` leaves them out, and `pytest -m "not cluster"` skips them,
naming the make target, when the binary is not built."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _pytest(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "T9K_REQUIRE_CLUSTER"}
    env["T9K_CACHE_DIR"] = str(cache)  # an empty binary cache (tools/versions.sh)
    plugins = ("-p", "no:randomly", "-p", "no:cacheprovider")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", *plugins, *args, "tests/argocd"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_without_binaries_the_runner_tests_skip_and_nothing_is_built(tmp_path: Path) -> None:
    proc = _pytest(tmp_path, "-m", "not cluster")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    skips = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skips, proc.stdout
    assert all("run `make gitops-binaries`" in line for line in skips), proc.stdout
    assert not any(tmp_path.iterdir()), "a Go build started in the empty cache"


def test_make_units_selection_leaves_out_exactly_the_tests_that_need_binaries(
    tmp_path: Path,
) -> None:
    unit = _pytest(tmp_path, "-m", "not cluster and not binaries")
    assert unit.returncode == 0, unit.stdout + unit.stderr
    assert "skipped" not in unit.stdout.splitlines()[-1], unit.stdout
    needing = _pytest(tmp_path, "-m", "binaries", "--collect-only")
    assert "test_the_runner_judges_results_as_argo_cd" in needing.stdout, needing.stdout
    assert "test_every_testdata_file_has_a_case" not in needing.stdout, needing.stdout
