"""Recovery of real training on the real node: one rank's failure, and the time until the job
trains again.

The fault is the one a GPU owner sees most: the process that runs a pod's ranks dies (SIGKILL,
exit 137, as the OOM killer does it). Under the extension `t9k-sdk.dev/restart-scope: Job`
every pod is stopped and recreated together, and the job must train to Succeeded; the time to
recovery (from the kill to the first training step logged after it, by the kubelet's log
timestamps) is printed, and written as a JSON line to $T9K_RECOVERY_RESULTS when it is set (docs/operator/semantics.md quotes the
figures of one such run).
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from t9k_sdk import models
from tests.cluster.e2e_helpers import E2E, Jobs, restart_counts
from tests.cluster.real_helpers import (
    REAL_TIMEOUT,
    RealNode,
    logged_steps,
    logs,
    scripts_configmap,
)
from tests.cluster.test_real_lifecycle import main_process, pod_processes
from tests.cluster.test_real_training import colossalai_job, deepspeed_job, torchrun_job
from tools.kit import wait_for

pytestmark = pytest.mark.realnode


@pytest.fixture(autouse=True, scope="module")
def _scripts(e2e: E2E, core_v1: client.CoreV1Api, real_node: RealNode) -> None:
    scripts_configmap(core_v1, e2e.namespace)


def _first_step_after(jobs: Jobs, since: float) -> tuple[float, int] | None:
    """(seconds after `since`, step) of the first training step any pod logged after it."""
    steps = logged_steps(jobs.history.logs_since(0), since)
    return steps[0] if steps else None


def _record(figure: dict[str, object]) -> None:
    print(f"time to recovery: {json.dumps(figure)}")
    path = os.environ.get("T9K_RECOVERY_RESULTS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(figure) + "\n")


# Only scope Job is asserted. Under scope Replica (T9k's) the same fault is recovered by
# torchrun's own agents, or not: once in 47.5 s, and once (the fresh-clone CI run of 2026-12-07)
# never, with both pods Running and no step logged for 8 minutes after worker 0's agent began
# another rendezvous round. That is the stall restart scope Job exists for
# (docs/operator/semantics.md); a test of it would pass or fail by chance.
@pytest.mark.parametrize("scope", ["Job"])
def test_a_killed_torchrun_agent_recovers_and_the_job_trains_to_the_end(
    scope: str, jobs: Jobs, core_v1: client.CoreV1Api
) -> None:
    name = f"rec-{scope.lower()}"
    job = torchrun_job(name, steps=50, pause=0.25)
    job["metadata"]["annotations"] = {models.RESTART_SCOPE_ANNOTATION: scope}
    jobs.create(job)
    workers = [f"{name}-worker-0", f"{name}-worker-1"]

    def rank0_log() -> str:
        try:
            return logs(core_v1, jobs.namespace, workers[0])
        except ApiException as err:
            if err.status in (400, 404):
                return ""
            raise

    wait_for(rank0_log, lambda text: "step=10 " in text, "rank 0 logging step 10", REAL_TIMEOUT)
    old = {p: jobs.pod(p).metadata.uid for p in workers}
    agent = main_process(old[workers[1]], "--rdzv-backend=c10d")  # torchrun's agent, PID 1
    killed_at = time.time()
    os.kill(agent, signal.SIGKILL)
    status = jobs.wait_final(name, 2 * REAL_TIMEOUT)
    if status["phase"] != "Succeeded":
        text = "\n".join(f"== {p}\n{t}" for p, t in jobs.history.logs_since(0))
        pytest.fail(f"{json.dumps(status, indent=1)}\n{text}")
    recovered = _first_step_after(jobs, killed_at)
    assert recovered is not None, "no training step was logged after the kill"

    _record({"job": "torchrun GenericJob 2x2", "fault": "agent SIGKILL", "scope": scope,
             "seconds": round(recovered[0], 1), "first_step": recovered[1],
             "restarts": restart_counts(status)})  # fmt: skip
    # no process of a pod that was replaced is left running
    def left() -> list[int]:
        return [pid for uid in old.values() for pid in pod_processes(uid)]

    wait_for(left, lambda pids: pids == [], "no process of the old pods", 60)
    # the whole job restarted: both pods are new, each job restart is counted once (a
    # rendezvous that breaks on a loaded machine may cost another), and the first says why
    assert all(jobs.pod(p).metadata.uid != old[p] for p in workers)
    said = [m for _type, reason, m in jobs.events(name) if reason == "RestartingJob"]
    assert said, jobs.events(name)
    assert said[0].startswith(f"Pod {workers[1]} failed with exit code 137; restarting the whole")
    assert restart_counts(status) == {"worker": jobs.event_count(name, "RestartingJob")}


# -- every rank gets to save before it stops ---------------------------------------------------

GRACE = 20
"""The pods' terminationGracePeriodSeconds: what a rank has to save in."""
PROBE = ["sigterm_probe.py", "--save-seconds=2"]


