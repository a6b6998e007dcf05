"""The operator's caches keep only what the core reads (`trim_pod`, `trim_secret`,
`trim_config_map`): on trimmed objects the core must plan exactly what it plans on whole ones,
in every state the fuzz campaign reaches (Hypothesis, over tests/reconcile/test_fuzz.py's jobs
and pod happenings)."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from t9k_sdk.reconcile import reconcile
from t9k_sdk.reconcile.observe import observe_pod, trim_config_map, trim_pod, trim_secret
from tests.reconcile.sim import Sim
from tests.reconcile.test_fuzz import EVENT, _valid, apply_event, job_manifest


def _same_answer(sim: Sim) -> None:
    observed = sim.observed()
    trimmed = dataclasses.replace(
        observed,
        pods=tuple(trim_pod(p) for p in observed.pods),
        secrets=tuple(trim_secret(s) for s in observed.secrets),
        config_maps=tuple(trim_config_map(c) for c in observed.config_maps),
    )
    for whole, lean in zip(observed.pods, trimmed.pods, strict=True):
        assert observe_pod(lean) == observe_pod(whole)
        assert lean["metadata"] == whole["metadata"]
        assert lean.get("status") == whole.get("status")
    assert reconcile(sim.job, trimmed, now=sim.now) == reconcile(sim.job, observed, now=sim.now)


def _step(sim: Sim) -> None:
    _same_answer(sim)
    sim.step()
    sim.drain_deletions()


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(job=job_manifest(), events=st.lists(EVENT, max_size=10))
def test_the_core_plans_the_same_on_trimmed_pods(
    job: dict[str, Any], events: list[tuple[str, int, int]]
) -> None:
    if not _valid(job):
        return
    sim = Sim(job)
    sim.ssh_key = ("-----BEGIN OPENSSH PRIVATE KEY-----\nx\n", "ssh-ed25519 AAAA fuzz")
    for _ in range(3):
        _step(sim)
    for action, which, code in events:
        apply_event(sim, action, which, code)
        _step(sim)
        _step(sim)


def test_trimming_keeps_what_the_core_reads_and_drops_the_rest() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "uid": "u"},
        "spec": {
            "nodeName": "node-1",
            "containers": [{"name": "main", "image": "x", "env": [{"name": "A", "value": "1"}]}],
            "volumes": [{"name": "v", "emptyDir": {}}],
        },
        "status": {"phase": "Running"},
    }
    lean = trim_pod(pod)
    assert lean["spec"] == {"nodeName": "node-1", "containers": [{"name": "main"}]}
    assert lean["metadata"] == pod["metadata"]
    assert lean["status"] == pod["status"]
    assert pod["spec"]["volumes"]  # the original is not changed


def test_a_secret_keeps_no_key_material_and_a_config_map_no_job_controls_no_data() -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "demo-ssh"},
        "data": {"id_ed25519": "c2VjcmV0", "config": "eA=="},
    }
    assert trim_secret(secret)["data"] == {"id_ed25519": "", "config": ""}
    assert secret["data"]["id_ed25519"] == "c2VjcmV0"  # the original is not changed
    planted = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "demo-config", "labels": {"tensorstack.dev/owner-name": "demo"}},
        "data": {"big": "x" * 2**20},
    }
    assert "data" not in trim_config_map(planted)
    ours = {
        **planted,
        "metadata": {
            **planted["metadata"],
            "ownerReferences": [
                {
                    "apiVersion": "batch.tensorstack.dev/v1beta1",
                    "kind": "DeepSpeedJob",
                    "name": "demo",
                    "uid": "u",
                    "controller": True,
                }
            ],
        },
    }
    assert trim_config_map(ours) == ours  # the core compares a job's ConfigMap with its spec
