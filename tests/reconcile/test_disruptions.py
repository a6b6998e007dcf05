"""Disruptions (`policies.disruptions`): a pod the cluster ended, not its own code, is replaced
without counting a restart.

What a user sees: when the kubelet evicts a pod under node pressure (or a node shuts down, or the
scheduler preempts it), Kubernetes marks the pod with the condition DisruptionTarget. Its replica
comes back, under every restart policy and whatever budget is left, with a Warning Event
PodDisrupted that says who ended it and why, and the restart counts stay 0. An eviction for the
pod's own limits (no DisruptionTarget) stays a failure, counted as T9k counts it.
"""

from __future__ import annotations

from typing import Any

from t9k_sdk.reconcile.observe import observe_pod
from tests.sdk.manifests import deepspeed_job, generic_job
from tests.sdk.manifests import pod as template

from .sim import KEY, Sim

PRESSURE = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 2Mi."


def gj(policy: str = "Never", limit: int = 0, scope: str | None = None) -> dict[str, Any]:
    replica = {
        "type": "worker",
        "replicas": 2,
        "template": template("w"),
        "restartPolicy": {"policy": policy, "limit": limit},
    }
    job = generic_job(replicaSpecs=[replica])
    if scope is not None:
        job["metadata"]["annotations"] = {"t9k-sdk.dev/restart-scope": scope}
    return job


def running(sim: Sim) -> Sim:
    sim.launch()
    sim.step()
    assert sim.phase == "Running"
    return sim


def disrupt(
    sim: Sim, name: str, reason: str = "TerminationByKubelet", status: str = "True"
) -> None:
    """What the kubelet writes when it evicts a pod under node pressure: Failed, its containers
    killed (137), the pod's reason Evicted, and the DisruptionTarget condition."""
    sim.finish(name, code=137, reason="Evicted")
    sim.pods[name]["status"]["message"] = PRESSURE
    sim.pods[name]["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": status, "reason": reason, "message": PRESSURE}
    ]


def created(plan: Any) -> list[str]:
    return [m["metadata"]["name"] for m in plan.create if m["kind"] == "Pod"]


def test_an_evicted_pod_comes_back_under_restart_policy_never_without_counting() -> None:
    sim = running(Sim(gj()))
    uid = sim.pods["demo-worker-1"]["metadata"]["uid"]
    disrupt(sim, "demo-worker-1")
    plan = sim.step()
    assert [(d.name, d.uid, d.grace_period_seconds) for d in plan.delete] == [
        ("demo-worker-1", uid, 0)
    ]
    assert sim.replica("demo-worker-1")["phase"] == "Deleted"
    warnings = [e for e in sim.events if e.reason == "PodDisrupted"]
    assert [(e.type, e.after) for e in warnings] == [("Warning", "delete Pod/demo-worker-1")]
    assert warnings[0].message == (
        "Pod demo-worker-1 was ended by the cluster, not by its own code (TerminationByKubelet:"
        f" {PRESSURE}); recreating it, not counted as a restart"
    )
    plan = sim.step()
    assert created(plan) == ["demo-worker-1"]
    sim.run()
    sim.settle()
    assert sim.phase == "Running"  # not Failed, though the policy is Never with no budget
    assert sim.task("worker")["restartCount"] == 0
    assert "restartCount" not in sim.replica("demo-worker-1")
    assert "demo-worker-0" not in [d.name for p in sim.plans for d in p.delete]


def test_an_eviction_for_the_pods_own_limits_is_a_failure() -> None:
    """The kubelet sets no DisruptionTarget when a pod exceeds its own ephemeral storage."""
    sim = running(Sim(gj()))
    sim.finish("demo-worker-1", code=137, reason="Evicted")
    sim.settle()
    assert sim.phase == "Failed"
    assert "PodDisrupted" not in sim.reasons()


