"""`runPolicy.activeDeadlineSeconds` (DeepSpeedJob): a hard stop, counted while the job is active.

The clock starts at the job's first pass (the `Initialized` condition) and starts again when the
job is resumed (the `Paused` condition turning False); it is stopped while the job is paused. It
runs in debug mode too: debug pods hold their GPUs like any other. When it passes, the job fails
with reason DeadlineExceeded and its unfinished pods are deleted, whatever `cleanUpPolicy` says.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.sdk.manifests import deepspeed_job

from .sim import Sim

KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n-----END OPENSSH PRIVATE KEY-----\n",
    "ssh-ed25519 AAAA t",
)
WORKERS = {"demo-worker-0", "demo-worker-1"}


def _job(deadline: int = 60, **spec: Any) -> Sim:
    policy = {"activeDeadlineSeconds": deadline, **spec.pop("policy", {})}
    return Sim(deepspeed_job(runPolicy=policy, **spec), ssh_key=KEY)


def _running(sim: Sim) -> None:
    sim.launch()  # the workers, then worker-0 (the launcher) once they run
    sim.step()
    assert sim.phase == "Running"


def _wait(sim: Sim, seconds: float) -> None:
    sim.now += timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("policy", "deleted"),
    [
        ("None", {"demo-worker-0"}),
        ("Unfinished", {"demo-worker-0"}),
        ("All", {"demo-worker-0", "demo-worker-1"}),
    ],
)
def test_deadline_fails_the_job_and_deletes_its_unfinished_pods_whatever_the_clean_up_policy(
    policy: str, deleted: set[str]
) -> None:
    sim = _job(
        policy={"cleanUpPolicy": policy},
        worker={
            "replicas": 2,
            "restartPolicy": "Never",
            "template": {"spec": {"containers": [{"name": "worker", "image": "i"}]}},
        },
    )
    _running(sim)
    sim.finish("demo-worker-1")  # finished for good; worker-0 (the launcher) still runs
    sim.step()
    _wait(sim, 60)
    plan = sim.step()
    assert sim.phase == "Failed"
    failed = sim.condition("Failed")
    assert failed["reason"] == "DeadlineExceeded"
    assert failed["message"] == (
        "The job ran longer than runPolicy.activeDeadlineSeconds (60s, counted from"
        " 2026-01-01T00:00:01Z): its unfinished pods are deleted."
    )
    assert {(d.name, d.grace_period_seconds) for d in plan.delete} == {(n, None) for n in deleted}
    assert plan.finished


def test_deadline_deletion_is_finished_by_the_next_pass_after_a_crash() -> None:
    sim = _job()
    _running(sim)
    _wait(sim, 61)
    plan = sim.step(apply=False)
    sim.apply(plan, stop_after="status")  # the operator died before deleting anything
    assert sim.phase == "Failed"
    assert set(sim.pods) == WORKERS
    plan = sim.step()
    assert {d.name for d in plan.delete} == WORKERS
    sim.drain_deletions()
    assert sim.step().delete == ()


def test_the_clock_starts_with_the_job_not_at_its_creation() -> None:
    sim = _job()
    sim.job["metadata"]["creationTimestamp"] = "2025-12-01T00:00:00Z"  # a month before
    plan = sim.step()
    assert sim.phase == "Pending"
    assert plan.requeue_after == pytest.approx(60)
    _running(sim)
    _wait(sim, 50)
    sim.step()
    assert sim.phase == "Running"


def test_the_clock_stops_while_paused_and_starts_again_on_resume() -> None:
    sim = _job(runMode={"pause": {"enabled": False}})
    _running(sim)
    _wait(sim, 50)
    sim.job["spec"]["runMode"]["pause"]["enabled"] = True
    sim.step()
    sim.drain_deletions()
    plan = sim.step()
    assert sim.phase == "Paused"
    assert plan.requeue_after is None  # nothing to time while paused
    _wait(sim, 3600)
    sim.step()
    assert sim.phase == "Paused"

    sim.job["spec"]["runMode"]["pause"]["enabled"] = False
    plan = sim.step()
    assert sim.phase == "Resuming"  # not failed at once
    assert plan.requeue_after == pytest.approx(60)
    sim.step()
    sim.run()
    sim.step()  # worker-0, the launcher, once worker-1 runs
    sim.run()
    _wait(sim, 55)
    sim.step()
    assert sim.phase == "Running"
    _wait(sim, 5)
    sim.step()
    assert sim.phase == "Failed"
    assert sim.condition("Failed")["reason"] == "DeadlineExceeded"


def test_the_deadline_applies_in_debug_mode() -> None:
    sim = _job(runMode={"debug": {"enabled": True}})
    sim.step()
    plan = sim.step()
    assert plan.requeue_after is not None
    sim.run()
    sim.step()
    _wait(sim, 60)
    plan = sim.step()
    assert sim.phase == "Failed"
    assert sim.condition("Failed")["reason"] == "DeadlineExceeded"
    assert {d.name for d in plan.delete} == WORKERS


def test_a_pause_cancelled_before_it_completed_does_not_restart_the_clock() -> None:
    """Unpausing a job whose pods were not yet deleted is not a resume: the deadline still
    counts from the job's start (T9k: Paused means every replica deleted or being deleted)."""
    sim = _job(runMode={"pause": {"enabled": False}})
    _running(sim)
    _wait(sim, 40)
    sim.job["spec"]["runMode"]["pause"]["enabled"] = True
    sim.step()  # deletes planned; the pods still run
    assert sim.condition("Paused") is None
    sim.job["spec"]["runMode"]["pause"]["enabled"] = False
    sim.pods.clear()  # what the deletes had done by then
    sim.step()
    sim.run()
    sim.step()
    sim.run()
    _wait(sim, 15)
    sim.step()
    assert sim.phase == "Failed"  # 60 s from the start, not from the cancelled pause
    assert sim.condition("Failed")["reason"] == "DeadlineExceeded"
