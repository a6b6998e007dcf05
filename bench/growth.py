"""How the operator's cost grows with the size and the number of jobs, beside the plain-client limit.

    python bench/growth.py                 # both sweeps; JSON in bench/results/operator-growth.json
    python bench/growth.py --doc           # also the table and the figure in the docs
    python bench/growth.py --quick         # 1x20 1x50 and 5x4 20x4: a smoke test of a few minutes
    python bench/growth.py render bench/results/operator-growth.json   # the table and figure again

Two sweeps: job size, one job of 100, 300, 1,000, 3,000 and 10,000 replicas (`--sizes`), and
job count, 10, 50, 250, 1,000 and 5,000 jobs of 4 replicas (`--counts`). At each point every
system (`--systems`, default our operator and the plain client) runs as bench/operator.py runs
a shape (its `run_one`: a fresh namespace, the controller started for it, N jobs created by 16
threads), one after another on one control plane of its own (tools/cluster.py, kwok only, in
.bench-cluster/), whose 8 kwok nodes are sized to hold the largest point's pods. Recorded per
point and system: p50 and p99 of creation -> all pods created, the wall time from the first
create to the last job's pods (from the run's timeline) and the controller's CPU seconds. A run
ends once every job has all its pods and services: whether they then run is the scheduler's
and kwok's business (binding 20,000 pods takes kube-scheduler minutes), not the controller's.

The point is each controller's own cost, not its token bucket's, so every controller runs with
`--qps 0`: no client-side limit at all. The limit at each point is the faster of the two plain
clients (Python and Go).

`--doc` (which `make bench-operator` passes) writes the table into docs/performance.md between
the `operator-growth` markers and the figure, p99 against job size and against job count with
both axes logarithmic, to docs/images/operator-growth.svg.
"""

from __future__ import annotations

import sys

# Run as a script, this file's directory comes first on sys.path, where bench/operator.py would
# shadow the standard library's `operator` module (which argparse, collections, ... import).
if __name__ == "__main__" and sys.path and sys.path[0].rstrip("/").endswith("bench"):
    del sys.path[0]

import argparse
import json
import math
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import _svg  # noqa: E402  (the checkout first on sys.path)
from bench import operator as bench  # noqa: E402
from bench._docs import write_block  # noqa: E402

SYSTEMS = ("ours", "plain", "plain-go")
"""Our operator and the limits it is measured against, each a system of bench/operator.py; the
limit at a point is the fastest of those that ran there."""
NAMES = {"ours": "t9k operator", "plain": "Python plain client", "plain-go": "Go plain client"}
SIZES = ("1x100", "1x300", "1x1000", "1x3000", "1x10000")
COUNTS = ("10x4", "50x4", "250x4", "1000x4", "5000x4")
QUICK_SIZES = ("1x20", "1x50")
QUICK_COUNTS = ("5x4", "20x4")
QPS = 0.0
"""No client-side limit."""
BURST = 100
FIGURE = REPO / "docs" / "images" / "operator-growth.svg"
BEGIN = "<!-- operator-growth:begin (bench/growth.py render writes this part) -->"
END = "<!-- operator-growth:end -->"
HEADROOM = 1.25
"""The bench nodes hold this many times the largest point's pods: a namespace whose deletion
outlasts bench/operator.py's wait does not fill them."""


def shape(text: str) -> tuple[int, int]:
    """Parse "NxM": N jobs of M replicas each."""
    parts = text.lower().split("x")
    if len(parts) != 2 or not all(p.isdigit() and int(p) >= 1 for p in parts):
        raise argparse.ArgumentTypeError(
            f"{text!r}: a point is NxM, N jobs of M replicas (both at least 1), e.g. 1x100"
        )
    return int(parts[0]), int(parts[1])


def node_pods(points: Sequence[tuple[int, int]]) -> int:
    """Pods each bench node must hold for the largest point (at least bench/operator.py's)."""
    largest = max(n * m for n, m in points)
    need = math.ceil(largest * HEADROOM / bench.BENCH_NODES / 100) * 100
    return max(int(bench.BENCH_NODE_PODS), need)


