"""A reconcile pass does work linear in the number of pods.

Not a timed test: the work of a pass is measured as the number of Python function calls it makes
(`sys.setprofile`), which does not depend on the machine. For a job of n, 2n and 3n pods the
extra work from n to 2n and from 2n to 3n must be the same (a quadratic pass, such as one that
lists every replica again for each pod, adds more and more per step). Timings of large jobs are
in bench/reconcile.py and docs/performance.md.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from t9k_sdk.reconcile import Observed, reconcile
from tests.sdk.manifests import colossalai_job, deepspeed_job, generic_job, pod

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _generic(n: int) -> dict[str, Any]:
    # two replica types, finish rules and per-replica services with variables to substitute
    job = generic_job(
        replicaSpecs=[
            {"type": "ps", "replicas": 2, "template": pod("ps", args=["$(rank)"])},
            {
                "type": "worker",
                "replicas": n,
                "template": pod("worker", args=["--ps=$(service.ps[0].host)", "$(replicas[ps])"]),
            },
        ],
        successRules=[{"worker": [0]}],
        service={"ports": [{"name": "http", "port": 80}]},
        scheduler={"t9kScheduler": {"queue": "default"}},
    )
    return job


def _deepspeed(n: int) -> dict[str, Any]:
    job = deepspeed_job()
    job["spec"]["worker"]["replicas"] = n
    return job


def _colossalai(n: int) -> dict[str, Any]:
    job = colossalai_job()
    job["spec"]["replicaSpecs"][1]["replicas"] = n
    return job


def _running(created: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...]:
    """The pods of a first pass, as the API server returns them once they run."""
    out = []
    for i, manifest in enumerate(created):
        if manifest["kind"] != "Pod":
            continue
        meta = {**manifest["metadata"], "uid": f"uid-{i}"}
        containers = manifest["spec"]["containers"]
        status = {
            "phase": "Running",
            "containerStatuses": [
                {"name": c["name"], "ready": True, "state": {"running": {}}} for c in containers
            ],
        }
        out.append({**manifest, "metadata": meta, "status": status})
    return tuple(out)


def _calls(fn: Callable[[], object]) -> int:
    count = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal count
        if event == "call":
            count += 1

    # Objects left by earlier tests (sockets, clients) run their finalizers when the collector
    # happens to run, and those calls would count here: collect first, and not during the count.
    gc.collect()
    gc.disable()
    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
        gc.enable()
    return count


def _work(make: Callable[[int], dict[str, Any]], n: int) -> tuple[int, int]:
    """Function calls of a first pass (creates every pod) and of a steady pass (all running)."""
    job = make(n)
    job["metadata"].update(uid="job-uid", namespace="ns")
    first = reconcile(job, Observed(), now=NOW)
    observed = Observed(pods=_running(first.create))
    steady = reconcile(job, observed, now=NOW)
    job = {**job, "status": steady.status}
    return (
        _calls(lambda: reconcile(job, Observed(), now=NOW)),
        _calls(lambda: reconcile(job, observed, now=NOW)),
    )


@pytest.mark.parametrize("make", [_generic, _deepspeed, _colossalai], ids=lambda m: m.__name__)
def test_a_pass_makes_the_same_extra_calls_per_extra_pod(
    make: Callable[[int], dict[str, Any]],
) -> None:
    n = 60
    (f1, s1), (f2, s2), (f3, s3) = (_work(make, k * n) for k in (1, 2, 3))
    for name, a, b, c in (("first pass", f1, f2, f3), ("steady pass", s1, s2, s3)):
        step1, step2 = b - a, c - b
        assert step1 > 0, name
        # linear: equal steps (a few calls of slack for the digits of pod indices and such)
        assert abs(step2 - step1) <= 0.02 * step1, (
            f"{name}: {a} calls for {n} pods, {b} for {2 * n}, {c} for {3 * n}:"
            f" the second {n} pods cost {step2 - step1:+} calls more than the first"
        )


def test_one_pass_plans_a_bounded_batch_of_pods_and_the_next_passes_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 10,000-replica job made one pass build every pod before the first create (555 MiB,
    over the operator's memory limit). A pass now plans at most a batch; the slots left wait as
    Creating and the next passes plan them, each pod once."""
    from t9k_sdk.reconcile import core
    from tests.reconcile.sim import Sim

    monkeypatch.setattr(core, "POD_CREATES_PER_PASS", 4)
    sim = Sim(_generic(9))  # 2 ps + 9 workers = 11 pods: batches of 4, 4 and 3
    sizes, services = [], []
    for _ in range(3):
        plan = sim.step()
        pods = [m["metadata"]["name"] for m in plan.create if m["kind"] == "Pod"]
        sizes.append(len(pods))
        services.append(sum(m["kind"] == "Service" for m in plan.create))
        if len(sim.pods) < 11:
            assert plan.requeue_after is not None
            assert plan.requeue_after <= 1
    assert sizes == [4, 4, 3]
    # every pod goes out before the first service: a job's last pod never waits behind services
    assert services == [0, 0, 11]
    assert len(sim.pods) == 11
    replicas = [r for t in sim.status["tasks"] for r in t.get("replicas", ())]
    assert len(replicas) == 11
    assert sim.status["aggregate"]["creating"] == 11


