"""Ready, Reconciling, Stalled and observedGeneration: the status GitOps tools read (pure core).

The table is in t9k_sdk/reconcile/status/conditions.py; tests/cluster/test_kstatus.py runs the real kstatus
on live jobs in each state.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from t9k_sdk.reconcile import Observed, reconcile
from tests.sdk.manifests import colossalai_job, deepspeed_job, generic_job, pod

from .sim import Sim

KSTATUS = ("Ready", "Reconciling", "Stalled")


def gj(workers: int = 2, **spec: Any) -> dict[str, Any]:
    replica: dict[str, Any] = {"type": "worker", "replicas": workers, "template": pod("w")}
    policy = spec.pop("restart", None)
    if policy:
        replica["restartPolicy"] = policy
    job = generic_job(replicaSpecs=[replica], **spec)
    job["metadata"]["generation"] = 1
    return job


def health(sim: Sim) -> dict[str, tuple[str, str]]:
    """Ready/Reconciling/Stalled -> (status, reason)."""
    out = {}
    for type_ in KSTATUS:
        c = sim.condition(type_)
        assert c is not None, f"no {type_} condition in {sim.status}"
        out[type_] = (c["status"], c["reason"])
    return out


def table(ready: tuple[str, str], reconciling: str, stalled: str) -> dict[str, tuple[str, str]]:
    """One row of the table: reasons of the False conditions follow Ready's, except where set."""
    return {
        "Ready": ready,
        "Reconciling": (reconciling, ready[1]),
        "Stalled": (stalled, ready[1]),
    }


def edit(sim: Sim, change: dict[str, Any] | None = None) -> None:
    """A spec edit as the API server records it: the spec changes and generation goes up."""
    sim.job["spec"].update(copy.deepcopy(change or {}))
    sim.job["metadata"]["generation"] = int(sim.job["metadata"].get("generation") or 1) + 1


def test_a_job_reads_pending_then_running_then_succeeded() -> None:
    sim = Sim(gj())
    sim.step()
    assert health(sim) == table(("False", "Pending"), "True", "False")
    assert sim.status["observedGeneration"] == 1
    assert sim.condition("Reconciling")["message"] == (
        "Waiting for 2 of 2 replicas to start running."
    )
    sim.run()
    sim.settle()
    assert sim.phase == "Running"
    assert health(sim) == table(("True", "Running"), "False", "False")
    assert sim.condition("Ready")["message"] == "All pods are running normally."
    sim.finish("demo-worker-0")
    sim.finish("demo-worker-1")
    sim.settle()
    assert sim.phase == "Succeeded"
    assert health(sim) == table(("True", "Succeeded"), "False", "False")


def test_a_restarting_replica_keeps_a_running_job_ready() -> None:
    sim = Sim(gj(restart={"policy": "OnFailure", "limit": 3}))
    sim.settle()
    sim.run()
    sim.settle()
    sim.finish("demo-worker-1", code=137)
    sim.step()  # deleted for the restart
    sim.drain_deletions()
    sim.step()  # recreated: Pending again
    assert sim.phase == "Running"
    assert health(sim) == table(("True", "Running"), "False", "False")


def test_an_unschedulable_pod_is_reconciling_with_the_schedulers_words() -> None:
    sim = Sim(gj(workers=1))
    sim.step()
    sim.unschedulable("demo-worker-0", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
    sim.step()
    assert health(sim) == table(("False", "Pending"), "True", "False")
    message = sim.condition("Reconciling")["message"]
    assert message.startswith("Pod[demo-worker-0] cannot be scheduled: 0/4 nodes")


def test_a_failed_job_is_stalled_with_the_reason_and_message_of_its_failure() -> None:
    sim = Sim(gj(workers=1))
    sim.settle()
    sim.finish("demo-worker-0", code=2)
    sim.settle()
    assert sim.phase == "Failed"
    failed = sim.condition("Failed")
    assert health(sim) == {
        "Ready": ("False", failed["reason"]),
        "Reconciling": ("False", failed["reason"]),
        "Stalled": ("True", failed["reason"]),
    }
    assert sim.condition("Stalled")["message"] == failed["message"]
    assert sim.condition("Ready")["message"] == failed["message"]


def test_pausing_is_reconciling_and_paused_is_ready_then_resuming_is_reconciling() -> None:
    sim = Sim(gj())
    sim.settle()
    sim.run()
    sim.settle()
    edit(sim, {"runMode": {"pause": {"enabled": True}}})
    sim.step()  # the pods are being deleted
    assert health(sim) == table(("False", "Pausing"), "True", "False")
    assert sim.status["observedGeneration"] == 2
    sim.drain_deletions()
    sim.settle()
    assert sim.phase == "Paused"
    assert health(sim) == table(("True", "Paused"), "False", "False")
    assert (
        sim.condition("Ready")["message"]
        == "The job is paused: all replicas are deleted or being deleted."
    )
    edit(sim, {"runMode": {"pause": {"enabled": False}}})
    sim.step()
    assert sim.phase == "Resuming"
    assert health(sim) == table(("False", "Resuming"), "True", "False")
    sim.step()
    sim.run()
    sim.settle()
    assert health(sim) == table(("True", "Running"), "False", "False")
    assert sim.status["observedGeneration"] == 3


def test_a_name_held_by_someone_else_stalls_the_job_until_it_is_gone() -> None:
    sim = Sim(gj(workers=1))
    foreign = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "demo-worker-0", "namespace": "ns", "uid": "theirs"},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
        "status": {"phase": "Running"},
    }
    sim.pods["demo-worker-0"] = foreign
    sim.step()
    assert health(sim) == table(("False", "NameConflict"), "False", "True")
    stalled = sim.condition("Stalled")["message"]
    assert "Pod demo-worker-0 exists but is not this job's" in stalled
    del sim.pods["demo-worker-0"]
    sim.step()
    assert health(sim) == table(("False", "Pending"), "True", "False")


