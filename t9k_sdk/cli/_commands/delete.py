"""`t9k-sdk delete`: delete jobs by KIND and NAME, by label selector or by the manifests that
created them (their pods and other objects go with them)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from t9k_sdk.cli._declare import KINDS_HELP, Subcommands, command, file_options, selector_option
from t9k_sdk.cli._errors import EXIT_FAILED, EXIT_OK, UsageError, error, say

if TYPE_CHECKING:
    from t9k_sdk.client.client import Client
    from t9k_sdk.client.kinds import JobKind

__all__ = ["add", "run"]


def add(sub: Subcommands) -> None:
    parser = command(
        sub,
        "delete",
        help="delete jobs (their pods and other objects go with them)",
        description="Delete jobs named by KIND and NAME, by a label selector (-l), or by the"
        " manifests that\n"
        "created them (-f); the garbage collector deletes their pods, services, config maps and\n"
        "secrets.\n\n" + KINDS_HELP,
        examples="  t9k-sdk delete gj mnist\n  t9k-sdk delete dj bert gpt --wait=false\n"
        "  t9k-sdk delete -l team=nlp\n  t9k-sdk delete -f manifests/",
        run=run,
        cluster=True,
    )
    parser.add_argument("args", nargs="*", metavar="KIND NAME [NAME...]")
    selector_option(parser, "delete the jobs whose labels match (of KIND, or of every kind)")
    file_options(parser, required=False)
    # kubectl's spelling: --wait=false (argparse matches a whole option string before it splits
    # at "=", so these are flags of their own, and `--wait gj mnist` still reads gj as KIND).
    parser.add_argument(
        "--wait",
        "--wait=true",
        dest="wait",
        action="store_true",
        default=True,
        help="return once the jobs are gone (the default, as kubectl's); --wait=false returns"
        " once the API server accepted the deletions",
    )
    parser.add_argument("--wait=false", dest="wait", action="store_false", help=argparse.SUPPRESS)
    parser.add_argument(
        "--ignore-not-found", action="store_true", help="a job that does not exist is not an error"
    )


def run(args: argparse.Namespace) -> int:
    from t9k_sdk.cli import _cluster
    from t9k_sdk.client.kinds import resolve_kind

    positional = _cluster.split_kind_name(args.args)
    if args.filename:
        if positional or args.selector is not None:
            raise UsageError(
                "-f (--filename) cannot be combined with KIND, NAME or -l (--selector)"
            )
        return _delete_files(args)
    if args.selector is not None:
        if len(positional) > 1:
            raise UsageError(
                "-l (--selector) takes no NAME: give KIND (or nothing, for every kind)"
            )
        kind = _cluster.kind(positional[0]) if positional else None
        with _cluster.connect(args) as client:
            jobs = client.list(kind, label_selector=args.selector)
            if not jobs:
                what = f"{kind.kind}s" if kind else "jobs"
                say(
                    f"No {what} matching {args.selector!r} found in namespace"
                    f" {client.namespace!r}.",
                    sys.stderr,
                )
                return EXIT_OK
            return _delete_each(
                client, args, [(resolve_kind(j.kind), j.metadata.name or "", None) for j in jobs]
            )
    if len(positional) < 2:
        raise UsageError("delete needs KIND and NAME (e.g. `gj mnist`), -l SELECTOR, or -f FILE")
    kind = _cluster.kind(positional[0])
    with _cluster.connect(args) as client:
        return _delete_each(client, args, [(kind, name, None) for name in positional[1:]])


def _delete_files(args: argparse.Namespace) -> int:
    from t9k_sdk.cli import _cluster
    from t9k_sdk.client.kinds import resolve_kind

    jobs = _cluster.load(args, "delete")
    if jobs is None:
        return EXIT_FAILED
    with _cluster.connect(args) as client:
        return _delete_each(
            client,
            args,
            [
                (resolve_kind(i.job.kind), i.job.metadata.name or "", i.job.metadata.namespace)
                for i in jobs
            ],
        )


def _delete_each(
    client: Client, args: argparse.Namespace, targets: Sequence[tuple[JobKind, str, str | None]]
) -> int:
    from t9k_sdk.client.errors import ClientError

    status = EXIT_OK
    for kind, name, namespace in targets:
        if namespace and args.namespace and namespace != args.namespace:
            error(
                f"{kind.kind} {name!r} declares namespace {namespace!r} but namespace"
                f" {args.namespace!r} was asked for; remove one of them"
            )
            status = EXIT_FAILED
            continue
        try:
            client.delete(kind, name, namespace, wait=args.wait)
        except ClientError as exc:
            if args.ignore_not_found and getattr(exc, "status", None) == 404:
                continue
            error(str(exc))
            status = EXIT_FAILED
            continue
        say(f"{kind.label}/{name} deleted")
    return status
