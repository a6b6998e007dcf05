"""GenericJob end to end: the real `t9k-operator` process, kwok finishing the pods.

One operator serves the whole module (fixture `e2e`); each test creates its jobs at once and then
waits for what a user would notice: pods, phases, conditions and Events. A pod either carries
the kwok annotations in its template (`finish(...)`: it runs for a second, then exits) or runs
until the test ends it (`jobs.end_pod`), so each outcome is exactly the one the test chose.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

from kubernetes import client

from tests.cluster.e2e_helpers import Jobs, condition, replicas_of, restart_counts, stays
from tools.kit import (
    ControlPlane,
    colossalai_job,
    container,
    finish,
    generic_job,
    replica,
    wait_for,
)
from tools.kit import pod as bare_pod

PHASES = ("Pending", "Running", "Paused", "Resuming", "Succeeded", "Failed")


def phase_events(jobs: Jobs, name: str) -> list[str]:
    """The job's phase transitions, as its Events tell them."""
    return [r for r in jobs.reasons(name) if r in PHASES]


def wait_phase_events(jobs: Jobs, name: str, expected: list[str], timeout: float = 10) -> None:
    """Events are recorded right after the status write that they describe: wait for them."""
    wait_for(
        lambda: phase_events(jobs, name),
        lambda seen: seen == expected,
        f"the phase Events of {name} to be {expected}",
        timeout,
    )


def phases_of(status: dict[str, Any]) -> dict[str, str]:
    return {name: r["phase"] for name, r in replicas_of(status).items()}


def test_a_job_succeeds_when_every_replica_did_or_when_a_success_rule_is_met(jobs: Jobs) -> None:
    jobs.create(
        generic_job("all-done", replica("worker", 2, annotations=finish(0))),
        generic_job(
            "chief-done",
            replica("chief", annotations=finish(0)),
            replica("worker", 2),  # run until the test ends
            successRules=[{"chief": [0]}],
        ),
    )

    status = jobs.wait_phase("all-done", "Succeeded")
    assert phases_of(status) == {"all-done-worker-0": "Succeeded", "all-done-worker-1": "Succeeded"}
    done = "The job has finished successfully."
    assert condition(status, "Completed") | {"lastTransitionTime": None} == {
        "type": "Completed",
        "status": "True",
        "reason": "Succeeded",
        "message": done,
        "lastTransitionTime": None,
    }
    assert condition(status, "Failed")["status"] == "False"
    assert condition(status, "Running")["status"] == "False"
    assert condition(status, "Initialized")["status"] == "True"
    assert status["aggregate"]["succeeded"] == 2
    wait_phase_events(jobs, "all-done", ["Pending", "Running", "Succeeded"])
    assert ("Normal", "Succeeded", done) in jobs.events("all-done")
    assert jobs.event_count("all-done", "SuccessfulCreatePod") == 2
    assert jobs.named_in("all-done", "SuccessfulCreatePod") == [
        "all-done-worker-0",
        "all-done-worker-1",
    ]

    status = jobs.wait_phase("chief-done", "Succeeded")
    pods = jobs.pods("chief-done")
    assert pods["chief-done-chief-0"].status.phase == "Succeeded"
    # the rule named only the chief; the workers still run (cleanUpPolicy defaults to None)
    assert {pods[f"chief-done-worker-{i}"].status.phase for i in (0, 1)} == {"Running"}
    assert condition(status, "Completed")["reason"] == "Succeeded"


