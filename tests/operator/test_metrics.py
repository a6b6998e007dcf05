"""The operator's /metrics: what each instrument counts, the scrape-time gauges, the exposition
format under hostile label values, and bounded label sets (docs/operator/metrics.md)."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from t9k_operator.controller import Controller, Settings
from t9k_operator.execute import launch_seconds
from t9k_operator.health import HealthServer
from t9k_operator.metrics import JOB_PHASES, OperatorMetrics
from t9k_operator.workqueue import WorkQueue
from t9k_sdk import models
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk.reconcile import Observed, Plan
from tests.operator.fakes import FakeCluster, job

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
KEY = ("GenericJob", "ns", "demo")

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(metrics: OperatorMetrics, accept: str = "") -> str:
    body, _ = metrics.exposition(accept)
    return body.decode()


def samples(text: str) -> Samples:
    """Every sample of a Prometheus text exposition (it must parse)."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(text: str, metric: str, **labels: str) -> float:
    return samples(text)[(metric, frozenset(labels.items()))]


def with_phase(name: str, phase: str | None, kind: str = "GenericJob") -> dict[str, Any]:
    obj = job(name, kind, uid=f"uid-{name}")
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


# --- jobs by phase, computed at scrape time --------------------------------------------------


def test_jobs_by_kind_and_phase_are_counted_from_the_cache_when_scraped() -> None:
    metrics = OperatorMetrics()
    cache = [with_phase("a", "Running"), with_phase("b", "Running"), with_phase("c", None)]
    cache.append(with_phase("d", "Succeeded", "DeepSpeedJob"))
    metrics.read_state(
        jobs=lambda: cache,
        queue_depth=lambda: 3,
        processing_ages=lambda: [1.0, 4.0],
        leader=lambda: True,
        lease_name="t9k-operator",
    )
    text = scrape(metrics)
    assert value(text, "t9k_operator_jobs", kind="GenericJob", phase="Running") == 2
    assert value(text, "t9k_operator_jobs", kind="GenericJob", phase="") == 1
    assert value(text, "t9k_operator_jobs", kind="DeepSpeedJob", phase="Succeeded") == 1
    assert value(text, "t9k_operator_jobs", kind="ColossalAIJob", phase="Failed") == 0
    assert value(text, "t9k_operator_workqueue_depth", name="jobs") == 3
    assert value(text, "t9k_operator_workqueue_unfinished_work_seconds", name="jobs") == 5.0
    assert value(text, "t9k_operator_workqueue_longest_running_processor_seconds", name="jobs") == 4
    assert value(text, "t9k_operator_leader_election_master_status", name="t9k-operator") == 1

    cache[0]["status"]["phase"] = "Succeeded"  # nothing kept by hand: the next scrape follows
    text = scrape(metrics)
    assert value(text, "t9k_operator_jobs", kind="GenericJob", phase="Running") == 1
    assert value(text, "t9k_operator_jobs", kind="GenericJob", phase="Succeeded") == 1


def test_the_number_of_series_does_not_grow_with_the_jobs() -> None:
    metrics = OperatorMetrics()
    few = [with_phase("job-0", "Running")]
    many = [with_phase(f"job-{n}", "Running") for n in range(500)]
    cache = few
    metrics.read_state(
        jobs=lambda: cache,
        queue_depth=lambda: 0,
        processing_ages=list,
        leader=lambda: True,
        lease_name="lease",
    )
    for n in range(500):  # the per-job instruments too: a pass and a launch per job
        metrics.reconciled("GenericJob", "success", 0.01)
        metrics.launched("GenericJob", float(n))
    before = set(samples(scrape(metrics)))
    cache = many
    after_text = scrape(metrics)
    assert set(samples(after_text)) == before
    assert "job-1" not in after_text
    assert "uid-job-1" not in after_text
    jobs_series = [k for k in before if k[0] == "t9k_operator_jobs"]
    assert len(jobs_series) == len(models.JOB_KINDS) * len(JOB_PHASES)


def test_hostile_label_values_are_escaped_and_unknown_phases_do_not_add_series() -> None:
    """A phase written by someone else, and a lease name from a flag, with quotes, backslashes
    and newlines: the exposition still parses, in both formats, to the same values."""
    hostile = 'evil"} 1\nt9k_operator_jobs{kind="x"} 99\\'
    metrics = OperatorMetrics()
    metrics.read_state(
        jobs=lambda: [with_phase("a", hostile), with_phase("b", "Running\n")],
        queue_depth=lambda: 0,
        processing_ages=list,
        leader=lambda: False,
        lease_name=hostile,
    )
    text = scrape(metrics)
    assert value(text, "t9k_operator_jobs", kind="GenericJob", phase="Unknown") == 2
    assert value(text, "t9k_operator_leader_election_master_status", name=hostile) == 0
    assert all(("kind", "x") not in k[1] for k in samples(text))
    body, content_type = metrics.exposition("application/openmetrics-text; version=1.0.0")
    assert content_type.startswith("application/openmetrics-text")
    assert body.decode().endswith("# EOF\n")
    assert '\\"' in body.decode()
    assert "\\n" in body.decode()


