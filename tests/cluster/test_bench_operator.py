"""bench/operator.py runs end to end (so the harness cannot rot) and writes every figure that
docs/performance.md quotes. The figures themselves come from `make bench-operator`, never
asserted here: `--quick` is 3 jobs of 2 replicas for our operator only, on a control plane of
its own (the audit log that counts API requests needs kube-apiserver started with a policy)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tools.kit import ControlPlane

BENCH = Path(__file__).resolve().parents[2] / "bench" / "operator.py"
GROWTH = BENCH.with_name("growth.py")


def test_quick_run_writes_every_figure(cluster: ControlPlane, tmp_path: Path) -> None:
    # `cluster` only for its rule on skipping (binaries built, or T9K_REQUIRE_CLUSTER=1 fails).
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--json", str(out),
         "--cluster-dir", str(tmp_path / "cluster"), "--timeout", "60"],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.read_text())
    assert set(result["environment"]) >= {"date", "machine", "python", "kubernetes", "kwok"}
    (run,) = result["runs"]
    assert (run["system"], run["jobs"], run["replicas"]) == ("ours", 3, 2)
    assert not run["timed_out"]
    assert run["jobs_complete"] == 3
    for key in ("create_to_all_pods_created", "create_to_all_running", "create_to_status_running"):
        assert set(run[key]) == {"p50", "p90", "p99", "max"}
        assert all(isinstance(v, float) for v in run[key].values()), run[key]
    assert run["jobs_per_second_all_pods_created"] > 0
    # Every pod and service was created once, by the operator's own user, and it wrote statuses.
    assert run["api_requests"]["create pods 201"] == 6
    assert run["api_requests"]["create services 201"] == 6
    assert any(k.startswith("update genericjobs/status") for k in run["api_requests"])
    assert run["api_writes_per_job_without_events"] >= run["minimum_writes_per_job"] == 5
    # The Events it recorded on the jobs were listed: at least one (type, reason) per job.
    assert run["qps"] == 20.0
    assert run["minimum_writes_per_job_with_events"] >= 6
    assert run["job_events"]["distinct_type_reasons_per_job"] >= 1
    assert run["controller"]["peak_rss_mib"] > 0
    assert run["controller"]["cpu_seconds"] > 0
    # The docs' tables render from the file, issue 26's targets first.
    assert "creation → all pods created, p99" in proc.stdout
    assert "| Target (issue 26) | client-side limit | 3 x 2 |" in proc.stdout


def test_growth_runs_both_sweeps_for_both_systems(cluster: ControlPlane, tmp_path: Path) -> None:
    # bench/growth.py (`make bench-operator`'s figure) on tiny points: each sweep, each system.
    out = tmp_path / "growth.json"
    proc = subprocess.run(
        [sys.executable, str(GROWTH), "--sizes", "1x3", "--counts", "2x2", "--json", str(out),
         "--systems", "ours", "plain",  # not plain-go: `make test` builds no client-go
         "--cluster-dir", str(tmp_path / "cluster"), "--timeout", "60"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = json.loads(out.read_text())["runs"]
    assert [(r["sweep"], r["system"], r["jobs"], r["replicas"]) for r in runs] == [
        ("size", "ours", 1, 3),
        ("size", "plain", 1, 3),
        ("count", "ours", 2, 2),
        ("count", "plain", 2, 2),
    ]
    for run in runs:
        assert not run["timed_out"]
        assert "timeline" not in run  # only its wall time is kept
        p99 = run["create_to_all_pods_created"]["p99"]
        assert run["seconds_to_all_pods_created"] >= p99 > 0  # from the first create, not its own
        assert run["controller"]["cpu_seconds_during_run"] > 0
    # The docs' table renders from the run.
    assert "| 1 x 3 |" in proc.stdout
    assert "| 2 x 2 |" in proc.stdout