def summarise(run: dict[str, Any], sweep: str) -> dict[str, Any]:
    """bench/operator.py's result of one run, with its sweep and its wall time to the last job's
    pods in place of its timeline (thousands of numbers at the largest points)."""
    timeline = run.pop("timeline")
    column = timeline["columns"].index("all_pods")
    done = [times[column] for times in timeline["jobs"].values()]
    run["sweep"] = sweep
    run["seconds_to_all_pods_created"] = (
        None if run["timed_out"] or None in done or not done else max(done)
    )
    return run


def clear(kube: bench.Kube, namespace: str, timeout: float) -> None:
    """Delete a run's namespace and wait until it is gone, however long its 20,000 pods take (up
    to `timeout`): the next run must not share the API server and the nodes with them."""
    bench.delete_namespace(kube, namespace)  # which gives up waiting after 300 s
    bench.wait_until(
        f"namespace {namespace} to be deleted",
        lambda: kube.request("GET", f"/api/v1/namespaces/{namespace}")[0] == 404,
        timeout,
        1.0,
    )


# --- the table and the figure ------------------------------------------------------------------


def p99(run: dict[str, Any] | None) -> float | None:
    if run is None or run["timed_out"]:
        return None
    value: float | None = run["create_to_all_pods_created"]["p99"]
    return value


def points(result: dict[str, Any], sweep: str) -> list[tuple[int, int]]:
    """The sweep's points, in the order they ran."""
    seen = [(r["jobs"], r["replicas"]) for r in result["runs"] if r["sweep"] == sweep]
    return list(dict.fromkeys(seen))


def systems(result: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys(r["system"] for r in result["runs"]))


def find(result: dict[str, Any], sweep: str, point: tuple[int, int], system: str) -> Any:
    return next(
        (
            r
            for r in result["runs"]
            if r["sweep"] == sweep and (r["jobs"], r["replicas"]) == point and r["system"] == system
        ),
        None,
    )


def name(system: str) -> str:
    return NAMES.get(system, system)


def limit_name(result: dict[str, Any]) -> str:
    limits = [s for s in systems(result) if s != "ours"]
    return name(limits[0]) if len(limits) == 1 else "the fastest plain client at that point"


def cell(run: dict[str, Any] | None) -> str:
    """p99 (p50) of creation -> all pods created."""
    if run is None:
        return "not run"
    if run["timed_out"]:
        return f"timed out ({run['jobs_complete']:,} of {run['jobs']:,} jobs)"
    lat = run["create_to_all_pods_created"]
    return f"{bench.fmt(lat['p99'], ' s')} ({bench.fmt(lat['p50'], ' s')})"


def table(result: dict[str, Any], sweep: str) -> list[str]:
    ran = systems(result)
    limits = [s for s in ran if s != "ours"]
    head = ["job" if sweep == "size" else "jobs", *(f"{name(s)}, p99 (p50)" for s in ran)]
    head += ["ratio, p99", "CPU seconds", "seconds to the last pod"]
    lines = ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 1)]
    for point in points(result, sweep):
        runs = {s: find(result, sweep, point, s) for s in ran}
        ours = runs.get("ours")
        timed = [s for s in limits if p99(runs[s]) is not None]
        best = min(timed, key=lambda s: p99(runs[s]) or 0.0, default=None)
        limit = runs[best] if best else None
        which = f" ({name(best)})" if best and len(limits) > 1 else ""

        def pair(get: Any, both: tuple[Any, Any] = (ours, limit)) -> str:
            return " / ".join(bench.fmt(get(r)) if r else "-" for r in both)

        row = [f"{point[0]:,} x {point[1]:,}", *(cell(runs[s]) for s in ran)]
        row += [
            bench.ratio(p99(ours), p99(limit)) + which,
            pair(lambda r: r["controller"]["cpu_seconds_during_run"]),
            pair(lambda r: r["seconds_to_all_pods_created"]),
        ]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def count_title(result: dict[str, Any]) -> str:
    replicas = {m for _, m in points(result, "count")}
    return f"Against job count: N jobs of {replicas.pop() if len(replicas) == 1 else 'M'} replicas"


