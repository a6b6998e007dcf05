"""Every benchmark runs as the docs say (`python bench/<name>.py`), whatever its neighbours are
called: bench/operator.py must not shadow the standard library's `operator` for the others."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.parametrize(
    "script", sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_"))
)
def test_each_benchmark_starts_as_a_script(script: str) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / script), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=BENCH.parent,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:"), done.stdout
