"""The pause policy, called directly: whether a job's pods run, and how they start.

What a user sees: pausing a job (`runMode.pause.enabled`) deletes every pod it has, gracefully
(each gets its grace period to save its work), and its replicas show Deleted (a replica that had
finished keeps how it ended). When the job is resumed its pods start with
`runMode.pause.resumeSpecs`; a job in debug mode (`runMode.debug.enabled`) starts its pods with
the debug commands instead of its own; any other job starts them as written.
"""

from __future__ import annotations

from typing import Any

import pytest

from t9k_sdk.reconcile.policies import pause
from t9k_sdk.reconcile.state import PassState
from t9k_sdk.reconcile.types import Deletion
from tests.sdk.manifests import generic_job
from tests.sdk.manifests import pod as template

from .policy_kit import condition, entry, pod, read, served, slot

RESUME = {"type": "worker", "command": ["python", "train.py", "--resume"]}


def gj(*, paused: bool = False, debug: bool = False) -> dict[str, Any]:
    return generic_job(
        replicaSpecs=[
            {"type": "worker", "replicas": 2, "template": template(command=["python", "train.py"])}
        ],
        runMode={
            "pause": {"enabled": paused, "resumeSpecs": [RESUME]},
            "debug": {"enabled": debug},
        },
    )


def pause_all(state: PassState) -> None:
    for s in state.slots:
        pause.pause_replica(state, s)


def test_a_paused_job_deletes_its_pods_gracefully_and_its_replicas_show_deleted() -> None:
    state = read(gj(paused=True), pods=[pod("demo-worker-0"), pod("demo-worker-1", "Pending")])
    pause_all(state)
    assert state.delete == [
        Deletion("v1", "Pod", "demo-worker-0", "demo-worker-0-uid", "pause"),
        Deletion("v1", "Pod", "demo-worker-1", "demo-worker-1-uid", "pause"),
    ]
    assert all(d.grace_period_seconds is None for d in state.delete)  # the pod's own grace
    assert {name: e["phase"] for name, e in state.entries.items()} == {
        "demo-worker-0": "Deleted",
        "demo-worker-1": "Deleted",
    }
    assert state.notes[0] == "delete pod demo-worker-0: the job is paused"


def test_a_pod_already_being_deleted_is_not_deleted_again() -> None:
    state = read(gj(paused=True), pods=[pod("demo-worker-0", terminating=True)])
    pause.pause_replica(state, slot(state, "demo-worker-0"))
    assert state.delete == []
    assert state.entries["demo-worker-0"]["phase"] == "Deleted"


def test_a_replica_whose_pod_is_gone_keeps_how_it_ended_and_shows_deleted() -> None:
    job = served(
        gj(paused=True),
        phase="Paused",
        replicas={"worker": [entry("demo-worker-0", "Failed", code=3)]},
    )
    state = read(job)
    pause_all(state)
    assert state.delete == []
    assert state.entries["demo-worker-0"] == {
        **entry("demo-worker-0", "Failed", code=3),
        "phase": "Deleted",
    }
    assert state.entries["demo-worker-1"] == {"name": "demo-worker-1", "phase": "Deleted"}


def test_a_new_job_starts_its_pods_as_written() -> None:
    state = read(gj())
    assert pause.mode(state) == "immediate"
    pod_ = state.rules.pod(slot(state, "demo-worker-0"), pause.mode(state))
    assert pod_["spec"]["containers"][0]["command"] == ["python", "train.py"]


@pytest.mark.parametrize(
    ("phase", "conditions"),
    [
        ("Resuming", []),
        ("Paused", []),
        ("Running", [condition("Paused", "False", "2026-01-01T11:00:00Z")]),
    ],
)
def test_a_resumed_job_starts_its_pods_with_its_resume_specs(
    phase: str, conditions: list[dict[str, Any]]
) -> None:
    """However far the resume got: the job still Paused or Resuming, or running again with
    only its Paused condition left to say it was paused (a restarted pod resumes too)."""
    state = read(served(gj(), phase=phase, conditions=conditions))
    assert pause.mode(state) == "resumed"
    pod_ = state.rules.pod(slot(state, "demo-worker-0"), pause.mode(state))
    assert pod_["spec"]["containers"][0]["command"] == RESUME["command"]


def test_a_debug_job_starts_its_pods_with_the_debug_command_even_after_a_pause() -> None:
    state = read(served(gj(debug=True), phase="Resuming"))
    assert pause.mode(state) == "debug"
    pod_ = state.rules.pod(slot(state, "demo-worker-0"), pause.mode(state))
    assert pod_["spec"]["containers"][0]["command"] == ["sleep", "inf"]
