"""A tiny stand-in for the API server's storage, to drive the pure `reconcile` in unit tests.

It applies a Plan the way the operator does (status, deletes, updates, creates) to in-memory
objects, and lets a test move pods through phases the way kubelet/kwok would. The real operator
against a real API server is tested in tests/cluster/.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from t9k_sdk.reconcile import Event, Observed, Plan, reconcile

_uids = itertools.count(1)


@dataclass
class Sim:
    job: dict[str, Any]
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    others: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    plans: list[Plan] = field(default_factory=list)
    now: datetime = datetime(2026, 1, 1, tzinfo=UTC)
    ssh_key: tuple[str, str] | None = None
    kueue: bool | None = None
    """Whether the cluster serves Kueue's Workloads (Observed.kueue)."""
    flavors: dict[str, dict[str, Any]] = field(default_factory=lambda: {"default": {}})
    """Kueue ResourceFlavor name -> its spec."""
    priorities: dict[str, int] | None = None
    """Kueue WorkloadPriorityClass name -> its value."""
    nodes: dict[str, dict[str, Any]] | None = None
    """The nodes that exist, by name (Observed.nodes; None: not known)."""
    node_lost_after: int = 300
    """The operator's --node-lost-after (Observed.node_lost_after)."""

    def __post_init__(self) -> None:
        self.job = copy.deepcopy(self.job)
        self.job["metadata"].setdefault("uid", "job-uid")
        self.job["metadata"].setdefault("namespace", "ns")

    # -- driving ----------------------------------------------------------------------------------

    def observed(self) -> Observed:
        by_kind: dict[str, list[dict[str, Any]]] = {}
        for (kind, _), obj in sorted(self.others.items()):
            by_kind.setdefault(kind, []).append(obj)
        return Observed(
            pods=tuple(self.pods.values()),
            services=tuple(by_kind.get("Service", ())),
            config_maps=tuple(by_kind.get("ConfigMap", ())),
            secrets=tuple(by_kind.get("Secret", ())),
            pod_groups=tuple(by_kind.get("PodGroup", ())),
            workloads=tuple(by_kind.get("Workload", ())),
            kueue=self.kueue,
            flavors=self.flavors,
            priorities=self.priorities,
            ssh_key=self.ssh_key,
            nodes=self.nodes,
            node_lost_after=self.node_lost_after,
        )

    def plan(self) -> Plan:
        return reconcile(self.job, self.observed(), now=self.now)

    def step(self, *, apply: bool = True, seconds: float = 1) -> Plan:
        self.now += timedelta(seconds=seconds)
        plan = self.plan()
        self.plans.append(plan)
        if apply:
            self.apply(plan)
        return plan

    def settle(self, limit: int = 10) -> Plan:
        """Step until a pass changes nothing."""
        for _ in range(limit):
            plan = self.step()
            if plan.status is None and not (plan.create or plan.delete or plan.update):
                return plan
        raise AssertionError(f"no steady state after {limit} passes: {plan}")

    def launch(self, limit: int = 5) -> dict[str, dict[str, Any]]:
        """Pass after pass, every pod running as soon as it is created, until a pass creates
        no pod and updates nothing (a launcher is created once the workers it needs run and
        the hostfile lists them); the pods created, by name, as the plans asked for them."""
        created: dict[str, dict[str, Any]] = {}
        for _ in range(limit):
            plan = self.step()
            pods = {m["metadata"]["name"]: m for m in plan.create if m["kind"] == "Pod"}
            if not pods and not plan.update and created:
                return created
            created.update(pods)
            self.run()
        raise AssertionError(f"pods still created after {limit} passes: {sorted(created)}")

    def apply(self, plan: Plan, *, stop_after: str | None = None) -> None:
        if plan.status is not None:
            self.job["status"] = copy.deepcopy(plan.status)
        if stop_after == "status":
            return
        for d in plan.delete:
            if d.kind == "Pod":
                pod = self.pods.get(d.name)
                if pod is not None and (d.uid is None or pod["metadata"]["uid"] == d.uid):
                    if d.grace_period_seconds == 0 or pod["status"].get("phase") in (
                        "Succeeded",
                        "Failed",
                    ):
                        del self.pods[d.name]
                    else:
                        pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
            else:
                self.others.pop((d.kind, d.name), None)
        for u in plan.update:
            key = (u.manifest["kind"], u.manifest["metadata"]["name"])
            new = copy.deepcopy(u.manifest)
            old = self.others.get(key, {})
            if u.subresource == "status":  # the status alone changes
                new = {**copy.deepcopy(old), "status": new.get("status", {})}
            elif "status" in old:  # the main resource keeps the status
                new["status"] = copy.deepcopy(old["status"])
            self.others[key] = new
        for m in plan.create:
            obj = copy.deepcopy(m)
            obj["metadata"]["uid"] = f"uid-{next(_uids)}"
            obj["metadata"]["resourceVersion"] = "1"
            if m["kind"] == "Pod":
                if m["metadata"]["name"] in self.pods:
                    continue  # AlreadyExists
                obj["status"] = {"phase": "Pending"}
                self.pods[m["metadata"]["name"]] = obj
            else:
                self.others.setdefault((m["kind"], m["metadata"]["name"]), obj)
        if plan.status is not None:
            self.events.extend(plan.events)

    # -- what kubelet / kwok would do --------------------------------------------------------------

    def schedule(self, *names: str) -> None:
        for name in names or tuple(self.pods):
            self.pods[name]["spec"]["nodeName"] = "node-0"

    def run(self, *names: str) -> None:
        for name in names or tuple(self.pods):
            pod = self.pods[name]
            pod["spec"]["nodeName"] = "node-0"
            pod["status"] = {
                "phase": "Running",
                "containerStatuses": [
                    {"name": c["name"], "state": {"running": {}}} for c in pod["spec"]["containers"]
                ],
            }

    def finish(self, name: str, code: int = 0, reason: str | None = None) -> None:
        pod = self.pods[name]
        pod["spec"]["nodeName"] = "node-0"
        terminated: dict[str, Any] = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
        }
        pod["status"] = {
            "phase": "Succeeded" if code == 0 else "Failed",
            "containerStatuses": [
                {"name": c["name"], "state": {"terminated": dict(terminated)}}
                for c in pod["spec"]["containers"]
            ],
        }
        if reason:
            pod["status"]["reason"] = reason

    def unschedulable(self, name: str, message: str) -> None:
        self.pods[name]["status"] = {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": message,
                }
            ],
        }

    def waiting(self, name: str, reason: str, message: str) -> None:
        pod = self.pods[name]
        pod["spec"]["nodeName"] = "node-0"
        pod["status"] = {
            "phase": "Pending",
            "containerStatuses": [
                {"name": c["name"], "state": {"waiting": {"reason": reason, "message": message}}}
                for c in pod["spec"]["containers"]
            ],
        }

    def vanish(self, name: str) -> None:
        del self.pods[name]

    def drain_deletions(self) -> None:
        for name in [n for n, p in self.pods.items() if p["metadata"].get("deletionTimestamp")]:
            del self.pods[name]

    # -- what Kueue would do -----------------------------------------------------------------------

    def workload(self) -> dict[str, Any]:
        return next(obj for (kind, _), obj in self.others.items() if kind == "Workload")

    def admit(self, flavor: str = "default") -> None:
        """Kueue admits the job's Workload: every pod set on `flavor`."""
        wl = self.workload()
        sets = [
            {"name": ps["name"], "count": ps["count"], "flavors": {"nvidia.com/gpu": flavor}}
            for ps in wl["spec"]["podSets"]
        ]
        wl["status"] = {
            "admission": {"clusterQueue": "team-a", "podSetAssignments": sets},
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
                {"type": "Admitted", "status": "True", "reason": "Admitted"},
            ],
        }

    def hold(self, message: str, reason: str = "Pending") -> None:
        """Kueue keeps the Workload queued with `message` (QuotaReserved=False)."""
        wl = self.workload()
        wl["status"] = {
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "False",
                    "reason": reason,
                    "message": message,
                }
            ]
        }

    def evict(self, reason: str, message: str) -> None:
        """Kueue evicts the admitted Workload (preemption, waitForPodsReady, ...)."""
        wl = self.workload()
        wl["status"]["conditions"].append(
            {"type": "Evicted", "status": "True", "reason": reason, "message": message}
        )

    # -- reading ----------------------------------------------------------------------------------

    @property
    def status(self) -> Mapping[str, Any]:
        return self.job.get("status") or {}

    @property
    def phase(self) -> str | None:
        return self.status.get("phase")

    def condition(self, type: str) -> Mapping[str, Any] | None:
        return next((c for c in self.status.get("conditions") or () if c["type"] == type), None)

    def task(self, type: str) -> Mapping[str, Any]:
        return next(t for t in self.status["tasks"] if t["type"] == type)

    def replica(self, name: str) -> Mapping[str, Any]:
        return next(
            r for t in self.status["tasks"] for r in t.get("replicas") or () if r["name"] == name
        )

    def reasons(self) -> list[str]:
        return [e.reason for e in self.events]


# What the tests of the SSH kinds (DeepSpeedJob, ColossalAIJob) share.

KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n-----END OPENSSH PRIVATE KEY-----\n",
    "ssh-ed25519 AAAA test",
)


def by_name(plan_create: tuple[dict[str, Any], ...], kind: str) -> dict[str, dict[str, Any]]:
    return {m["metadata"]["name"]: m for m in plan_create if m["kind"] == kind}


def container_of(p: dict[str, Any], name: str = "worker") -> dict[str, Any]:
    return next(c for c in p["spec"]["containers"] if c["name"] == name)


def env_of(c: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in c.get("env") or ()}
