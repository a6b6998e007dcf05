"""`t9k-sdk scale`: set the number of workers of an elastic DeepSpeedJob."""

from __future__ import annotations

import argparse

from t9k_sdk.cli._declare import Subcommands, command
from t9k_sdk.cli._errors import EXIT_OK, UsageError, say

__all__ = ["add", "run"]


def add(sub: Subcommands) -> None:
    parser = command(
        sub,
        "scale",
        help="set the number of workers of an elastic DeepSpeedJob",
        description="Set spec.elastic.expectedReplicas of an elastic DeepSpeedJob. The number"
        " must lie\n"
        "within spec.elastic.minReplicas..maxReplicas, which are fixed when the job is created;\n"
        "the operator then relaunches the training on the new set of workers.",
        examples="  t9k-sdk scale dj gpt --replicas 6\n  t9k-sdk scale gpt --replicas 2",
        run=run,
        cluster=True,
    )
    parser.add_argument("args", nargs="+", metavar="[dj] NAME")
    parser.add_argument(
        "--replicas", type=int, required=True, metavar="N", help="number of workers"
    )


def run(args: argparse.Namespace) -> int:
    from t9k_sdk.cli import _cluster

    positional = _cluster.split_kind_name(args.args)
    if len(positional) == 2:
        if _cluster.kind(positional[0]).kind != "DeepSpeedJob":
            raise UsageError("only elastic DeepSpeedJobs (dj) can be scaled")
        positional = positional[1:]
    if len(positional) != 1:
        raise UsageError("scale needs the DeepSpeedJob's NAME (optionally after `dj`)")
    with _cluster.connect(args) as client:
        job = client.scale(positional[0], args.replicas)
    elastic = job.spec.elastic
    bounds = f" (elastic {elastic.min_replicas}..{elastic.max_replicas})" if elastic else ""
    say(f"{_cluster.ref(job)} scaled to {args.replicas} workers{bounds}")
    return EXIT_OK
