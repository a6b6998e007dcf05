"""`t9k-sdk apply`: create or update jobs on the cluster (server-side apply)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from t9k_sdk.cli._declare import Subcommands, command, file_options
from t9k_sdk.cli._errors import EXIT_FAILED, EXIT_OK, error, say

if TYPE_CHECKING:
    from t9k_sdk.codecs import AnyJob

__all__ = ["add", "run"]


def add(sub: Subcommands) -> None:
    parser = command(
        sub,
        "apply",
        help="create or update jobs on the cluster (server-side apply)",
        description="Create or update the jobs of YAML manifests (or, with --python, Python"
        " files) on the\n"
        "cluster, with server-side apply (field manager t9k-sdk). Applying the same job again\n"
        "changes nothing. Every input is read and validated first: if any is invalid, nothing is\n"
        "applied.\n\n"
        "FILE is a YAML file (.yaml, .yml, .json), `-` (standard input) or a directory (its YAML\n"
        "files). Python job files run as code: they are read only with --python (a directory's\n"
        "*.py files are otherwise skipped with a note). A job without a namespace goes to -n (or\n"
        "the context's).\n\n"
        "--dry-run=server sends the jobs to the API server, which validates them (schema, CEL\n"
        "rules, admission) and answers as if it applied them, but stores nothing;\n"
        "--dry-run=client only reads and validates them with the SDK, without a cluster.",
        examples="  t9k-sdk apply -f manifests/ -n team-a\n  t9k-sdk apply -f jobs/bert.py --python\n"
        "  t9k-sdk render jobs/ | t9k-sdk apply -f -\n"
        "  t9k-sdk apply -f manifests/ --dry-run=server",
        run=run,
        cluster=True,
    )
    file_options(parser, required=True)
    parser.add_argument(
        "--dry-run",
        choices=("none", "client", "server"),
        default="none",
        help="server: the API server checks the jobs but stores nothing; client: check them"
        " offline only (default: none, apply them)",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=("yaml", "json", "name"),
        help="print the jobs as the API server stored them (with --dry-run=server: as it would"
        " store them, defaults filled in; with --dry-run=client: as read and validated) instead"
        " of one line per job",
    )


def run(args: argparse.Namespace) -> int:
    from t9k_sdk.cli import _cluster
    from t9k_sdk.client.errors import ClientError

    jobs = _cluster.load(args, "apply")
    if jobs is None:
        return EXIT_FAILED
    if args.dry_run == "client":
        # Read and validated by the SDK (as the API server's schema would); nothing is sent.
        if args.output is not None:
            _print_applied([_in_namespace(item.job, args.namespace) for item in jobs], args.output)
            return EXIT_OK
        for item in jobs:
            say(f"{_cluster.ref(item.job)} valid (client dry run: not sent to the cluster)")
        return EXIT_OK
    failed = 0
    stored: list[AnyJob] = []
    with _cluster.connect(args) as client:
        for item in jobs:
            try:
                applied = client.apply_report(
                    item.job, args.namespace, dry_run=args.dry_run == "server"
                )
            except ClientError as exc:
                failed += 1
                error(f"{_cluster.ref(item.job)} ({item.origin}): {exc}")
                continue
            if args.output is None:
                say(str(applied))
            stored.append(applied.job)
    if args.output is not None and stored:
        _print_applied(stored, args.output)
    return EXIT_FAILED if failed else EXIT_OK


def _in_namespace(job: AnyJob, namespace: str | None) -> AnyJob:
    """The job with -n's namespace where it names none (as apply would send it)."""
    if namespace is None or job.metadata.namespace:
        return job
    return job.replace(metadata=job.metadata.replace(namespace=namespace))


def _print_applied(jobs: Sequence[AnyJob], output: str) -> None:
    """`apply -o`: the jobs as the API server stored them (or would, with a dry run)."""
    from t9k_sdk.cli import _cluster

    if output == "name":
        for job in jobs:
            say(_cluster.ref(job))
        return
    _cluster.print_objects(jobs, output, single=len(jobs) == 1)
