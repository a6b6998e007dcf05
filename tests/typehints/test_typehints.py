"""User code type-checked with `mypy --strict`, as a user would run it on their job files.

Checked twice: with pydantic's mypy plugin (as this repository and many pydantic users run it)
and without any plugin (plain `mypy --strict`, which reads the builders' `dataclass_transform`).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
PLUGIN_CONFIG = (
    "[mypy]\nstrict = true\nplugins = pydantic.mypy\n[pydantic-mypy]\ninit_typed = true\n"
)
PLAIN_CONFIG = "[mypy]\nstrict = true\n"


def _mypy(tmp_path: Path, config: str, target: Path) -> tuple[int, str]:
    ini = tmp_path / "mypy.ini"
    ini.write_text(config)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ini),
            "--cache-dir",
            str(HERE.parent.parent / ".mypy_cache" / "typehints"),
            "--no-error-summary",
            "--hide-error-context",
            str(target),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("config", [PLUGIN_CONFIG, PLAIN_CONFIG], ids=["pydantic-plugin", "plain"])
def test_documented_usage_type_checks_under_mypy_strict(tmp_path: Path, config: str) -> None:
    status, output = _mypy(tmp_path, config, HERE / "valid_usage.py")
    assert (status, output) == (0, "")


@pytest.mark.parametrize("config", [PLUGIN_CONFIG, PLAIN_CONFIG], ids=["pydantic-plugin", "plain"])
def test_mypy_strict_reports_each_mistake_in_user_code(tmp_path: Path, config: str) -> None:
    target = HERE / "invalid_usage.py"
    marked = {
        n: said.group(1) or ""
        for n, line in enumerate(target.read_text().splitlines(), 1)
        if (said := re.search(r"\s# E(?:: (.*))?$", line))
    }
    status, output = _mypy(tmp_path, config, target)
    reported = {
        int(n): message
        for n, message in re.findall(r"invalid_usage\.py:(\d+): error: (.*)", output)
    }
    assert status == 1
    assert set(reported) == set(marked), output
    assert all(marked[n] in reported[n] for n in marked), output
