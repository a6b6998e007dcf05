"""The status the operator writes is the status users read: one shape (`t9k_sdk._job_status`),
written by the core, read by `t9k_sdk._objects` and the client, described by the wire models."""

from __future__ import annotations

from typing import Any

import pytest

from t9k_sdk import _job_status, codecs, models
from tests.sdk.manifests import generic_job, pod

from .sim import Sim


@pytest.mark.parametrize(
    ("shape", "model"),
    [
        (_job_status.TaskEntry, models.Tasks),
        (_job_status.ReplicaEntry, models.ReplicaStatus),
        (_job_status.ContainerEntry, models.ContainerStatus),
    ],
)
def test_the_status_shape_has_the_wire_models_fields(shape: Any, model: Any) -> None:
    keys = shape.__required_keys__ | shape.__optional_keys__
    assert keys == {f.alias or name for name, f in model.model_fields.items()}


def test_a_written_status_reads_back_through_the_models_without_unknown_fields() -> None:
    replica = {
        "type": "worker",
        "replicas": 2,
        "template": pod("w"),
        "restartPolicy": {"policy": "OnFailure", "limit": 2},
    }
    sim = Sim(generic_job(replicaSpecs=[replica]))
    sim.step()
    sim.run()
    sim.finish("demo-worker-0", code=1)
    sim.step()  # deletes the failed pod
    sim.step()  # recreates it, counting a restart
    sim.run("demo-worker-0")
    sim.finish("demo-worker-1")
    sim.step()
    written = sim.status
    entries = {r["name"]: r for t in written["tasks"] for r in t.get("replicas", ())}
    assert entries["demo-worker-0"]["restartCount"] == 1
    assert entries["demo-worker-1"]["containers"][0]["exitCode"] == 0

    job = codecs.from_manifest({**sim.job, "status": written})
    status = job.status
    assert status is not None
    assert codecs.to_wire(status)["tasks"] == written["tasks"]
    for task in status.tasks or ():
        assert task.model_extra == {}
        for r in task.replicas or ():
            assert r.model_extra == {}
            assert all(c.model_extra == {} for c in r.containers or ())