@pytest.mark.parametrize(
    "manifest",
    [
        colossalai_job(
            replicaSpecs=[
                {"type": "launcher", "template": pod("launcher")},
                {"type": "worker", "replicas": 2, "template": pod("trainer")},
            ]
        ),
    ],
)
def test_an_invalid_spec_is_stalled_and_observed(manifest: dict[str, Any]) -> None:
    manifest["metadata"].update(generation=4, uid="u", namespace="ns")
    plan = reconcile(manifest, Observed(), now=Sim(manifest).now)
    assert plan.status is not None
    by_type = {c["type"]: c for c in plan.status["conditions"]}
    assert (by_type["Stalled"]["status"], by_type["Stalled"]["reason"]) == ("True", "InvalidSpec")
    assert (by_type["Ready"]["status"], by_type["Reconciling"]["status"]) == ("False", "False")
    assert by_type["Stalled"]["message"] == by_type["Failed"]["message"]
    assert plan.status["observedGeneration"] == 4
    again = reconcile({**manifest, "status": plan.status}, Observed(), now=Sim(manifest).now)
    assert again.status is None


@pytest.mark.parametrize("make", [generic_job, deepspeed_job, colossalai_job])
def test_a_spec_edit_alone_is_one_status_write_and_then_none(make: Any) -> None:
    manifest = make()
    manifest["metadata"]["generation"] = 1
    sim = Sim(manifest)
    sim.ssh_key = ("-----BEGIN OPENSSH PRIVATE KEY-----\nx\n", "ssh-ed25519 AAAA test")
    sim.settle()
    sim.run()
    sim.settle()
    before = copy.deepcopy(sim.status)
    assert before["observedGeneration"] == 1
    edit(sim)  # e.g. a label in a template the operator does not watch: generation only
    first = sim.step()
    assert first.status is not None
    assert first.status == {**before, "observedGeneration": 2}
    assert not (first.create)
    assert not (first.delete)
    assert not (first.update)
    assert first.events == ()
    quiet = sim.step()
    assert quiet.status is None
    assert not (quiet.create)
    assert not (quiet.delete)
    assert not (quiet.update)


def test_a_converged_job_writes_nothing_and_keeps_its_transition_times() -> None:
    sim = Sim(gj())
    sim.settle()
    sim.run()
    sim.settle()
    times = {t: sim.condition(t)["lastTransitionTime"] for t in KSTATUS}
    for _ in range(3):
        assert sim.step(seconds=60).status is None
    sim.finish("demo-worker-0")
    sim.step(seconds=60)  # a replica finished, the job still runs: the message may change...
    sim.settle()
    # ...but a condition whose status did not flip keeps its lastTransitionTime
    assert sim.condition("Ready")["lastTransitionTime"] == times["Ready"]
    assert sim.condition("Stalled")["lastTransitionTime"] == times["Stalled"]


def test_a_finished_job_from_before_the_extension_gets_the_conditions_once() -> None:
    sim = Sim(gj(workers=1))
    sim.settle()
    sim.finish("demo-worker-0")
    sim.settle()
    old = copy.deepcopy(sim.job)
    old["status"].pop("observedGeneration")
    old["status"]["conditions"] = [
        c for c in old["status"]["conditions"] if c["type"] not in KSTATUS
    ]
    sim.job = old
    plan = sim.step()
    assert plan.status is not None
    assert plan.events == ()
    assert health(sim) == table(("True", "Succeeded"), "False", "False")
    assert sim.status["observedGeneration"] == 1
    assert sim.step().status is None


def test_a_status_a_foreign_writer_filled_is_replaced_by_the_operators_own_view() -> None:
    """A tenant with access to the status subresource writes nonsense: a huge
    observedGeneration, a bogus condition type, a Ready=True of its own. The job is not failed
    as InvalidSpec; the next pass writes the operator's own view back."""
    sim = Sim(gj())
    sim.settle()
    sim.run()
    sim.settle()
    honest = copy.deepcopy(sim.status)
    sim.job["status"] = {
        **honest,
        "observedGeneration": 2**63 - 1,
        "phase": "Running",
        "conditions": [
            *[c for c in honest["conditions"] if c["type"] != "Ready"],
            {"type": "Bogus", "status": "True", "reason": "x", "message": "$(rm -rf /)"},
            {"type": "Ready", "status": "False", "reason": "Hacked", "message": "evil"},
        ],
    }
    plan = sim.step()
    assert plan.status is not None
    assert sim.status["observedGeneration"] == 1
    assert [c["type"] for c in sim.status["conditions"]] == [
        c["type"] for c in honest["conditions"]
    ]
    assert health(sim) == table(("True", "Running"), "False", "False")
    assert sim.condition("Ready")["message"] == "All pods are running normally."
    assert not plan.create
    assert not plan.delete
    assert sim.step().status is None
