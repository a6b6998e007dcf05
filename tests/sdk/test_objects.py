"""The typed accessors over raw objects: what they read, and that odd objects never raise."""

from __future__ import annotations

from typing import Any

import pytest

from t9k_sdk import _objects as o
from t9k_sdk import models

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "train-worker-0",
        "namespace": "team-a",
        "uid": "u-1",
        "resourceVersion": "42",
        "generation": 3,
        "labels": {"app": "train"},
        "annotations": {"note": "x"},
        "finalizers": ["f"],
        "deletionTimestamp": "2026-01-01T00:00:00Z",
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "Other", "name": "o", "uid": "u-o"},
            {
                "apiVersion": models.API_VERSION,
                "kind": "GenericJob",
                "name": "train",
                "uid": "u-job",
                "controller": True,
            },
        ],
    },
    "status": {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}, "junk"],
    },
}


def test_reads_metadata_and_status() -> None:
    m = o.meta(POD)
    assert (m.name, m.namespace, m.uid, m.resource_version) == (
        "train-worker-0",
        "team-a",
        "u-1",
        "42",
    )
    assert m.generation == 3
    assert m.labels == {"app": "train"}
    assert m.annotations == {"note": "x"}
    assert m.finalizers == ["f"]
    assert m.deletion_timestamp
    assert m.controller is not None
    assert (m.controller.kind, m.controller.uid) == (
        "GenericJob",
        "u-job",
    )
    assert [r.name for r in m.owner_references] == ["o", "train"]
    assert o.key(POD) == ("team-a", "train-worker-0")
    assert o.phase(POD) == "Running"
    assert o.conditions(POD) == [{"type": "Ready", "status": "True"}]
    assert o.condition(POD, "Ready") == {"type": "Ready", "status": "True"}
    assert o.condition(POD, "Failed") is None


@pytest.mark.parametrize(
    "obj",
    [
        {},
        {"metadata": None, "status": None},
        {"metadata": 3, "status": "x", "spec": []},
        {"metadata": {"labels": 3, "ownerReferences": "x", "generation": True, "finalizers": {}}},
        {"metadata": {"ownerReferences": [3, None]}, "status": {"conditions": {"a": 1}}},
    ],
)
def test_odd_objects_read_as_empty(obj: dict[str, Any]) -> None:
    m = o.meta(obj)
    assert (m.name, m.namespace, m.uid, m.generation) == ("", "", "", 0)
    assert m.labels == {}
    assert m.owner_references == []
    assert m.controller is None
    assert m.finalizers == []
    assert o.status(obj) == {} or o.conditions(obj) == []
    assert o.phase(obj) == ""
    assert o.spec(obj) == {}
    assert o.key(obj) == ("", "")


RUNNING_POD: dict[str, Any] = {
    "spec": {"nodeName": "node-1", "containers": [{"name": "main"}, {"name": "sidecar"}, 3]},
    "status": {
        "phase": "Failed",
        "reason": "Evicted",
        "message": "low on memory",
        "containerStatuses": [
            {
                "name": "main",
                "ready": False,
                "restartCount": 2,
                "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "message": "m"}},
                "lastState": {"terminated": {"exitCode": 1}},
            },
            {"name": "sidecar", "ready": True, "state": {"waiting": None}},
            {"name": "new", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}},
            "junk",
        ],
    },
}


def test_reads_a_pods_containers() -> None:
    assert o.node_name(RUNNING_POD) == "node-1"
    assert o.container_names(RUNNING_POD) == ["main", "sidecar"]
    assert (o.status_reason(RUNNING_POD), o.status_message(RUNNING_POD)) == (
        "Evicted",
        "low on memory",
    )
    main, sidecar, new = o.container_statuses(RUNNING_POD)
    assert (main.name, main.ready, main.restart_count) == ("main", False, 2)
    terminated = main.state.terminated
    assert terminated is not None
    assert main.state.waiting is None
    assert not main.state.running
    assert (terminated.exit_code, terminated.reason, terminated.message) == (137, "OOMKilled", "m")
    last = main.last_state.terminated
    assert last is not None
    assert last.exit_code == 1
    assert last.reason == ""
    # present but null: still waiting, with nothing more to say
    waiting = sidecar.state.waiting
    assert sidecar.ready
    assert waiting is not None
    assert (waiting.reason, waiting.exit_code) == ("", None)
    assert sidecar.restart_count == 0
    assert sidecar.last_state.terminated is None
    assert new.state.running
    assert new.state.terminated is None