def test_a_failure_rule_fails_the_job_only_when_its_replicas_failed(jobs: Jobs) -> None:
    jobs.create(
        generic_job(
            "rule",
            replica("worker", 3),
            successRules=[{"worker": [0]}],
            failureRules=[{"worker": [1]}],
        )
    )
    jobs.wait_running("rule", {f"rule-worker-{i}" for i in range(3)})

    # named by no rule, and the success rule can still be met: the job goes on
    jobs.end_pod("rule-worker-2", code=1)
    status = jobs.wait_status(
        "rule", lambda s: condition(s, "ReplicaFailure").get("status") == "True", "ReplicaFailure"
    )
    assert status["phase"] == "Running"
    # the message ends with the container's termination message (kwok writes one)
    replica_failure = condition(status, "ReplicaFailure")["message"]
    assert replica_failure.startswith("Pod[rule-worker-2] exited with error code 1")
    jobs.wait_event("rule", "ReplicaFailure")
    assert ("Warning", "ReplicaFailure", replica_failure) in jobs.events("rule")

    jobs.end_pod("rule-worker-1", code=1)
    status = jobs.wait_phase("rule", "Failed")
    message = 'The job is failed with rule: {"worker":["1"]}'
    failed = condition(status, "Failed")
    assert (failed["status"], failed["message"]) == ("True", message)
    assert condition(status, "Completed")["status"] == "True"
    wait_phase_events(jobs, "rule", ["Pending", "Running", "Failed"])
    assert ("Warning", "Failed", message) in jobs.events("rule")


def test_restart_policies_decide_which_failed_replicas_are_recreated(jobs: Jobs) -> None:
    jobs.create(
        generic_job(
            "on-failure", replica("worker", annotations=finish(1), restart=("OnFailure", 2))
        ),
        generic_job(
            "exit-137",
            replica("worker", annotations=finish(137, reason="OOMKilled"), restart=("ExitCode", 1)),
        ),
        generic_job("exit-1", replica("worker", annotations=finish(1), restart=("ExitCode", 3))),
        generic_job("never", replica("worker", annotations=finish(1), restart=("Never", 3))),
    )

    # OnFailure: each failure recreates the pod (same name, new uid) until the limit is spent.
    status = jobs.wait_phase("on-failure", "Failed", timeout=45)
    assert restart_counts(status) == {"worker": 2}
    uids = jobs.history.uids("on-failure-worker-0")
    assert len(uids) == len(set(uids)) == 3, uids
    assert replicas_of(status)["on-failure-worker-0"]["uid"] == uids[-1]
    assert jobs.pod("on-failure-worker-0").metadata.uid == uids[-1]  # the last one is kept
    assert condition(status, "Failed")["message"] == (
        "The job is failed: Pod[on-failure-worker-0] exited with error code 1"
    )
    wait_for(  # Events of child actions may come 1 s late
        lambda: set(jobs.reasons("on-failure")),
        lambda reasons: {"RestartingPod", "RestartedPod"} <= reasons,
        "the RestartingPod and RestartedPod Events",
        10,
    )
    restarting = [m for _t, r, m in jobs.events("on-failure") if r == "RestartingPod"]
    assert restarting == [
        "Pod on-failure-worker-0 failed with exit code 1; restarting it (OnFailure policy)"
    ]

    # ExitCode: 137 (killed) is retryable: restarted once (the limit), then the job fails.
    status = jobs.wait_phase("exit-137", "Failed", timeout=45)
    assert restart_counts(status) == {"worker": 1}
    # Recreated once, for the restart. (A recreated pod once vanished right after its create: kwok
    # had deleted it by name on the old pod's grace-0 delete; tools/kwok/stages.yaml says why that
    # no longer happens.)
    assert len(set(jobs.history.uids("exit-137-worker-0"))) == 2
    assert condition(status, "Failed")["message"] == (
        "The job is failed: Pod[exit-137-worker-0] exited with error code 137"
    )

    # ExitCode: 1 is a permanent error; Never never restarts. Both fail at the first exit.
    for name in ("exit-1", "never"):
        status = jobs.wait_phase(name, "Failed")
        assert restart_counts(status) == {"worker": 0}, name
        assert len(jobs.history.uids(f"{name}-worker-0")) == 1, name
        assert "RestartingPod" not in jobs.reasons(name)


