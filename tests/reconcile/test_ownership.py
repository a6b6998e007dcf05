"""Ownership and refused writes in the pure core: the job uses only what it controls (by uid),
reports objects that hold its names, and shows refused creates on itself."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from t9k_sdk import models
from t9k_sdk.reconcile import ChildFailure, Observed, reconcile
from tests.sdk.manifests import colossalai_job, deepspeed_job, generic_job, pod

from .sim import Sim

KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nk\n-----END OPENSSH PRIVATE KEY-----\n",
    "ssh-ed25519 A",
)


def gj(workers: int = 2, **spec: Any) -> dict[str, Any]:
    replica = {"type": "worker", "replicas": workers, "template": pod("w")}
    return generic_job(replicaSpecs=[replica], **spec)


def ds() -> dict[str, Any]:
    return deepspeed_job(
        config={"slotsPerWorker": 1, "run": {"python": ["train.py"]}},
        worker={"replicas": 2, "template": pod("worker")},
    )


def foreign(
    kind: str, name: str, owner: tuple[str, str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    """An object named like a child, with the operator's labels, owned by `owner` or nobody."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": f"{name}-foreign-uid",
        "resourceVersion": "5",
        "labels": {"tensorstack.dev/component": "genericjob", "tensorstack.dev/owner-name": "demo"},
    }
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": models.API_VERSION,
                "kind": owner[0],
                "name": owner[1],
                "uid": owner[2],
                "controller": True,
            }
        ]
    return {"apiVersion": "v1", "kind": kind, "metadata": meta, **extra}


def running_condition(sim: Sim) -> dict[str, Any]:
    cond = sim.condition("Running")
    assert cond is not None
    return dict(cond)


SPEC_CASES = {
    # (job, pre-existing foreign object, kind/name)
    "secret with no owner": (ds, foreign("Secret", "demo-ssh", data={"id_ed25519": "ZXZpbA=="})),
    "config map of another job": (
        ds,
        foreign("ConfigMap", "demo-config", ("ColossalAIJob", "demo", "other-uid"), data={}),
    ),
    "pod with our labels and name": (gj, foreign("Pod", "demo-worker-0", status={})),
}


@pytest.mark.parametrize("case", sorted(SPEC_CASES))
def test_an_object_holding_a_needed_name_blocks_the_job_and_is_never_touched(case: str) -> None:
    make, obj = SPEC_CASES[case]
    sim = Sim(make(), ssh_key=KEY)
    kind, name = obj["kind"], obj["metadata"]["name"]
    if kind == "Pod":
        sim.pods[name] = copy.deepcopy(obj)
    else:
        sim.others[(kind, name)] = copy.deepcopy(obj)
    plan = sim.step()

    assert plan.create == ()  # no pod that could mount or be confused with it
    touched = [d.name for d in plan.delete] + [u.manifest["metadata"]["name"] for u in plan.update]
    assert name not in touched
    assert sim.phase == "Pending"
    cond = running_condition(sim)
    assert (cond["status"], cond["reason"]) == ("False", "NameConflict")
    assert f"{kind} {name} exists but is not this job's" in cond["message"]
    # T9k: Initialized means the children were created; nothing was, so nothing failed either
    initialized = sim.condition("Initialized")
    assert (initialized["status"], initialized["reason"]) == ("False", "NameConflict")
    assert sim.condition("ReplicaFailure") is None
    owner = "ColossalAIJob demo (uid other-uid)" if "another" in case else "no controller owner"
    assert owner in cond["message"]
    warnings = [e for e in sim.events if e.type == "Warning"]
    assert [e.reason for e in warnings] == ["NameConflict"]
    assert warnings[0].message == cond["message"]
    assert plan.requeue_after is not None
    assert plan.requeue_after <= 30
    if kind == "Pod":  # a foreign pod is never counted as a replica
        assert sim.status["aggregate"]["running"] == 0

    again = sim.step()  # the same conflict: no new Event, no write
    assert again.status is None
    assert again.events == ()
    assert again.create == ()

    # Once the object goes, the job proceeds.
    if kind == "Pod":
        del sim.pods[name]
    else:
        del sim.others[(kind, name)]
    resumed = sim.step()
    assert name in {m["metadata"]["name"] for m in resumed.create}
    assert running_condition(sim)["reason"] != "NameConflict"
    assert sim.condition("Initialized")["status"] == "True"


def test_foreign_objects_with_names_the_job_does_not_need_are_ignored() -> None:
    sim = Sim(gj(workers=1))
    sim.others[("Service", "demo-extra")] = foreign("Service", "demo-extra", spec={})
    sim.pods["demo-worker-7"] = foreign("Pod", "demo-worker-7", status={})
    plan = sim.step()
    assert [m["metadata"]["name"] for m in plan.create] == ["demo-worker-0"]
    assert plan.delete == ()  # not an orphan of ours: a stranger's pod
    assert running_condition(sim)["reason"] == "Pending"
    assert "demo-worker-7" not in {r["name"] for t in sim.status["tasks"] for r in t["replicas"]}