def test_every_kind_and_result_has_its_series_before_anything_happens() -> None:
    text = scrape(OperatorMetrics())
    for kind in models.JOB_KINDS:
        for result in ("success", "error", "requeue", "requeue_after"):
            assert value(text, "t9k_operator_reconcile_total", controller=kind, result=result) == 0
        assert value(text, "t9k_operator_job_launch_duration_seconds_count", kind=kind) == 0
    assert value(text, "t9k_operator_workqueue_adds_total", name="jobs") == 0
    build = [k for k in samples(text) if k[0] == "t9k_operator_build_info"]
    assert len(build) == 1
    assert "process_resident_memory_bytes" in text or "process_" not in text  # Linux only


def test_two_operators_in_one_process_keep_separate_counts() -> None:
    one, two = OperatorMetrics(), OperatorMetrics()
    one.observe_request("post", 201)
    assert value(scrape(one), "t9k_operator_rest_client_requests_total", code="201", method="POST")
    assert (
        "t9k_operator_rest_client_requests_total",
        frozenset({("code", "201"), ("method", "POST")}),
    ) not in samples(scrape(two))


# --- the work queue --------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_queue_reports_adds_waits_work_and_retries() -> None:
    clock, metrics = Clock(), OperatorMetrics()
    queue: WorkQueue[str] = WorkQueue(clock=clock, metrics=metrics)
    queue.add("a")
    queue.add("a")  # coalesces: one add
    clock.now = 2.0
    assert queue.get(timeout=0) == "a"
    clock.now = 2.5
    assert queue.processing_ages() == [0.5]
    queue.add("a")  # while processing: counted, waits from now
    clock.now = 3.0
    queue.done("a")
    clock.now = 4.0
    assert queue.get(timeout=0) == "a"
    queue.add_rate_limited("b")
    text = scrape(metrics)
    assert value(text, "t9k_operator_workqueue_adds_total", name="jobs") == 2
    assert value(text, "t9k_operator_workqueue_retries_total", name="jobs") == 1
    assert value(text, "t9k_operator_workqueue_queue_duration_seconds_count", name="jobs") == 2
    assert value(text, "t9k_operator_workqueue_queue_duration_seconds_sum", name="jobs") == 3.5
    assert value(text, "t9k_operator_workqueue_work_duration_seconds_sum", name="jobs") == 1.0


# --- the controller --------------------------------------------------------------------------


class Core:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    def __call__(self, job: Any, observed: Observed, /, *, now: datetime) -> Plan:
        return self.plan


def make(plan: Plan, now: datetime = NOW) -> tuple[Controller, FakeCluster, OperatorMetrics]:
    cluster, metrics = FakeCluster(), OperatorMetrics()
    controller = Controller(
        cluster,
        Core(plan),
        Settings(),
        ssh_keygen=lambda: ("PRIVATE", "ssh-ed25519 AAAA test"),
        now=lambda: now,
        metrics=metrics,
    )
    return controller, cluster, metrics