def test_a_pod_deleted_while_running_is_recreated_without_counting_a_restart(jobs: Jobs) -> None:
    jobs.create(generic_job("evicted", replica("worker", 2, restart=("Never", 0))))
    names = {"evicted-worker-0", "evicted-worker-1"}
    before = jobs.wait_running("evicted", names)["evicted-worker-1"].metadata.uid
    jobs.wait_phase("evicted", "Running")
    jobs.core_v1.delete_namespaced_pod("evicted-worker-1", jobs.namespace)  # as an eviction would
    pods = jobs.wait_pods(
        "evicted",
        lambda ps: set(ps) == names
        and ps["evicted-worker-1"].metadata.uid != before
        and ps["evicted-worker-1"].status.phase == "Running",
        "worker-1 recreated and running",
    )
    status = jobs.wait_status(
        "evicted",
        lambda s: replicas_of(s)["evicted-worker-1"].get("uid")
        == pods["evicted-worker-1"].metadata.uid,
        "the new pod in the status",
    )
    assert status["phase"] == "Running"
    assert restart_counts(status) == {
        "worker": 0
    }  # it did not fail: not a restart, even with Never


def test_clean_up_policies_delete_all_unfinished_or_no_pods_when_the_job_ends(jobs: Jobs) -> None:
    def job(policy: str) -> dict[str, Any]:
        return generic_job(
            f"clean-{policy.lower()}",
            replica("chief", annotations=finish(0)),
            replica("worker"),  # still running when the chief succeeds
            successRules=[{"chief": [0]}],
            cleanUpPolicy=policy,
        )

    jobs.create(job("All"), job("Unfinished"), job("None"))
    for name in ("clean-all", "clean-unfinished", "clean-none"):
        jobs.wait_phase(name, "Succeeded")

    jobs.wait_pods("clean-all", lambda ps: not ps, "all deleted")
    status = jobs.wait_status(
        "clean-all",
        lambda s: set(phases_of(s).values()) == {"Deleted"},
        "every replica Deleted in the status",
    )
    assert status["aggregate"]["deleted"] == 2

    pods = jobs.wait_pods(
        "clean-unfinished", lambda ps: set(ps) == {"clean-unfinished-chief-0"}, "worker deleted"
    )
    assert pods["clean-unfinished-chief-0"].status.phase == "Succeeded"
    jobs.wait_status(
        "clean-unfinished",
        lambda s: phases_of(s)
        == {"clean-unfinished-chief-0": "Succeeded", "clean-unfinished-worker-0": "Deleted"},
        "the worker Deleted in the status",
    )

    pods = jobs.pods("clean-none")
    assert {n: p.status.phase for n, p in pods.items()} == {
        "clean-none-chief-0": "Succeeded",
        "clean-none-worker-0": "Running",
    }
    assert "Deleted" not in phases_of(jobs.status("clean-none")).values()


def test_debug_mode_replaces_the_command_and_the_job_never_finishes(jobs: Jobs) -> None:
    fetch = container("fetch", ["fetch-data"])
    jobs.create(
        generic_job(
            "debug",
            replica("worker", 2, command=["train"], init_containers=[fetch]),
            replica("ps", command=["serve"], init_containers=[fetch]),
            runMode={
                "debug": {
                    "enabled": True,
                    "replicaSpecs": [
                        {"type": "ps", "command": ["sleep", "3600"], "skipInitContainer": True}
                    ],
                }
            },
        )
    )
    names = {"debug-worker-0", "debug-worker-1", "debug-ps-0"}
    pods = jobs.wait_running("debug", names)
    worker = pods["debug-worker-0"].spec
    assert worker.containers[0].command == ["sleep", "inf"]
    assert worker.containers[0].args is None
    assert [c.name for c in worker.init_containers] == ["fetch"]
    ps = pods["debug-ps-0"].spec
    assert ps.containers[0].command == ["sleep", "3600"]
    assert ps.init_containers is None

    status = jobs.wait_phase("debug", "Running")
    completed = condition(status, "Completed")
    assert (completed["status"], completed["reason"]) == ("False", "Debug")

    # Even when every pod has exited, a job in debug mode does not finish by itself.
    for name in names:
        jobs.end_pod(name, code=0)
    status = jobs.wait_status(
        "debug",
        lambda s: set(phases_of(s).values()) == {"Succeeded"},
        "every replica Succeeded in the status",
    )
    assert status["phase"] == "Running"
    assert condition(status, "Completed")["reason"] == "Debug"
    assert "Succeeded" not in jobs.reasons("debug")


