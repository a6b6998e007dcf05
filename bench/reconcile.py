"""Reconcile pass time against job size: one pure `reconcile()` call, up to the largest job.

    python bench/reconcile.py [--sizes 100 1000 10000] [--repeat 3] [--json FILE]

For each kind (GenericJob with two replica types, per-replica services and variables to
substitute; DeepSpeedJob; ColossalAIJob) and each number of pods n, three passes are timed:

* first: a new job, nothing observed; the pass plans the first batch of pods (at most 500, as
  the ReplicaSet controller creates per sync) and the config maps and secrets;
* midway: the first half of the pods exist and run, the rest wait for later passes: the middle
  of a big job's creation (a job of one pass, 500 pods or fewer, has them all by then);
* steady: every pod exists and runs, the status lists them all; the pass plans nothing.

Each is run `--repeat` times and the best time is reported (time.perf_counter), with the time
per pod. A linear pass keeps the time per pod flat from 100 to 10,000 pods (the largest job the
SDK and the CRDs accept, `models.MAX_PODS`). The structural check of linearity, independent of
the machine, is tests/reconcile/test_linearity.py.
"""

from __future__ import annotations

import sys

# Run as a script, this file's directory comes first on sys.path, where bench/operator.py would
# shadow the standard library's `operator` module (which argparse, collections, ... import).
if __name__ == "__main__" and sys.path and sys.path[0].rstrip("/").endswith("bench"):
    del sys.path[0]

import argparse
import json
import platform
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from t9k_sdk import models
from t9k_sdk.reconcile import Observed, Plan, reconcile

NOW = datetime(2026, 1, 1, tzinfo=UTC)
API = models.API_VERSION


def _pod(name: str, **container: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": name, "image": "busybox", **container}]}}


def generic(n: int) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "GenericJob",
        "metadata": {"name": "bench"},
        "spec": {
            "replicaSpecs": [
                {"type": "ps", "replicas": 1, "template": _pod("ps")},
                {
                    "type": "worker",
                    "replicas": n - 1,
                    "template": _pod("worker", args=["--ps=$(service.ps[0].host)", "$(rank)"]),
                },
            ],
            "service": {"ports": [{"name": "http", "port": 80}]},
        },
    }


def deepspeed(n: int) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "DeepSpeedJob",
        "metadata": {"name": "bench"},
        "spec": {
            "config": {"run": {"python": ["train.py"]}},
            "worker": {"replicas": n, "template": _pod("worker")},
        },
    }


def colossalai(n: int) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ColossalAIJob",
        "metadata": {"name": "bench"},
        "spec": {
            "torchConfig": {"script": ["train.py"]},
            "replicaSpecs": [
                {"type": "launcher", "template": _pod("launcher")},
                {"type": "worker", "replicas": n - 1, "template": _pod("worker")},
            ],
        },
    }


KINDS: dict[str, Callable[[int], dict[str, Any]]] = {
    "GenericJob": generic,
    "DeepSpeedJob": deepspeed,
    "ColossalAIJob": colossalai,
}


def running(plan: Plan, first_uid: int = 0) -> tuple[dict[str, Any], ...]:
    """The pods a pass created, as the API server returns them once they run."""
    out = []
    for i, manifest in enumerate(plan.create, start=first_uid):
        if manifest["kind"] != "Pod":
            continue
        status = {
            "phase": "Running",
            "containerStatuses": [
                {"name": c["name"], "ready": True, "state": {"running": {}}}
                for c in manifest["spec"]["containers"]
            ],
        }
        meta = {**manifest["metadata"], "uid": f"uid-{i}"}
        out.append({**manifest, "metadata": meta, "status": status})
    return tuple(out)


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(kind: str, n: int, repeat: int) -> dict[str, Any]:
    job = KINDS[kind](n)
    job["metadata"].update(uid="job-uid", namespace="ns")
    pods: tuple[dict[str, Any], ...] = ()
    half: tuple[dict[str, Any], ...] = ()
    while len(pods) < n:  # a pass plans at most a batch of pods (core.POD_CREATES_PER_PASS)
        more = running(reconcile(job, Observed(pods=pods), now=NOW), first_uid=len(pods))
        assert more, (kind, n, len(pods))
        pods += more
        if not half and len(pods) >= n // 2:
            half = pods
    assert len(pods) == n, (kind, n, len(pods))
    observed = Observed(pods=pods)
    steady_job = {**job, "status": reconcile(job, observed, now=NOW).status}
    # midway: the first half of the pods run, the rest wait for later passes (or, for a job of
    # one pass, all of them exist and this is a steady pass)
    halfway = Observed(pods=half)
    middle_job = {**job, "status": reconcile(job, halfway, now=NOW).status}
    t_first = best(lambda: reconcile(job, Observed(), now=NOW), repeat)
    t_middle = best(lambda: reconcile(middle_job, halfway, now=NOW), repeat)
    t_steady = best(lambda: reconcile(steady_job, observed, now=NOW), repeat)
    return {
        "kind": kind,
        "pods": n,
        "first_s": t_first,
        "middle_s": t_middle,
        "steady_s": t_steady,
        "first_us_per_pod": t_first / n * 1e6,
        "steady_us_per_pod": t_steady / n * 1e6,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, models.MAX_PODS])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = [measure(kind, n, args.repeat) for kind in KINDS for n in args.sizes]
    print(f"Python {platform.python_version()} on {platform.machine()}, best of {args.repeat}")
    print(
        f"{'kind':<14} {'pods':>6} {'first pass':>11} {'per pod':>9} {'midway':>9}"
        f" {'steady':>9} {'per pod':>9}"
    )
    for r in rows:
        print(
            f"{r['kind']:<14} {r['pods']:>6} {r['first_s'] * 1000:>9.0f}ms"
            f" {r['first_us_per_pod']:>7.0f}us {r['middle_s'] * 1000:>7.0f}ms"
            f" {r['steady_s'] * 1000:>7.0f}ms {r['steady_us_per_pod']:>7.0f}us"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
