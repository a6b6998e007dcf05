"""Memory of one reconcile pass against job size: the first pass of a new GenericJob.

    python bench/pass_memory.py [--replicas 1000 10000] [--env 0 250] [--json FILE]

For each number of replicas and of environment variables per container, the peak memory a
pure `reconcile()` call allocates (tracemalloc) is measured twice in the same process, side by
side: as the operator runs it (at most `core.POD_CREATES_PER_PASS` pods and about
`core.PLAN_BYTES_PER_PASS` of manifests per pass) and with those limits lifted (every pod in
one pass, as before the limits). The operator's own figures with its caches are in
docs/performance.md.
"""

from __future__ import annotations

import sys

# bench/operator.py would shadow the standard library's `operator` (see bench/reconcile.py)
if __name__ == "__main__" and sys.path and sys.path[0].rstrip("/").endswith("bench"):
    del sys.path[0]

import argparse
import gc
import json
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from t9k_sdk import models
from t9k_sdk.reconcile import Observed, core, reconcile

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def job(replicas: int, env: int) -> dict[str, Any]:
    variables = [{"name": f"E{i}", "value": "x" * 20} for i in range(env)]
    container = {"name": "w", "image": "busybox", "env": variables}
    return {
        "apiVersion": models.API_VERSION,
        "kind": "GenericJob",
        "metadata": {"name": "big", "namespace": "ns", "uid": "u"},
        "spec": {
            "replicaSpecs": [
                {
                    "type": "worker",
                    "replicas": replicas,
                    "template": {"spec": {"containers": [container]}},
                }
            ]
        },
    }


def peak(manifest: dict[str, Any], *, limited: bool) -> tuple[int, int]:
    """(peak bytes allocated during one first pass, pods it planned)."""
    saved = core.POD_CREATES_PER_PASS, core.PLAN_BYTES_PER_PASS
    if not limited:
        core.POD_CREATES_PER_PASS, core.PLAN_BYTES_PER_PASS = 10**9, 10**15
    try:
        gc.collect()
        tracemalloc.start()
        plan = reconcile(manifest, Observed(), now=NOW)
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        pods = sum(m["kind"] == "Pod" for m in plan.create)
        del plan
        return top, pods
    finally:
        core.POD_CREATES_PER_PASS, core.PLAN_BYTES_PER_PASS = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--env", type=int, nargs="+", default=[0, 250])
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    rows = []
    print(
        "| replicas | variables | pods in the pass | peak MiB | all pods at once: pods | peak MiB |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for replicas in args.replicas:
        for env in args.env:
            manifest = job(replicas, env)
            limited, limited_pods = peak(manifest, limited=True)
            whole, whole_pods = peak(manifest, limited=False)
            rows.append(
                {
                    "replicas": replicas,
                    "env": env,
                    "limited": {"pods": limited_pods, "peak_bytes": limited},
                    "unlimited": {"pods": whole_pods, "peak_bytes": whole},
                }
            )
            print(
                f"| {replicas:,} | {env} | {limited_pods:,} | {limited / 2**20:.1f}"
                f" | {whole_pods:,} | {whole / 2**20:.1f} |"
            )
    if args.json:
        args.json.write_text(
            json.dumps({"date": datetime.now(UTC).isoformat(), "rows": rows}, indent=2)
        )


if __name__ == "__main__":
    main()