def test_pause_deletes_the_pods_and_resume_recreates_them_with_the_resume_command(
    jobs: Jobs,
) -> None:
    resume = [{"type": "worker", "command": ["train", "--resume=latest"]}]
    jobs.create(
        generic_job(
            "pausable",
            replica("worker", 2, command=["train"]),
            runMode={"pause": {"enabled": False, "resumeSpecs": resume}},
        )
    )
    names = {"pausable-worker-0", "pausable-worker-1"}
    before = {n: p.metadata.uid for n, p in jobs.wait_running("pausable", names).items()}
    jobs.wait_phase("pausable", "Running")

    jobs.patch("pausable", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    status = jobs.wait_status(
        "pausable",
        lambda s: s.get("phase") == "Paused" and condition(s, "Paused").get("status") == "True",
        "Paused with Paused=True",
    )
    assert jobs.pods("pausable") == {}
    assert set(phases_of(status).values()) == {"Deleted"}
    running = condition(status, "Running")
    assert (running["status"], running["reason"]) == ("False", "Paused")

    jobs.patch("pausable", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    pods = jobs.wait_running("pausable", names)
    status = jobs.wait_phase("pausable", "Running")
    assert all(pods[n].metadata.uid != before[n] for n in names)
    assert {tuple(p.spec.containers[0].command) for p in pods.values()} == {
        ("train", "--resume=latest")
    }
    paused = condition(status, "Paused")
    assert (paused["status"], paused["reason"]) == ("False", "Resumed")
    assert restart_counts(status) == {"worker": 0}  # a pause is not a restart
    # The second "The job is running." Event repeats the first: its count goes up (as kubectl
    # describe shows it: "x2") instead of a new Event.
    wait_phase_events(jobs, "pausable", ["Pending", "Running", "Paused", "Resuming"])
    wait_for(lambda: jobs.event_count("pausable", "Running"), lambda n: n == 2, "Running Event x2")


def test_a_service_per_replica_and_variables_substituted_in_command_and_env(jobs: Jobs) -> None:
    def peer(type_: str, count: int) -> dict[str, Any]:
        env = [
            {"name": "RANK", "value": "$(rank)"},
            {"name": "WORKERS", "value": "$(replicas[worker])"},
            {"name": "ROLE", "value": "$(type)"},
            {"name": "KEPT", "value": "$(HOME)/data"},  # not ours: the kubelet expands it
        ]
        command = ["serve", "--peer=$(service.worker[1].host):$(service.port[http])"]
        return replica(type_, count, containers=[container("worker", command, env=env)])

    jobs.create(
        generic_job(
            "tf",
            peer("chief", 1),
            peer("worker", 2),
            service={"ports": [{"name": "http", "port": 2222}]},
        )
    )
    names = {"tf-chief-0", "tf-worker-0", "tf-worker-1"}
    pods = jobs.wait_running("tf", names)

    services = {
        s.metadata.name: s
        for s in jobs.core_v1.list_namespaced_service(
            jobs.namespace, label_selector="tensorstack.dev/owner-name=tf"
        ).items
    }
    assert set(services) == names
    for name, svc in services.items():
        assert svc.spec.cluster_ip == "None"
        assert svc.spec.selector == {"genericjob-replica": name}
        assert [(p.name, p.port) for p in svc.spec.ports] == [("http", 2222)]
        owner = svc.metadata.owner_references[0]
        assert (owner.kind, owner.name, owner.controller) == ("GenericJob", "tf", True)

    for name, pod in pods.items():
        c = pod.spec.containers[0]
        assert c.command == ["serve", "--peer=tf-worker-1:2222"], name
        env = {e.name: e.value for e in c.env}
        rank = name.rsplit("-", 1)[1]
        role = name.split("-")[1]
        assert env == {"RANK": rank, "WORKERS": "2", "ROLE": role, "KEPT": "$(HOME)/data"}
        assert pod.metadata.labels["genericjob-replica"] == name
        assert pod.metadata.labels["replica-type"] == role
        assert pod.metadata.labels["replica-index"] == rank


def test_t9k_scheduler_gets_a_pod_group_owned_by_the_job(
    jobs: Jobs, custom: client.CustomObjectsApi
) -> None:
    jobs.create(
        generic_job(
            "gang",
            replica("worker", 2),
            replica("ps"),
            scheduler={"t9kScheduler": {"queue": "research", "priority": 50}},
        )
    )
    group = wait_for(
        lambda: custom.list_namespaced_custom_object(
            "scheduler.tensorstack.dev", "v1beta1", jobs.namespace, "podgroups"
        )["items"],
        lambda items: any(i["metadata"]["name"] == "gang" for i in items),
        "PodGroup gang",
    )[0]
    assert {k: group["spec"][k] for k in ("minMember", "queue", "priority")} == {
        "minMember": 3,
        "queue": "research",
        "priority": 50,
    }
    owner = group["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("GenericJob", "gang", True)

    # No t9k-scheduler runs here, so the pods stay Pending, unbound: that is the point.
    pods = jobs.wait_pods("gang", lambda ps: len(ps) == 3, "three pods")
    for name, pod in pods.items():
        assert pod.spec.scheduler_name == "t9k-scheduler", name
        labels = pod.metadata.labels
        assert labels["scheduler.tensorstack.dev/group-name"] == "gang"
        assert labels["scheduler.tensorstack.dev/queue"] == "research"
        assert labels["scheduler.tensorstack.dev/role"] == name.split("-")[1]
        assert pod.status.phase == "Pending"
        assert pod.spec.node_name is None
    assert jobs.status("gang")["phase"] == "Pending"


def test_an_unschedulable_pod_shows_in_the_running_condition_and_an_event(
    jobs: Jobs, cluster: ControlPlane
) -> None:
    gpus = str(cluster.max_gpus_per_node + 1)
    big = container("worker", ["train"], resources={"limits": {"nvidia.com/gpu": gpus}})
    jobs.create(generic_job("too-big", replica("worker", containers=[big])))
    status = jobs.wait_status(
        "too-big",
        lambda s: condition(s, "Running").get("reason") == "Unschedulable",
        "Running=False with reason Unschedulable",
    )
    running = condition(status, "Running")
    assert running["status"] == "False"
    # The scheduler's own summary, whatever the number of nodes: the cluster is shared with the
    # other tests (the logs tests add a node of their own; a kwok-only run has no real node).
    found = re.match(
        r"Pod\[too-big-worker-0\] cannot be scheduled: 0/(\d+) nodes are available: ",
        running["message"],
    )
    assert found, running["message"]
    assert int(found[1]) >= len(cluster.node_names)  # at least every kwok node was tried
    assert "Insufficient nvidia.com/gpu" in running["message"]
    assert status["phase"] == "Pending"
    assert jobs.wait_event("too-big", "Unschedulable") == (
        "Warning",
        "Unschedulable",
        running["message"],
    )


def test_deleting_a_job_deletes_its_pods_and_services(jobs: Jobs) -> None:
    jobs.create(
        generic_job("doomed", replica("worker", 2), service={"ports": [{"name": "p", "port": 80}]})
    )
    jobs.wait_running("doomed", {"doomed-worker-0", "doomed-worker-1"})
    jobs.delete("doomed")
    jobs.wait_pods("doomed", lambda ps: not ps, "the garbage collector to delete them")
    wait_for(
        lambda: jobs.core_v1.list_namespaced_service(
            jobs.namespace, label_selector="tensorstack.dev/owner-name=doomed"
        ).items,
        lambda items: not items,
        "the services of doomed to be deleted",
    )


def test_an_invalid_spec_fails_once_with_invalid_spec_and_is_not_retried(jobs: Jobs) -> None:
    # The API server accepts it (the CRD does not look at container names); the operator not.
    jobs.create(colossalai_job("bad", worker_container="trainer"))
    status = jobs.wait_phase("bad", "Failed")
    failed = condition(status, "Failed")
    assert (failed["status"], failed["reason"]) == ("True", "InvalidSpec")
    assert failed["message"].startswith("spec.replicaSpecs[1].template.spec.containers:")
    assert "'worker'" in failed["message"]
    assert condition(status, "Initialized")["status"] == "False"
    jobs.wait_event("bad", "InvalidSpec")
    assert jobs.events("bad") == [("Warning", "InvalidSpec", failed["message"])]

    versions = stays(lambda: jobs.read("bad")["metadata"]["resourceVersion"], seconds=3)
    assert len(set(versions)) == 1, f"the job kept changing: {versions}"
    assert jobs.pods("bad") == {}
    event = jobs.core_v1.list_namespaced_event(
        jobs.namespace, field_selector="involvedObject.name=bad"
    ).items[0]
    assert (event.count or 1) == 1


DENY_LABEL = "e2e.t9k.dev/deny-delete"


@contextlib.contextmanager
def pod_deletion_denied(api_client: client.ApiClient, namespace: str) -> Iterator[None]:
    """While inside, the API server refuses to delete pods labelled DENY_LABEL in `namespace`
    (a ValidatingAdmissionPolicy), as it might refuse any write for reasons of its own."""
    admission = client.AdmissionregistrationV1Api(api_client)
    name = f"deny-delete-{namespace}"
    admission.create_validating_admission_policy(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["DELETE"],
                            "resources": ["pods"],
                        }
                    ]
                },
                "validations": [
                    {
                        "expression": f"!has(oldObject.metadata.labels) ||"
                        f" !('{DENY_LABEL}' in oldObject.metadata.labels)",
                        "message": "deletion denied by the test",
                    }
                ],
            },
        }
    )
    try:
        admission.create_validating_admission_policy_binding(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": name},
                "spec": {
                    "policyName": name,
                    "validationActions": ["Deny"],
                    "matchResources": {
                        "namespaceSelector": {
                            "matchLabels": {"kubernetes.io/metadata.name": namespace}
                        }
                    },
                },
            }
        )
        try:
            yield
        finally:
            admission.delete_validating_admission_policy_binding(name)
    finally:
        admission.delete_validating_admission_policy(name)


