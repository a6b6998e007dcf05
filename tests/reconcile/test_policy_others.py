"""The policy of the other children, called directly: services, config maps, secrets, pod group.

What a user sees: the job gets the children its spec asks for (a GenericJob with `service`: a
headless Service per replica; a DeepSpeedJob: its ConfigMap, its SSH Secret once a key pair is
at hand, and its Service). Config maps, secrets and the pod group are created before the pods
that mount them, services after the pods, and only once every pod is planned. A child that
drifted from the spec is replaced (a Secret's key never is), one the spec no longer asks for is
deleted; nothing changes once the job ended, and nothing new is created while it is blocked.
"""

from __future__ import annotations

from typing import Any

from t9k_sdk.reconcile.policies import others
from t9k_sdk.reconcile.state import PassState
from t9k_sdk.reconcile.types import Deletion
from tests.sdk.manifests import deepspeed_job, generic_job
from tests.sdk.manifests import pod as template

from .policy_kit import KEY, child, names, read, served, stored

PORTS = [{"name": "http", "port": 8080}]


def gj(**spec: Any) -> dict[str, Any]:
    replica = {"type": "worker", "replicas": 2, "template": template()}
    return generic_job(replicaSpecs=[replica], **spec)


def with_pods(state: PassState) -> PassState:
    """`state` with every pod of the job planned already, as the replica walk leaves it."""
    state.create.extend(state.rules.pod(s, "immediate") for s in state.slots)
    return state


def kinds_and_names(state: PassState) -> list[tuple[str, str]]:
    return [(m["kind"], m["metadata"]["name"]) for m in state.create]


def test_a_generic_job_with_a_service_gets_one_per_replica_after_its_pods() -> None:
    state = with_pods(read(gj(service={"ports": PORTS})))
    others.keep_in_line(state)
    assert kinds_and_names(state) == [
        ("Pod", "demo-worker-0"),
        ("Pod", "demo-worker-1"),
        ("Service", "demo-worker-0"),
        ("Service", "demo-worker-1"),
    ]
    service = state.create[2]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["ports"] == PORTS
    assert service["metadata"]["ownerReferences"][0]["uid"] == "job-uid"


def test_a_deepspeed_job_gets_its_config_and_key_before_its_pods_and_its_service_after() -> None:
    state = with_pods(read(deepspeed_job(), ssh_key=KEY))
    others.keep_in_line(state)
    assert kinds_and_names(state) == [
        ("ConfigMap", "demo-config"),
        ("Secret", "demo-ssh"),
        ("Pod", "demo-worker-0"),
        ("Pod", "demo-worker-1"),
        ("Service", "demo"),
    ]


def test_a_queued_job_gets_its_pod_group_before_its_pods_and_keeps_it_in_its_queue() -> None:
    queued = gj(scheduler={"t9kScheduler": {"queue": "default"}})
    state = with_pods(read(queued))
    others.keep_in_line(state)
    assert kinds_and_names(state)[0] == ("PodGroup", "demo")
    group = stored(state.create[0])
    moved = read(gj(scheduler={"t9kScheduler": {"queue": "urgent"}}), pod_groups=[group])
    others.keep_in_line(moved)
    (update,) = moved.update
    assert update.manifest["spec"]["queue"] == "urgent"
    again = read(queued, pod_groups=[group])
    others.keep_in_line(again)
    assert (again.create, again.update, again.delete) == ([], [], [])


def test_the_ssh_secret_waits_for_a_key_pair() -> None:
    state = read(deepspeed_job())  # the operator has not generated a key yet
    others.keep_in_line(state)
    assert names(state.create) == ["demo-config", "demo"]


def test_no_service_is_created_changed_or_deleted_while_pods_wait_for_a_later_pass() -> None:
    drifted = stored(read(gj(service={"ports": PORTS})).rules.services()[0], spec={"ports": []})
    state = read(gj(service={"ports": PORTS}), services=[drifted])
    state.deferred = 1
    others.keep_in_line(state)
    assert (state.create, state.update, state.delete) == ([], [], [])
    state.deferred = 0
    others.keep_in_line(state)
    assert names(state.create) == ["demo-worker-1"]
    assert [u.manifest["metadata"]["name"] for u in state.update] == ["demo-worker-0"]


def test_a_child_that_drifted_from_the_spec_is_replaced_at_its_resource_version() -> None:
    """The hostfile of a DeepSpeedJob scaled from 2 workers to 3; its secret's key differs
    too, but key material is generated once and never replaced."""
    before = read(deepspeed_job(), ssh_key=KEY)
    (config_map,) = before.rules.config_maps()
    (secret,) = before.rules.secrets(KEY)
    (service,) = before.rules.services()
    scaled = deepspeed_job(worker={"replicas": 3, "template": template("worker")})
    state = read(
        scaled,
        config_maps=[stored(config_map)],
        secrets=[stored(secret, data={"id_rsa": "b3RoZXI="})],
        services=[stored(service)],
        ssh_key=("another", "key"),
    )
    others.keep_in_line(state)
    (update,) = state.update
    assert update.manifest["kind"] == "ConfigMap"
    assert update.manifest["metadata"]["resourceVersion"] == "7"
    assert "demo-worker-2.demo" in update.manifest["data"]["hostfile"]
    assert (state.create, state.delete) == ([], [])


def test_a_child_the_spec_no_longer_asks_for_is_deleted() -> None:
    service = read(gj(service={"ports": PORTS})).rules.services()[0]
    state = read(gj(), services=[stored(service)])  # the service option was removed
    others.keep_in_line(state)
    assert state.delete == [
        Deletion("v1", "Service", "demo-worker-0", "demo-worker-0-uid", "not needed")
    ]


def test_nothing_is_created_changed_or_deleted_once_the_job_ended() -> None:
    """Its spec asks for other ports, a service it lacks, and no config map: all left be."""
    service = read(gj(service={"ports": PORTS})).rules.services()[0]
    job = served(gj(service={"ports": [{"name": "http", "port": 9090}]}), phase="Failed")
    state = read(job, services=[stored(service)], config_maps=[child("ConfigMap", "demo-extra")])
    others.keep_in_line(state)
    assert (state.create, state.update, state.delete) == ([], [], [])


def test_a_blocked_job_creates_no_new_child() -> None:
    state = read(deepspeed_job(), ssh_key=KEY)
    state.blocked = True  # a foreign object holds one of the job's names (see conflicts)
    others.keep_in_line(state)
    assert state.create == []
    assert state.notes == []
