"""The examples are tests: each `examples/<name>.py` renders exactly to its golden `<name>.yaml`.

After an intended change, rewrite the twins with `make golden` (T9K_REGENERATE=1; never in CI)
and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from t9k_sdk import dump_all_yaml, load_all_yaml, to_manifest
from t9k_sdk.cli import main
from t9k_sdk.validation import validate_manifest

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
EXAMPLES = sorted(EXAMPLES_DIR.glob("*.py"))
REGENERATE = os.environ.get("T9K_REGENERATE") == "1" and not os.environ.get("CI")

_REQUIRED = {
    "genericjob_mnist",
    "genericjob_tf_config",
    "deepspeed_bert",
    "deepspeed_elastic",
    "colossalai_palm",
    "debug_and_pause",
}


def test_the_documented_examples_exist() -> None:
    assert {p.stem for p in EXAMPLES} >= _REQUIRED


def test_every_golden_yaml_has_its_example() -> None:
    orphans = sorted(
        p.name for p in EXAMPLES_DIR.glob("*.yaml") if not p.with_suffix(".py").exists()
    )
    assert orphans == [], "golden YAML without an example .py; delete it or restore the example"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example_has_a_header_saying_what_it_shows(example: Path) -> None:
    header = example.read_text(encoding="utf-8").split("\n\n", 1)[0]
    assert header.startswith("# "), "start the example with a comment header"
    assert "Shows:" in header


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example_renders_to_its_golden_yaml(
    example: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["render", str(example)])
    rendered, errors = capsys.readouterr()
    assert status == 0, errors
    golden = example.with_suffix(".yaml")
    if REGENERATE:
        golden.write_text(rendered, encoding="utf-8")
    assert golden.exists(), f"{golden.name} is missing: run `make golden` and commit it"
    assert rendered == golden.read_text(encoding="utf-8"), (
        f"{example.name} no longer renders to {golden.name}; if the change is intended, run"
        " `make golden` and review the diff"
    )


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_golden_yaml_loads_and_dumps_back_byte_identical(example: Path) -> None:
    text = example.with_suffix(".yaml").read_text(encoding="utf-8")

    jobs = load_all_yaml(text)

    assert jobs
    assert dump_all_yaml(jobs) == text


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_golden_yaml_passes_strict_validation(example: Path) -> None:
    for job in load_all_yaml(example.with_suffix(".yaml")):
        assert validate_manifest(to_manifest(job)) == []
