"""`t9k-sdk logs`: print the logs of a job's replicas, each line prefixed [type-index]."""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from t9k_sdk.cli._declare import KINDS_HELP, Subcommands, command
from t9k_sdk.cli._errors import EXIT_FAILED, EXIT_OK, UsageError, error, say
from t9k_sdk.cli._terminal import for_terminal, visible

if TYPE_CHECKING:
    from t9k_sdk.client.logs import LogLine

__all__ = ["add", "run"]


def add(sub: Subcommands) -> None:
    parser = command(
        sub,
        "logs",
        help="print the logs of a job's replicas, each line prefixed [type-index]",
        description="Print the logs of every replica of a job (or of --type, or of --type and"
        " --index),\n"
        "each line prefixed with its replica: [worker-0], [launcher]. With -f, wait for pods\n"
        "that do not exist yet, read a restarted replica's new pod from its start, and stop\n"
        "when the job has finished. --tail applies to the logs that exist when reading starts.\n"
        "Messages about the logs themselves (e.g. a node whose kubelet cannot be reached) go to\n"
        "standard error. Control characters in the logs (terminal escapes, carriage returns)\n"
        "are shown as escapes such as \\x1b; --raw writes them as they are.\n\n" + KINDS_HELP,
        examples="  t9k-sdk logs gj mnist\n  t9k-sdk logs dj bert -f\n"
        "  t9k-sdk logs gj mnist --type worker --index 1 --tail 100",
        run=run,
        cluster=True,
    )
    parser.add_argument("args", nargs="+", metavar="KIND NAME")
    parser.add_argument("--type", metavar="TYPE", help="only replicas of this type (worker, ...)")
    parser.add_argument("--index", type=int, metavar="N", help="only the replica with this index")
    parser.add_argument("-c", "--container", metavar="NAME", help="container (default: the first)")
    parser.add_argument(
        "-f", "--follow", action="store_true", help="keep following until the job ends"
    )
    parser.add_argument("--tail", type=int, metavar="N", help="only the last N lines of each log")
    parser.add_argument("--timestamps", action="store_true", help="prefix each line with its time")
    parser.add_argument(
        "--raw",
        action="store_true",
        help="write the processes' bytes as they are, terminal escapes included (trust the job)",
    )


_REPLICA_COLOURS = ("cyan", "magenta", "green", "yellow", "blue")


def run(args: argparse.Namespace) -> int:
    from t9k_sdk.cli import _cluster

    kind, name = _cluster.kind_and_name(args.args, "logs")
    if args.tail is not None and args.tail < 0:
        raise UsageError(f"--tail must be >= 0; got {args.tail}")
    paint = _cluster.painter(sys.stdout)
    colours: dict[str, str] = {}
    cycle = itertools.cycle(_REPLICA_COLOURS)
    with _cluster.connect(args) as client:
        lines: Iterator[LogLine] = client.logs(
            kind,
            name,
            replica_type=args.type,
            index=args.index,
            follow=args.follow,
            tail=args.tail,
            container=args.container,
            timestamps=args.timestamps,
        )
        printed = notices = 0
        try:
            for line in lines:
                if line.notice:
                    notices += 1
                    say(f"[{line.replica}] {line.text}", sys.stderr)
                    continue
                printed += 1
                colour = colours.setdefault(line.replica, next(cycle))
                prefix = paint(f"[{line.replica}]", colour)
                text = line.text if args.raw else visible(line.text)
                sys.stdout.write(f"{for_terminal(prefix)} {text}\n")
                if args.follow:
                    sys.stdout.flush()
        finally:
            close = getattr(lines, "close", None)
            if callable(close):
                close()
    if notices and not printed:
        error(f"no log of {kind.label}/{name} could be read (see the messages above)")
        return EXIT_FAILED
    return EXIT_OK
