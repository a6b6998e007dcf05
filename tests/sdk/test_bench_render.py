"""bench/render.py compares like with like, and its report has every figure docs/performance.md
quotes. (The speed itself is measured by `make bench`, not asserted here.)"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "render.py"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    name = "_t9k_bench_render"
    spec = importlib.util.spec_from_file_location(name, BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[name]


@pytest.mark.parametrize("replicas", [4, 64])
def test_both_sides_build_the_same_shape(bench: ModuleType, replicas: int) -> None:
    ours = bench.t9k_builder(replicas).to_dict()
    theirs = bench.ApiClient().sanitize_for_serialization(bench.kubeflow_job(replicas))

    assert bench.shape(ours) == bench.shape(theirs)
    assert bench.shape(ours)["replicas"] == replicas
    assert bench.shape(ours)["containers"] == 2


def test_shape_sees_a_difference(bench: ModuleType) -> None:
    ours = bench.t9k_builder(4).to_dict()
    del ours["spec"]["replicaSpecs"][1]["template"]["spec"]["volumes"][0]
    theirs = bench.ApiClient().sanitize_for_serialization(bench.kubeflow_job(4))

    assert bench.shape(ours) != bench.shape(theirs)


def test_every_case_runs_and_each_pair_runs_back_to_back(bench: ModuleType) -> None:
    order = list(bench.RUN_ORDER)
    assert sorted(order) == sorted(bench.CASES)
    for ours, theirs in bench.RATIOS.values():
        assert 0 < order.index(theirs) - order.index(ours) <= 2


def test_report_has_every_case_and_the_target(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench.json"

    status = bench.main(
        ["--seconds", "0.001", "--repeat", "2", "--sizes", "4", "--jobs", "3", "--json", str(out)]
    )

    assert status == 0
    report = json.loads(out.read_text())
    cases = {r["case"] for r in report["results"]}
    assert cases == set(bench.CASES)
    assert len(cases) == 15
    per_call = {r["case"]: r["jobs_per_call"] for r in report["results"]}
    assert {c for c, n in per_call.items() if n == 3} == set(bench.PARSE_CASES)
    assert report["fairness"]["4"]["parse"]["jobs"] == 3
    assert all(r["best"] > 0 and len(r["rates"]) == 2 for r in report["results"])
    assert set(report["speedups"]) == set(bench.RATIOS)
    assert all(len(s["4"]["ratios"]) == 2 for s in report["speedups"].values())
    assert report["target"]["case"] in report["speedups"]
    printed = capsys.readouterr().out
    assert "target: t9k YAML >= 10x kubeflow's yaml.safe_dump path:" in printed
    assert "kubeflow object -> YAML (sanitize + CSafeDumper)" in printed
    assert "parse YAML stream: t9k load_all_yaml vs kubeflow CSafeLoader" in printed

    assert bench.main(["--markdown", str(out)]) == 0  # the docs' tables, from the JSON alone
    table = capsys.readouterr().out
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert len(rows) == len(bench.CASES) + len(bench.RATIOS) + 4  # two headers, two rules
    assert "| t9k YAML stream → models (`load_all_yaml`) |" in table


def test_the_parse_cases_read_every_job_back_on_both_sides(bench: ModuleType) -> None:
    api = bench.ApiClient()
    data = bench.parse_input(4, 5, api)
    assert bench.check_parse_fair(data, api)["jobs"] == 5
    assert len(bench.load_all_yaml(data.t9k_yaml)) == 5
    assert [j.metadata.name for j in bench.kubeflow_deserialize(api, data.kubeflow_dicts)] == [
        f"bert-{n}" for n in range(5)
    ]
    data.kubeflow_dicts.pop()  # a side that loses a job stops the benchmark
    with pytest.raises(SystemExit):
        bench.check_parse_fair(data, api)
