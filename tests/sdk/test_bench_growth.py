"""bench/growth.py turns a result file into the docs' table and figure (the figures themselves
come from `make bench-operator`, never asserted here), and sizes its cluster for its largest point.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from bench import growth
from bench import operator as bench

PAGE = """# Performance

## Operator at scale

### Growth

{begin}

Run `make bench-operator` to measure.

{end}

## Start-up of the command line
"""


def run(system: str, sweep: str, n: int, m: int, p99: float, **extra: Any) -> dict[str, Any]:
    """One run as bench/operator.py's run_one records it, summarised by bench/growth.py."""
    return {
        "system": system,
        "sweep": sweep,
        "jobs": n,
        "replicas": m,
        "timed_out": False,
        "jobs_complete": n,
        "create_to_all_pods_created": {"p50": p99 / 2, "p90": p99, "p99": p99, "max": p99},
        "controller": {"cpu_seconds_during_run": p99 / 4},
        "seconds_to_all_pods_created": p99 + 1,
        **extra,
    }


@pytest.fixture
def result_file(tmp_path: Path) -> Path:
    result = {
        "command": "make bench-operator",
        "settings": {"qps": 100000.0, "burst": 100000, "workers": 4, "node_pods": 3200},
        "environment": {
            "date": "2026-11-27",
            "machine": "2 CPUs",
            "python": "CPython 3.11.7",
            "kubernetes": "v1.34.10",
            "kwok": "v0.8.0",
        },
        "runs": [
            run("ours", "size", 1, 100, 0.8),
            run("plain", "size", 1, 100, 0.4),
            run("ours", "size", 1, 1000, 6.0),
            run("plain", "size", 1, 1000, 3.0),
            run("ours", "count", 10, 4, 0.3),
            run("plain", "count", 10, 4, 0.2),
            run("ours", "count", 5000, 4, 120.0, timed_out=True, jobs_complete=4100),
            run("plain", "count", 5000, 4, 60.0),
        ],
    }
    path = tmp_path / "operator-growth.json"
    path.write_text(json.dumps(result))
    return path


def test_render_writes_the_table_and_the_figure_it_links(result_file: Path, tmp_path: Path) -> None:
    doc = tmp_path / "docs" / "performance.md"
    image = tmp_path / "docs" / "images" / "operator-growth.svg"
    doc.parent.mkdir()
    doc.write_text(PAGE.format(begin=growth.BEGIN, end=growth.END))

    assert growth.main(["render", str(result_file), "--doc", str(doc), "--image", str(image)]) == 0

    text = doc.read_text()
    assert "Run `make bench-operator` to measure." not in text  # the placeholder is replaced
    assert text.count(growth.BEGIN) == 1
    assert text.count(growth.END) == 1
    assert text.endswith("## Start-up of the command line\n")
    assert "](images/operator-growth.svg)" in text  # relative to the page, as mkdocs serves it
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert rows[0].startswith("| job | t9k operator, p99 (p50) | Python plain client, p99 (p50) |")
    assert "| 1 x 100 | 0.8 s (0.4 s) | 0.4 s (0.2 s) | 2.00x | 0.2 / 0.1 | 1.80 / 1.40 |" in rows
    assert (
        "| 1 x 1,000 | 6.00 s (3.00 s) | 3.00 s (1.50 s) | 2.00x | 1.50 / 0.75 | 7.00 / 4.00 |"
        in rows
    )
    assert (
        "| 10 x 4 | 0.3 s (0.15 s) | 0.2 s (0.1 s) | 1.50x | 0.075 / 0.05 | 1.30 / 1.20 |" in rows
    )
    # A point that timed out says so, with no ratio that would flatter it.
    assert (
        "| 5,000 x 4 | timed out (4,100 of 5,000 jobs) | 60.00 s (30.00 s) | - | 30.00 / 15.00 |"
        " 121 / 61.00 |" in rows
    )

    svg = ET.fromstring(image.read_bytes())
    lines = {
        (panel.attrib["data-title"], line.attrib["data-series"]): len(line.attrib["points"].split())
        for panel in svg.iter("{http://www.w3.org/2000/svg}g")
        if panel.attrib.get("class") == "panel"
        for line in panel.iter("{http://www.w3.org/2000/svg}polyline")
    }
    assert lines == {
        ("Against job size: 1 job of M replicas", "t9k operator"): 2,
        ("Against job size: 1 job of M replicas", "Python plain client"): 2,
        ("Against job count: N jobs of 4 replicas", "t9k operator"): 1,  # 5,000 x 4 timed out
        ("Against job count: N jobs of 4 replicas", "Python plain client"): 2,
    }

    # Rendering again changes nothing: the page and the figure diff cleanly.
    before = (text, image.read_bytes())
    growth.main(["render", str(result_file), "--doc", str(doc), "--image", str(image)])
    assert (doc.read_text(), image.read_bytes()) == before


def test_the_run_keeps_its_wall_time_not_its_timeline() -> None:
    raw = run("ours", "count", 2, 4, 1.0)
    del raw["sweep"], raw["seconds_to_all_pods_created"]
    raw["timeline"] = {
        "first_create_unix": 1.0,
        "columns": ["created", "first_pod", "all_pods", "all_services", "all_running", "status"],
        "jobs": {
            "job-0000": [0.0, 0.2, 0.9, 1.0, 1.1, 1.2],
            "job-0001": [0.1, 0.3, 1.4, 1.5, 1.6, 1.7],
        },
    }

    summary = growth.summarise(raw, "count")

    assert summary["sweep"] == "count"
    assert summary["seconds_to_all_pods_created"] == 1.4
    assert "timeline" not in summary


def test_the_bench_nodes_hold_the_largest_point() -> None:
    points = [growth.shape(p) for p in (*growth.SIZES, *growth.COUNTS)]
    assert max(n * m for n, m in points) == 20_000
    assert growth.node_pods(points) * bench.BENCH_NODES >= 20_000
    # Small points keep bench/operator.py's nodes.
    assert growth.node_pods([(1, 20), (5, 4)]) == int(bench.BENCH_NODE_PODS)


@pytest.mark.parametrize("bad", ["1x", "x4", "0x4", "1x-2", "ten"])
def test_a_point_that_is_not_n_x_m_is_refused(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        growth.main(["--sizes", bad])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert (
        f"argument --sizes: {bad!r}: a point is NxM, N jobs of M replicas (both at least 1),"
        " e.g. 1x100"
    ) in err


def test_a_point_in_both_sweeps_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        growth.main(["--sizes", "4x4", "--counts", "4x4"])
    assert "--sizes and --counts both hold 4x4: give a point once" in capsys.readouterr().err
