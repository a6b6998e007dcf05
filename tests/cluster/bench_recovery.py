"""Time to recovery of real training on the real node: DeepSpeedJob and ColossalAIJob, one fault
at a time, under T9k's rules (restart scope Replica) and under restart scope Job.

    make bench-recovery                          # every case, twice
    make bench-recovery BENCH_ARGS="-k deepspeed and rank"

A benchmark, not a test (`make test` does not collect it: its file is not `test_*.py`). It needs
the dev cluster with its real node (`make cluster-up`) and takes about 40 minutes on 2 cores.
Each case starts a job (2 workers x 2 processes, so 4 ranks), waits until rank 0 has logged
step 10, makes one fault, and then waits for the job to end. The fault:

* `rank`: SIGKILL to one training process of worker 1 (exit 137, what the OOM killer does);
* `pod`: worker 1's pod force-deleted (grace period 0: its processes are killed at once);
* `launcher`: SIGKILL to the launcher process (DeepSpeedJob: `deepspeed` on worker 0;
  ColossalAIJob: `colossalai run` on the launcher pod).

What is recorded, as one JSON line per case in $T9K_RECOVERY_RESULTS (the Makefile writes
bench/results/recovery.jsonl): the job's final phase, the restarts counted, which pods were
replaced, and the time to recovery: from the fault to the first training step of a new start
(numbered no higher than the last one before the fault) that any pod logged, by the kubelet's
log timestamps (rank 0 logs every tenth step, so a figure is late by up to 10 steps of 0.25 s). docs/operator/semantics.md quotes the figures.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from t9k_sdk import models
from tests.cluster.e2e_helpers import E2E, Jobs
from tests.cluster.real_helpers import REAL_TIMEOUT, RealNode, logged_steps, scripts_configmap
from tests.cluster.test_real_lifecycle import pod_processes
from tests.cluster.test_real_training import colossalai_job, deepspeed_job
from tools.kit import wait_for

pytestmark = pytest.mark.realnode

STEPS = 80
STEP_SECONDS = 0.25
REPEATS = int(os.environ.get("T9K_RECOVERY_REPEATS", "2"))


@pytest.fixture(autouse=True, scope="module")
def _scripts(e2e: E2E, core_v1: client.CoreV1Api, real_node: RealNode) -> None:
    scripts_configmap(core_v1, e2e.namespace)


def _argv(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def _find(uid: str, match: Callable[[list[str]], bool], what: str) -> int:
    def found() -> list[int]:
        return sorted(pid for pid in pod_processes(uid) if match(_argv(pid)))

    return int(wait_for(found, bool, what, 60)[0])


def _rank(script: str) -> Callable[[list[str]], bool]:
    """A training process: the launchers start each rank as `python -u <script> ...`."""
    return lambda argv: any(a == "-u" and b.endswith(script) for a, b in itertools.pairwise(argv))


def _deepspeed_runner(argv: list[str]) -> bool:
    return len(argv) > 1 and argv[1].endswith("/deepspeed") and "--hostfile" in " ".join(argv)


def _colossalai_run(argv: list[str]) -> bool:
    return len(argv) > 2 and argv[1].endswith("/colossalai") and argv[2] == "run"


def _job(kind: str, name: str, scope: str) -> tuple[dict[str, Any], str, str]:
    """(manifest, the pod whose log has rank 0's steps, the training script)."""
    if kind == "deepspeed":
        script = "deepspeed_train.py"
        args = [script, f"--steps={STEPS}", f"--step-seconds={STEP_SECONDS}"]
        job = deepspeed_job(name, args, runPolicy={"backoffLimit": 3})
        job["spec"]["worker"]["restartPolicy"] = "OnFailure"
        leader = f"{name}-worker-0"
    else:
        script = "colossalai_train.py"
        job = colossalai_job(name, [script, f"--steps={STEPS}", f"--step-seconds={STEP_SECONDS}"])
        leader = f"{name}-launcher"
    if scope == "Job":
        job["metadata"].setdefault("annotations", {})[models.RESTART_SCOPE_ANNOTATION] = "Job"
    return job, leader, script


def _fault(
    jobs: Jobs, core: client.CoreV1Api, kind: str, fault: str, name: str, script: str
) -> None:
    worker1 = jobs.pod(f"{name}-worker-1")
    if fault == "rank":
        os.kill(_find(worker1.metadata.uid, _rank(script), "a rank of worker 1"), signal.SIGKILL)
    elif fault == "pod":
        core.delete_namespaced_pod(worker1.metadata.name, jobs.namespace, grace_period_seconds=0)
    elif kind == "deepspeed":
        leader = jobs.pod(f"{name}-worker-0")
        os.kill(_find(leader.metadata.uid, _deepspeed_runner, "deepspeed"), signal.SIGKILL)
    else:
        leader = jobs.pod(f"{name}-launcher")
        os.kill(_find(leader.metadata.uid, _colossalai_run, "colossalai run"), signal.SIGKILL)


def _steps_after(jobs: Jobs, name: str, since: float) -> list[tuple[float, int]]:
    steps = logged_steps(jobs.history.logs_since(0), since, prefix=f"{name}-")
    return [(round(seconds, 1), step) for seconds, step in steps]


def _tasks(status: dict[str, Any]) -> dict[str, int]:
    return {t["type"]: t.get("restartCount", 0) for t in status.get("tasks") or ()}


CASES = [
    (kind, fault, scope, run)
    for kind in ("deepspeed", "colossalai")
    for fault in ("rank", "pod", "launcher")
    for scope in ("Replica", "Job")
    for run in range(1, REPEATS + 1)
    # ColossalAIJob restarts nothing (T9k): one run of each fault shows it, under T9k's scope
    if kind == "deepspeed" or (scope == "Replica" and run == 1)
]


@pytest.mark.parametrize(("kind", "fault", "scope", "run"), CASES)
def test_time_to_recovery(
    kind: str, fault: str, scope: str, run: int, jobs: Jobs, core_v1: client.CoreV1Api
) -> None:
    name = f"r-{kind[:2]}-{fault[:4]}-{scope[0].lower()}{run}"
    job, leader, script = _job(kind, name, scope)
    jobs.create(job)
    wait_for(
        lambda: _steps_after(jobs, name, 0),
        lambda steps: any(s >= 10 for _, s in steps),
        f"{name}: rank 0 logging step 10",
        REAL_TIMEOUT,
    )
    pods = {p: jobs.pod(p).metadata.uid for p in jobs.pods(name)}
    at = time.time()
    _fault(jobs, core_v1, kind, fault, name, script)
    before = max(s for _, s in _steps_after(jobs, name, 0))
    status = jobs.wait_final(name, 3 * REAL_TIMEOUT)
    after = _steps_after(jobs, name, at)
    # a step of a new start: numbered no higher than the last one before the fault (an old
    # rank may still log the step it was in)
    again = next(((t, s) for t, s in after if s <= before), None)
    now = {p: jobs.pod(p).metadata.uid for p in jobs.pods(name)}
    figure = {
        "kind": kind,
        "fault": fault,
        "scope": scope,
        "run": run,
        "phase": status["phase"],
        "seconds": again[0] if again else None,
        "last_step_before": before,
        "finished_after_s": round(time.time() - at, 1),
        "replaced": sorted(p for p, uid in pods.items() if now.get(p) != uid),
        "restarts": _tasks(status),
        "backoffCount": status.get("backoffCount"),
        "reasons": [r for _t, r, _m in jobs.events(name) if r not in ("SuccessfulCreatePod",)],
        "leader": leader,
    }
    print(f"time to recovery: {json.dumps(figure)}")
    path = os.environ.get("T9K_RECOVERY_RESULTS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(figure) + "\n")
