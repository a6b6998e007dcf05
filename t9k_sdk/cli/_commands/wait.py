"""`t9k-sdk wait`: wait until a job reaches a phase or condition; fail fast when it fails or is
stuck."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from t9k_sdk.cli._declare import KINDS_HELP, Subcommands, command
from t9k_sdk.cli._errors import EXIT_FAILED, EXIT_OK, EXIT_TIMEOUT, UsageError, error, say

if TYPE_CHECKING:
    from t9k_sdk.client.job_state import Progress, WaitTarget

__all__ = ["add", "run"]


def add(sub: Subcommands) -> None:
    parser = command(
        sub,
        "wait",
        help="wait until a job reaches a phase or condition; fail fast when it fails or is stuck",
        description="Wait, through a watch, until the job reaches a phase (--for phase=Succeeded,"
        " the\n"
        "default) or a condition (--for condition=Completed, condition=Paused=False). Progress\n"
        "goes to standard error.\n\n"
        "Stops early, with exit status 1 and the reason, when the job fails (its failure\n"
        "message, e.g. `Pod[mnist-worker-0] exited with error code 2`), when it finishes in\n"
        "another state, or when it is stuck for the grace period: a pod that fits no node\n"
        "(Unschedulable, with the scheduler's message), ImagePullBackOff, ErrImagePull,\n"
        "InvalidImageName, CrashLoopBackOff, CreateContainerConfigError; an expired launcher\n"
        "barrier stops it at once. Exit status 3 when the timeout passes first.\n\n" + KINDS_HELP,
        examples="  t9k-sdk wait gj mnist\n  t9k-sdk wait dj bert --for phase=Running --timeout 10m\n"
        "  t9k-sdk wait gj mnist --for condition=Completed --stuck-grace 0",
        run=run,
        cluster=True,
    )
    parser.add_argument("args", nargs="+", metavar="KIND NAME")
    parser.add_argument(
        "--for",
        dest="for_",
        type=_wait_target,
        default="phase=Succeeded",
        metavar="phase=PHASE|condition=TYPE[=True|False]",
        help="what to wait for (default: phase=Succeeded)",
    )
    parser.add_argument(
        "--timeout",
        default="1h",
        metavar="DURATION",
        help="give up after this long, e.g. 90s, 10m, 2h (default 1h; 0 or none: no limit)",
    )
    parser.add_argument(
        "--stuck-grace",
        default="60s",
        metavar="DURATION",
        help="how long a job may stay stuck before giving up (default 60s; 0: at once)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on standard error")


def _wait_target(text: str) -> WaitTarget:
    """`--for`, parsed once, when the command line is read (argparse's `type`)."""
    from t9k_sdk.client.job_state import WaitTarget

    try:
        return WaitTarget.parse(text)
    except ValueError as exc:
        message = str(exc)
        if repr(text) not in message:
            message = f"{text!r}: {message}"
        if "phase=PHASE" not in message:
            message += " (--for takes phase=PHASE or condition=TYPE[=True|False])"
        raise argparse.ArgumentTypeError(message) from None


def run(args: argparse.Namespace) -> int:
    from t9k_sdk.cli import _cluster
    from t9k_sdk.cli._format import PHASE_STYLES, parse_duration
    from t9k_sdk.client.errors import WaitError, WaitTimeoutError
    from t9k_sdk.client.format import human_age

    kind, name = _cluster.kind_and_name(args.args, "wait")
    target: WaitTarget = args.for_
    try:
        timeout = parse_duration(args.timeout) if args.timeout.lower() != "none" else None
        timeout = timeout or None  # 0: no limit
        grace = parse_duration(args.stuck_grace)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    err = sys.stderr
    paint = _cluster.painter(err)
    start = time.monotonic()
    ref = f"{kind.label}/{name}"

    def progress(step: Progress) -> None:
        elapsed = human_age(time.monotonic() - start)
        line = step.line.replace(step.phase, paint(step.phase, PHASE_STYLES.get(step.phase)), 1)
        if step.stuck is not None and not step.stuck.immediate:
            line += f" [stuck: gives up after {human_age(grace)} unless this changes]"
        say(f"[{elapsed:>5}] {ref} {line}", err)

    with _cluster.connect(args) as client:
        try:
            job = client.wait(
                kind,
                name,
                target=target,
                timeout=timeout,
                stuck_grace=grace,
                on_progress=None if args.quiet else progress,
            )
        except WaitTimeoutError as exc:
            error(f"{ref}: timed out: {exc.message}")
            return EXIT_TIMEOUT
        except WaitError as exc:
            error(f"{ref}: {exc.reason}: {exc.message}")
            ns = f" -n {exc.namespace}" if args.namespace else ""
            say(f"  see `t9k-sdk describe {kind.short_name} {name}{ns}` for details", sys.stderr)
            return EXIT_FAILED
    elapsed = human_age(time.monotonic() - start)
    say(f"{_cluster.ref(job)} {target} reached after {elapsed}")
    return EXIT_OK
