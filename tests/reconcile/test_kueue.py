"""Admission through Kueue, pass by pass: a job labelled `kueue.x-k8s.io/queue-name` gets a
Workload, runs no pod until Kueue admits it whole, gets its flavour's node labels and
tolerations, gives its pods back when evicted without spending a restart, and tells Kueue when
it is paused, ready and finished. The real Kueue is in tests/cluster/test_kueue.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from t9k_sdk import GenericJob, InvalidManifestError, Replica
from tests.sdk.manifests import deepspeed_job, generic_job, pod

from .sim import KEY, Sim, by_name

QUEUE = "kueue.x-k8s.io/queue-name"
GPU = {"limits": {"nvidia.com/gpu": "8"}}


def queued(manifest: dict[str, Any], queue: str = "team-a", **labels: str) -> dict[str, Any]:
    manifest["metadata"]["labels"] = {QUEUE: queue, **labels}
    return manifest


def ds_job() -> dict[str, Any]:
    return queued(deepspeed_job(worker={"replicas": 3, "template": pod("worker", resources=GPU)}))


def sim(manifest: dict[str, Any], **kwargs: Any) -> Sim:
    return Sim(manifest, ssh_key=KEY, kueue=True, **kwargs)


def test_a_queued_job_gets_a_workload_of_every_pod_it_will_run_and_no_pod() -> None:
    s = sim(ds_job())
    plan = s.step()
    assert by_name(plan.create, "Pod") == {}
    workload = by_name(plan.create, "Workload")["deepspeedjob-demo"]
    assert workload["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert workload["metadata"]["ownerReferences"][0]["uid"] == "job-uid"
    assert workload["spec"]["queueName"] == "team-a"
    # one pod set per replica type, launcher (worker-0) included, with the requests Kueue charges
    [pod_set] = workload["spec"]["podSets"]
    assert (pod_set["name"], pod_set["count"]) == ("worker", 3)
    assert pod_set["template"]["spec"]["containers"][0]["resources"] == GPU
    s.step()
    assert s.phase == "Pending"
    running = s.condition("Running")
    assert running is not None
    assert running["reason"] == "Queued"
    assert "team-a" in running["message"]


def test_kueues_message_reaches_the_job_while_it_waits_for_quota() -> None:
    s = sim(ds_job())
    s.step()
    s.hold("couldn't assign flavors to pod set worker: insufficient unused quota for gpu")
    s.step()
    running = s.condition("Running")
    assert running is not None
    assert running["reason"] == "Queued"  # an ordinary wait, not an error
    assert "insufficient unused quota" in running["message"]
    assert s.pods == {}


def test_a_job_larger_than_its_queue_can_ever_hold_is_inadmissible() -> None:
    s = sim(ds_job())
    s.step()
    s.hold(
        "couldn't assign flavors to pod set worker: insufficient quota for nvidia.com/gpu in"
        " flavor gpu, previously considered podsets requests (0) + current podset request (40)"
        " > maximum capacity (32)"
    )
    s.step()
    running = s.condition("Running")
    assert running is not None
    assert running["reason"] == "Inadmissible"


def test_a_job_kueue_calls_inadmissible_says_so_with_a_warning() -> None:
    s = sim(ds_job())
    s.step()
    s.hold("LocalQueue team-a doesn't exist", reason="Inadmissible")
    s.step()
    running = s.condition("Running")
    assert running is not None
    assert running["reason"] == "Inadmissible"
    assert "LocalQueue team-a doesn't exist" in running["message"]
    assert [e.type for e in s.events if e.reason == "Inadmissible"] == ["Warning"]
    assert s.pods == {}


def test_an_admitted_job_runs_every_pod_on_its_flavours_nodes_and_reports_pods_ready() -> None:
    toleration = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
    flavors = {"h100": {"nodeLabels": {"pool": "h100"}, "tolerations": [toleration]}}
    s = sim(ds_job(), flavors=flavors)
    s.step()
    s.admit("h100")
    created = s.launch()
    assert sorted(created) == ["demo-worker-0", "demo-worker-1", "demo-worker-2"]
    for manifest in created.values():
        assert manifest["spec"]["nodeSelector"] == {"pool": "h100"}
        assert toleration in manifest["spec"]["tolerations"]
    conditions = {c["type"]: c for c in s.workload()["status"]["conditions"]}
    assert conditions["PodsReady"]["status"] == "True"
    assert s.phase == "Running"


def test_an_evicted_job_gives_its_pods_back_spends_no_restart_and_runs_again() -> None:
    s = sim(ds_job())
    s.step()
    s.admit()
    s.launch()
    s.evict("Preempted", "Preempted to accommodate a workload of higher priority")
    plan = s.step()
    assert {d.name for d in plan.delete if d.kind == "Pod"} == set(s.pods)
    assert all(d.grace_period_seconds is None for d in plan.delete)  # each rank's own grace
    s.drain_deletions()
    s.step()
    # Once no pod is left, the admission goes back to Kueue, which queues the job again.
    workload = s.workload()
    assert "admission" not in workload["status"]
    conditions = {c["type"]: c for c in workload["status"]["conditions"]}
    assert conditions["QuotaReserved"]["status"] == "False"
    # preempted: queued again at once, as Kueue's own job framework does
    assert (conditions["Requeued"]["status"], conditions["Requeued"]["reason"]) == (
        "True",
        "Preempted",
    )
    s.step()
    assert s.phase == "Pending"
    running = s.condition("Running")
    assert running is not None
    assert running["reason"] == "Evicted"
    assert "Preempted" in running["message"]
    assert s.task("worker")["restartCount"] == 0
    assert s.status.get("backoffCount", 0) == 0
    s.admit()
    assert sorted(s.launch()) == ["demo-worker-0", "demo-worker-1", "demo-worker-2"]
    for name in list(s.pods):
        s.finish(name)
    s.settle()
    assert s.phase == "Succeeded"
    assert s.task("worker")["restartCount"] == 0


def test_a_finished_job_tells_kueue_at_once_so_its_quota_is_released() -> None:
    s = sim(
        queued(generic_job(replicaSpecs=[{"type": "worker", "replicas": 1, "template": pod()}]))
    )
    s.step()
    s.admit()
    s.launch()
    s.finish("demo-worker-0")
    s.step()
    s.step()
    assert s.phase == "Succeeded"
    finished = next(c for c in s.workload()["status"]["conditions"] if c["type"] == "Finished")
    assert (finished["status"], finished["reason"]) == ("True", "Succeeded")


def test_pausing_a_job_deactivates_its_workload_and_resuming_activates_it() -> None:
    s = sim(ds_job())
    s.step()
    s.admit()
    s.launch()
    s.job["spec"]["runMode"] = {"pause": {"enabled": True}}
    s.step()
    assert s.workload()["spec"]["active"] is False
    s.drain_deletions()
    s.job["spec"]["runMode"] = {"pause": {"enabled": False}}
    s.step()
    assert s.workload()["spec"]["active"] is True


def test_a_job_that_names_a_queue_where_kueue_is_absent_says_so_and_creates_nothing() -> None:
    s = Sim(ds_job(), ssh_key=KEY, kueue=False)
    plan = s.step()
    assert by_name(plan.create, "Pod") == {}
    assert by_name(plan.create, "Workload") == {}
    running = s.condition("Running")
    assert running is not None
    assert running["reason"] == "QueueUnavailable"
    assert "install Kueue, or remove the label" in running["message"]
    assert [e.type for e in s.events if e.reason == "QueueUnavailable"] == ["Warning"]


def test_a_job_without_a_queue_gets_no_workload_even_where_kueue_runs() -> None:
    s = sim(deepspeed_job())
    plan = s.step()
    assert by_name(plan.create, "Workload") == {}
    assert sorted(by_name(plan.create, "Pod")) == ["demo-worker-1"]


def test_removing_the_queue_label_deletes_the_workload() -> None:
    s = sim(ds_job())
    s.step()
    assert ("Workload", "deepspeedjob-demo") in s.others
    del s.job["metadata"]["labels"][QUEUE]
    plan = s.step()
    assert [(d.kind, d.name) for d in plan.delete if d.kind == "Workload"] == [
        ("Workload", "deepspeedjob-demo")
    ]


def test_the_builder_sets_kueues_labels() -> None:
    builder = GenericJob(
        name="demo",
        kueue_queue="team-a",
        kueue_priority_class="high",
        replicas=[Replica(type="worker", image="busybox")],
    )
    labels = builder.to_dict()["metadata"]["labels"]
    assert labels == {QUEUE: "team-a", "kueue.x-k8s.io/priority-class": "high"}


@pytest.mark.parametrize(
    ("arguments", "field", "says"),
    [
        ({"kueue_priority_class": "high"}, "kueue_priority_class", "needs kueue_queue"),
        ({"kueue_queue": "Team A"}, "kueue_queue", "is not a Kueue object name"),
        (
            {"kueue_queue": "team-a", "labels": {QUEUE: "team-b"}},
            "kueue_queue",
            "disagrees with labels",
        ),
    ],
)
def test_the_builder_refuses_kueue_arguments_that_cannot_work(
    arguments: dict[str, Any], field: str, says: str
) -> None:
    with pytest.raises(InvalidManifestError) as caught:
        GenericJob(name="demo", replicas=[Replica(type="worker", image="busybox")], **arguments)
    assert any(p.path == field and says in p.message for p in caught.value.problems)


def test_kueues_message_reaches_the_job_bounded_and_on_one_line() -> None:
    s = sim(ds_job())
    s.step()
    s.hold("\x1b[2Jquota\n" + "x" * 100_000)
    s.step()
    running = s.condition("Running")
    assert running is not None
    assert len(running["message"]) < 1200
    assert "\x1b" not in running["message"]
    assert "\n" not in running["message"]
    assert running["message"].endswith("...")


def test_a_workload_someone_else_created_under_the_jobs_name_is_a_conflict_not_an_admission() -> (
    None
):
    s = sim(ds_job())
    forged = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "deepspeedjob-demo",
            "namespace": "ns",
            "uid": "forged",
            "resourceVersion": "1",
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": "x",
                    "uid": "other",
                    "controller": True,
                }
            ],
        },
        "spec": {"queueName": "team-a", "podSets": []},
        "status": {
            "admission": {"clusterQueue": "team-a", "podSetAssignments": []},
            "conditions": [{"type": "Admitted", "status": "True", "reason": "Admitted"}],
        },
    }
    s.others[("Workload", "deepspeedjob-demo")] = forged
    for _ in range(3):
        plan = s.step()
        assert by_name(plan.create, "Pod") == {}
        assert not [d for d in plan.delete if d.kind == "Workload"]
        assert not [u for u in plan.update if u.manifest["kind"] == "Workload"]
    assert s.pods == {}
    assert any("deepspeedjob-demo" in (e.message or "") for e in s.events)


def test_the_workload_carries_the_priority_of_the_jobs_workload_priority_class() -> None:
    s = sim(ds_job(), priorities={"high": 1000})
    s.job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "high"
    workload = by_name(s.step().create, "Workload")["deepspeedjob-demo"]
    assert workload["spec"]["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "high",
    }
    assert workload["spec"]["priority"] == 1000


def test_a_missing_workload_priority_class_is_named_on_the_job_and_nothing_is_created() -> None:
    s = sim(ds_job(), priorities={})
    s.job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "urgent"
    plan = s.step()
    assert by_name(plan.create, "Workload") == {}
    assert by_name(plan.create, "Pod") == {}
    running = s.condition("Running")
    assert running is not None
    assert running["reason"] == "Inadmissible"
    assert "WorkloadPriorityClass 'urgent'" in running["message"]


def test_a_restarting_replica_waits_for_recovery_not_for_its_start() -> None:
    """Kueue times `WaitForStart` from the admission: a job that ran longer than
    waitForPodsReady's timeout would be evicted at its first restart."""
    worker = {
        "type": "worker",
        "replicas": 2,
        "restartPolicy": {"policy": "OnFailure", "limit": 3},
        "template": pod(),
    }
    s = sim(queued(generic_job(replicaSpecs=[worker])))
    s.step()
    s.admit()
    s.launch()
    ready = next(c for c in s.workload()["status"]["conditions"] if c["type"] == "PodsReady")
    assert (ready["status"], ready["reason"]) == ("True", "Started")
    s.finish("demo-worker-1", code=1)
    s.step()
    s.step()
    ready = next(c for c in s.workload()["status"]["conditions"] if c["type"] == "PodsReady")
    assert (ready["status"], ready["reason"]) == ("False", "WaitForRecovery")


