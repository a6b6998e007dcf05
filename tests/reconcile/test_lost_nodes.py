"""Lost nodes (`policies.lost_nodes`): a pod whose node is gone, or NotReady past a bound, is
force-deleted and its replica recreated, without counting a restart.

What a user sees: while a pod's node is NotReady its replica shows Unknown and the job's Running
condition says NodeNotReady, for how long, and when the pod will be replaced; a node back in
time keeps its pods; past the bound (the annotation `t9k-sdk.dev/node-lost-after`, else the
operator's `--node-lost-after`) or once the node is deleted, a NodeLost Event says the pod was
force-deleted and why, and the replica comes back with no restart counted, even under
`restartPolicy: Never`. A job paused, finished or restarting as a whole no longer waits forever
for a pod that no kubelet will confirm stopped.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from t9k_sdk import codecs, models
from t9k_sdk.errors import InvalidManifestError
from t9k_sdk.reconcile.types import Plan
from t9k_sdk.validation import validate_manifest
from tests.sdk.manifests import generic_job
from tests.sdk.manifests import pod as template

from .sim import Sim

LOST_AFTER = models.NODE_LOST_AFTER_ANNOTATION


def node(ready: bool, since: datetime) -> dict[str, Any]:
    stamp = since.strftime("%Y-%m-%dT%H:%M:%SZ")
    status = "True" if ready else "Unknown"
    return {
        "status": {"conditions": [{"type": "Ready", "status": status, "lastTransitionTime": stamp}]}
    }


def gj(policy: str = "Never", annotations: dict[str, str] | None = None) -> dict[str, Any]:
    replica = {
        "type": "worker",
        "replicas": 2,
        "template": template("w"),
        "restartPolicy": {"policy": policy, "limit": 3},
    }
    job = generic_job(replicaSpecs=[replica])
    if annotations:
        job["metadata"]["annotations"] = annotations
    return job


def running(job: dict[str, Any]) -> Sim:
    """Both workers running, worker-1 on node-1; both nodes Ready."""
    sim = Sim(job)
    sim.nodes = {"node-0": node(True, sim.now), "node-1": node(True, sim.now)}
    sim.step()
    sim.run()
    sim.pods["demo-worker-1"]["spec"]["nodeName"] = "node-1"
    sim.step()
    assert sim.phase == "Running"
    return sim


def lose(sim: Sim, seconds_ago: float = 0) -> None:
    """node-1 stops heartbeating: NotReady since `seconds_ago`."""
    assert sim.nodes is not None
    sim.nodes["node-1"] = node(False, sim.now - timedelta(seconds=seconds_ago))


def entry(sim: Sim, name: str) -> dict[str, Any]:
    replicas = sim.job["status"]["tasks"][0]["replicas"]
    found: dict[str, Any] = next(r for r in replicas if r["name"] == name)
    return found


def restarts(sim: Sim) -> int:
    count: int = sim.job["status"]["tasks"][0]["restartCount"]
    return count


def lost_events(plan: Plan) -> list[str]:
    return [e.message for e in plan.events if e.reason == "NodeLost"]


def test_a_pod_on_a_not_ready_node_shows_unknown_and_when_it_will_be_replaced() -> None:
    sim = running(gj())
    lose(sim)
    plan = sim.step(seconds=10)
    assert plan.delete == ()  # the node may come back: nothing is deleted yet
    assert entry(sim, "demo-worker-1")["phase"] == "Unknown"
    assert entry(sim, "demo-worker-0")["phase"] == "Running"
    cond = sim.condition("Running")
    assert cond is not None
    assert (cond["status"], cond["reason"]) == ("False", "NodeNotReady")
    assert "node-1 is NotReady (10s)" in cond["message"]
    assert "replaced after 300s (the operator's --node-lost-after)" in cond["message"]
    assert sim.phase == "Running"  # the job keeps its phase while it waits
    assert plan.requeue_after == pytest.approx(290)  # looked at again when the bound passes
    assert [e.type for e in sim.events if e.reason == "NodeNotReady"] == ["Warning"]
    sim.step(seconds=10)
    assert [e.reason for e in sim.events].count("NodeNotReady") == 1  # said once


def test_a_node_ready_again_within_the_bound_keeps_its_pod() -> None:
    sim = running(gj())
    lose(sim)
    sim.step(seconds=100)
    uid = sim.pods["demo-worker-1"]["metadata"]["uid"]
    assert sim.nodes is not None
    sim.nodes["node-1"] = node(True, sim.now)
    plan = sim.step(seconds=1)
    assert plan.delete == ()
    assert sim.pods["demo-worker-1"]["metadata"]["uid"] == uid
    assert entry(sim, "demo-worker-1")["phase"] == "Running"
    cond = sim.condition("Running")
    assert cond is not None
    assert cond["status"] == "True"


def test_past_the_bound_the_pod_is_force_deleted_and_recreated_without_a_restart() -> None:
    sim = running(gj(policy="Never"))  # Never: a failure would fail the job
    lose(sim, seconds_ago=299)
    plan = sim.step(seconds=1)
    assert [(d.name, d.grace_period_seconds) for d in plan.delete] == [("demo-worker-1", 0)]
    [message] = lost_events(plan)
    assert "Force-deleted pod demo-worker-1" in message
    assert "node-1 has been NotReady for 300s" in message
    assert "the node may still run it" in message
    assert "not counted as a restart" in message
    assert "demo-worker-1" not in sim.pods
    plan = sim.step()
    assert [m["metadata"]["name"] for m in plan.create] == ["demo-worker-1"]
    assert restarts(sim) == 0
    assert "restartCount" not in entry(sim, "demo-worker-1")
    sim.run("demo-worker-1")
    sim.step()
    assert sim.phase == "Running"


def test_a_deleted_node_replaces_its_pod_at_once() -> None:
    sim = running(gj())
    assert sim.nodes is not None
    del sim.nodes["node-1"]
    plan = sim.step()
    assert [(d.name, d.grace_period_seconds) for d in plan.delete] == [("demo-worker-1", 0)]
    [message] = lost_events(plan)
    assert "its node node-1 no longer exists" in message
    sim.step()
    assert "demo-worker-1" in sim.pods
    assert restarts(sim) == 0


def test_the_jobs_annotation_sets_the_bound_and_is_named() -> None:
    sim = running(gj(annotations={LOST_AFTER: "30"}))
    lose(sim)
    plan = sim.step(seconds=20)
    assert plan.delete == ()
    assert plan.requeue_after == pytest.approx(10)
    cond = sim.condition("Running")
    assert cond is not None
    assert f"replaced after 30s (the job's annotation {LOST_AFTER})" in cond["message"]
    plan = sim.step(seconds=10)
    assert [d.name for d in plan.delete] == ["demo-worker-1"]
    assert f"the bound the job's annotation {LOST_AFTER} sets (30s)" in lost_events(plan)[0]


def test_zero_replaces_at_once_and_the_operators_default_applies_without_annotation() -> None:
    sim = running(gj(annotations={LOST_AFTER: "0"}))
    lose(sim)
    assert [d.name for d in sim.step().delete] == ["demo-worker-1"]
    sim = running(gj())
    sim.node_lost_after = 60
    lose(sim, seconds_ago=59)
    assert [d.name for d in sim.step().delete] == ["demo-worker-1"]


def test_a_pod_stuck_terminating_on_a_lost_node_lets_a_pause_finish() -> None:
    sim = running(gj())
    sim.job["spec"]["runMode"] = {"pause": {"enabled": True}}
    sim.step()  # both pods are deleted gracefully; the kubelet of node-1 never confirms
    sim.vanish("demo-worker-0")
    lose(sim, seconds_ago=300)
    plan = sim.step()
    assert [(d.name, d.grace_period_seconds) for d in plan.delete] == [("demo-worker-1", 0)]
    sim.step()
    assert sim.phase == "Paused"


def test_a_whole_job_restart_does_not_wait_forever_for_a_rank_on_a_deleted_node() -> None:
    sim = running(gj(policy="ExitCode", annotations={models.RESTART_SCOPE_ANNOTATION: "Job"}))
    sim.finish("demo-worker-0", code=137)
    sim.step()  # worker-0 is deleted at once, worker-1 gracefully: its node is gone meanwhile
    assert sim.pods["demo-worker-1"]["metadata"].get("deletionTimestamp")
    assert sim.nodes is not None
    del sim.nodes["node-1"]
    plan = sim.step()
    assert [(d.name, d.grace_period_seconds) for d in plan.delete] == [("demo-worker-1", 0)]
    plan = sim.step()
    assert sorted(m["metadata"]["name"] for m in plan.create) == ["demo-worker-0", "demo-worker-1"]
    assert restarts(sim) == 1  # the failure, once; the lost node is not counted


def test_a_finished_pod_on_a_lost_node_is_left_alone() -> None:
    sim = running(gj(policy="Never"))
    sim.finish("demo-worker-1", code=0)
    sim.step()
    lose(sim, seconds_ago=1000)
    assert sim.step().delete == ()
    assert entry(sim, "demo-worker-1")["phase"] == "Succeeded"


def test_without_knowing_the_nodes_nothing_is_replaced() -> None:
    sim = running(gj())
    sim.nodes = None  # offline, or an operator that may not read nodes
    plan = sim.step(seconds=1000)
    assert plan.delete == ()
    assert entry(sim, "demo-worker-1")["phase"] == "Running"


@pytest.mark.parametrize("value", ["-1", "1.5", "5m", "604801", "", "0300", " 30", "9" * 300])
def test_a_bad_bound_is_refused_naming_the_annotation_and_what_is_allowed(value: str) -> None:
    job = gj(annotations={LOST_AFTER: value})
    with pytest.raises(InvalidManifestError) as info:
        codecs.from_manifest(job)
    text = str(info.value)
    assert f"annotations.{LOST_AFTER}" in text
    assert "whole number of seconds from 0 to 604800" in text
    assert repr(value[:80]) in text
    assert len(text) < 1000  # a long value is cut, not echoed whole
    assert any(LOST_AFTER in p.path for p in validate_manifest(job))
    sim = Sim(job)  # the operator fails the job as InvalidSpec, creating nothing
    assert sim.step().create == ()
    assert sim.phase == "Failed"


def test_a_pod_its_template_binds_to_a_lost_node_is_not_replaced_in_a_loop() -> None:
    job = gj()
    job["spec"]["replicaSpecs"][0]["template"]["spec"]["nodeName"] = "node-1"
    sim = Sim(job)
    sim.nodes = {"node-1": node(True, sim.now)}
    sim.step()
    sim.run()
    for pod in sim.pods.values():
        pod["spec"]["nodeName"] = "node-1"
    sim.step()
    del sim.nodes["node-1"]  # a replacement would be bound to the gone node again
    for _ in range(3):
        assert sim.step(seconds=400).delete == ()
    cond = sim.condition("Running")
    assert cond is not None
    assert (cond["status"], cond["reason"]) == ("False", "NodeNotReady")
    assert "binds it to that node (spec.nodeName)" in cond["message"]
    assert entry(sim, "demo-worker-0")["phase"] == "Unknown"


def test_under_restart_scope_job_a_lost_node_restarts_the_whole_job_uncounted() -> None:
    """The other ranks cannot go on without the lost one: they are stopped with their grace
    period and every replica comes back together, with no restart counted."""
    sim = running(gj(policy="Never", annotations={models.RESTART_SCOPE_ANNOTATION: "Job"}))
    assert sim.nodes is not None
    del sim.nodes["node-1"]
    plan = sim.step()
    deleted = {d.name: d.grace_period_seconds for d in plan.delete}
    assert deleted == {"demo-worker-1": 0, "demo-worker-0": None}
    assert created(plan) == []
    cond = sim.condition("Running")
    assert cond is not None
    assert cond["reason"] == "RestartingJob"
    assert cond["message"].startswith(
        "Pod demo-worker-1 was force-deleted: its node node-1 no longer exists; restarting the"
        " whole job (restart scope Job, not counted): stopping its 1 other running pods"
    )
    assert [e.reason for e in plan.events].count("NodeLost") == 1
    sim.step()
    assert created(sim.plans[-1]) == []  # worker-0 is still stopping
    sim.drain_deletions()
    plan = sim.step()
    assert created(plan) == ["demo-worker-0", "demo-worker-1"]
    sim.run()
    sim.settle()
    assert (sim.phase, restarts(sim)) == ("Running", 0)
    assert sim.reasons().count("RestartingJob") == 1


def created(plan: Plan) -> list[str]:
    return sorted(m["metadata"]["name"] for m in plan.create if m["kind"] == "Pod")