def figure(result: dict[str, Any]) -> str | None:
    """The SVG of p99 creation -> all pods created against job size and against job count; None
    where no point has a figure. Both axes are logarithmic: the points grow by a factor of about
    3 from one to the next, and so, roughly, do the times, so on linear axes the small points
    would lie on top of each other in a corner; on log axes each point has its own place, a line
    of slope 1 is cost in proportion to size, and the gap between two lines is their ratio, read
    the same at every size."""
    panels = []
    for sweep, title, x_label, x_of in (
        ("size", "Against job size: 1 job of M replicas", "replicas in the job (M)", 1),
        ("count", count_title(result), "jobs (N)", 0),
    ):
        series = []
        for system in systems(result):
            pts = [
                (float(point[x_of]), y)
                for point in points(result, sweep)
                if (y := p99(find(result, sweep, point, system))) is not None
            ]
            if pts:
                series.append(_svg.Series(name(system), pts))
        if series:
            y_label = "creation → all pods created, p99 (s)"
            panels.append(_svg.Panel(title, x_label, y_label, series, y_unit="s"))
    if not panels:
        return None
    return _svg.line_chart(
        panels,
        "How the time from a job's creation to all its pods grows with job size and job count",
        "p99 seconds from creation to all pods created, log scale, against the replicas in one job"
        " and against the number of jobs, one line per controller.",
    )


def render(result: dict[str, Any], image: str | None) -> str:
    """The docs block; `image` is the figure's path relative to the page (None: no figure)."""
    env, s = result["environment"], result["settings"]
    lines = [
        BEGIN,
        "",
        f"Measured {env['date']} on {env['machine']}; {env['python']}, kube-apiserver"
        f" {env['kubernetes']}, kwok {env['kwok']}. Every controller at `--qps {s['qps']:g}"
        f" --burst {s['burst']}` and {s['workers']} workers, on {bench.BENCH_NODES} kwok nodes"
        f" of {s['node_pods']:,} pods. Command: `{result['command']}`.",
        "",
    ]
    if image is not None:
        shown = ", ".join(name(system) for system in systems(result))
        lines += [
            f"![p99 creation → all pods created against job size and against job count: {shown}]"
            f"({image})",
            "",
        ]
    lines += [
        "Per point: creation → all pods created, p99 and (in brackets) p50 over the jobs; the"
        f" ratio of the t9k operator's p99 to that of the limit ({limit_name(result)}); the"
        " controller's CPU seconds during the run and the seconds from the first create to the"
        " last job's pods, each as t9k operator / the limit.",
        "",
    ]
    for sweep, title in (
        ("size", "Against job size: 1 job of M replicas"),
        ("count", count_title(result)),
    ):
        if points(result, sweep):
            lines += [f"#### {title}", "", *table(result, sweep), ""]
    lines.append(END)
    return "\n".join(lines)


def write_doc(result: dict[str, Any], doc: Path = bench.DOC, image: Path = FIGURE) -> None:
    """The figure to `image`, the block with the table (and the figure's link) into `doc`."""
    svg = figure(result)
    link = None
    if svg is not None:
        image.parent.mkdir(parents=True, exist_ok=True)
        image.write_text(svg, encoding="utf-8")
        link = Path(os.path.relpath(image.resolve(), doc.parent.resolve())).as_posix()
    write_block(doc, render(result, link), BEGIN, END)


