"""bench/startup.py runs every command it times (the timings themselves are not checked)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_startup_bench_runs_each_command_and_prints_its_row() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "startup.py"), "--runs", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = re.findall(
        r"^\| `(.+?)`.* \| ([\d.]+) \([\d.]+\) \| (.+?) \| (yes|no|-) \|$", done.stdout, re.M
    )
    assert [r[0] for r in rows] == [
        "python -c pass",
        "t9k-sdk --help",
        "t9k-sdk --version",
        "t9k-sdk validate --help",
        "t9k-sdk completion bash",
        "t9k-sdk validate examples/deepspeed_bert.yaml",
    ]
    assert [r[2] for r in rows] == ["-", *["< 0.1 s"] * 4, "< 0.2 s"]