def _probe_denied(core_v1: client.CoreV1Api, namespace: str) -> bool:
    try:
        core_v1.delete_namespaced_pod("deny-probe", namespace, dry_run="All")
    except client.ApiException as err:
        return err.status in (403, 422)
    return False


def test_a_transition_event_survives_a_pass_that_fails_after_its_status_write(
    jobs: Jobs, api_client: client.ApiClient
) -> None:
    probe = bare_pod("deny-probe")
    probe.metadata.labels = {DENY_LABEL: "true"}
    jobs.core_v1.create_namespaced_pod(jobs.namespace, probe)
    labelled = replica("worker", 2)
    labelled["template"]["metadata"] = {"labels": {DENY_LABEL: "true"}}
    jobs.create(generic_job("denied", labelled))
    jobs.wait_running("denied", {"denied-worker-0", "denied-worker-1"})
    jobs.wait_phase("denied", "Running")

    with pod_deletion_denied(api_client, jobs.namespace):
        wait_for(lambda: _probe_denied(jobs.core_v1, jobs.namespace), bool, "the policy to act")
        jobs.patch("denied", {"spec": {"runMode": {"pause": {"enabled": True}}}})
        jobs.wait_phase("denied", "Paused")  # written before the (refused) deletes
        assert set(jobs.pods("denied")) == {"denied-worker-0", "denied-worker-1"}
    jobs.wait_status(
        "denied", lambda s: condition(s, "Paused").get("status") == "True", "Paused=True"
    )
    # the pass that wrote Paused=True has recorded its Events a few milliseconds later
    wait_phase_events(jobs, "denied", ["Pending", "Running", "Paused"], timeout=3)
