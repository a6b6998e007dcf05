"""`t9k-operator`: reconcile GenericJobs, DeepSpeedJobs and ColossalAIJobs into pods.

    t9k-operator --kubeconfig ~/.kube/config --namespace team-a
    t9k-operator                                   # in a pod: in-cluster config, all namespaces

Exit status: 0 after SIGTERM/SIGINT, 1 when the leader lease is lost (the Deployment restarts the
pod, which then stands by), 2 for bad flags or when the API server cannot be reached at start,
3 when the `operator` extra (the Kubernetes client) is not installed; `--help` works without it.

This module only turns the flags into `manager.ManagerSettings`; `manager.Manager` runs the
process (the API server connection, leader election, health, metrics, signals, the controller).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from t9k_operator import logs
from t9k_operator.controller import ReconcileFn, Settings
from t9k_sdk import __version__, models
from t9k_sdk._extras import install_hint, missing_modules
from t9k_sdk.install import validate_namespace

__all__ = ["build_parser", "main"]

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
EXIT_MISSING_EXTRA = 3
NEEDS = ("kubernetes", "prometheus_client")
"""What the operator imports from the `operator` extra (cryptography is optional: ssh-keygen)."""


def _missing_extra_message(missing: list[str]) -> str:
    return (
        f"t9k-operator needs the `operator` extra of t9k-sdk ({' and '.join(missing)}"
        f" {'is' if len(missing) == 1 else 'are'} not installed). Install it with:\n"
        f"  {install_hint('operator')}"
    )


def _pod_namespace() -> str:
    """Where the Lease lives by default: $POD_NAMESPACE, the service account's, or `default`."""
    env = os.environ.get("POD_NAMESPACE", "").strip()
    if env:
        return env
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or "default"
    except OSError:
        return "default"


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _node_lost_after(text: str) -> int:
    value = int(text)
    if not 0 <= value <= models.MAX_NODE_LOST_AFTER:
        raise argparse.ArgumentTypeError(
            f"must be a whole number of seconds from 0 to {models.MAX_NODE_LOST_AFTER}, got {value}"
        )
    return value


def _namespace(text: str) -> str:
    try:
        return validate_namespace(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _metrics_address(text: str) -> str:
    """`HOST:PORT`, `0` (no metrics) or empty (on the health port)."""
    if text in ("", "0"):
        return text
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give HOST:PORT (e.g. 127.0.0.1:8080, or 0.0.0.0:8080 for every"
            " address), or 0 for no metrics"
        )
    return text


def _seconds_range(text: str) -> tuple[int, int]:
    low, _, high = text.partition(",")
    if not (low.isdigit() and high.isdigit() and 0 < int(low) <= int(high)):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not LOW,HIGH: two whole numbers of seconds, 0 < LOW <= HIGH (e.g. 300,600)"
        )
    return int(low), int(high)


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


