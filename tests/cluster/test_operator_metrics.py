"""The operator's /metrics against the local control plane: a job run to success moves the
counters a user would chart (docs/operator/metrics.md), and no series names the job."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable

import pytest
from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families

from tests.cluster.test_operator import generic_job
from tools.kit import EXIT_CODE, RUN_FOR, Operator, create_job, wait_job_phase

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(op: Operator) -> tuple[str, Samples]:
    with urllib.request.urlopen(f"http://127.0.0.1:{op.port}/metrics", timeout=5) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain")
        text = r.read().decode()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):  # the whole exposition parses
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return text, samples


def value(samples: Samples, metric: str, **labels: str) -> float:
    return samples.get((metric, frozenset(labels.items())), 0.0)


@pytest.mark.smoke  # `make deps-lowest` / `deps-newest`: prometheus_client at both ends
def test_a_job_run_to_success_shows_in_the_metrics(
    start_operator: Callable[..., Operator],
    custom: client.CustomObjectsApi,
    namespace: str,
) -> None:
    op = start_operator()
    op.wait_ready("leader")
    # Running long enough for the operator to see every replica running (the launch)
    create_job(custom, namespace, generic_job("mnist", 2, {RUN_FOR: "3s", EXIT_CODE: "0"}))
    wait_job_phase(custom, namespace, "mnist", "Succeeded", timeout=60)

    text, samples = scrape(op)
    kind = {"controller": "GenericJob"}
    assert value(samples, "t9k_operator_reconcile_total", **kind, result="success") >= 1
    assert value(samples, "t9k_operator_reconcile_time_seconds_count", **kind) >= 1
    assert value(samples, "t9k_operator_reconcile_errors_total", **kind) == 0
    # two pods, and Events, created; the status written with PUT; the watches are GETs
    assert value(samples, "t9k_operator_rest_client_requests_total", code="201", method="POST") >= 2
    assert value(samples, "t9k_operator_rest_client_requests_total", code="200", method="PUT") >= 1
    assert value(samples, "t9k_operator_rest_client_requests_total", code="200", method="GET") >= 8
    assert value(samples, "t9k_operator_workqueue_adds_total", name="jobs") >= 1
    assert value(samples, "t9k_operator_workqueue_work_duration_seconds_count", name="jobs") >= 1
    launches = value(samples, "t9k_operator_job_launch_duration_seconds_count", kind="GenericJob")
    assert launches == 1
    launch = value(samples, "t9k_operator_job_launch_duration_seconds_sum", kind="GenericJob")
    assert 0 < launch < 60
    assert value(samples, "t9k_operator_jobs", kind="GenericJob", phase="Succeeded") == 1
    assert value(samples, "t9k_operator_jobs", kind="GenericJob", phase="Running") == 0
    assert value(samples, "t9k_operator_leader_election_master_status", name="t9k-operator") == 1
    assert any(k[0] == "t9k_operator_build_info" for k in samples)
    # bounded labels: neither the job nor its namespace names a series
    assert "mnist" not in text
    assert namespace not in text

    standby = start_operator()
    standby.wait_ready("standby")
    _text, samples = scrape(standby)
    assert value(samples, "t9k_operator_leader_election_master_status", name="t9k-operator") == 0
    assert value(samples, "t9k_operator_jobs", kind="GenericJob", phase="Succeeded") == 0
