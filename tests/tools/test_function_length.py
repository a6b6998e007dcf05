"""tools/function_length.py, on packages made in a temporary directory (never the real tree):
it names a function over 80 lines with its file and line and exits 1; a package without one
passes. A function's length runs from its `def` to its last line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import function_length


def _function(name: str, lines: int, indent: str = "") -> str:
    """A function of exactly `lines` lines, `def` included."""
    body = [f"{indent}    x{i} = {i}" for i in range(lines - 2)]
    return "\n".join([f"{indent}def {name}() -> int:", *body, f"{indent}    return 0"]) + "\n"


def _package(root: Path, files: dict[str, str]) -> Path:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def test_a_function_over_80_lines_is_named_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pkg = _package(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "short.py": _function("fine", 80),
            "sub/long.py": '"""A module."""\n\n\n' + _function("too_long", 81),
        },
    )
    assert function_length.main([str(pkg)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [f"{pkg / 'sub/long.py'}:4: too_long is 81 lines (max 80)"]
    assert "no function longer than 80 lines" in err
    assert "Split" in err


def test_a_package_without_one_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pkg = _package(tmp_path / "pkg", {"__init__.py": "", "a.py": _function("fine", 80) * 3})
    assert function_length.main([str(pkg)]) == 0
    assert capsys.readouterr() == ("", "")


def test_methods_and_nested_functions_are_counted_with_their_dotted_names(tmp_path: Path) -> None:
    decorated = "@staticmethod\n" + _function("method", 81)
    source = (
        "class Thing:\n"
        + "".join(f"    {line}\n" for line in decorated.splitlines())
        + "\n\nasync "
        + _function("outer", 3).replace("    return 0\n", "")
        + _function("inner", 90, indent="    ")
        + "    return inner()\n"
    )
    path = tmp_path / "m.py"
    path.write_text(source)
    found = [(f.name, f.length) for f in function_length.long_functions(path)]
    assert found == [("Thing.method", 81), ("outer", 93), ("outer.inner", 90)]
