"""The one error and exit policy of `t9k-sdk`: the exit codes, the usage error, the printers.

Every command returns one of the codes of `EXIT_CODES` (`diff` follows `kubectl diff` instead:
`DIFF_EXIT_CODES`). A command raises `UsageError` for a command line it cannot carry out;
`t9k_sdk.cli._app.main` prints the command's usage and the message, and exits with
`EXIT_USAGE`. Errors are printed by `error()`, data (`-o json|yaml`) by `print_data()`.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from t9k_sdk.cli._terminal import for_terminal

__all__ = [
    "DIFF_EXIT_CODES",
    "EXIT_CODES",
    "EXIT_DIFF",
    "EXIT_DIFF_ERROR",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "OFFLINE_EXIT_CODES",
    "UsageError",
    "error",
    "exit_status_help",
    "exit_status_summary",
    "list_payload",
    "print_data",
    "say",
    "warn",
]

EXIT_OK = 0
"""Success (`wait`: the job reached the target)."""
EXIT_FAILED = 1
"""Invalid jobs or manifests, or nothing found in the inputs; the job failed or is stuck
(`wait`); the job was not found; the cluster refused a request or could not be reached."""
EXIT_USAGE = 2
"""A usage error: an unknown option, a missing argument, an input that is not accepted."""
EXIT_TIMEOUT = 3
"""`wait --timeout` passed while the job was still pending or running."""
EXIT_INTERRUPTED = 130
"""Interrupted (Ctrl-C)."""

EXIT_CODES: tuple[tuple[int, str, str], ...] = (
    (EXIT_OK, "success", "success (wait: the job reached the target)"),
    (
        EXIT_FAILED,
        "invalid input or nothing found",
        "invalid input: a job or manifest is invalid, a Python file cannot be imported, a YAML"
        " file cannot be parsed, or no jobs or documents were found; the job was not found, the"
        " cluster refused a request or could not be reached; wait: the job failed or is stuck",
    ),
    (
        EXIT_USAGE,
        "usage error",
        "usage error: an unknown option, a missing argument, a path that does not exist, or an"
        " input the command does not take (e.g. a Python file for validate, or for apply without"
        " --python)",
    ),
    (
        EXIT_TIMEOUT,
        "timeout",
        "wait: the timeout passed while the job was still pending or running",
    ),
    (EXIT_INTERRUPTED, "interrupted", "interrupted (Ctrl-C)"),
)
"""Every exit status of `t9k-sdk` (but `diff`): (code, in short, in full)."""

OFFLINE_EXIT_CODES = (EXIT_OK, EXIT_FAILED, EXIT_USAGE)
"""What the offline commands (render, validate, ...) return (and 130 on Ctrl-C)."""

EXIT_DIFF = 1
"""`diff`: the cluster differs from the files (as `kubectl diff`)."""
EXIT_DIFF_ERROR = 2
"""`diff`: something went wrong (invalid input, a usage error, a refused request)."""

DIFF_EXIT_CODES: tuple[tuple[int, str, str], ...] = (
    (EXIT_OK, "no differences", "no differences"),
    (EXIT_DIFF, "differences found", "differences found"),
    (EXIT_DIFF_ERROR, "error", "invalid input, usage error, or a failed request"),
    (EXIT_INTERRUPTED, "interrupted", "interrupted (Ctrl-C)"),
)
"""The exit statuses of `diff`, which follows `kubectl diff`."""


def exit_status_help(codes: Sequence[tuple[int, str, str]] = EXIT_CODES, title: str = "") -> str:
    """The exit-status table as a help epilog: one line per code."""
    lines = [f"exit status{title}:"]
    for code, _, meaning in codes:
        lines += textwrap.wrap(
            meaning, width=95, initial_indent=f"  {code:<4} ", subsequent_indent=" " * 7
        )
    return "\n".join(lines)


def exit_status_summary(only: Sequence[int] = OFFLINE_EXIT_CODES) -> str:
    """`exit status: 0 success, 1 ..., 2 usage error`: the codes `only`, in short."""
    return "exit status: " + ", ".join(
        f"{code} {short}" for code, short, _ in EXIT_CODES if code in only
    )


class UsageError(Exception):
    """The command line asks for something that cannot be done (exit `EXIT_USAGE`).

    The message names the argument and says what is accepted.
    """


def say(message: str = "", stream: TextIO | None = None) -> None:
    """A line on standard output (or `stream`), flushed; control characters from the cluster
    shown as escapes (`_format.for_terminal`)."""
    print(for_terminal(message), file=stream or sys.stdout, flush=True)


def error(message: str) -> None:
    """`t9k-sdk: error: MESSAGE` on standard error."""
    print(for_terminal(f"t9k-sdk: error: {message}"), file=sys.stderr, flush=True)


def warn(message: str) -> None:
    """`t9k-sdk: warning: MESSAGE` on standard error."""
    print(for_terminal(f"t9k-sdk: warning: {message}"), file=sys.stderr, flush=True)


def print_data(payload: Any, output: str) -> None:
    """`payload` (JSON-ready data) on standard output as `json` (indented) or `yaml`."""
    if output == "json":
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
    else:
        from t9k_sdk import codecs  # YAML and the models: only for a command that prints YAML

        sys.stdout.write(codecs.dump_all_yaml([payload]))
    sys.stdout.flush()


def list_payload(objects: Sequence[Mapping[str, Any]]) -> Any:
    """One object as itself, several as a `List` (as `kubectl ... -o json` prints them)."""
    if len(objects) == 1:
        return objects[0]
    return {"apiVersion": "v1", "kind": "List", "items": list(objects)}
