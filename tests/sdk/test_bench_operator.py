"""bench/operator.py's own logic, without a cluster: the Go plain client's template (it must
create exactly what the Python plain client creates), the minimum writes with Events, and the
tables and targets that `render` writes into docs/performance.md."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench import operator as bench

UID = "3f6c2a51-8d1e-4c3b-9a57-0e2d4b6f8a10"


def stored(name: str, replicas: int, namespace: str = "bench-plain-go-10x4-q0") -> dict[str, Any]:
    """The bench's GenericJob as the API server returns it."""
    job = bench.generic_job(name, replicas)
    job["metadata"].update(namespace=namespace, uid=UID, resourceVersion="7", generation=1)
    return job


def test_the_go_clients_template_gives_each_job_exactly_the_python_clients_creates() -> None:
    template = bench.children_template(stored(bench.SENTINEL_NAME, 3))
    # What the Go client reads (json.RawMessage bodies, the sentinels it substitutes) ...
    assert (template["name"], template["uid"]) == (bench.SENTINEL_NAME, bench.SENTINEL_UID)
    on_disk = json.loads(json.dumps(template))
    assert all(
        bench.SENTINEL_NAME in json.dumps(c["body"]) and bench.SENTINEL_UID in json.dumps(c["body"])
        for c in on_disk["children"]
    )
    # ... and what it then sends for a job: the plain client's creates for that job, in order.
    other_uid = "c0ffee00-1111-4222-8333-444455556666"
    sent = bench.fill_children(on_disk, "job-0007", other_uid)
    job = stored("job-0007", 3)
    job["metadata"]["uid"] = other_uid
    assert sent == bench.creates(job)
    assert [c["path"].rsplit("/", 1)[1] for c in sent] == ["pods"] * 3 + ["services"] * 3
    assert sent[0]["body"]["metadata"]["ownerReferences"][0]["uid"] == other_uid
    assert sent[4]["body"]["spec"]["selector"] == {"genericjob-replica": "job-0007-worker-0"}
    assert bench.SENTINEL_NAME not in json.dumps(sent)


def test_a_template_whose_sentinel_occurs_elsewhere_is_refused() -> None:
    job = stored(bench.SENTINEL_NAME, 2)
    job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["args"] = [
        bench.SENTINEL_NAME
    ]
    with pytest.raises(ValueError, match="do not depend on its name and uid only"):
        bench.children_template(job)


def test_minimum_writes_count_one_event_per_type_and_reason_on_each_job() -> None:
    class Pages:
        """The namespace's Events in two pages."""

        def must(self, method: str, path: str, query: Any = (), **_: Any) -> dict[str, Any]:
            assert (method, path) == ("GET", "/api/v1/namespaces/ns/events")

            def ev(name: str, kind: str, reason: str) -> dict[str, Any]:
                about = {"kind": kind, "name": name}
                return {"type": "Normal", "reason": reason, "involvedObject": about}

            if ("continue", "p2") not in query:
                return {
                    "items": [ev("job-0", "GenericJob", "SuccessfulCreate")] * 3
                    + [ev("job-0-master-0", "Pod", "Scheduled")],
                    "metadata": {"continue": "p2"},
                }
            return {
                "items": [
                    ev("job-0", "GenericJob", "Running"),
                    ev("job-1", "GenericJob", "SuccessfulCreate"),
                ],
                "metadata": {},
            }

    events = bench.job_events(Pages(), "ns", "GenericJob")  # type: ignore[arg-type]
    assert events == {
        "job-0": {"Normal Running": 1, "Normal SuccessfulCreate": 3},
        "job-1": {"Normal SuccessfulCreate": 1},
    }
    # 2 x 4 children + a status, and (2 + 1) / 2 kinds of Event per job
    assert bench.minimum_writes("ours", 4, 2, events) == 9 + 1.5
    assert bench.minimum_writes("plain-go", 4, 2, {}) == 8


