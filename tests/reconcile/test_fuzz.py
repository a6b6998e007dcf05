"""Valid-but-unusual jobs through the pure core, with what pods do in any order (Hypothesis).

Each example is a job of one of the three kinds (long names, one to three replica types,
zero to four replicas, restart policies and budgets, finish rules, services, a scheduler, clean-up
policies, created paused) and a list of things that happen to its pods (run, exit with some code,
vanish, become unschedulable, pause and resume the job). After the job is created and after each
of those, the core runs pass after pass, each plan applied as the operator would (tests/reconcile/
sim.py), until a pass plans nothing. Invariants:

* **idempotent**: a steady state is reached within a few passes, and applying a plan's status
  and reconciling again at the same moment with the same children plans nothing new for the
  children that a second pass did not already plan (no pass undoes its own work);
* **no churn**: between two external changes no pass deletes a pod that an earlier pass created;
* **names within limits**: every object created has a name of at most 253 characters, pods
  and services at most 63 (their names are DNS labels: host names), and every label value at
  most 63;
* **health as GitOps tools read it**: once settled, status.observedGeneration is the job's
  generation and Ready/Reconciling/Stalled agree with the phase (the table in
  t9k_sdk/reconcile/status/conditions.py); a spec edit that changes nothing else ("edit") is exactly one
  status write, of the new observedGeneration alone.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from t9k_sdk import codecs
from t9k_sdk.errors import InvalidManifestError
from t9k_sdk.reconcile import Plan
from tests.reconcile.sim import Sim
from tests.sdk.manifests import colossalai_job, deepspeed_job, generic_job, pod

LABEL_MAX = 63
NAME_MAX = 253

_alnum = st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789")
_middle = st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789-")


@st.composite
def dns_label(draw: st.DrawFn, max_size: int) -> str:
    """A DNS-1123 label of 1..max_size characters, often near the limit."""
    size = draw(st.one_of(st.integers(1, 6), st.integers(max(1, max_size - 4), max_size)))
    if size == 1:
        return draw(_alnum)
    inner = draw(st.lists(_middle, min_size=size - 2, max_size=size - 2))
    return draw(_alnum) + "".join(inner) + draw(_alnum)


RESTART = st.one_of(
    st.none(),
    st.builds(
        lambda p, n: {"policy": p, "limit": n},
        st.sampled_from(("Never", "OnFailure", "Always", "ExitCode")),
        st.integers(0, 3),
    ),
)


@st.composite
def generic(draw: st.DrawFn, name: str) -> dict[str, Any]:
    types = draw(st.lists(dns_label(8), min_size=1, max_size=3, unique=True))
    specs = []
    for t in types:
        spec: dict[str, Any] = {"type": t, "replicas": draw(st.integers(0, 4)), "template": pod()}
        restart = draw(RESTART)
        if restart is not None:
            spec["restartPolicy"] = restart
        specs.append(spec)
    extra: dict[str, Any] = {}
    if draw(st.booleans()):
        extra["service"] = {"ports": [{"name": "http", "port": 80}]}
    if draw(st.booleans()):
        extra["cleanUpPolicy"] = draw(st.sampled_from(("None", "All", "Unfinished")))
    counted = [s for s in specs if s["replicas"] > 0]
    if counted and bool(draw(st.booleans())):
        chosen = draw(st.sampled_from(counted))
        extra["successRules"] = [{chosen["type"]: [0]}]
    if counted and bool(draw(st.booleans())):
        chosen = draw(st.sampled_from(counted))
        extra["failureRules"] = [{chosen["type"]: list(range(chosen["replicas"]))}]
    if draw(st.booleans()):
        extra["scheduler"] = {"t9kScheduler": {"queue": "default"}}
    job = generic_job(replicaSpecs=specs, **extra)
    job["metadata"]["name"] = name
    return job


@st.composite
def job_manifest(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(("GenericJob", "DeepSpeedJob", "ColossalAIJob")))
    # up to the longest names the SDK accepts (generated pod names of at most 63 characters)
    name = draw(dns_label(draw(st.sampled_from((12, 50, 57, LABEL_MAX)))))
    if kind == "GenericJob":
        job = draw(generic(name))
    elif kind == "DeepSpeedJob":
        job = deepspeed_job()
        job["spec"]["worker"]["replicas"] = draw(st.integers(1, 4))
        if draw(st.booleans()):
            job["spec"]["runPolicy"] = {"backoffLimit": draw(st.integers(0, 3))}
    else:
        job = colossalai_job()
        job["spec"]["replicaSpecs"][1]["replicas"] = draw(st.integers(1, 3))
    job["metadata"]["name"] = name
    job["metadata"]["generation"] = 1
    if draw(st.integers(0, 4)) == 0:
        job["spec"]["runMode"] = {"pause": {"enabled": True}}
    return job


EVENT = st.tuples(
    st.sampled_from(
        ("run", "finish", "vanish", "unschedulable", "pause", "resume", "drain", "edit")
    ),
    st.integers(0, 20),  # which pod (modulo the pods there are)
    st.sampled_from((0, 0, 1, 2, 137, 143)),  # exit code
)


def _valid(job: dict[str, Any]) -> bool:
    try:
        codecs.from_manifest(job)
    except InvalidManifestError:
        return False
    return True


def _check_names(plan: Plan) -> None:
    for obj in plan.create:
        meta = obj["metadata"]
        limit = LABEL_MAX if obj["kind"] in ("Pod", "Service") else NAME_MAX
        assert len(meta["name"]) <= limit, f"{obj['kind']} name too long: {meta['name']}"
        for key, value in (meta.get("labels") or {}).items():
            assert len(str(value)) <= LABEL_MAX, f"label {key}={value} of {meta['name']}"
    for update in plan.update:
        for key, value in (update.manifest["metadata"].get("labels") or {}).items():
            assert len(str(value)) <= LABEL_MAX, f"label {key}={value}"


def _quiet(plan: Plan) -> bool:
    return plan.status is None and not (plan.create or plan.delete or plan.update)


def _settle(sim: Sim, limit: int = 8) -> None:
    """Pass after pass until one plans nothing; no pod a pass created may be deleted later."""
    created: set[str] = set()
    for _ in range(limit):
        plan = sim.step(apply=False, seconds=1)
        _check_names(plan)
        deleted = {d.name for d in plan.delete if d.kind == "Pod"} & created
        assert not deleted, f"pods created and then deleted with nothing changed: {deleted}"
        if _quiet(plan):
            return
        # Idempotence: the same pass again over the same state plans the same thing.
        again = sim.plan()
        assert again.create == plan.create
        assert again.delete == plan.delete
        sim.plans.append(plan)
        sim.apply(plan)
        created |= {c["metadata"]["name"] for c in plan.create if c["kind"] == "Pod"}
        sim.drain_deletions()  # kubelet ends what was deleted
    raise AssertionError(f"no steady state after {limit} passes; last plan: {plan}")


def _set_pause(sim: Sim, enabled: bool) -> None:
    spec = sim.job["spec"]
    run_mode = copy.deepcopy(spec.get("runMode") or {})
    run_mode.setdefault("pause", {})["enabled"] = enabled
    spec["runMode"] = run_mode
    sim.job["metadata"]["generation"] = int(sim.job["metadata"].get("generation") or 1) + 1


def apply_event(sim: Sim, action: str, which: int, code: int) -> None:
    """Carry out one fuzzed event (an EVENT tuple) on the simulated cluster."""
    names = sorted(sim.pods)
    if action in ("pause", "resume"):
        _set_pause(sim, action == "pause")
    elif action == "edit":  # a spec edit that changes no pod (the API server bumps generation)
        sim.job["metadata"]["generation"] = int(sim.job["metadata"].get("generation") or 1) + 1
    elif action == "drain":
        sim.drain_deletions()
    elif names:
        name = names[which % len(names)]
        if action == "run":
            sim.run(name)
        elif action == "finish":
            sim.finish(name, code)
        elif action == "vanish":
            sim.vanish(name)
        else:
            sim.unschedulable(name, "0/4 nodes are available")


def _status_of(sim: Sim, type_: str) -> tuple[str, str]:
    c = sim.condition(type_)
    assert c is not None, f"no {type_} condition: {sim.status}"
    return str(c["status"]), str(c["reason"])


def _check_health(sim: Sim) -> None:
    """The kstatus conditions of a settled job agree with its phase (conditions.py's table)."""
    status = sim.status
    assert status.get("observedGeneration") == sim.job["metadata"]["generation"]
    phase = status["phase"]
    ready, reconciling, stalled = (_status_of(sim, t) for t in ("Ready", "Reconciling", "Stalled"))
    running = sim.condition("Running") or {}
    paused = sim.condition("Paused") or {}
    blocked = running.get("reason") in ("NameConflict", "CreateFailed", "UpdateFailed")
    # never two verdicts at once
    assert not (ready[0] == "True" and "True" in (reconciling[0], stalled[0])), status
    assert not (reconciling[0] == "True" and stalled[0] == "True"), status
    if phase == "Failed":
        assert (ready[0], reconciling[0], stalled[0]) == ("False", "False", "True")
        assert stalled[1] == (sim.condition("Failed") or {}).get("reason")
    elif phase == "Succeeded" or (phase == "Running" and not blocked):
        assert (ready, reconciling[0], stalled[0]) == ((("True", phase)), "False", "False")
    elif phase == "Paused":
        done = paused.get("status") == "True"
        assert ready == ("True", "Paused") if done else ready == ("False", "Pausing")
        assert reconciling[0] == ("False" if done else "True")
        assert stalled[0] == "False"
    elif blocked:
        assert (ready[0], reconciling[0], stalled) == (
            "False",
            "False",
            ("True", running["reason"]),
        )
    else:
        assert phase in ("Pending", "Resuming"), status
        assert (ready, reconciling, stalled[0]) == (("False", phase), ("True", phase), "False")


def _edit_is_one_write(sim: Sim) -> None:
    """On a settled job, a generation bump alone is one status write of observedGeneration."""
    before = copy.deepcopy(sim.status)
    sim.job["metadata"]["generation"] = int(sim.job["metadata"].get("generation") or 1) + 1
    plan = sim.step(seconds=1)
    assert plan.status == {**before, "observedGeneration": sim.job["metadata"]["generation"]}
    assert not (plan.create)
    assert not (plan.delete)
    assert not (plan.update)
    assert _quiet(sim.step(seconds=1))


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(job=job_manifest(), events=st.lists(EVENT, max_size=12))
def test_unusual_jobs_settle_without_churn_and_names_fit(
    job: dict[str, Any], events: list[tuple[str, int, int]]
) -> None:
    if not _valid(job):
        return  # the SDK rejects it before the core sees it (tests/sdk covers the messages)
    sim = Sim(job)
    sim.ssh_key = ("-----BEGIN OPENSSH PRIVATE KEY-----\nx\n", "ssh-ed25519 AAAA fuzz")
    _settle(sim)
    _check_health(sim)
    for action, which, code in events:
        apply_event(sim, action, which, code)
        _settle(sim)
        _check_health(sim)
    _edit_is_one_write(sim)
    _check_health(sim)
    sim.now += timedelta(seconds=1)
