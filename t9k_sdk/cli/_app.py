"""`t9k-sdk`'s parser and `main`: every command is registered here and every error ends here.

Each command is a module of `t9k_sdk.cli._commands` (`COMMANDS`): its `add` declares its parser
and its `run`, which imports what the command needs only when it runs, returns an exit status of
`t9k_sdk.cli._errors`. `main` turns what they raise into a message and a status:
`UsageError` -> the command's usage, the message, `EXIT_USAGE`; a `T9kError` (a client or
manifest error) -> the message, `EXIT_FAILED` (`diff`: `EXIT_DIFF_ERROR`); Ctrl-C ->
`EXIT_INTERRUPTED`; a closed standard output (`t9k-sdk render jobs/ | head`) -> `EXIT_OK`.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from typing import NoReturn

from t9k_sdk import __version__
from t9k_sdk.cli._commands import COMMANDS
from t9k_sdk.cli._errors import (
    DIFF_EXIT_CODES,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    error,
    exit_status_help,
    exit_status_summary,
)

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    """argparse with kubectl's habit: a mistyped command or flag gets a "did you mean", and an
    unknown flag is reported with the usage of the command it was given to."""

    def error(self, message: str) -> NoReturn:
        match = re.match(r"argument (\S+): invalid choice: '([^']*)'", message)
        if match:
            action = next((a for a in self._actions if match.group(1) in (a.metavar, a.dest)), None)
            choices = [str(c) for c in (action.choices or ())] if action else []
            close = difflib.get_close_matches(match.group(2), choices, n=1)
            if close:
                message += f"; did you mean {close[0]!r}?"
        super().error(message)

    def unknown(self, extras: list[str]) -> NoReturn:
        """Report flags this command does not take, with the closest it does take."""
        flags = [s for a in self._actions for s in a.option_strings]
        hints = []
        for extra in extras:
            close = difflib.get_close_matches(extra.split("=", 1)[0], flags, n=1)
            if close:
                hints.append(f"{extra}: did you mean {close[0]}?")
        hint = f" ({'; '.join(hints)})" if hints else ""
        self.error(f"unrecognized arguments: {' '.join(extras)}{hint}")


def _parser() -> _Parser:
    parser = _Parser(
        prog="t9k-sdk",
        description="Render, validate and describe T9k training jobs"
        " (GenericJob, DeepSpeedJob, ColossalAIJob).",
        epilog="Run `t9k-sdk COMMAND --help` for the options of a command.\n"
        + exit_status_summary()
        + "\n\n"
        + exit_status_help(title=" (all codes)")
        + "\n\n"
        + exit_status_help(DIFF_EXIT_CODES, " of diff (as kubectl diff)"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"t9k-sdk {__version__}")
    parser.set_defaults(root=parser)  # what `completion` describes
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run `t9k-sdk` with `argv` (default: the process arguments); return the exit status."""
    parser = _parser()
    try:
        args, extras = parser.parse_known_args(argv)
        if extras:
            command = getattr(args, "parser", None)
            (command if isinstance(command, _Parser) else parser).unknown(extras)
    except SystemExit as exc:  # --help, --version, and argparse's usage errors
        return (
            exc.code if isinstance(exc.code, int) else (EXIT_OK if exc.code is None else EXIT_USAGE)
        )
    failure: int = getattr(args, "failure", EXIT_FAILED)
    try:
        status: int = args.run(args)
        sys.stdout.flush()
    except UsageError as exc:
        args.parser.print_usage(sys.stderr)
        error(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `t9k-sdk render jobs/ | head`: the reader left; not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:
        # The SDK's errors (ClientError, InvalidManifestError, ...) are messages for the user.
        # Their module comes with the command that raised one: none is imported before.
        from t9k_sdk.errors import T9kError

        if not isinstance(exc, T9kError):
            raise
        error(str(exc))
        return failure
    return status