def run(system: str, qps: float, p99_pods: float, cpu: float, writes: float = 10.0) -> Any:
    """A run as run_one records it, 10 jobs of 4 (40 pods and 40 services created)."""
    latency = {"p50": p99_pods / 2, "p90": p99_pods, "p99": p99_pods, "max": p99_pods}
    return {
        "system": system,
        "jobs": 10,
        "replicas": 4,
        "qps": qps,
        "burst": 30,
        "namespace": f"bench-{system}-10x4-{bench.qps_name(qps)}",
        "timed_out": False,
        "jobs_complete": 10,
        "create_to_all_pods_created": latency,
        "create_to_all_children_created": latency,
        "create_to_all_running": latency,
        "create_to_status_running": None if system in bench.NO_STATUS else latency,
        "jobs_per_second_all_pods_created": 1.0,
        "jobs_per_second_all_running": 1.0,
        "api_requests": {"create pods 201": 40, "create services 201": 40, "create events 201": 20},
        "api_requests_per_job_by_verb": {"create": 10.0},
        "api_writes_per_job": writes,
        "api_writes_per_job_without_events": 8.0,
        "minimum_writes_per_job": 8 if system in bench.NO_STATUS else 9,
        "minimum_writes_per_job_with_events": 8 if system in bench.NO_STATUS else 10,
        "controller": {"peak_rss_mib": 50.0, "cpu_seconds": 9.0, "cpu_seconds_during_run": cpu},
    }


ENVIRONMENT = {
    "date": "2025-01-01",
    "machine": "test",
    "python": "CPython 3",
    "kubernetes": "v1.34.10",
    "kwok": "v0.8.0",
    "training_operator": "v1.8.1",
    "go": "go1.25",
}


def test_targets_compare_ours_with_the_faster_plain_client_at_each_limit() -> None:
    result = {
        "command": "make bench-operator",
        "environment": ENVIRONMENT,
        "settings": {"qps": [20.0, 0.0], "burst": 30, "workers": 4},
        "runs": [
            run("plain", 20.0, 10.0, cpu=0.8),
            run("plain-go", 20.0, 9.5, cpu=0.2),
            run("ours", 20.0, 10.0, cpu=1.6, writes=10.0),
            run("plain", 0.0, 2.0, cpu=0.8),
            run("plain-go", 0.0, 1.0, cpu=0.2),
            run("ours", 0.0, 1.5, cpu=2.4, writes=12.0),
        ],
    }
    rows = {
        (line.split(" | ")[0], line.split(" | ")[1]): line.split(" | ")[2].rstrip(" |")
        for line in bench.targets(result)[2:]
    }
    pods = "| p99 creation → all pods created within 1.1x of the faster plain client"
    cpu = "| CPU seconds per pod or service created within 2x of the Python plain client"
    writes = "| API writes per job within 1.1x of the minimum with Events counted"
    at_20, unlimited = "`--qps 20 --burst 30`", "no client-side limit (`--qps 0`)"
    assert rows[pods, at_20] == "**met**: 1.05x (the Go client)"
    assert rows[pods, unlimited] == "not met: 1.50x (the Go client)"
    assert rows[cpu, at_20] == "**met**: 2.00x"  # 1.6 / 80 against 0.8 / 80
    assert rows[cpu, unlimited] == "not met: 3.00x"
    assert rows[writes, at_20] == "**met**: 1.00x (10 for 10)"
    assert rows[writes, unlimited] == "not met: 1.20x (12 for 10)"

    text = bench.render(result)
    assert "#### `--qps 20 --burst 30`" in text
    assert "#### No client-side limit (`--qps 0`)" in text
    assert text.count("##### 10 jobs x 4 replicas") == 2
    header = "| | plain client, Python (the limit) | plain client, Go (the limit) | t9k operator |"
    assert text.count(header) == 2  # no Kubeflow column where it did not run
    assert "| CPU milliseconds per pod or service created | 10.00 | 2.50 | 20.00 |" in text
    assert "| minimum writes per job: with Events / without | 8 / 8 | 8 / 8 | 10 / 9 |" in text


def test_a_result_file_from_before_several_limits_still_renders() -> None:
    old = {
        "command": "make bench-operator",
        "environment": ENVIRONMENT,
        "settings": {"qps": 20.0, "burst": 30, "workers": 4},
        "runs": [run("plain", 20.0, 10.0, cpu=0.8), run("ours", 20.0, 10.0, cpu=1.6)],
    }
    for r in old["runs"]:
        for key in ("qps", "burst", "namespace", "minimum_writes_per_job_with_events"):
            del r[key]
    text = bench.render(old)
    assert "#### `--qps 20 --burst 30`" in text
    assert "| t9k operator |" in text.replace("plain client, Python (the limit) | ", "")
    assert (
        "| API writes per job within 1.1x of the minimum with Events counted"
        " | `--qps 20 --burst 30` | - |" in text
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--node-pods", "0"], "--node-pods: at least 1, got 0"),
        (["--qps", "-1"], "--qps: each must be >= 0"),
    ],
)
def test_bad_options_are_refused_before_a_cluster_starts(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        bench.main(["--shapes", "1x10", "--systems", "ours", *args])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
