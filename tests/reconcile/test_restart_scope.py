"""Restart scope Job (the annotation `t9k-sdk.dev/restart-scope`): one rank's retryable failure
restarts every replica together, counted once.

What a user sees: the failed pod is removed and every other running pod is stopped with its grace
period (its ranks can save); no new pod starts until every old one is gone; then every replica is
recreated at once. The Running condition and a Warning Event say which pod failed and how; the
restart is counted once, on the replica that failed, however the stopped ranks exit. A permanent
failure still fails the job, and without the annotation a failed pod is recreated alone (T9k).
"""

from __future__ import annotations

from typing import Any

import pytest

from t9k_sdk import codecs, models
from t9k_sdk.errors import InvalidManifestError
from t9k_sdk.validation import validate_manifest
from tests.sdk.manifests import deepspeed_job, generic_job
from tests.sdk.manifests import pod as template

from .sim import Sim

SCOPE = models.RESTART_SCOPE_ANNOTATION
WORKERS = ["demo-worker-0", "demo-worker-1", "demo-worker-2"]


def gj(scope: str | None = "Job", policy: str = "ExitCode", limit: int = 3) -> dict[str, Any]:
    replica = {
        "type": "worker",
        "replicas": 3,
        "template": template("w"),
        "restartPolicy": {"policy": policy, "limit": limit},
    }
    job = generic_job(replicaSpecs=[replica])
    if scope is not None:
        job["metadata"]["annotations"] = {SCOPE: scope}
    return job


def running(sim: Sim) -> Sim:
    sim.step()
    sim.run()
    sim.step()
    assert sim.phase == "Running"
    return sim


def created(plan: Any) -> list[str]:
    return [m["metadata"]["name"] for m in plan.create if m["kind"] == "Pod"]


def test_one_failed_rank_stops_every_other_rank_gracefully_and_creates_nothing() -> None:
    sim = running(Sim(gj()))
    sim.finish("demo-worker-1", code=137)
    plan = sim.step()
    deleted = {d.name: d.grace_period_seconds for d in plan.delete}
    # the failed pod goes at once; the running ones get their own grace period to save
    assert deleted == {"demo-worker-1": 0, "demo-worker-0": None, "demo-worker-2": None}
    assert created(plan) == []
    cond = sim.condition("Running")
    assert cond is not None
    assert (cond["status"], cond["reason"]) == ("False", "RestartingJob")
    assert "Pod demo-worker-1 failed with exit code 137" in cond["message"]
    assert "stopping its 2 other running pods" in cond["message"]
    warning = [e for e in sim.events if e.reason == "RestartingJob"]
    assert len(warning) == 1
    assert warning[0].type == "Warning"
    assert sim.phase == "Running"  # a restarting job is not pending again


def test_no_new_rank_starts_while_an_old_one_is_still_stopping() -> None:
    sim = running(Sim(gj()))
    sim.finish("demo-worker-1", code=137)
    sim.step()
    # the stopped ranks exit on SIGTERM (143, or 1 from a script) while they are deleted
    for name, code in (("demo-worker-0", 143), ("demo-worker-2", 1)):
        sim.finish(name, code=code)
        sim.pods[name]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    for _ in range(3):
        plan = sim.step()
        assert created(plan) == []
    assert sim.condition("Running")["reason"] == "RestartingJob"  # type: ignore[index]
    sim.drain_deletions()
    plan = sim.step()
    assert created(plan) == WORKERS  # every replica at once, with its old name


def test_a_job_restart_is_counted_once_on_the_replica_that_failed() -> None:
    sim = running(Sim(gj()))
    sim.finish("demo-worker-1", code=137)
    sim.step()
    sim.finish("demo-worker-0", code=143)  # exits before the deletion is seen (a stale cache)
    sim.step()
    sim.drain_deletions()
    sim.step()
    sim.run()
    sim.step()
    assert sim.task("worker")["restartCount"] == 1
    restarts = {n: sim.replica(n).get("restartCount", 0) for n in WORKERS}
    assert restarts == {"demo-worker-0": 0, "demo-worker-1": 1, "demo-worker-2": 0}
    cond = sim.condition("Running")
    assert cond is not None
    assert cond["status"] == "True"
    assert sim.reasons().count("RestartingJob") == 1


def test_the_budget_of_the_failed_replica_runs_out_and_the_job_fails() -> None:
    sim = running(Sim(gj(limit=1)))
    sim.finish("demo-worker-1", code=137)
    sim.settle()
    sim.drain_deletions()
    sim.settle()
    sim.run()
    sim.step()
    sim.finish("demo-worker-1", code=137)  # its one restart is spent
    sim.settle()
    assert sim.phase == "Failed"
    assert sim.reasons().count("RestartingJob") == 1


def test_a_permanent_failure_fails_the_job_instead_of_restarting_it() -> None:
    sim = running(Sim(gj()))
    sim.finish("demo-worker-1", code=1)  # ExitCode: 1-127 is permanent
    sim.finish("demo-worker-2", code=137)
    sim.settle()
    assert sim.phase == "Failed"
    assert "RestartingJob" not in sim.reasons()


def test_without_the_annotation_a_failed_pod_is_recreated_alone() -> None:
    sim = running(Sim(gj(scope=None)))
    sim.finish("demo-worker-1", code=137)
    plan = sim.step()
    assert [d.name for d in plan.delete] == ["demo-worker-1"]
    plan = sim.step()
    assert created(plan) == ["demo-worker-1"]


def test_a_deepspeed_worker_failure_restarts_the_launcher_too_and_spends_one_backoff() -> None:
    job = deepspeed_job(
        runPolicy={"backoffLimit": 2},
        worker={"replicas": 3, "restartPolicy": "OnFailure", "template": template("worker")},
    )
    job["metadata"]["annotations"] = {SCOPE: "Job"}
    sim = Sim(job, ssh_key=("k", "p"))
    assert sorted(sim.launch()) == WORKERS  # worker-0 runs DeepSpeed's launcher
    sim.finish("demo-worker-2", code=137)
    plan = sim.step()
    assert {d.name for d in plan.delete} == set(WORKERS)
    sim.drain_deletions()
    assert sorted(sim.launch()) == WORKERS  # the launcher again once its workers run
    assert sim.status["backoffCount"] == 1


@pytest.mark.parametrize("value", ["job", "Pod", "", "x" * 300])
def test_a_wrong_restart_scope_names_the_annotation_and_the_allowed_values(value: str) -> None:
    job = gj(scope=value)
    with pytest.raises(InvalidManifestError) as err:
        codecs.from_manifest(job)
    text = str(err.value)
    assert f"annotations.{SCOPE}" in text
    assert "'Replica', 'Job'" in text
    assert len(text) < 1000  # a long value is cut, not echoed whole
    assert any(SCOPE in p.path for p in validate_manifest(job))


def test_the_operator_fails_a_job_with_a_wrong_restart_scope_and_says_why() -> None:
    sim = Sim(gj(scope="Everything"))
    plan = sim.step()
    assert plan.create == ()
    assert sim.phase == "Failed"
    assert "InvalidSpec" in sim.reasons()
    cond = sim.condition("Failed")
    assert cond is not None
    assert SCOPE in cond["message"]
