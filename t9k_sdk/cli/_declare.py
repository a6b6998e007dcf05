"""How a command of `t9k-sdk` declares its parser: `command` (its name, help, description,
examples and exit statuses, and the function that runs it), and the options several commands
share (the cluster options, -f and --python, -l, -o and --out-dir).

It imports only argparse and `_errors`: building the parser loads nothing a command's code needs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeAlias

from t9k_sdk.cli._errors import EXIT_FAILED, exit_status_help, exit_status_summary

__all__ = [
    "KINDS_HELP",
    "Subcommands",
    "command",
    "file_options",
    "output_options",
    "selector_option",
]

Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""What `t9k-sdk`'s parser registers its commands on (`add_subparsers`)."""

KINDS_HELP = "KIND is gj, dj or caij (or GenericJob, DeepSpeedJob, ColossalAIJob, any case)."


def command(
    sub: Subcommands,
    name: str,
    *,
    help: str,
    description: str,
    run: Callable[[argparse.Namespace], int],
    examples: str | None = None,
    cluster: bool = False,
    exit_status: str | None = None,
    failure: int = EXIT_FAILED,
) -> argparse.ArgumentParser:
    """Register the command `name`, which `run` runs, and return its parser for its arguments.

    `examples` (lines of commands, indented) and the exit statuses end its help: every status
    for a `cluster` command, which also takes --kubeconfig, --context and -n; the summary for
    the others; or `exit_status`. `failure` is the status of a `T9kError` it raises.
    """
    if exit_status is None:
        exit_status = exit_status_help() if cluster else exit_status_summary()
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help,
        description=description,
        epilog=(f"examples:\n{examples}\n\n" if examples else "") + exit_status,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if cluster:
        _cluster_options(parser)
    parser.set_defaults(run=run, parser=parser, failure=failure)
    return parser


def _cluster_options(parser: argparse.ArgumentParser) -> None:
    """--kubeconfig, --context, -n: every cluster command takes them."""
    group = parser.add_argument_group("cluster options")
    group.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config; in a pod: its service"
        " account)",
    )
    group.add_argument("--context", metavar="NAME", help="kubeconfig context (default: current)")
    group.add_argument(
        "-n", "--namespace", metavar="NS", help="namespace (default: the context's, else `default`)"
    )


def file_options(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """-f FILE (repeatable) and --python: the jobs a cluster command reads (apply, diff, delete)."""
    parser.add_argument(
        "-f",
        "--filename",
        action="append",
        required=required,
        metavar="FILE",
        help="a YAML manifest, a directory of them, or - (repeatable); with --python also"
        " a Python file, module or directory of job definitions",
    )
    parser.add_argument(
        "--python",
        action="store_true",
        help="also import Python job files (named, or in a directory) and use the jobs"
        " they define; they run as code, so only with this flag",
    )


def selector_option(parser: argparse.ArgumentParser, what: str) -> None:
    """-l SELECTOR: `what` the command does with the jobs whose labels match."""
    parser.add_argument(
        "-l",
        "--selector",
        metavar="SELECTOR",
        help=f"{what} SELECTOR, evaluated by the API server: `key=value`, `key!=value`,"
        " `key in (a,b)`, `key`, `!key`, comma-separated",
    )


def output_options(parser: argparse.ArgumentParser, directory_help: str) -> None:
    """-o FORMAT (yaml or json, on standard output) and --out-dir DIR (render, crds)."""
    parser.add_argument(
        "-o",
        "--output",
        metavar="FORMAT",
        help="format on standard output: yaml (default) or json",
    )
    parser.add_argument("--out-dir", metavar="DIR", help=directory_help)
