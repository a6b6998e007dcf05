"""examples/gitops/ cannot drift: its manifests/ is exactly what `t9k-sdk render --kustomization`
writes from its jobs/, and docs/how-to/gitops.md shows its files by including them (mkdocs
snippets), all of them. kubectl's build and the server-side dry runs of every file are in
tests/cluster/test_gitops.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from t9k_sdk.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "gitops"
GUIDE = REPO / "docs" / "how-to" / "gitops.md"
SNIPPET = re.compile(r'^--8<-- "([^"]+)"$', re.MULTILINE)


def _files(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_the_committed_manifests_are_what_render_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(EXAMPLE)  # as the guide runs it
    out = tmp_path / "manifests"

    status = main(["render", "jobs/", "--out-dir", str(out), "--kustomization", "--prune"])

    _, err = capsys.readouterr()
    assert status == 0, err
    assert _files(out) == _files(EXAMPLE / "manifests"), (
        "examples/gitops/manifests is out of date with examples/gitops/jobs: run `make golden`"
        " (`cd examples/gitops && t9k-sdk render jobs/ --out-dir manifests --kustomization"
        " --prune`) and commit the result"
    )


def test_rendering_into_the_committed_directory_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop of the guide on a copy: a second render is a no-op for git."""
    copy = tmp_path / "gitops"
    for name, data in _files(EXAMPLE).items():
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_bytes(data)
    monkeypatch.chdir(copy)

    assert main(["render", "jobs/", "--out-dir", "manifests", "--kustomization", "--prune"]) == 0

    capsys.readouterr()
    assert _files(copy) == _files(EXAMPLE)


def test_the_guide_includes_every_file_of_the_example() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    included = SNIPPET.findall(text)
    for name in included:
        assert (REPO / name).is_file(), f"{GUIDE.name} includes {name}, which does not exist"
    shown = {n for n in included if n.startswith("examples/gitops/")}
    every = {f"examples/gitops/{name}" for name in _files(EXAMPLE)}
    assert sorted(every - shown) == [], f"{GUIDE.name} does not show these files of the example"


def test_the_guide_has_no_hand_copied_example_files() -> None:
    """YAML of the example's kinds is shown only through an include, never pasted."""
    text = GUIDE.read_text(encoding="utf-8")
    pasted = re.findall(r"^kind: (Application|AppProject|GitRepository|Kustomization)$", text, re.M)
    assert pasted == []


def test_the_guides_render_output_is_what_render_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = GUIDE.read_text(encoding="utf-8")
    block = text.split("From `examples/gitops/`:\n\n```console\n", 1)[1].split("```", 1)[0]
    command, *shown = block.splitlines()
    assert command == "$ t9k-sdk render jobs/ --out-dir manifests --kustomization --prune"
    (tmp_path / "jobs").mkdir()
    for p in (EXAMPLE / "jobs").glob("*.py"):
        (tmp_path / "jobs" / p.name).write_bytes(p.read_bytes())
    monkeypatch.chdir(tmp_path)  # a fresh checkout without manifests/

    assert main(command.split()[2:]) == 0

    assert capsys.readouterr().err.splitlines() == shown


def test_the_guides_tree_names_the_files_where_they_are() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    tree = text.split("## The layout\n\n```{.text .diagram}\n", 1)[1].split("```", 1)[0]
    stack: list[str] = []
    for line in tree.splitlines()[1:]:
        entry = line.split("#", 1)[0].rstrip()
        name = entry.lstrip("│├└─ \u00a0")
        depth = (len(entry) - len(name)) // 4 - 1
        stack[depth:] = [name]
        path = EXAMPLE.joinpath(*(n.rstrip("/") for n in stack))
        assert path.exists(), f"the guide's tree shows {path.relative_to(REPO)}, which is missing"
