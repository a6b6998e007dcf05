"""The how-to "Edit a published job in Python" as a user follows it: its script, run on its
manifest, type-checks under `mypy --strict` and leaves exactly the diff the page shows."""

from __future__ import annotations

import difflib
import runpy
from pathlib import Path

import pytest

from tests.sdk.test_docs import blocks_of
from tests.typehints.test_typehints import PLAIN_CONFIG, PLUGIN_CONFIG, _mypy

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "how-to" / "edit-published-job.md"


def _page() -> tuple[str, str, list[str]]:
    """The page's manifest, its script and the lines its diff shows as removed and added."""
    blocks = blocks_of(PAGE.read_text())
    (manifest,) = [b.code for b in blocks if b.language == "yaml"]
    (script,) = [b.code for b in blocks if b.language == "python"]
    (diff,) = [b.code for b in blocks if b.language == "diff"]
    return manifest, script, [line for line in diff.splitlines() if line[:1] in "+-"]


@pytest.mark.parametrize("config", [PLUGIN_CONFIG, PLAIN_CONFIG], ids=["pydantic-plugin", "plain"])
def test_the_script_type_checks_under_mypy_strict(
    tmp_path: Path, config: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, script, _ = _page()
    target = tmp_path / "edit_job.py"
    target.write_text(script)
    monkeypatch.setenv("MYPYPATH", str(REPO))  # this checkout's t9k_sdk, installed or not
    assert _mypy(tmp_path, config, target) == (0, "")


def test_the_script_changes_exactly_the_lines_the_page_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest, script, shown = _page()
    (tmp_path / "gpt-pretrain.yaml").write_text(manifest)
    (tmp_path / "edit_job.py").write_text(script)
    monkeypatch.chdir(tmp_path)

    runpy.run_path("edit_job.py", run_name="__main__")

    after = (tmp_path / "gpt-pretrain.yaml").read_text()
    changed = [
        line.rstrip("\n")
        for line in difflib.unified_diff(manifest.splitlines(True), after.splitlines(True), n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert changed == shown
    assert len(shown) == 6  # three values: a line out and a line in for each


def test_mypy_knows_the_kind_read_and_edited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not `Any`, and not the union of the kinds: a GenericJob's field on a DeepSpeedJob, or an
    edited DeepSpeedJob taken for a GenericJob, is an error."""
    target = tmp_path / "mistakes.py"
    target.write_text(
        "from t9k_sdk import models\n"
        'job = models.DeepSpeedJob.from_yaml("")\n'
        "print(job.spec.replica_specs)\n"
        "other: models.GenericJob = job.edit({})\n"
    )
    monkeypatch.setenv("MYPYPATH", str(REPO))
    status, output = _mypy(tmp_path, PLAIN_CONFIG, target)
    assert status == 1
    assert '3: error: "DeepSpeedJobSpec" has no attribute "replica_specs"' in output
    assert "4: error: Incompatible types in assignment" in output