def _probe_torchrun(name: str) -> dict[str, Any]:
    job = torchrun_job(name)
    container = job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    command = container["command"][2]
    container["command"][2] = command[: command.index(" torchrun_train.py")] + " " + " ".join(PROBE)
    return job


def _probe_deepspeed(name: str) -> dict[str, Any]:
    return deepspeed_job(name, PROBE)


def _probe_colossalai(name: str) -> dict[str, Any]:
    return colossalai_job(name, PROBE)


# (job, the ranks it runs): torchrun 2 pods x 2, DeepSpeed 2 workers x 2 slots, ColossalAI 2 x 2
PROBES = {
    "torchrun": (_probe_torchrun, 4),
    "deepspeed": (_probe_deepspeed, 4),
    "colossalai": (_probe_colossalai, 4),
}


def _templates(job: dict[str, Any]) -> list[dict[str, Any]]:
    spec = job["spec"]
    found = [r["template"] for r in spec.get("replicaSpecs") or ()]
    return found + ([spec["worker"]["template"]] if "worker" in spec else [])


def _probe_lines(jobs: Jobs, name: str, word: str) -> set[str]:
    """The ranks whose `probe <word> rank=R` line a pod of the job logged (its container's own
    log: the copy that does not go through a launcher's pipe or ssh)."""
    found = set()
    for where, text in jobs.history.logs_since(0):
        if where.startswith(f"{name}-"):
            found |= set(re.findall(rf"probe {word} rank=(\d+)", text))
    return found


@pytest.mark.parametrize("stop", ["delete", "pause"])
@pytest.mark.parametrize("launcher", list(PROBES))
def test_every_rank_gets_sigterm_and_its_grace_period_to_save(
    launcher: str, stop: str, jobs: Jobs
) -> None:
    make, ranks = PROBES[launcher]
    name = f"save-{launcher[:5]}-{stop[:3]}"
    job = make(name)
    for template in _templates(job):
        template["spec"]["terminationGracePeriodSeconds"] = GRACE
    jobs.create(job)
    every = {str(r) for r in range(ranks)}
    wait_for(
        lambda: _probe_lines(jobs, name, "ready"),
        lambda ready: ready == every,
        f"every rank of {name} ready",
        REAL_TIMEOUT,
    )
    pods = list(jobs.pods(name))
    uids = [jobs.pod(p).metadata.uid for p in pods]
    if stop == "delete":
        jobs.delete(name)
    else:
        jobs.patch(name, {"spec": {"runMode": {"pause": {"enabled": True}}}})

    def left() -> list[int]:
        return [pid for uid in uids for pid in pod_processes(uid)]

    wait_for(left, lambda pids: pids == [], f"no process of {name}'s pods", GRACE + 60)
    saved = _probe_lines(jobs, name, "saved")
    text = "\n".join(f"== {w}\n{t[-3000:]}" for w, t in jobs.history.logs_since(0) if name in w)
    assert saved == every, f"ranks that saved: {sorted(saved)} of {sorted(every)}\n{text}"
