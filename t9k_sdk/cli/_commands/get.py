"""`t9k-sdk get`: list jobs, or show one (table, yaml, json); -w to watch."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from t9k_sdk.cli._declare import KINDS_HELP, Subcommands, command, selector_option
from t9k_sdk.cli._errors import EXIT_OK, UsageError, say
from t9k_sdk.cli._terminal import visible

if TYPE_CHECKING:
    from t9k_sdk.cli._format import Cell, Painter
    from t9k_sdk.client.client import Client
    from t9k_sdk.client.kinds import JobKind

__all__ = ["add", "run"]


def add(sub: Subcommands) -> None:
    parser = command(
        sub,
        "get",
        help="list jobs, or show one (table, yaml, json); -w to watch",
        description="List the jobs of a kind (all three kinds without KIND) or show one job.\n\n"
        "Table columns: NAME KIND PHASE REPLICAS (running/desired) RESTARTS (replica restarts by\n"
        "the operator) AGE; -o wide adds the reason and message of the job's headline condition\n"
        "(Failed when it failed, else Running). -w prints the current state, then a line per\n"
        "change; for one named job it ends when the job has finished.\n\n" + KINDS_HELP,
        examples="  t9k-sdk get\n  t9k-sdk get dj -A\n  t9k-sdk get gj mnist -o yaml\n"
        "  t9k-sdk get gj/mnist -w",
        run=run,
        cluster=True,
    )
    parser.add_argument("args", nargs="*", metavar="KIND [NAME]", help="kind, and a job's name")
    parser.add_argument(
        "-o",
        "--output",
        choices=("table", "wide", "yaml", "json", "name"),
        default="table",
        help="output format (default: table)",
    )
    parser.add_argument("-w", "--watch", action="store_true", help="keep printing changes")
    parser.add_argument(
        "--watch-timeout", metavar="DURATION", help="with -w: stop after this long (e.g. 10m)"
    )
    parser.add_argument(
        "-A", "--all-namespaces", action="store_true", help="list the jobs of every namespace"
    )
    selector_option(parser, "list only the jobs whose labels match")


def run(args: argparse.Namespace) -> int:
    from t9k_sdk.cli import _cluster
    from t9k_sdk.cli._format import job_row, render_table, table_headers

    positional = _cluster.split_kind_name(args.args)
    if len(positional) > 2:
        raise UsageError("get takes at most KIND and NAME")
    kind = _cluster.kind(positional[0]) if positional else None
    name = positional[1] if len(positional) == 2 else None
    if args.all_namespaces and name:
        raise UsageError("a NAME cannot be combined with -A (--all-namespaces)")
    if args.selector is not None and name:
        raise UsageError("a NAME cannot be combined with -l (--selector)")
    if args.selector is not None and args.watch:
        raise UsageError("-l (--selector) cannot be combined with -w (--watch)")
    paint = _cluster.painter(sys.stdout)
    wide = args.output == "wide"
    with _cluster.connect(args) as client:
        if args.watch:
            return _watch(client, args, kind, name, paint)
        if name is not None:
            assert kind is not None
            jobs = [client.get(kind, name)]
        else:
            jobs = client.list(
                kind, all_namespaces=args.all_namespaces, label_selector=args.selector
            )
        if args.output in ("yaml", "json"):
            _cluster.print_objects(jobs, args.output, single=name is not None)
            return EXIT_OK
        if args.output == "name":
            for job in jobs:
                say(_cluster.ref(job))
            return EXIT_OK
        if not jobs:
            where = "any namespace" if args.all_namespaces else f"namespace {client.namespace!r}"
            what = f"{kind.kind}s" if kind else "jobs"
            matching = f" matching {args.selector!r}" if args.selector is not None else ""
            say(f"No {what}{matching} found in {where}.", sys.stderr)
            return EXIT_OK
        now = time.time()
        rows = [job_row(j, now, namespace=args.all_namespaces, wide=wide) for j in jobs]
        say(render_table(table_headers(namespace=args.all_namespaces, wide=wide), rows, paint))
    return EXIT_OK


def _watch(
    client: Client, args: argparse.Namespace, kind: JobKind | None, name: str | None, paint: Painter
) -> int:
    """`get -w`: the current state, then a line per change. A named job: until it finishes."""
    from t9k_sdk import codecs
    from t9k_sdk.cli import _cluster
    from t9k_sdk.cli._format import job_row, parse_duration, table_headers
    from t9k_sdk.client.job_state import TERMINAL_PHASES

    wide = args.output == "wide"
    headers = table_headers(namespace=args.all_namespaces, wide=wide)
    # Rows are printed as changes arrive, so the columns get generous fixed widths.
    widths = [max(len(h), _WATCH_WIDTHS.get(h, 8)) for h in headers]
    header_shown = False
    timeout = parse_duration(args.watch_timeout) if args.watch_timeout else None
    seen = False
    for change, job in client.watch(
        kind, name, all_namespaces=args.all_namespaces, timeout=timeout
    ):
        seen = True
        if args.output == "json":
            say(json.dumps(_cluster.manifest(job)))
        elif args.output == "yaml":
            sys.stdout.write("---\n" + codecs.dump_all_yaml([_cluster.manifest(job)]))
            sys.stdout.flush()
        elif args.output == "name":
            say(_cluster.ref(job))
        else:
            row = job_row(job, time.time(), namespace=args.all_namespaces, wide=wide)
            if change == "DELETED":
                row[headers.index("PHASE")] = ("<deleted>", None)
            if not header_shown:
                say(_pad(headers, widths))
                header_shown = True
            say(_pad_row(row, widths, paint))
        phase = job.status.phase.value if job.status and job.status.phase else None
        if name is not None and (phase in TERMINAL_PHASES or change == "DELETED"):
            return EXIT_OK
    if name is not None and not seen:
        assert kind is not None
        client.get(kind, name)  # raises JobNotFoundError
    return EXIT_OK


_WATCH_WIDTHS = {"NAMESPACE": 16, "NAME": 20, "KIND": 13, "PHASE": 9, "REASON": 14}


def _pad(headers: Sequence[str], widths: Sequence[int]) -> str:
    return "   ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()


def _pad_row(row: Sequence[Cell], widths: Sequence[int], paint: Painter) -> str:
    out = []
    for i, cell in enumerate(row):
        text, style = (cell, None) if isinstance(cell, str) else cell
        text = visible(text, one_line=True)
        pad = "" if i == len(row) - 1 else " " * max(0, widths[i] - len(text))
        out.append(paint(text, style) + pad)
    return "   ".join(out).rstrip()