def test_services_are_left_alone_while_pods_wait_for_a_later_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While pods wait for a later pass, no service is built, created, changed or deleted (a
    job of 10,000 pods would build its 10,000 services in each of its 20 passes); the first
    pass with every pod planned puts them right."""
    import copy

    from t9k_sdk.reconcile import core
    from tests.reconcile.sim import Sim

    sim = Sim(_generic(9))  # 11 pods: batches of 4, 4 and 3
    wanted = [m for m in sim.plan().create if m["kind"] == "Service"]  # all in one pass
    assert len(wanted) == 11
    monkeypatch.setattr(core, "POD_CREATES_PER_PASS", 4)
    # a service of the job that a user edited, and one the job no longer needs
    edited = copy.deepcopy(wanted[0])
    edited["spec"]["ports"] = [{"name": "http", "port": 8080}]
    extra = copy.deepcopy(wanted[1])
    extra["metadata"]["name"] = "gj-worker-99"
    for svc in (edited, extra):
        sim.others[("Service", svc["metadata"]["name"])] = {
            **svc,
            "metadata": {**svc["metadata"], "uid": f"uid-{svc['metadata']['name']}"},
        }

    def service_actions(plan: core.Plan) -> list[str]:
        return [
            *(f"create {m['metadata']['name']}" for m in plan.create if m["kind"] == "Service"),
            *(f"update {u.manifest['metadata']['name']}" for u in plan.update),
            *(f"delete {d.name}" for d in plan.delete if d.kind == "Service"),
        ]

    assert service_actions(sim.step()) == []
    assert service_actions(sim.step()) == []
    last = sim.step()
    assert sum(m["kind"] == "Pod" for m in last.create) == 3
    actions = service_actions(last)
    assert f"update {edited['metadata']['name']}" in actions
    assert "delete gj-worker-99" in actions
    assert sum(a.startswith("create ") for a in actions) == 10


def test_the_batch_is_bounded_by_bytes_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from t9k_sdk.reconcile import core
    from tests.reconcile.sim import Sim

    sim = Sim(_generic(20))
    one_pod = len(__import__("json").dumps(sim.plan().create[-1]))
    monkeypatch.setattr(core, "PLAN_BYTES_PER_PASS", 5 * one_pod)
    plan = sim.step()
    assert 5 <= sum(m["kind"] == "Pod" for m in plan.create) <= 7


def test_restarts_left_for_a_later_pass_are_counted_once_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from t9k_sdk.reconcile import core
    from tests.reconcile.sim import Sim

    job = generic_job(
        replicaSpecs=[
            {
                "type": "worker",
                "replicas": 3,
                "template": pod("worker"),
                "restartPolicy": {"policy": "OnFailure", "limit": 5},
            }
        ]
    )
    sim = Sim(job)
    sim.settle()
    sim.run()
    sim.settle()
    monkeypatch.setattr(core, "POD_CREATES_PER_PASS", 1)
    for name in list(sim.pods):
        sim.finish(name, 1)
    counts = []
    for _ in range(6):
        sim.step()
        counts.append(sim.status["tasks"][0]["restartCount"])
    assert counts[-1] == 3  # each failed worker restarted once, none twice, none lost
    assert counts == sorted(counts)
    assert len(sim.pods) == 3
    assert sim.phase not in ("Failed", "Succeeded")


def _half_missing(n: int) -> int:
    """Calls of a pass of a job restarting as a whole (restart scope Job) while half of its n
    pods are missing: whether old ranks still stop is asked for each missing pod."""
    job = _generic(n)
    job["metadata"].update(uid="job-uid", namespace="ns")
    job["metadata"]["annotations"] = {"t9k-sdk.dev/restart-scope": "Job"}
    first = reconcile(job, Observed(), now=NOW)
    pods = _running(first.create)
    steady = reconcile(job, Observed(pods=pods), now=NOW)
    job = {**job, "status": steady.status}
    observed = Observed(pods=pods[::2])
    return _calls(lambda: reconcile(job, observed, now=NOW))


def test_a_pass_with_many_missing_pods_of_a_whole_job_restart_stays_linear() -> None:
    n = 120  # 3n pods stay within one batch of creates (policies.batching)
    a, b, c = (_half_missing(k * n) for k in (1, 2, 3))
    step1, step2 = b - a, c - b
    assert abs(step2 - step1) <= 0.02 * step1, (
        f"{a} calls for {n} pods, {b} for {2 * n}, {c} for {3 * n}: the second {n} pods cost"
        f" {step2 - step1:+} calls more than the first"
    )
