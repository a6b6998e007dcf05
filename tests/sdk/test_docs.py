"""The documentation cannot rot: generated pages are current, examples run, the site builds.

Conventions for code blocks in `docs/**/*.md`:

* Every fenced `python` block runs. The blocks of one page run in order, in one namespace that
  is fresh for each page, with a temporary directory as the working directory.
* A block preceded by the line `<!-- skip-test -->` does not run.
* A fenced block (any language) preceded by the line `<!-- expected-output -->` is the exact
  standard output of the `python` block before it.
"""

from __future__ import annotations

import contextlib
import enum
import io
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from t9k_sdk import models
from tests.sdk.scripts import gen_reference

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
API_MD = DOCS / "reference" / "api.md"
CLI_MD = DOCS / "reference" / "cli.md"
PYTHON_MD = DOCS / "reference" / "python.md"

SKIP = "<!-- skip-test -->"
EXPECTED = "<!-- expected-output -->"
NOT_OURS = ("contributing/", "performance.md")
"""Pages other engineers own; their code blocks are tested with their code, not here."""


# -- generated pages --------------------------------------------------------------------------


def test_generated_reference_is_current() -> None:
    gen = gen_reference()
    rendered: dict[Path, str] = gen.render_all()
    stale = [str(p.relative_to(REPO)) for p, text in rendered.items() if p.read_text() != text]
    assert not stale, f"stale: {stale}; run `python docs/gen_reference.py` and commit the result"


def test_check_flag_exits_1_when_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gen = gen_reference()
    for name in ("API_MD", "PYTHON_MD", "VALIDATION_MD"):
        copy = tmp_path / f"{name}.md"
        copy.write_text(getattr(gen, name).read_text())
        monkeypatch.setattr(gen, name, copy)
    gen.API_MD.write_text("old\n")
    assert gen.main(["--check"]) == 1
    assert gen.main([]) == 0
    assert gen.main(["--check"]) == 0


def _wire_models() -> list[type[models.K8sModel]]:
    out = []
    for name in models.__all__:
        obj = getattr(models, name)
        if (
            isinstance(obj, type)
            and issubclass(obj, models.K8sModel)
            and not issubclass(obj, models.K8sPassthroughModel)
            and obj is not models.K8sModel
        ):
            out.append(obj)
    return out


def _sections(text: str) -> dict[str, list[str]]:
    """Heading text of every `####` section -> the bodies of the sections with that heading."""
    out: dict[str, list[str]] = {}
    for chunk in re.split(r"^#### ", text, flags=re.M)[1:]:
        title, _, body = chunk.partition("\n")
        out.setdefault(title.split(" {")[0].strip(), []).append(body)
    return out


@pytest.mark.parametrize("cls", _wire_models(), ids=lambda c: c.__name__)
def test_every_field_is_in_the_api_reference(cls: type[models.K8sModel]) -> None:
    wire = cls.wire_name() if hasattr(cls, "wire_name") else cls.__name__
    bodies = _sections(API_MD.read_text()).get(wire, [])
    assert bodies, f"no section '#### {wire}' in {API_MD.name}"
    fields = list(cls.wire_fields())
    assert any(
        all(f"| `{field}` _" in body for field in fields) for body in bodies
    ), f"a field of {cls.__name__} ({', '.join(fields)}) is missing from section {wire}"


def test_every_enum_value_is_in_the_api_reference() -> None:
    sections = _sections(API_MD.read_text())
    for name in models.__all__:
        obj = getattr(models, name)
        if isinstance(obj, type) and issubclass(obj, enum.Enum):
            body = "".join(sections.get(name, []))
            for member in obj:
                assert f"`{member.value}`" in body, f"{name}.{member.name} missing"


# -- code blocks ------------------------------------------------------------------------------


@dataclass
class Block:
    language: str
    code: str
    line: int
    skip: bool
    expected_output: bool


_FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w+-]*)[^\n]*$")