JOB_STATUS: dict[str, Any] = {
    "status": {
        "tasks": [
            {
                "type": "worker",
                "restartCount": 1,
                "replicas": [
                    {
                        "name": "j-worker-0",
                        "uid": "u0",
                        "phase": "Failed",
                        "containers": [
                            {"name": "side", "state": "Running"},
                            {"name": "w", "state": "Terminated", "exitCode": 0},
                            {"name": "x", "state": "Terminated", "exitCode": 3, "message": "m"},
                        ],
                    },
                    {"name": "j-worker-1", "phase": "Running"},
                    None,
                ],
            },
            {"type": "ps", "restartCount": "2", "replicas": "junk"},
            7,
        ]
    }
}


def test_reads_a_jobs_tasks_and_replicas() -> None:
    worker, ps = o.tasks(JOB_STATUS)
    assert (worker.type, worker.restart_count, ps.type, ps.restart_count) == ("worker", 1, "ps", 0)
    assert ps.replicas == []
    first, second = o.replicas(JOB_STATUS)
    assert (first.name, first.uid, first.phase) == ("j-worker-0", "u0", "Failed")
    assert [c.name for c in first.containers] == ["side", "w", "x"]
    assert first.exit_code == 3
    assert first.containers[2].message == "m"
    assert (second.name, second.uid, second.containers, second.exit_code) == (
        "j-worker-1",
        "",
        [],
        None,
    )


@pytest.mark.parametrize(
    "obj",
    [
        {},
        {"spec": None, "status": None},
        {
            "spec": {"containers": "x", "nodeName": 3},
            "status": {"containerStatuses": {}, "tasks": 1},
        },
        {"status": {"containerStatuses": [{"state": 3, "lastState": None, "restartCount": True}]}},
    ],
)
def test_odd_pods_and_jobs_read_as_empty(obj: dict[str, Any]) -> None:
    assert o.container_names(obj) == []
    assert o.tasks(obj) == []
    assert o.replicas(obj) == []
    assert o.node_name(obj) in ("", "3")
    assert o.status_reason(obj) == ""
    for c in o.container_statuses(obj):
        assert c.name == ""
        assert c.restart_count == 0
        assert not c.state.running
        assert c.state.waiting is None
        assert c.last_state.terminated is None


def test_reads_kind_api_version_and_lists() -> None:
    assert (o.kind(POD), o.api_version(POD)) == ("Pod", "v1")
    page: dict[str, Any] = {
        "kind": "PodList",
        "metadata": {"resourceVersion": "7", "continue": "next"},
        "items": [POD, "junk", None],
    }
    assert o.items(page) == [POD]
    event = {"involvedObject": {"kind": "Pod", "name": "p", "uid": "u"}}
    ref = o.involved_object(event)
    assert (ref.kind, ref.name, ref.uid) == ("Pod", "p", "u")
    assert (o.meta(page).resource_version, o.meta(page).continue_token) == ("7", "next")


@pytest.mark.parametrize(
    "obj", [{}, {"kind": None, "apiVersion": None, "items": None}, {"items": {"a": 1}}]
)
def test_odd_lists_read_as_empty(obj: dict[str, Any]) -> None:
    assert (o.kind(obj), o.api_version(obj)) == ("", "")
    assert o.items(obj) == []
    assert o.meta(obj).continue_token == ""
    assert (o.involved_object(obj).name, o.involved_object(obj).uid) == ("", "")
