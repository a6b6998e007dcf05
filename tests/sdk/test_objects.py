"""The typed accessors over raw objects: what they read, and that odd objects never raise."""

from __future__ import annotations

from typing import Any

import pytest

from t9k_sdk import _objects as o

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
                "apiVersion": "batch.tensorstack.dev/v1beta1",
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
    assert (m.name, m.namespace, m.uid, m.resource_version) == ("train-worker-0", "team-a", "u-1", "42")
    assert m.generation == 3
    assert m.labels == {"app": "train"} and m.annotations == {"note": "x"}
    assert m.finalizers == ["f"] and m.deletion_timestamp
    assert m.controller is not None and (m.controller.kind, m.controller.uid) == ("GenericJob", "u-job")
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
    assert m.labels == {} and m.owner_references == [] and m.controller is None
    assert m.finalizers == []
    assert o.status(obj) == {} or o.conditions(obj) == []
    assert o.phase(obj) == ""
    assert o.spec(obj) == {}
    assert o.key(obj) == ("", "")