def test_objects_of_another_namespace_are_not_the_jobs_whatever_owner_they_name() -> None:
    """A tenant plants, in their own namespace, a Failed pod named like the victim's worker and
    a ConfigMap, both with our labels and an ownerReference to the victim job's uid. Even if the
    shell handed them over, the core neither counts the pod nor deletes the ConfigMap."""
    sim = Sim(gj(workers=1, service={"ports": [{"name": "http", "port": 80}]}))
    sim.settle()
    sim.run()
    sim.settle()
    assert sim.phase == "Running"
    owner = ("GenericJob", "demo", "job-uid")
    planted_pod = foreign("Pod", "demo-worker-0", owner, status={"phase": "Failed"})
    planted_pod["metadata"]["namespace"] = "tenant-b"
    planted_cm = foreign("ConfigMap", "demo-unneeded", owner, data={})
    planted_cm["metadata"]["namespace"] = "tenant-b"
    own_pod = sim.pods["demo-worker-0"]
    sim.others[("ConfigMap", "demo-unneeded")] = planted_cm
    plan = reconcile(
        sim.job,
        Observed(
            pods=(own_pod, planted_pod),
            services=tuple(o for (k, _), o in sim.others.items() if k == "Service"),
            config_maps=(planted_cm,),
        ),
        now=sim.now,
    )
    assert plan.delete == ()
    assert plan.create == ()
    assert plan.status is None or plan.status["phase"] == "Running"


def test_a_child_that_lost_its_owner_is_not_adopted_deleted_or_updated() -> None:
    """A GenericJob's service whose owner reference now names another uid: left alone."""
    job = gj(workers=1, service={"ports": [{"name": "http", "port": 80}]})
    sim = Sim(job)
    sim.settle()
    (svc,) = [o for (k, _), o in sim.others.items() if k == "Service"]
    svc["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    svc["spec"]["ports"] = [{"name": "http", "port": 81}]  # differs: we would normally update
    plan = sim.step()
    assert plan.update == ()
    assert plan.delete == ()
    assert running_condition(sim)["reason"] == "NameConflict"


def test_deepspeed_and_colossalai_jobs_of_one_name_never_share_children() -> None:
    """Whichever made its children first keeps them; the other reports the conflict."""
    first = Sim(ds(), ssh_key=KEY)
    first.launch()
    cai = colossalai_job()
    cai["metadata"]["uid"] = "cai-uid"
    second = Sim(cai, ssh_key=KEY)
    second.others = copy.deepcopy(first.others)  # same namespace, same names
    second.pods = copy.deepcopy(first.pods)
    plan = second.step()
    assert plan.create == ()
    assert plan.delete == ()
    assert plan.update == ()
    message = running_condition(second)["message"]
    for held in ("Secret demo-ssh", "ConfigMap demo-config", "Service demo", "Pod demo-worker-0"):
        assert held in message
    assert "DeepSpeedJob demo (uid job-uid)" in message
    # The DeepSpeedJob, seeing the ColossalAIJob's nothing, carries on unaffected.
    assert first.step().delete == ()


SERVER_MESSAGE = (
    'Service "demo-worker-0" is invalid: spec.ports[0].port: Invalid value: 70000:'
    " must be between 1 and 65535, inclusive"
)


def refused(name: str = "demo-worker-0", kind: str = "Service") -> ChildFailure:
    return ChildFailure("create", kind, name, 422, "Invalid", SERVER_MESSAGE)


def test_a_refused_create_lands_on_the_job_as_condition_and_warning_with_the_server_message() -> (
    None
):
    job = gj(workers=1, service={"ports": [{"name": "http", "port": 80}]})
    job["metadata"]["uid"] = "job-uid"
    job["metadata"]["namespace"] = "ns"
    first = reconcile(job, Observed(), now=Sim(job).now)
    job["status"] = first.status
    plan = reconcile(job, Observed(failures=(refused(),)), now=Sim(job).now)
    assert plan.status is not None
    (cond,) = [c for c in plan.status["conditions"] if c["type"] == "Running"]
    assert (cond["status"], cond["reason"]) == ("False", "CreateFailed")
    assert cond["message"] == (
        "Cannot create Service demo-worker-0: the API server refused it (422 Invalid): "
        + SERVER_MESSAGE
    )
    warnings = [e for e in plan.events if e.type == "Warning"]
    assert [(e.reason, e.message) for e in warnings] == [("CreateFailed", cond["message"])]
    assert "demo-worker-0" in {m["metadata"]["name"] for m in plan.create}  # tried again
    # no child exists yet: the job is not Initialized (T9k: its children were created)
    (init,) = [c for c in plan.status["conditions"] if c["type"] == "Initialized"]
    assert (init["status"], init["reason"], init["message"]) == (
        "False",
        "CreateFailed",
        cond["message"],
    )

    job["status"] = plan.status
    again = reconcile(job, Observed(failures=(refused(),)), now=Sim(job).now)
    assert again.status is None
    assert not [e for e in again.events if e.type == "Warning"]

    # Fixed (the create went through: the operator forgets the failure): the condition clears.
    later = reconcile(job, Observed(), now=Sim(job).now)
    assert later.status is not None
    (cond,) = [c for c in later.status["conditions"] if c["type"] == "Running"]
    assert cond["reason"] == "Pending"
    (init,) = [c for c in later.status["conditions"] if c["type"] == "Initialized"]
    assert init["status"] == "True"


def test_a_failure_of_an_object_the_job_no_longer_wants_is_ignored() -> None:
    sim = Sim(gj(workers=1))
    sim.step()
    plan = reconcile(sim.job, Observed(failures=(refused("demo-gone"),)), now=sim.now)
    assert plan.status is None or all(
        c["reason"] != "CreateFailed" for c in plan.status["conditions"]
    )


def test_create_events_name_the_create_they_report() -> None:
    """The operator records "Created pod" only once that create went through."""
    plan = Sim(gj(workers=2)).step()
    created = [e for e in plan.events if e.reason == "SuccessfulCreatePod"]
    assert [e.after for e in created] == ["create Pod/demo-worker-0", "create Pod/demo-worker-1"]