def test_a_workload_kueue_or_an_admin_deactivated_is_not_activated_again() -> None:
    s = sim(ds_job())
    s.step()
    s.workload()["spec"]["active"] = False
    plan = s.step()
    assert not [u for u in plan.update if u.manifest["kind"] == "Workload"]
    assert s.workload()["spec"]["active"] is False


def test_a_job_whose_replicas_change_stops_its_pods_and_queues_again_at_its_new_size() -> None:
    s = sim(ds_job())
    s.step()
    s.admit()
    s.launch()
    s.job["spec"]["worker"]["replicas"] = 5
    plan = s.step()
    assert by_name(plan.create, "Pod") == {}  # nothing beyond what Kueue admitted
    assert {d.name for d in plan.delete if d.kind == "Pod"} == set(s.pods)
    s.drain_deletions()
    plan = s.step()
    assert [d.name for d in plan.delete if d.kind == "Workload"] == ["deepspeedjob-demo"]
    workload = by_name(s.step().create, "Workload")["deepspeedjob-demo"]
    assert workload["spec"]["podSets"][0]["count"] == 5


def test_pods_wait_while_an_admitted_flavour_is_unknown_to_the_operator() -> None:
    s = sim(ds_job(), flavors={})
    s.step()
    s.admit("h100")
    plan = s.step()
    assert by_name(plan.create, "Pod") == {}
    s.step()
    running = s.condition("Running")
    assert running is not None
    assert "ResourceFlavor 'h100'" in running["message"]


def test_a_kueue_label_given_in_labels_is_checked_as_the_argument_is() -> None:
    with pytest.raises(InvalidManifestError) as caught:
        GenericJob(
            name="demo",
            replicas=[Replica(type="worker", image="busybox")],
            labels={QUEUE: "Team_A"},
        )
    assert any(
        p.path == f"labels['{QUEUE}']" and "is not a Kueue object name" in p.message
        for p in caught.value.problems
    )
    # a priority with the queue given as a label is fine
    job = GenericJob(
        name="demo",
        replicas=[Replica(type="worker", image="busybox")],
        labels={QUEUE: "team-a"},
        kueue_priority_class="high",
    )
    assert job.to_dict()["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "high"
