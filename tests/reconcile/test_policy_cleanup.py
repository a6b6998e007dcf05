"""The clean-up policy, called directly: which pods are deleted once a job ended.

What a user sees: after a job succeeded or failed, `cleanUpPolicy` All deletes every pod it has,
Unfinished deletes the pods still pending or running (the finished ones stay, with their logs),
None deletes nothing; each deletion gets a CleanUpPod Event. A job that ran past its deadline
loses every unfinished pod whatever the policy says. While a job runs, a pod its spec no longer
has (a GenericJob scaled down) is deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from t9k_sdk.reconcile.policies import cleanup
from t9k_sdk.reconcile.state import PassState
from t9k_sdk.reconcile.types import Deletion, Event
from tests.sdk.manifests import generic_job
from tests.sdk.manifests import pod as template

from .policy_kit import pod, read, served

PODS = (
    pod("demo-worker-0", "Succeeded"),
    pod("demo-worker-1", "Failed"),
    pod("demo-worker-2", "Running"),
    pod("demo-worker-3", "Pending", scheduled=False),
)
"""An ended job's pods: two finished, two not."""


def gj(workers: int = 4, policy: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"cleanUpPolicy": policy} if policy else {}
    replica = {"type": "worker", "replicas": workers, "template": template()}
    return generic_job(replicaSpecs=[replica], **spec)


def ended(
    policy: str | None, phase: str = "Succeeded", pods: Sequence[dict[str, Any]] = PODS
) -> PassState:
    return read(served(gj(policy=policy), phase=phase), pods=pods)


def deleted(state: PassState) -> list[str]:
    return [d.name for d in state.delete]


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
@pytest.mark.parametrize(
    ("policy", "gone"),
    [
        ("All", ["demo-worker-0", "demo-worker-1", "demo-worker-2", "demo-worker-3"]),
        ("Unfinished", ["demo-worker-2", "demo-worker-3"]),
        ("None", []),
        (None, []),
    ],
)
def test_the_clean_up_policy_names_the_pods_deleted_once_the_job_ended(
    policy: str | None, gone: list[str], phase: str
) -> None:
    state = ended(policy, phase)
    cleanup.clean_up(state)
    assert deleted(state) == gone


def test_each_clean_up_deletion_is_told_and_waits_for_nothing_newer() -> None:
    state = ended("Unfinished")
    cleanup.clean_up(state)
    assert state.delete[0] == Deletion(
        "v1", "Pod", "demo-worker-2", "demo-worker-2-uid", "clean-up"
    )
    assert state.events[0] == Event(
        "Normal",
        "CleanUpPod",
        "Deleted pod demo-worker-2 after the job finished",
        after="delete Pod/demo-worker-2",
    )
    assert state.notes[0] == "delete pod demo-worker-2: clean-up after the job finished"


@pytest.mark.parametrize("policy", ["None", "Unfinished"])
def test_a_job_past_its_deadline_loses_its_unfinished_pods_whatever_the_policy(
    policy: str,
) -> None:
    state = ended(policy, "Failed")
    cleanup.clean_up(state, hard_stop=True)
    assert deleted(state) == ["demo-worker-2", "demo-worker-3"]
    assert state.events[0].message == (
        "Deleted pod demo-worker-2: the job ran past runPolicy.activeDeadlineSeconds"
    )


def test_a_hard_stop_with_policy_all_also_deletes_the_finished_pods() -> None:
    state = ended("All", "Failed")
    cleanup.clean_up(state, hard_stop=True)
    assert sorted(deleted(state)) == [f"demo-worker-{i}" for i in range(4)]
    said = {e.message for e in state.events}
    assert "Deleted pod demo-worker-0 after the job finished" in said
    assert "Deleted pod demo-worker-2: the job ran past runPolicy.activeDeadlineSeconds" in said


def test_a_pod_being_deleted_or_already_planned_for_deletion_is_not_deleted_twice() -> None:
    pods = [pod("demo-worker-0", "Running", terminating=True), *PODS[1:]]
    state = ended("All", pods=pods)
    state.delete.append(Deletion("v1", "Pod", "demo-worker-1", "demo-worker-1-uid", "restart"))
    cleanup.clean_up(state)
    assert deleted(state) == ["demo-worker-1", "demo-worker-2", "demo-worker-3"]
    assert len(state.events) == 2


def test_a_pod_the_spec_no_longer_has_is_deleted_while_the_job_runs() -> None:
    """Scaled down from 4 workers to 2: worker-2 goes, worker-3 (already going) is left be."""
    pods = [*PODS[:3], pod("demo-worker-3", "Running", terminating=True)]
    state = read(served(gj(workers=2), phase="Running"), pods=pods)
    cleanup.delete_orphans(state)
    assert state.delete == [
        Deletion("v1", "Pod", "demo-worker-2", "demo-worker-2-uid", "not in the spec")
    ]
    assert state.notes == ["delete pod demo-worker-2: no longer in the job's spec"]


def test_pods_that_are_not_the_jobs_are_never_cleaned_up() -> None:
    """A pod with the job's name scheme but another controller, or none, is not the job's."""
    strangers = [
        pod("demo-worker-0", "Running", owner=None),
        pod("demo-worker-1", "Running", owner=("GenericJob", "other", "other-uid")),
        pod("demo-worker-9", "Running", owner=None),  # outside the spec, too
    ]
    state = ended("All", pods=strangers)
    cleanup.clean_up(state, hard_stop=True)
    cleanup.delete_orphans(state)
    assert state.delete == []
