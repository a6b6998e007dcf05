"""`t9k-sdk pause` and `t9k-sdk resume`: pause a job (its pods are deleted until it is resumed),
resume a paused one."""

from __future__ import annotations

import argparse

from t9k_sdk.cli._declare import KINDS_HELP, Subcommands, command
from t9k_sdk.cli._errors import EXIT_OK, say

__all__ = ["add", "run"]


def add(sub: Subcommands) -> None:
    for name, what in (
        ("pause", "pause a job: its pods are deleted until it is resumed"),
        ("resume", "resume a paused job"),
    ):
        parser = command(
            sub,
            name,
            help=what,
            description=what[0].upper()
            + what[1:]
            + " (sets spec.runMode.pause.enabled).\n\n"
            + KINDS_HELP,
            examples=f"  t9k-sdk {name} gj mnist",
            run=run,
            cluster=True,
        )
        parser.add_argument("args", nargs="+", metavar="KIND NAME")


def run(args: argparse.Namespace) -> int:
    from t9k_sdk.cli import _cluster

    kind, name = _cluster.kind_and_name(args.args, args.command)
    with _cluster.connect(args) as client:
        if args.command == "pause":
            job = client.pause(kind, name)
            say(
                f"{_cluster.ref(job)} paused (its pods are being deleted; resume it with"
                f" `t9k-sdk resume {kind.short_name} {name}`)"
            )
        else:
            job = client.resume(kind, name)
            say(f"{_cluster.ref(job)} resumed")
    return EXIT_OK
