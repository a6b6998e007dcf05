"""The restart policy, called directly: whether a replica that ended is started again.

What a user sees: under OnFailure a failed replica is restarted while its restart budget lasts
(a GenericJob replica's `restartPolicy.limit`; a DeepSpeedJob's `runPolicy.backoffLimit`, shared
by all its workers); once it is spent, the replica has failed for good. Never restarts nothing;
ExitCode restarts a retryable exit (128-255, or no exit code: evicted) but not a permanent one
(1-127); only Always restarts a replica that succeeded. Restarts decided in one pass share the
budget before they are counted, and a ColossalAIJob never restarts a worker.
"""

from __future__ import annotations

from typing import Any

import pytest

from t9k_sdk.reconcile.policies import restart
from t9k_sdk.reconcile.state import PassState
from tests.sdk.manifests import colossalai_job, deepspeed_job, generic_job
from tests.sdk.manifests import pod as template

from .policy_kit import entry, pod, read, served, slot


def gj(policy: str, limit: int, workers: int = 2) -> dict[str, Any]:
    replica = {
        "type": "worker",
        "replicas": workers,
        "template": template(),
        "restartPolicy": {"policy": policy, "limit": limit},
    }
    return generic_job(replicaSpecs=[replica])


def ds(backoff_limit: int, workers: int = 3) -> dict[str, Any]:
    return deepspeed_job(
        runPolicy={"backoffLimit": backoff_limit},
        worker={"replicas": workers, "restartPolicy": "OnFailure", "template": template("worker")},
    )


def restarted(state: PassState, name: str) -> bool:
    """Whether the replica `name`, whose pod ended as observed, is restarted in this pass."""
    view = state.pods[name]
    return restart.allowed(state, slot(state, name), view.phase.value, view.exit_code)


@pytest.mark.parametrize(("used", "again"), [(0, True), (1, True), (2, False), (5, False)])
def test_on_failure_restarts_a_failed_replica_until_its_limit_is_spent(
    used: int, again: bool
) -> None:
    job = served(
        gj("OnFailure", limit=2),
        phase="Running",
        replicas={"worker": [entry("demo-worker-0", "Running", restarts=used)]},
    )
    state = read(job, pods=[pod("demo-worker-0", "Failed", code=1)])
    assert restarted(state, "demo-worker-0") is again


def test_never_leaves_a_failed_replica_failed_with_budget_left() -> None:
    state = read(gj("Never", limit=5), pods=[pod("demo-worker-0", "Failed", code=137)])
    assert not restarted(state, "demo-worker-0")


@pytest.mark.parametrize(
    ("code", "again"),
    [(1, False), (2, False), (127, False), (128, True), (137, True), (255, True), (None, True)],
)
def test_exit_code_restarts_a_retryable_exit_but_not_a_permanent_error(
    code: int | None, again: bool
) -> None:
    """128-255 (killed by a signal: OOM, preemption) is retryable, 1-127 is the program's own
    error; a pod that left no exit code (evicted, its node lost) is retried."""
    state = read(gj("ExitCode", limit=3))
    assert restart.allowed(state, slot(state, "demo-worker-0"), "Failed", code) is again


@pytest.mark.parametrize(
    ("policy", "again"), [("Always", True), ("OnFailure", False), ("ExitCode", False)]
)
def test_a_replica_that_succeeded_is_restarted_only_under_always(policy: str, again: bool) -> None:
    state = read(gj(policy, limit=3), pods=[pod("demo-worker-0", "Succeeded")])
    assert restarted(state, "demo-worker-0") is again


def test_a_generic_job_counts_the_limit_per_replica() -> None:
    """worker-0 spent its two restarts; worker-1, of the same type, still has both."""
    job = served(
        gj("OnFailure", limit=2),
        phase="Running",
        replicas={"worker": [entry("demo-worker-0", "Running", restarts=2)]},
        restarts={"worker": 2},
    )
    failed = [pod("demo-worker-0", "Failed"), pod("demo-worker-1", "Failed")]
    state = read(job, pods=failed)
    assert not restarted(state, "demo-worker-0")
    assert restarted(state, "demo-worker-1")


@pytest.mark.parametrize(("backoff", "again"), [(1, True), (2, False)])
def test_a_deepspeed_job_shares_its_backoff_limit_between_its_workers(
    backoff: int, again: bool
) -> None:
    """The job's backoffCount counts every worker's restarts: worker-2 has never restarted, but
    the job has used its budget on the others."""
    job = served(ds(backoff_limit=2), phase="Running", backoff=backoff)
    state = read(job, pods=[pod("demo-worker-2", "Failed")])
    assert restarted(state, "demo-worker-2") is again


def test_restarts_decided_in_one_pass_share_the_budget_before_they_are_counted() -> None:
    """backoffLimit 1, two workers failed in the same pass: the first takes the last restart,
    and the second fails for good, though nothing was counted yet."""
    state = read(
        ds(backoff_limit=1), pods=[pod("demo-worker-1", "Failed"), pod("demo-worker-2", "Failed")]
    )
    assert restarted(state, "demo-worker-2")  # alone, it would restart
    assert restarted(state, "demo-worker-1")
    restart.hold(state, slot(state, "demo-worker-1"))
    assert not restarted(state, "demo-worker-2")
    assert state.backoff == 0  # pending: counted when the replacement pod is planned


def test_a_planned_restart_is_counted_for_the_replica_its_type_and_the_job() -> None:
    state = read(ds(backoff_limit=1), pods=[pod("demo-worker-1", "Failed")])
    restart.count(state, slot(state, "demo-worker-1"))
    assert (state.restarts["worker"], state.replica_restarts["demo-worker-1"]) == (1, 1)
    assert state.backoff == 1
    assert not restarted(state, "demo-worker-1")  # the limit of 1 is spent
    generic = read(gj("OnFailure", limit=1), pods=[pod("demo-worker-1", "Failed")])
    restart.count(generic, slot(generic, "demo-worker-1"))
    assert generic.backoff == 0  # only a DeepSpeedJob has a job-wide budget
    assert not restarted(generic, "demo-worker-1")


def test_a_colossalai_worker_is_never_restarted_whatever_its_restart_policy() -> None:
    """ColossalAI cannot take a restarted worker back into a running training."""
    job = colossalai_job(
        replicaSpecs=[
            {"type": "launcher", "template": template("launcher")},
            {
                "type": "worker",
                "replicas": 2,
                "template": template("worker"),
                "restartPolicy": {"policy": "OnFailure", "limit": 3},
            },
        ]
    )
    state = read(job, pods=[pod("demo-worker-0", "Failed", code=137)])
    assert not restarted(state, "demo-worker-0")
