"""What the offline commands share for their output: the format and directory of `render` and
`crds` (`-o` and `--out-dir`), writing files all or none, and counting things in words.

It imports nothing heavy: a command's parser module may import it.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from t9k_sdk.cli._errors import EXIT_FAILED, EXIT_OK, UsageError, error

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["format_and_directory", "plural", "write_and_report", "write_files"]

_FORMATS = ("yaml", "json")


def plural(n: int, noun: str) -> str:
    """`1 file`, `2 files`."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def format_and_directory(args: argparse.Namespace) -> tuple[str, Path | None]:
    """(format, directory) of `render`/`crds`: `-o` is a format (yaml, json), as in kubectl,
    and `--out-dir` a directory. Anything else after `-o` is a usage error that says what was
    probably meant: a mistyped format must not write files into a directory of that name."""
    from pathlib import Path

    output: str | None = args.output
    directory: str | None = args.out_dir
    if output is not None and output not in _FORMATS:
        close = difflib.get_close_matches(output.lower(), _FORMATS, n=1, cutoff=0.5)
        hint = (
            f"did you mean -o {close[0]}?"
            if close
            else f"to write files into a directory, use --out-dir {output}"
        )
        raise UsageError(
            f"-o {output}: unknown output format; -o takes {' or '.join(_FORMATS)} (the format"
            f" on standard output); {hint}"
        )
    if output == "json" and directory is not None:
        raise UsageError("--out-dir writes YAML files; -o json applies to standard output only")
    return output or "yaml", Path(directory) if directory is not None else None


def write_files(directory: Path, files: Mapping[str, str]) -> list[Path]:
    """Write `files` (name -> text) into `directory`: all of them or, on an error, none.

    A name may hold subdirectories (`base/crds/x.yaml`). Every file is written to a temporary
    name beside it first and renamed once all are written.
    """
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{directory}: exists and is not a directory")
    directory.mkdir(parents=True, exist_ok=True)
    staged: list[tuple[Path, Path]] = []
    try:
        for name, text in files.items():
            final = directory / name
            final.parent.mkdir(parents=True, exist_ok=True)
            temp = final.with_name(f".{final.name}.tmp")
            staged.append((temp, final))
            temp.write_text(text, encoding="utf-8")
    except OSError:
        for temp, _ in staged:
            temp.unlink(missing_ok=True)
        raise
    for temp, final in staged:
        temp.replace(final)
    return [final for _, final in staged]


def write_and_report(directory: Path, files: Mapping[str, str], noun: str) -> int:
    """`write_files`, then the paths written on standard error (`wrote 3 CRDs to DIR:`); an
    error that left nothing written is said as such. The exit status."""
    try:
        written = write_files(directory, files)
    except OSError as exc:
        error(f"cannot write to {directory}: {exc.strerror or exc}; nothing was written")
        return EXIT_FAILED
    print(f"wrote {plural(len(written), noun)} to {directory}:", file=sys.stderr)
    for path in written:
        print(f"  {path}", file=sys.stderr)
    return EXIT_OK
