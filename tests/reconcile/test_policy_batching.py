"""The batching policy, called directly: how many pods one pass plans.

What a user sees: a big job's pods are created a batch at a time (at most `POD_CREATES_PER_PASS`
pods and about `PLAN_BYTES_PER_PASS` of manifests per pass, at least one pod), each planned pod's
replica shows Creating, and a pass that left pods over comes back within `NEXT_BATCH_SECONDS`
for the rest (sooner if it was due sooner anyway).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from t9k_sdk.reconcile.kinds import Mode
from t9k_sdk.reconcile.policies import batching
from t9k_sdk.reconcile.state import PassState
from tests.sdk.manifests import generic_job
from tests.sdk.manifests import pod as template

from .policy_kit import names, read, slot


def gj(workers: int) -> dict[str, Any]:
    return generic_job(
        replicaSpecs=[{"type": "worker", "replicas": workers, "template": template()}]
    )


def plan_until_full(state: PassState) -> None:
    """Plan one slot after the other, as long as the batch has room."""
    for s in state.slots:
        if batching.full(state):
            return
        batching.plan_pod(state, s, "immediate", "missing")


def test_a_planned_pod_is_the_pod_of_its_slot_and_its_replica_shows_creating() -> None:
    state = read(gj(workers=2))
    batching.plan_pod(state, slot(state, "demo-worker-1"), "immediate", "missing")
    assert state.create == [state.rules.pod(slot(state, "demo-worker-1"), "immediate")]
    assert state.entries == {"demo-worker-1": {"name": "demo-worker-1", "phase": "Creating"}}
    assert state.notes == ["create pod demo-worker-1: missing"]


@pytest.mark.parametrize(("mode", "command"), [("debug", ["sleep", "inf"]), ("immediate", None)])
def test_a_pod_starts_in_the_mode_it_is_planned_in(mode: Mode, command: list[str] | None) -> None:
    state = read(gj(workers=1))
    batching.plan_pod(state, slot(state, "demo-worker-0"), mode, "missing")
    (container,) = state.create[0]["spec"]["containers"]
    assert container.get("command") == command


def test_a_pass_plans_at_most_its_pod_limit() -> None:
    state = read(gj(workers=5), pod_limit=3)
    plan_until_full(state)
    assert names(state.create) == ["demo-worker-0", "demo-worker-1", "demo-worker-2"]
    assert batching.full(state)


@pytest.mark.parametrize(("pods_of_room", "planned"), [(2.0, 2), (2.5, 3)])
def test_a_pass_plans_about_its_byte_limit_of_pods(pods_of_room: float, planned: int) -> None:
    """The limit is checked before each pod: a pass stops once it holds the limit, and the pod
    that goes over it is the last one (pods of one replica type are about the same size)."""
    probe = read(gj(workers=5))
    one_pod = len(json.dumps(probe.rules.pod(slot(probe, "demo-worker-0"), "immediate")))
    state = read(gj(workers=5), byte_limit=int(one_pod * pods_of_room))
    plan_until_full(state)
    assert len(state.create) == planned


def test_a_pass_plans_one_pod_however_small_its_byte_limit() -> None:
    state = read(gj(workers=3), byte_limit=1)
    assert not batching.full(state)
    plan_until_full(state)
    assert names(state.create) == ["demo-worker-0"]


@pytest.mark.parametrize(("requeue", "after"), [(None, 1.0), (30.0, 1.0), (0.25, 0.25)])
def test_a_pass_that_left_pods_comes_back_within_a_second(
    requeue: float | None, after: float
) -> None:
    state = read(gj(workers=7), pod_limit=3)
    state.deferred = 4
    assert batching.next_pass(state, requeue) == after
    assert state.notes == ["4 more pods next pass (at most a batch per pass)"]


@pytest.mark.parametrize("requeue", [None, 30.0])
def test_a_pass_that_left_no_pod_keeps_its_own_requeue(requeue: float | None) -> None:
    state = read(gj(workers=2))
    plan_until_full(state)
    assert batching.next_pass(state, requeue) == requeue
    assert not any("next pass" in note for note in state.notes)