# --- main --------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["render"]:
        p = argparse.ArgumentParser(prog="bench/growth.py render")
        p.add_argument("json", type=Path, help="a result file of bench/growth.py")
        p.add_argument("--doc", type=Path, default=bench.DOC, help="(default %(default)s)")
        p.add_argument("--image", type=Path, default=FIGURE, help="(default %(default)s)")
        p.add_argument("--print", action="store_true", help="print the table, leave the doc")
        a = p.parse_args(argv[1:])
        saved = json.loads(a.json.read_text())
        if a.print:
            print(render(saved, None))
        else:
            write_doc(saved, a.doc, a.image)
            print(f"updated {a.doc} and {a.image}")
        return 0

    p = argparse.ArgumentParser(
        prog="bench/growth.py",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    p.add_argument(
        "--sizes",
        nargs="+",
        type=shape,
        metavar="NxM",
        help=f"the job-size sweep (default {' '.join(SIZES)})",
    )
    p.add_argument(
        "--counts",
        nargs="+",
        type=shape,
        metavar="NxM",
        help=f"the job-count sweep (default {' '.join(COUNTS)})",
    )
    p.add_argument("--systems", nargs="+", choices=SYSTEMS, help=f"(default: {' '.join(SYSTEMS)})")
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"sizes {' '.join(QUICK_SIZES)} and counts {' '.join(QUICK_COUNTS)}",
    )
    p.add_argument(
        "--qps",
        type=float,
        default=QPS,
        help="every controller's client-side limit, requests/s (default %(default)g)",
    )
    p.add_argument("--burst", type=int, default=BURST, help="(default %(default)s)")
    p.add_argument("--workers", type=int, default=4, help="(default %(default)s)")
    p.add_argument("--timeout", type=float, default=1800.0, help="per run (default 1800 s)")
    p.add_argument("--json", type=Path, help="(default bench/results/operator-growth[-quick].json)")
    p.add_argument("--doc", action="store_true", help="also write the table and the figure")
    p.add_argument("--cluster-dir", type=Path, default=bench.BENCH_CLUSTER)
    p.add_argument("--keep-cluster", action="store_true")
    a = p.parse_args(argv)
    sizes = a.sizes or [shape(x) for x in (QUICK_SIZES if a.quick else SIZES)]
    counts = a.counts or [shape(x) for x in (QUICK_COUNTS if a.quick else COUNTS)]
    both = sorted(set(sizes) & set(counts))
    if both:
        p.error(f"--sizes and --counts both hold {both[0][0]}x{both[0][1]}: give a point once")
    chosen = a.systems or list(SYSTEMS)
    out = a.json or bench.RESULTS / f"operator-growth{'-quick' if a.quick else ''}.json"
    subprocess.run(
        [str(REPO / "tools" / "ensure-binaries.sh")], check=True, stdout=subprocess.DEVNULL
    )
    state_dir = a.cluster_dir.resolve()
    work = state_dir.parent / f"{state_dir.name}-logs"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    s = bench.Settings(
        qps=a.qps,
        burst=a.burst,
        workers=a.workers,
        timeout=a.timeout,
        work_dir=work,
        kubeflow_dir=None,
        timeline=True,
        until_created=True,
        plain_go=bench.ensure_bench_binaries("--plain-client") if "plain-go" in chosen else None,
    )
    pods = node_pods([*sizes, *counts])
    command = " ".join(["python bench/growth.py", *argv])
    result: dict[str, Any] = {
        "command": "make bench-operator" if argv in ([], ["--doc"]) else command,
        "settings": {"qps": a.qps, "burst": a.burst, "workers": a.workers, "node_pods": pods},
        "runs": [],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    todo = [
        (sweep, n, m, system)
        for sweep, shapes in (("size", sizes), ("count", counts))
        for n, m in shapes
        for system in chosen
    ]
    with bench.bench_cluster(state_dir, a.keep_cluster) as kubeconfig:
        kube = bench.Kube(kubeconfig)
        bench.add_bench_nodes(kube, str(pods))
        result["environment"] = bench.environment(kube, s)
        for k, (sweep, n, m, system) in enumerate(todo):
            run = bench.run_one(system, n, m, kube, state_dir, s)
            result["runs"].append(summarise(run, sweep))
            out.write_text(json.dumps(result, indent=2) + "\n")  # what is done so far
            if k + 1 < len(todo):  # the last one goes with the cluster
                clear(kube, run["namespace"], a.timeout)
    bench.log(f"wrote {out}; controller logs in {work}")
    if a.doc:
        write_doc(result)
        print(f"updated {bench.DOC} and {FIGURE}")
    print(render(result, None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
