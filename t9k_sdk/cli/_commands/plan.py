"""`t9k-sdk plan`: show the pods, services and other objects the operator would create."""

from __future__ import annotations

import argparse
import sys

from t9k_sdk.cli._declare import Subcommands, command
from t9k_sdk.cli._errors import EXIT_FAILED, EXIT_OK, error

__all__ = ["add", "run"]

_HELP = """\
Show what the operator would create for each job, without a cluster: pods (with their commands,
as the operator rewrites them), services, the SSH secret, the hostfile config map and the
PodGroup. It runs the operator's own functions on the job as if it had just been created.

PATH is a YAML (or JSON) manifest file, - for standard input, a Python file defining jobs
(as for `render`: it runs as code), or a directory: its *.yaml, *.yml and *.json files.
Python runs only where you ask for it: a *.py file you name, or with --python the *.py files
below a directory and module names (`pkg.jobs`). Reviewing a pull request with
`t9k-sdk plan DIR` therefore runs none of its code.
"""


def add(sub: Subcommands) -> None:
    parser = command(
        sub,
        "plan",
        help="show the pods, services and other objects the operator would create",
        description=_HELP,
        examples="  t9k-sdk plan examples/deepspeed_bert.yaml\n  t9k-sdk plan jobs/ -o yaml",
        run=run,
    )
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="a YAML file, -, a directory, or Python jobs"
    )
    parser.add_argument(
        "--python",
        action="store_true",
        help="also import the *.py files below a directory, and module names; they run as code",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=("summary", "yaml", "json"),
        default="summary",
        help="summary (default), or the full objects as yaml or json",
    )


def run(args: argparse.Namespace) -> int:
    from t9k_sdk.cli import _sources
    from t9k_sdk.plan import iter_plan_json, iter_plan_summary, iter_plan_yaml

    found = _sources.load_jobs(_sources.expand(args.paths, _sources.PLAN, python=args.python))
    for message in found.errors:
        error(message)
    if found.errors:
        return EXIT_FAILED
    jobs = [b.job for b in found.jobs]
    if not jobs:
        error("no jobs found in " + ", ".join(args.paths))
        return EXIT_FAILED
    # written as it is made: one pod at a time, however many replicas the jobs have
    chunks = {"json": iter_plan_json, "yaml": iter_plan_yaml}.get(args.output, iter_plan_summary)
    for chunk in chunks(jobs):
        sys.stdout.write(chunk)
    sys.stdout.flush()
    return EXIT_OK