def blocks_of(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown page, with their markers."""
    lines = text.splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent = len(m.group("indent"))
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][indent:])
            i += 1
        previous = lines[start - 1].strip() if start else ""
        out.append(
            Block(
                language=m.group("lang"),
                code="\n".join(body) + "\n",
                line=start + 1,
                skip=previous == SKIP,
                expected_output=previous == EXPECTED,
            )
        )
        i += 1
    return out


def _pages() -> list[Path]:
    pages = []
    for page in sorted(DOCS.rglob("*.md")):
        rel = page.relative_to(DOCS).as_posix()
        if not rel.startswith(NOT_OURS) and any(
            b.language == "python" for b in blocks_of(page.read_text())
        ):
            pages.append(page)
    return pages


def test_blocks_parser() -> None:
    text = "a\n<!-- skip-test -->\n```python\nx = 1\n```\n```python\nprint(1)\n```\n"
    text += "<!-- expected-output -->\n```text\n1\n```\n"
    found = blocks_of(text)
    assert [(b.language, b.skip, b.expected_output) for b in found] == [
        ("python", True, False),
        ("python", False, False),
        ("text", False, True),
    ]
    assert found[2].code == "1\n"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.relative_to(DOCS).as_posix())
def test_examples_on_the_page_run(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": f"docs_{page.stem}"}
    if page == DOCS / "reference" / "python.md":
        # Docstring examples of the Python reference use the names of `t9k_sdk` unimported.
        exec("from t9k_sdk import *", namespace)
    output: str | None = None
    where = page.relative_to(REPO)
    for block in blocks_of(page.read_text()):
        if block.expected_output:
            assert output is not None, f"{where}:{block.line}: expected output of no python block"
            assert output == block.code, f"{where}:{block.line}: the output differs"
            output = None
            continue
        if block.language != "python" or block.skip:
            continue
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            try:
                exec(compile(block.code, f"{where}:{block.line}", "exec"), namespace)
            except Exception as exc:  # pragma: no cover - the failure message is the point
                raise AssertionError(f"{where}:{block.line}: the example raised {exc!r}") from exc
        output = buffer.getvalue()


# -- the CLI page -----------------------------------------------------------------------------


def test_cli_page_has_the_help_of_every_command() -> None:
    gen = gen_reference()
    commands = gen.cli_commands()
    assert {"render", "validate", "crds"} <= set(commands)
    page = CLI_MD.read_text()
    for command in commands:
        assert f"### `t9k-sdk {command} --help`" in page, f"{CLI_MD.name}: no help of {command}"


def test_help_texts_do_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    gen = gen_reference()
    monkeypatch.setenv("COLUMNS", "40")
    narrow = gen.render_help()
    monkeypatch.setenv("COLUMNS", "200")
    assert gen.render_help() == narrow


# -- the architecture page ----------------------------------------------------------------------


def test_the_architecture_page_lists_every_import_contract() -> None:
    """The table of import contracts is the house's rules for a newcomer: a contract added to
    pyproject.toml without a row there is a rule nobody reads."""
    import tomllib

    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    page = (DOCS / "concepts" / "architecture.md").read_text()
    table = page.split("## The import contracts", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ")]

    def plain(text: str) -> str:
        return re.sub(r"[`*]", "", text).lower()

    missing = [
        c["name"]
        for c in contracts["contracts"]
        if not any(plain(c["name"]).startswith(plain(row)) for row in rows[1:])
    ]
    assert not missing, f"contracts without a row in docs/concepts/architecture.md: {missing}"


# -- the changelog ----------------------------------------------------------------------------


def test_the_changelog_has_the_version_of_the_package() -> None:
    """A release bumps pyproject.toml; the CHANGELOG must say what that version holds."""
    import tomllib

    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert re.search(rf"^## \[{re.escape(version)}\]", changelog, flags=re.MULTILINE), version
    assert "### Deprecated" in changelog


# -- the Python page --------------------------------------------------------------------------


def test_python_page_lists_every_public_name_once() -> None:
    """Each name of `t9k_sdk.__all__` (TorchrunJob among the builders), of `t9k_sdk.pulumi` and
    `plan_summary` has exactly one heading; no object is described twice."""
    pytest.importorskip("pulumi")
    import t9k_sdk
    import t9k_sdk.pulumi

    headings = re.findall(r"^### (\S+)$", PYTHON_MD.read_text(), flags=re.MULTILINE)
    expected = [
        *t9k_sdk.__all__,
        *(f"pulumi.{name}" for name in t9k_sdk.pulumi.__all__),
        "plan_summary",
    ]
    for name in expected:
        assert (
            headings.count(name) == 1
        ), f"{PYTHON_MD.name}: {name} has {headings.count(name)} headings"
    builders = PYTHON_MD.read_text().split("## Job builders", 1)[1].split("\n## ", 1)[0]
    assert "### TorchrunJob" in builders


# -- the site ---------------------------------------------------------------------------------


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or "mkdocs"
    # Not --quiet: it raises the log level above WARNING, and then --strict sees no warnings.
    result = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_COLOR": "1", "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    warnings = [line for line in result.stderr.splitlines() if not line.startswith("INFO")]
    assert result.returncode == 0, "\n".join(warnings)
