"""The conflicts policy, called directly: what keeps a job from getting its children.

What a user sees: when an object the job does not control (another owner, or none, whatever
its labels) holds a name the job needs for a pod, service, config map or secret, the job
creates nothing more and says so (NameConflict, naming the object and its owner) until that
object is deleted or renamed; it looks again every `CONFLICT_RECHECK_SECONDS`. An object of
another kind or name, or in another namespace, is no conflict; nor is anything once the job has
ended. A create or update the API server refused for good is reported with the server's message
while the job still needs it.
"""

from __future__ import annotations

from typing import Any

import pytest

from t9k_sdk.reconcile.children import desired_others
from t9k_sdk.reconcile.policies import conflicts
from t9k_sdk.reconcile.state import PassState
from t9k_sdk.reconcile.types import ChildFailure, Update
from tests.sdk.manifests import deepspeed_job, generic_job
from tests.sdk.manifests import pod as template

from .policy_kit import KEY, child, pod, read, served, slot

OTHER_JOB = ("GenericJob", "other", "other-uid")
UNTIL = (
    ". The job creates no more children until that object is deleted or renamed (or delete"
    " this job and create it with another name)."
)


def gj() -> dict[str, Any]:
    return generic_job(replicaSpecs=[{"type": "worker", "replicas": 2, "template": template()}])


def find(state: PassState) -> None:
    """Look for conflicts as a pass does: the pods' names and those of the other children."""
    needed = desired_others(state.rules, state.observed.ssh_key)
    conflicts.find(state, [(m["kind"], m["metadata"]["name"]) for m in needed])


def test_a_pod_without_an_owner_holding_a_replicas_name_blocks_the_job() -> None:
    state = read(gj(), pods=[pod("demo-worker-1", owner=None)])
    find(state)
    assert state.blocked
    message = "Pod demo-worker-1 exists but is not this job's: it has no controller owner"
    assert conflicts.problem(state) == ("NameConflict", message + UNTIL)
    assert state.notes == [f"blocked: {message}"]


def test_the_conflict_names_the_owner_of_an_object_that_belongs_to_another_job() -> None:
    state = read(gj(), pods=[pod("demo-worker-0", owner=OTHER_JOB)])
    find(state)
    reason, message = conflicts.problem(state) or ("", "")
    assert reason == "NameConflict"
    assert message.startswith(
        "Pod demo-worker-0 exists but is not this job's: it belongs to GenericJob other"
        " (uid other-uid)"
    )


@pytest.mark.parametrize("kind", ["Secret", "ConfigMap", "Service"])
def test_a_foreign_object_holding_the_name_of_another_child_blocks_the_job(kind: str) -> None:
    """A DeepSpeedJob's SSH Secret, its ConfigMap, its headless Service."""
    name = {"Secret": "demo-ssh", "ConfigMap": "demo-config", "Service": "demo"}[kind]
    planted = [child(kind, name, owner=None)]
    state = read(
        deepspeed_job(),
        ssh_key=KEY,
        secrets=planted if kind == "Secret" else (),
        config_maps=planted if kind == "ConfigMap" else (),
        services=planted if kind == "Service" else (),
    )
    find(state)
    assert state.blocked
    assert [(k, obj["metadata"]["name"]) for k, obj in state.conflicts] == [(kind, name)]


def test_an_object_of_a_name_or_kind_the_job_does_not_need_is_no_conflict() -> None:
    """worker-5 of a two-worker job; a Service named like a pod, for a job without services;
    a pod of the right name in another namespace."""
    elsewhere = pod("demo-worker-0", owner=None)
    elsewhere["metadata"]["namespace"] = "other-ns"
    state = read(
        gj(),
        pods=[pod("demo-worker-5", owner=None), elsewhere],
        services=[child("Service", "demo-worker-0", owner=None)],
    )
    find(state)
    assert not state.blocked
    assert state.conflicts == []
    assert conflicts.problem(state) is None


def test_a_job_that_ended_is_not_blocked_by_a_conflict() -> None:
    state = read(served(gj(), phase="Succeeded"), pods=[pod("demo-worker-1", owner=None)])
    find(state)
    assert len(state.conflicts) == 1  # still seen...
    assert not state.blocked  # ...but there is nothing left to create
    assert conflicts.problem(state) is None


@pytest.mark.parametrize(("requeue", "after"), [(None, 30.0), (600.0, 30.0), (5.0, 5.0)])
def test_a_blocked_job_looks_again_within_the_recheck_interval(
    requeue: float | None, after: float
) -> None:
    state = read(gj(), pods=[pod("demo-worker-1", owner=None)])
    find(state)
    assert conflicts.recheck(state, requeue) == after
    free = read(gj())
    find(free)
    assert conflicts.recheck(free, requeue) == requeue


def test_a_refused_create_is_reported_while_the_pass_still_plans_it() -> None:
    refused = ChildFailure(
        "create", "Pod", "demo-worker-0", 403, "Forbidden", 'exceeded quota: "gpu"'
    )
    state = read(gj(), failures=[refused])
    assert conflicts.problem(state) is None  # not planned in this pass: nothing to report
    state.create.append(state.rules.pod(slot(state, "demo-worker-0"), "immediate"))
    assert conflicts.problem(state) == (
        "CreateFailed",
        "Cannot create Pod demo-worker-0: the API server refused it (403 Forbidden): exceeded"
        ' quota: "gpu"',
    )


def test_a_refused_update_is_reported_as_update_failed() -> None:
    refused = ChildFailure("update", "ConfigMap", "demo-config", 422, "Invalid", "")
    state = read(deepspeed_job(), failures=[refused])
    (config_map,) = state.rules.config_maps()
    state.update.append(Update(config_map, "ConfigMap demo-config differs from the spec"))
    assert conflicts.problem(state) == (
        "UpdateFailed",
        "Cannot update ConfigMap demo-config: the API server refused it (422 Invalid)",
    )