def test_a_disruption_target_that_is_not_true_is_a_failure() -> None:
    sim = running(Sim(gj(policy="OnFailure", limit=2)))
    disrupt(sim, "demo-worker-1", status="False")
    sim.step()
    sim.step()
    assert sim.task("worker")["restartCount"] == 1  # a failure, counted as T9k counts it
    assert "PodDisrupted" not in sim.reasons()


def test_disruptions_never_spend_a_budget_nor_the_pods_own_count() -> None:
    sim = running(Sim(gj(policy="OnFailure", limit=1)))
    for _ in range(3):  # more disruptions than the budget allows failures
        disrupt(sim, "demo-worker-0", reason="PreemptionByScheduler")
        sim.step()
        sim.step()
        sim.run()
        sim.step()
    assert sim.phase == "Running"
    assert sim.task("worker")["restartCount"] == 0
    assert sim.reasons().count("PodDisrupted") == 3
    sim.finish("demo-worker-0", code=1)  # a failure of its own still spends the budget
    sim.step()
    sim.step()
    assert sim.task("worker")["restartCount"] == 1


def test_a_deepspeed_worker_evicted_leaves_the_jobs_backoff_count_alone() -> None:
    job = deepspeed_job(
        worker={"replicas": 2, "template": template("worker"), "restartPolicy": "OnFailure"},
        runPolicy={"backoffLimit": 0},
    )
    sim = Sim(job, ssh_key=KEY)
    sim.launch()
    disrupt(sim, "demo-worker-1")
    sim.step()
    plan = sim.step()
    assert created(plan) == ["demo-worker-1"]
    sim.run()
    sim.settle()
    assert sim.phase == "Running"
    assert sim.status["backoffCount"] == 0


def test_a_pod_deleted_by_a_drain_is_recreated_without_counting() -> None:
    """The Eviction API and preemption delete the pod; it may show Failed while it goes."""
    sim = running(Sim(gj()))
    disrupt(sim, "demo-worker-1", reason="EvictionByEvictionAPI")
    sim.pods["demo-worker-1"]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    sim.step()
    sim.drain_deletions()
    plan = sim.step()
    assert created(plan) == ["demo-worker-1"]
    sim.run()
    sim.settle()
    assert (sim.phase, sim.task("worker")["restartCount"]) == ("Running", 0)


def test_under_restart_scope_job_a_disruption_restarts_the_whole_job_uncounted() -> None:
    sim = running(Sim(gj(policy="ExitCode", limit=0, scope="Job")))
    disrupt(sim, "demo-worker-1")
    plan = sim.step()
    deleted = {d.name: d.grace_period_seconds for d in plan.delete}
    assert deleted == {"demo-worker-1": 0, "demo-worker-0": None}  # the other rank may save
    cond = sim.condition("Running")
    assert cond is not None
    assert cond["reason"] == "RestartingJob"
    assert cond["message"].startswith(
        "Pod demo-worker-1 was ended by the cluster, not by its own code (TerminationByKubelet"
    )
    assert "restarting the whole job (restart scope Job, not counted)" in cond["message"]
    assert sim.reasons().count("PodDisrupted") == 0  # one Warning says it all: RestartingJob
    sim.drain_deletions()
    plan = sim.step()
    assert created(plan) == ["demo-worker-0", "demo-worker-1"]
    sim.run()
    sim.settle()
    assert (sim.phase, sim.task("worker")["restartCount"]) == ("Running", 0)


def test_what_the_pod_says_is_bounded_and_read_only_when_well_formed() -> None:
    raw = {
        "metadata": {"name": "p", "uid": "u"},
        "spec": {"nodeName": "n"},
        "status": {
            "phase": "Failed",
            "conditions": [
                {"type": "DisruptionTarget", "status": "True", "reason": 7, "message": "x" * 10**6}
            ],
        },
    }
    view = observe_pod(raw)
    assert view.disruption is not None
    reason, message = view.disruption
    assert (reason, len(message)) == ("Disrupted", 256)
    raw["status"]["phase"] = "Running"  # a running pod the scheduler will preempt: not yet
    assert observe_pod(raw).disruption is None
