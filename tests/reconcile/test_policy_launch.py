"""The launch policy, called directly: a launcher is held back until its workers run.

What a user sees: a DeepSpeedJob's worker-0 (a ColossalAIJob's launcher) is not created while a
worker it starts the training on is not running; its replica shows Pending and the Running
condition says WaitingForWorkers, naming the workers (five at most, then how many more). A held
launcher never spends a restart or times out; but when a worker it waits for failed for good,
the launcher can never start, and the job fails saying which worker and how it ended.
"""

from __future__ import annotations

from typing import Any

import pytest

from t9k_sdk.reconcile.policies import launch
from t9k_sdk.reconcile.state import PassState
from tests.sdk.manifests import colossalai_job, deepspeed_job
from tests.sdk.manifests import pod as template

from .policy_kit import pod, read, slot


def ds(workers: int = 3) -> dict[str, Any]:
    return deepspeed_job(worker={"replicas": workers, "template": template("worker")})


def hold(state: PassState, launcher: str = "demo-worker-0") -> list[str]:
    """What the replica walk does for a launcher without a pod: ask the kind which pods it waits
    for, and hold it back (Pending) if any; the pods it waits for."""
    waiting = state.rules.launch_waits_for(slot(state, launcher))
    if waiting:
        launch.hold_back(
            state, slot(state, launcher), waiting, {"name": launcher, "phase": "Pending"}
        )
    return waiting


def test_the_launcher_waits_for_a_worker_that_is_not_running_yet() -> None:
    state = read(
        ds(), pods=[pod("demo-worker-1"), pod("demo-worker-2", "Pending", scheduled=False)]
    )
    assert hold(state) == ["demo-worker-2"]
    assert state.held == {"demo-worker-0": ["demo-worker-2"]}
    assert state.entries["demo-worker-0"] == {"name": "demo-worker-0", "phase": "Pending"}
    assert launch.waiting_message(state) == (
        "WaitingForWorkers",
        "The launcher demo-worker-0 starts once every worker it needs is running;"
        " waiting for demo-worker-2.",
    )


@pytest.mark.parametrize("phase", ["Running", "Succeeded"])
def test_the_launcher_is_not_held_once_no_worker_is_left_to_start(phase: str) -> None:
    """A worker that already succeeded is not waited for (the launcher's barrier would fail,
    which says more than waiting for ever)."""
    state = read(ds(), pods=[pod("demo-worker-1"), pod("demo-worker-2", phase)])
    assert hold(state) == []
    assert state.held == {}
    assert launch.waiting_message(state) is None
    assert launch.outcome(state) is None


def test_the_waiting_message_names_five_workers_and_counts_the_others() -> None:
    state = read(ds(workers=9))
    hold(state)
    reason, message = launch.waiting_message(state) or ("", "")
    assert reason == "WaitingForWorkers"
    assert message.endswith(
        "waiting for demo-worker-1, demo-worker-2, demo-worker-3, demo-worker-4, demo-worker-5"
        " and 3 more."
    )


def test_a_colossalai_launcher_waits_for_every_worker_and_the_workers_wait_for_nothing() -> None:
    state = read(colossalai_job(), pods=[pod("demo-worker-1")])
    assert hold(state, "demo-launcher") == ["demo-worker-0"]
    assert state.rules.launch_waits_for(slot(state, "demo-worker-0")) == []
    _, message = launch.waiting_message(state) or ("", "")
    assert message.startswith("The launcher demo-launcher starts once")


@pytest.mark.parametrize(("code", "how"), [(2, "failed with exit code 2"), (None, "failed")])
def test_the_job_fails_when_a_worker_the_launcher_waits_for_failed_for_good(
    code: int | None, how: str
) -> None:
    state = read(ds(), pods=[pod("demo-worker-1"), pod("demo-worker-2", "Failed", code=2)])
    hold(state)
    state.final["demo-worker-2"] = "Failed"  # the restart policy let it fail for good
    state.failed_codes["demo-worker-2"] = code
    assert launch.outcome(state) == (
        "Failed",
        "Failed",
        f"DeepSpeedJob demo has failed: demo-worker-2 {how} before the launcher demo-worker-0"
        " could start, and is not restarted",
    )


def test_a_worker_that_is_restarted_or_succeeded_does_not_fail_the_held_launcher() -> None:
    state = read(ds(), pods=[pod("demo-worker-1", "Failed"), pod("demo-worker-2", "Pending")])
    assert hold(state) == ["demo-worker-1", "demo-worker-2"]
    assert launch.outcome(state) is None  # worker-1 failed, but is restarted (not final)
    state.final["demo-worker-1"] = "Succeeded"
    assert launch.outcome(state) is None
