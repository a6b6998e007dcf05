"""List every function over the project's length limit; exit 1 if there is any.

The rule: no function longer than 80 lines, counted from its `def` line to its last line
(decorators left out, docstring and comments counted). `make lint` runs this on the packages:

    python tools/function_length.py [--max N] [DIR ...]   # default: t9k_sdk operator/t9k_operator

Each one found is printed as `path:line: name is N lines (max 80)`; nested functions and methods
are named `outer.inner` and counted on their own (their lines count in the outer one too).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

MAX_LINES = 80
DEFAULT_DIRS = ("t9k_sdk", "operator/t9k_operator")

_Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class LongFunction:
    path: Path
    line: int
    name: str
    length: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.name} is {self.length} lines"


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, _Function]]:
    """Every function in `tree` with its dotted name (`Class.method`, `outer.inner`)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{node.name}"
            yield name, node
            yield from _functions(node, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def _length(node: _Function) -> int:
    end = node.end_lineno if node.end_lineno is not None else node.lineno
    return end - node.lineno + 1


def long_functions(path: Path, max_lines: int = MAX_LINES) -> list[LongFunction]:
    """The functions of the Python file `path` over `max_lines` lines, in file order."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = [
        LongFunction(path, node.lineno, name, _length(node))
        for name, node in _functions(tree)
        if _length(node) > max_lines
    ]
    return sorted(found, key=lambda f: f.line)


def scan(dirs: Sequence[Path], max_lines: int = MAX_LINES) -> list[LongFunction]:
    """The functions over `max_lines` lines in every `*.py` file under `dirs`."""
    found: list[LongFunction] = []
    for directory in dirs:
        if not directory.is_dir():
            raise SystemExit(f"function_length: {directory} is not a directory")
        for path in sorted(directory.rglob("*.py")):
            found.extend(long_functions(path, max_lines))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("dirs", nargs="*", type=Path, default=[Path(d) for d in DEFAULT_DIRS])
    parser.add_argument("--max", type=int, default=MAX_LINES, help=f"(default {MAX_LINES})")
    options = parser.parse_args(argv)
    found = scan(options.dirs, options.max)
    for function in found:
        print(f"{function} (max {options.max})")
    if found:
        print(
            f"\n{len(found)} function(s) over {options.max} lines. The rule: no function longer"
            f" than {options.max} lines, from its `def` to its last line. Split each into"
            " well-named private helpers that read top-down (one per section of what it"
            " builds, one per step), without changing what it does.",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
