"""The manifest corpus (tests/corpus/) offline: `t9k-sdk validate` rejects every invalid file at
the field its header names, and accepts every valid one. tests/cluster/test_corpus.py checks the
same files against the API server, so the two verdicts are the same."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from t9k_sdk import _yaml
from t9k_sdk.cli import main
from t9k_sdk.validation import validate_manifest

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
INVALID = sorted((CORPUS / "invalid").glob("*.yaml"))
VALID = sorted((CORPUS / "valid").glob("*.yaml"))


def expected_path(file: Path) -> str:
    """The `# path: ...` header of an invalid case."""
    match = re.search(r"^# path: (\S+)$", file.read_text(encoding="utf-8"), re.MULTILINE)
    assert match, f"{file.name} has no '# path:' header"
    return match.group(1)


def test_the_corpus_is_not_empty() -> None:
    assert len(INVALID) >= 20
    assert len(VALID) >= 8


@pytest.mark.parametrize("file", INVALID, ids=lambda f: f.stem)
def test_invalid_case_is_rejected_at_its_field(
    file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = expected_path(file)
    status = main(["validate", str(file)])
    out = capsys.readouterr().out

    assert status == 1, out
    assert f"): {path}: " in out, out
    (manifest,) = _yaml.load_documents(file.read_bytes())
    assert any(p.path == path for p in validate_manifest(manifest))


@pytest.mark.parametrize("file", VALID, ids=lambda f: f.stem)
def test_valid_case_is_accepted(file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["validate", str(file)])
    out = capsys.readouterr().out

    assert (status, out) == (0, "1 document valid\n")