def created(obj: dict[str, Any], ago: float, phase: str | None = None) -> dict[str, Any]:
    obj["metadata"]["creationTimestamp"] = (NOW - timedelta(seconds=ago)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


def test_passes_are_counted_by_kind_and_result() -> None:
    controller, cluster, metrics = make(Plan(requeue_after=30.0))
    controller.jobs["GenericJob"].store.put(job())
    controller.process(KEY)
    controller.reconcile_fn = Core(Plan())
    controller.process(KEY)
    controller.process(("GenericJob", "ns", "gone"))  # skipped: nothing to do is a success
    controller.reconcile_fn = Core(Plan(status={"phase": "Pending"}))
    cluster.fail["status"] = ApiError(409, "Conflict")
    controller.process(KEY)
    cluster.fail["status"] = ApiError(500, "InternalError")
    controller.process(KEY)
    text = scrape(metrics)

    def passes(result: str) -> float:
        return value(text, "t9k_operator_reconcile_total", controller="GenericJob", result=result)

    assert (passes("success"), passes("requeue_after"), passes("requeue"), passes("error")) == (
        2,
        1,
        1,
        1,
    )
    assert value(text, "t9k_operator_reconcile_errors_total", controller="GenericJob") == 1
    assert value(text, "t9k_operator_reconcile_time_seconds_count", controller="GenericJob") == 5
    assert (
        value(text, "t9k_operator_reconcile_total", controller="DeepSpeedJob", result="error") == 0
    )


def test_launch_latency_is_observed_once_when_the_job_first_turns_running() -> None:
    controller, _, metrics = make(Plan(status={"phase": "Running"}))
    store = controller.jobs["GenericJob"].store
    store.put(created(job(), ago=42, phase="Pending"))
    controller.reconcile_key(KEY)
    store.put(created(job(rv="101"), ago=42, phase="Running"))  # a later pass: still Running
    controller.reconcile_key(KEY)
    store.put(created(job("resumed", uid="u2"), ago=900, phase="Resuming"))  # not a launch
    controller.reconcile_key(("GenericJob", "ns", "resumed"))
    text = scrape(metrics)
    assert value(text, "t9k_operator_job_launch_duration_seconds_count", kind="GenericJob") == 1
    assert value(text, "t9k_operator_job_launch_duration_seconds_sum", kind="GenericJob") == 42
    assert (
        value(text, "t9k_operator_job_launch_duration_seconds_bucket", kind="GenericJob", le="60.0")
        == 1
    )
    assert (
        value(text, "t9k_operator_job_launch_duration_seconds_bucket", kind="GenericJob", le="30.0")
        == 0
    )


def test_a_refused_status_write_observes_no_launch() -> None:
    controller, cluster, metrics = make(Plan(status={"phase": "Running"}))
    controller.jobs["GenericJob"].store.put(created(job(), ago=5))
    cluster.fail["status"] = ApiError(409, "Conflict")
    controller.process(KEY)
    text = scrape(metrics)
    assert value(text, "t9k_operator_job_launch_duration_seconds_count", kind="GenericJob") == 0


@pytest.mark.parametrize("stamp", ["", "yesterday", "2025-01-01T00:00:00"])
def test_a_job_without_a_readable_creation_time_has_no_launch_latency(stamp: str) -> None:
    obj = job()
    obj["metadata"]["creationTimestamp"] = stamp
    assert launch_seconds(obj, NOW) is None


# --- serving ---------------------------------------------------------------------------------


@pytest.fixture
def served() -> Iterator[tuple[HealthServer, OperatorMetrics]]:
    metrics = OperatorMetrics()
    server = HealthServer("127.0.0.1", 0, lambda: (True, "ok"), metrics.exposition)
    server.start()
    yield server, metrics
    server.stop()


def get(server: HealthServer, path: str, accept: str = "") -> tuple[int, str, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}{path}")
    if accept:
        request.add_header("Accept", accept)
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return r.status, r.headers["Content-Type"], r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read().decode()


def test_metrics_are_served_on_the_health_port_beside_the_probes(
    served: tuple[HealthServer, OperatorMetrics],
) -> None:
    server, metrics = served
    metrics.observe_request("GET", 200)
    code, content_type, text = get(server, "/metrics")
    assert code == 200
    assert content_type.startswith("text/plain")
    assert value(text, "t9k_operator_rest_client_requests_total", code="200", method="GET") == 1
    code, content_type, text = get(server, "/metrics?x=1", "application/openmetrics-text")
    assert code == 200
    assert content_type.startswith("application/openmetrics-text")
    assert get(server, "/healthz")[0] == 200
    code, _, text = get(server, "/nope")
    assert code == 404
    assert "/metrics" in text


def test_a_failing_collector_answers_500_and_the_probes_keep_working(
    served: tuple[HealthServer, OperatorMetrics],
) -> None:
    server, metrics = served

    def broken() -> list[dict[str, Any]]:
        raise RuntimeError("bug")

    metrics.read_state(
        jobs=broken, queue_depth=lambda: 0, processing_ages=list, leader=lambda: True, lease_name=""
    )
    code, _, text = get(server, "/metrics")
    assert code == 500
    assert "operator's log" in text
    assert get(server, "/healthz")[0] == 200


def test_the_installed_deployment_tells_prometheus_where_the_metrics_are() -> None:
    from t9k_sdk.install import install_manifests

    deployment = next(m for m in install_manifests() if m["kind"] == "Deployment")
    template = deployment["spec"]["template"]
    annotations = template["metadata"]["annotations"]
    container = template["spec"]["containers"][0]
    ports = {p["containerPort"] for p in container["ports"]}
    assert annotations["prometheus.io/scrape"] == "true"
    assert int(annotations["prometheus.io/port"]) in ports
    assert annotations["prometheus.io/path"] == "/metrics"