def _qps(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(
            f"must be >= 0 requests per second (0: no client-side limit), got {text}"
        )
    return value


def build_parser() -> argparse.ArgumentParser:
    missing = missing_modules(*NEEDS)
    parser = argparse.ArgumentParser(
        prog="t9k-operator",
        description="Reconcile T9k training jobs (GenericJob, DeepSpeedJob, ColossalAIJob) into\n"
        "pods, services, config maps, secrets and pod groups.",
        epilog=_missing_extra_message(missing) if missing else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _add_api_server_flags(parser)
    _add_reconciling_flags(parser)
    _add_leader_election_flags(parser)
    _add_health_and_log_flags(parser)
    return parser


def _add_api_server_flags(parser: argparse.ArgumentParser) -> None:
    """--kubeconfig, --context, and the client's limits: requests per second, page size, watch
    length."""
    api = parser.add_argument_group("API server")
    api.add_argument(
        "--kubeconfig",
        help="kubeconfig file (default: in-cluster config inside a pod, else $KUBECONFIG or"
        " ~/.kube/config)",
    )
    api.add_argument("--context", help="kubeconfig context (default: the current one)")
    api.add_argument(
        "--qps",
        type=_qps,
        default=50.0,
        help="API requests per second (default 50) for each of three token buckets, as client-go"
        " gives each client one: reads and children's writes, status writes, Events; 0: no"
        " client-side rate limit (the API server's own limits still apply)",
    )
    api.add_argument(
        "--burst", type=_positive_int, default=100, help="API request burst (default 100)"
    )
    api.add_argument(
        "--list-page-size",
        type=_positive_int,
        metavar="N",
        help="objects per page when listing (default 500)",
    )
    api.add_argument(
        "--watch-timeout-seconds",
        type=_seconds_range,
        default=Settings.watch_timeout,
        metavar="LOW,HIGH",
        help="the API server ends each watch after a random number of seconds in this range;"
        " the operator then watches again from where it was (default 300,600)",
    )


def _add_reconciling_flags(parser: argparse.ArgumentParser) -> None:
    """What is reconciled and how often: --namespace, --workers, --resync-seconds."""
    work = parser.add_argument_group("reconciling")
    work.add_argument(
        "--namespace",
        type=_namespace,
        help="watch only this namespace (default: all namespaces)",
    )
    work.add_argument(
        "--workers", type=_positive_int, default=4, help="jobs reconciled at once (default 4)"
    )
    work.add_argument(
        "--resync-seconds",
        type=_positive_float,
        default=300.0,
        help="reconcile every job at least this often (default 300)",
    )
    work.add_argument(
        "--node-lost-after",
        type=_node_lost_after,
        default=Settings.node_lost_after,
        metavar="SECONDS",
        help="force-delete and replace a pod whose node has been NotReady this long; a job's"
        f" annotation {models.NODE_LOST_AFTER_ANNOTATION} overrides it (default 300; a pod"
        " whose node is deleted is replaced at once)",
    )


def _add_leader_election_flags(parser: argparse.ArgumentParser) -> None:
    """The Lease that one replica holds at a time."""
    election = parser.add_argument_group("leader election")
    election.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="act only while holding the Lease (default on; --no-leader-elect for one replica)",
    )
    election.add_argument("--lease-name", default="t9k-operator", help="(default t9k-operator)")
    election.add_argument(
        "--lease-namespace",
        type=_namespace,
        help="(default: $POD_NAMESPACE, the service account's namespace, or `default`)",
    )


def _add_health_and_log_flags(parser: argparse.ArgumentParser) -> None:
    """The health and metrics servers, and the log's level and format."""
    serving = parser.add_argument_group("health and logs")
    serving.add_argument(
        "--health-port",
        type=int,
        default=8081,
        help="port of /healthz, /readyz and /metrics (default 8081; 0 picks a free one)",
    )
    serving.add_argument(
        "--health-bind", default="0.0.0.0", help="address of the health server (default 0.0.0.0)"
    )
    serving.add_argument(
        "--metrics-bind-address",
        type=_metrics_address,
        default="",
        metavar="HOST:PORT",
        help="serve /metrics on a server of its own, e.g. 127.0.0.1:8080 for a sidecar or an"
        " authenticating proxy only (as kubebuilder scaffolds do); 0: no metrics at all"
        " (default: on the health port)",
    )
    serving.add_argument(
        "--log-level",
        default="info",
        choices=("debug", "info", "warning", "error"),
        help="(default info)",
    )
    serving.add_argument(
        "--log-format", default="text", choices=("text", "json"), help="(default text)"
    )


def main(argv: Sequence[str] | None = None, *, reconcile: ReconcileFn | None = None) -> int:
    """Run the operator until SIGTERM/SIGINT. `reconcile` replaces the core (tests only)."""
    options = build_parser().parse_args(argv)
    missing = missing_modules(*NEEDS)
    if missing:
        print(f"error: {_missing_extra_message(missing)}", file=sys.stderr)
        return EXIT_MISSING_EXTRA
    from t9k_operator.manager import Manager, ManagerSettings  # the `operator` extra

    logs.setup(options.log_level, options.log_format)
    settings = ManagerSettings(
        controller=Settings(
            namespace=options.namespace,
            workers=options.workers,
            resync_seconds=options.resync_seconds,
            node_lost_after=options.node_lost_after,
            watch_timeout=options.watch_timeout_seconds,
        ),
        kubeconfig=options.kubeconfig,
        context=options.context,
        qps=options.qps,
        burst=options.burst,
        page_size=options.list_page_size,
        leader_elect=options.leader_elect,
        lease_name=options.lease_name,
        lease_namespace=options.lease_namespace or _pod_namespace(),
        health_bind=options.health_bind,
        health_port=options.health_port,
        metrics_bind_address=options.metrics_bind_address,
    )
    return Manager(settings, reconcile=reconcile).run()


if __name__ == "__main__":
    sys.exit(main())
