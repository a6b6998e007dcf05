#!/usr/bin/env python3
"""A fault campaign against the operator on the local control plane (docs/reliability.md).

    python tools/chaos.py run --size long      # `make chaos`: writes bench/chaos-result.json
    python tools/chaos.py render bench/chaos-result.json    # its table into docs/reliability.md

`run` starts (or reuses) the cluster of tools/cluster.py, creates a namespace, starts two
operator replicas with leader election, submits jobs of the three kinds and several shapes in
waves (kwok runs their pods for a few seconds and ends them as their `sim.t9k.dev/*` annotations
say) and, while they run, injects faults one after the other:

* `operator-kill`: SIGKILL the leader, right after it logged a pod create of the wave just
  submitted (so in the middle of a pass that creates pods); a new replica is started so two
  always run, and the standby takes the Lease over;
* `apiserver-restart`, `etcd-restart`: SIGKILL kube-apiserver (or etcd) and start it again;
* `pod-delete`: delete a running pod by hand (the job must recreate it, without a restart);
* `job-delete`: delete a job while its pods are being created (its pods must all go);
* `pause-resume`: pause a job while its pods are being created, then resume it;
* `job-edit`: change the replica count of a job while its pods are being created, in turn an
  elastic DeepSpeedJob's `elastic.expectedReplicas` and a GenericJob's first replica type: it must
  end with exactly the pods of the new count (surplus pods and Services deleted, missing ones
  created), the pods it keeps not created again (except a DeepSpeedJob's worker-0, relaunched at
  most once with the new hostfile) and the edit not counted as a restart.

Then it waits until every job has converged and checks the invariants (`check_jobs`): every job
has exactly its pods (none missing, none extra, no pod created again without a reason: a restart
counted in the status, a pod deleted by hand or a pause), its status is what the pure core derives
from its children (a pass over the current state plans nothing), every job that should finish
finished with the expected phase, and no pod outlives its job. Finally it SIGKILLs every
operator and starts one against the converged namespace (hundreds of jobs in final phases in the
long run): it must write nothing (`restart_writes`, counted by comparing resourceVersions).

The same campaign at a small size is a cluster test (tests/cluster/test_chaos.py). It drives the
cluster with the test kit (tools/kit), which the editable install of `make venv` makes importable
(the checkout is on the venv's path).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import random
import signal
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from kubernetes import config as kube_config

from t9k_sdk import _objects as o
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk._kube.resources import (
    CHILD_RESOURCES,
    CONFIG_MAPS,
    JOB_RESOURCES,
    NAMESPACES,
    POD_GROUPS,
    PODS,
    SECRETS,
    SERVICES,
    Resource,
    job_resource,
)
from t9k_sdk._kube.transport import Transport
from t9k_sdk.reconcile import Observed, reconcile
from tools import cluster as cluster_tool
from tools.kit import (
    Operator,
    colossalai_job,
    deepspeed_job,
    finish,
    generic_job,
    launch_operators,
    replica,
)

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
Manifest = dict[str, Any]
FINAL: Final = ("Succeeded", "Failed")
OUTCOMES: Final = ("Succeeded", "Failed", "Running", "Pending", "Paused")
OPERATOR_FLAGS: Final = {
    # Watches the server ends every 2-5 s (so they end hundreds of times in a run) and lists in
    # pages of 7 objects (so every list is paginated).
    "--watch-timeout-seconds": "2,5",
    "--list-page-size": "7",
}
WRITE_ACTIONS: Final = ("write status", "create", "delete", "update")
DOC: Final = REPO_ROOT / "docs" / "reliability.md"
RESULT: Final = REPO_ROOT / "bench" / "chaos-result.json"
TABLE_BEGIN: Final = "<!-- chaos-table: begin (tools/chaos.py render) -->"
TABLE_END: Final = "<!-- chaos-table: end -->"
ELASTIC_MAX: Final = 3
"""`elastic.maxReplicas` of the DeepSpeedJobs scaled by `job-edit`."""


@dataclass(frozen=True)
class Size:
    """How big a campaign is."""

    jobs: int
    operator_kills: int
    apiserver_restarts: int
    etcd_restarts: int
    pod_deletes: int
    job_deletes: int
    pause_resumes: int
    child_edits: int
    """ConfigMaps of running jobs edited by hand (the operator must restore them)."""
    job_edits: int
    """Jobs scaled while their pods are being created (elastic DeepSpeedJob, GenericJob)."""
    run_for: tuple[int, int]
    """Seconds the pods of a finishing job run (uniform in this range)."""
    load_jobs: int = 0
    """Jobs submitted at once to one operator after the campaign (`run_load`); 0: none."""
    workers: int = 4
    converge_timeout: float = 300.0


SIZES: Final = {
    # `make test` (tests/cluster/test_chaos.py): about a minute and a half on 2 cores.
    "small": Size(
        jobs=24,
        operator_kills=3,
        apiserver_restarts=1,
        etcd_restarts=1,
        pod_deletes=3,
        job_deletes=1,
        pause_resumes=1,
        child_edits=1,
        job_edits=2,
        run_for=(4, 30),
        converge_timeout=150.0,
    ),
    # `make chaos`: docs/reliability.md
    "long": Size(
        jobs=200,
        operator_kills=12,
        apiserver_restarts=2,
        etcd_restarts=2,
        pod_deletes=15,
        job_deletes=5,
        pause_resumes=5,
        child_edits=5,
        job_edits=6,
        run_for=(5, 120),
        load_jobs=1000,
        converge_timeout=600.0,
    ),
}


# --- jobs ------------------------------------------------------------------------------------


@dataclass
class JobPlan:
    """One job of the campaign and what it should come to."""

    kind: str
    name: str
    manifest: Manifest
    pods: tuple[str, ...]
    """The pod names the job must own (deterministic)."""
    outcome: str
    """The phase it must reach: Succeeded, Failed, Running (pods that never end), Pending
    (pods that are never scheduled) or Paused (created paused)."""
    touched: str = ""
    """A fault aimed at the job itself: "deleted", "paused" (and resumed), "edited" (scaled)."""


def make_jobs(count: int, rng: random.Random, run_for: tuple[int, int]) -> list[JobPlan]:
    """Jobs of the three kinds and several shapes: 1-4 replicas, one or two replica types,
    succeeding, failing, running for ever, never scheduled or created paused, with Services
    for some GenericJobs."""
    jobs: list[JobPlan] = []
    for n in range(count):
        secs = rng.randint(*run_for)
        roll = rng.random()
        if roll < 0.5:
            name = f"gj-{n}"
            outcome = rng.choices(OUTCOMES, (12, 4, 2, 1, 1))[0]
            ends = outcome in FINAL
            ok = finish(0, f"{secs}s")
            types: list[tuple[str, int, dict[str, str] | None]] = [
                ("worker", rng.randint(1, 4), ok if ends else None)
            ]
            if rng.random() < 0.4:
                types.append(("ps", rng.randint(1, 2), ok if ends else None))
            if outcome == "Failed":
                types[0] = (types[0][0], types[0][1], finish(rng.choice((1, 2, 137)), f"{secs}s"))
            reps = [replica(t, c, annotations=a) for t, c, a in types]
            if outcome == "Pending":  # no node matches: the pods exist and are never scheduled
                reps[0]["template"]["spec"]["nodeSelector"] = {"chaos.t9k.dev/node": "none"}
            extra: dict[str, Any] = {}
            if rng.random() < 0.3:
                extra["service"] = {"ports": [{"name": "http", "port": 8080}]}
            if outcome == "Paused":  # created paused: no pods until resumed
                extra["runMode"] = {"pause": {"enabled": True}}
            manifest = generic_job(name, *reps, **extra)
            pods = tuple(f"{name}-{t}-{i}" for t, c, _ in types for i in range(c))
            if outcome == "Paused":
                pods = ()
            jobs.append(JobPlan("GenericJob", name, manifest, pods, outcome))
        elif roll < 0.75:
            name = f"ds-{n}"
            workers = rng.randint(1, 3)
            manifest = deepspeed_job(name, workers, annotations=finish(0, f"{secs}s"))
            pods = tuple(f"{name}-worker-{i}" for i in range(workers))
            jobs.append(JobPlan("DeepSpeedJob", name, manifest, pods, "Succeeded"))
        else:
            name = f"ca-{n}"
            workers = rng.randint(1, 3)
            manifest = colossalai_job(
                name,
                workers,
                # The workers end first, so a converged job's pods no longer change.
                launcher_annotations=finish(0, f"{secs + 2}s"),
                worker_annotations=finish(0, f"{secs}s"),
            )
            pods = (f"{name}-launcher", *(f"{name}-worker-{i}" for i in range(workers)))
            jobs.append(JobPlan("ColossalAIJob", name, manifest, pods, "Succeeded"))
    return jobs


# --- the API ---------------------------------------------------------------------------------


class Api:
    """Raw JSON requests that ride out an API server or etcd restart (retry for `patience` s)."""

    def __init__(self, kubeconfig: Path, patience: float = 90.0) -> None:
        self.transport = Transport(
            kube_config.new_client_from_config(config_file=str(kubeconfig)), timeout=(5.0, 30.0)
        )
        self.patience = patience

    def close(self) -> None:
        self.transport.close()

    def call(self, method: str, path: str, **kw: Any) -> Manifest:
        deadline = time.monotonic() + self.patience
        while True:
            try:
                return self.transport.request(method, path, **kw)
            except ApiError as err:
                if err.status not in (0, 429, 500, 503, 504) or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def list(self, resource: Resource, namespace: str) -> list[Manifest]:
        items: list[Manifest] = []
        token = ""
        while True:
            query = {"limit": 500, **({"continue": token} if token else {})}
            page = self.call("GET", resource.path(namespace), query=query)
            items.extend(page.get("items") or [])
            token = str(o.mapping(page.get("metadata")).get("continue") or "")
            if not token:
                return items

    def create(self, resource: Resource, namespace: str, body: Manifest) -> None:
        try:
            self.call("POST", resource.path(namespace), body=body)
        except ApiError as err:
            if not err.already_exists:  # a retried POST that had gone through
                raise

    def delete(self, resource: Resource, namespace: str, name: str) -> bool:
        try:
            self.call("DELETE", resource.path(namespace, name))
            return True
        except ApiError as err:
            if err.not_found:
                return False
            raise

    def patch(self, resource: Resource, namespace: str, name: str, body: Manifest) -> None:
        self.call(
            "PATCH",
            resource.path(namespace, name),
            body=body,
            content_type="application/merge-patch+json",
        )


class PodHistory:
    """Every pod uid seen in the namespace, per pod name: a watch in a thread that survives
    API server and etcd restarts (on any error it watches again from the last version; on
    410 Gone it lists again)."""

    def __init__(self, api: Api, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        self.uids: dict[str, list[str]] = defaultdict(list)
        self.gone = 0
        """How many times a watch answered 410 Gone (and the pods were listed again)."""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pod-history", daemon=True)
        self._thread.start()

    def _record(self, pod: Mapping[str, Any]) -> None:
        m = o.meta(pod)
        with self._lock:
            if m.uid not in self.uids[m.name]:
                self.uids[m.name].append(m.uid)

    def _run(self) -> None:
        version = ""
        while not self._stop.is_set():
            try:
                if not version:
                    page = self.api.transport.request("GET", PODS.path(self.namespace))
                    for pod in page.get("items") or []:
                        self._record(pod)
                    version = str(o.mapping(page.get("metadata")).get("resourceVersion"))
                query = {"watch": "true", "resourceVersion": version, "timeoutSeconds": 5}
                response = self.api.transport.send(
                    "GET", PODS.path(self.namespace), query=query, stream=True
                )
                try:
                    for event in response.objects():
                        obj = o.mapping(event.get("object"))
                        if event.get("type") == "ERROR":
                            if obj.get("code") == 410:
                                version = ""
                                self.gone += 1
                            break
                        self._record(obj)
                        version = o.meta(obj).resource_version or version
                finally:
                    response.close()
            except ApiError as err:
                if err.status == 410:
                    version = ""
                    self.gone += 1
                self._stop.wait(0.3)
            except Exception:  # a broken stream while the API server restarts
                self._stop.wait(0.3)

    def seen(self, name: str) -> list[str]:
        with self._lock:
            return list(self.uids.get(name, ()))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)


# --- operators -------------------------------------------------------------------------------


class Operators:
    """Two operator replicas with leader election; `kill_leader` SIGKILLs the leader and starts
    a new replica, so two run at any time."""

    def __init__(self, start: Callable[..., Operator], workers: int) -> None:
        self._start = start
        self.workers = workers
        self.all: list[Operator] = []
        self.live: list[Operator] = []
        for _ in range(2):
            self.spawn()

    def spawn(self) -> Operator:
        op = self._start("--workers", str(self.workers), "--log-format", "json")
        self.all.append(op)
        self.live.append(op)
        return op

    def leader(self, timeout: float = 60.0) -> Operator:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for op in self.live:
                code, text = op.readyz()
                if code == 200 and text.startswith("leader"):
                    return op
            time.sleep(0.2)
        raise AssertionError(f"no operator became leader within {timeout:.0f}s")

    def kill(self, op: Operator) -> None:
        op.stop(signal.SIGKILL)
        self.live.remove(op)

    def kill_all(self) -> None:
        for op in list(self.live):
            self.kill(op)

    def writes(self) -> Counter[str]:
        """The writes the operators logged (every action line of every replica)."""
        counts: Counter[str] = Counter()
        for op in self.all:
            for line in op.log().splitlines():
                with contextlib.suppress(ValueError):
                    record = json.loads(line)
                    if record.get("msg") in WRITE_ACTIONS and "job" in record:
                        counts[str(record["msg"])] += 1
        return counts


def wait_for_create(op: Operator, offset: int, timeout: float) -> bool:
    """Wait until `op` logs a pod create after byte `offset` of its log; False on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with op.log_path.open("rb") as fh:
            fh.seek(offset)
            for line in fh.read().splitlines():
                with contextlib.suppress(ValueError):
                    record = json.loads(line)
                    if record.get("msg") == "create" and str(record.get("object", "")).startswith(
                        "Pod/"
                    ):
                        return True
        time.sleep(0.02)
    return False


# --- invariants ------------------------------------------------------------------------------


@dataclass
class Findings:
    """What the invariant check found (empty lists: all good)."""

    lost: list[str] = field(default_factory=list)
    """Jobs gone that nobody deleted, or without the outcome they should reach."""
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    """Pods created again without a reason (restart, hand delete, pause)."""
    inconsistent: list[str] = field(default_factory=list)
    """Jobs for which a reconcile pass over the current state would still change something."""
    orphans: list[str] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return not any(asdict(self).values())

    def summary(self) -> dict[str, int]:
        return {k: len(v) for k, v in asdict(self).items()}


def _owned(items: list[Manifest]) -> dict[str, list[Manifest]]:
    by_uid: dict[str, list[Manifest]] = defaultdict(list)
    for item in items:
        ref = o.meta(item).controller
        if ref is not None:
            by_uid[ref.uid].append(item)
    return by_uid


def _restarts(job: Mapping[str, Any]) -> int:
    status = o.status(job)
    count = int(status.get("backoffCount") or 0)
    for task in status.get("tasks") or ():
        count += int(o.mapping(task).get("restartCount") or 0)
    return count


def _list_served(api: Api, resource: Resource, namespace: str) -> list[Manifest]:
    """The objects of a child kind; none where the cluster does not serve it (Kueue's
    Workloads, without Kueue: 404)."""
    try:
        return api.list(resource, namespace)
    except ApiError as err:
        if err.status == 404:
            return []
        raise


def check_jobs(
    api: Api,
    namespace: str,
    plans: list[JobPlan],
    history: PodHistory,
    hand_deleted: Counter[str],
) -> Findings:
    """Compare the namespace with what every job should have (see the module docstring)."""
    found = Findings()
    jobs: dict[str, Manifest] = {}
    for resource in JOB_RESOURCES:
        for item in api.list(resource, namespace):
            jobs[o.meta(item).name] = {
                "apiVersion": resource.api_version,
                "kind": resource.kind,
                **item,
            }
    children = {r: _owned(_list_served(api, r, namespace)) for r in CHILD_RESOURCES}
    pods_by_uid = children[PODS]
    live_uids = {o.meta(j).uid for j in jobs.values()}
    for owner, owned in pods_by_uid.items():
        if owner not in live_uids:
            found.orphans.extend(f"Pod/{o.meta(p).name}" for p in owned)
    now = datetime.now(UTC)
    for plan in plans:
        job = jobs.get(plan.name)
        if plan.touched == "deleted":
            if job is not None:
                found.lost.append(f"{plan.name}: deleted but still there")
            continue
        if job is None:
            found.lost.append(f"{plan.name}: gone")
            continue
        phase = str(o.status(job).get("phase") or "")
        if phase != plan.outcome:
            target = found.unfinished if phase not in FINAL else found.lost
            target.append(f"{plan.name}: {phase or 'no status'}, expected {plan.outcome}")
        uid = o.meta(job).uid
        pods = {o.meta(p).name: p for p in pods_by_uid.get(uid, [])}
        # A final job recreates nothing: a pod deleted by hand just as it finished stays gone.
        found.missing.extend(
            f"{plan.name}: {n}"
            for n in plan.pods
            if n not in pods and not (phase in FINAL and hand_deleted[n])
        )
        found.extra.extend(f"{plan.name}: {n}" for n in pods if n not in plan.pods)
        allowed = _restarts(job) + sum(hand_deleted[n] for n in plan.pods)
        made = sum(max(0, len(history.seen(n)) - 1) for n in plan.pods)
        if plan.touched == "edited" and plan.kind == "DeepSpeedJob":
            # An elastic resize relaunches worker-0 (at most once: one edit).
            made -= min(max(0, len(history.seen(plan.pods[0])) - 1), 1)
        if plan.touched == "edited" and _restarts(job):  # its pods never fail
            found.inconsistent.append(
                f"{plan.name}: the edit was counted as {_restarts(job)} restart(s)"
            )
        if plan.touched != "paused" and made > allowed:
            found.duplicates.append(f"{plan.name}: {made} pods created again, {allowed} explained")
        observed = Observed(
            pods=tuple(pods.values()),
            services=tuple(children[SERVICES].get(uid, ())),
            config_maps=tuple(children[CONFIG_MAPS].get(uid, ())),
            secrets=tuple(children[SECRETS].get(uid, ())),
            pod_groups=tuple(children[POD_GROUPS].get(uid, ())),
        )
        again = reconcile(job, observed, now=now)
        if again.status is not None or again.create or again.delete or again.update:
            what = [
                *(["status"] if again.status is not None else []),
                *(f"create {o.meta(c).name}" for c in again.create),
                *(f"delete {d.name}" for d in again.delete),
                *(f"update {o.meta(u.manifest).name}" for u in again.update),
            ]
            found.inconsistent.append(f"{plan.name}: a pass would {', '.join(what)}")
    return found


def _parse_time(value: object) -> float | None:
    text = str(value or "")
    for fmt in ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ"):
        with contextlib.suppress(ValueError):
            return datetime.strptime(text, fmt).replace(tzinfo=UTC).timestamp()
    return None


def status_lags(api: Api, namespace: str) -> list[float]:
    """Per finished job: seconds from the last pod exit before the job's `Completed` or `Failed`
    condition turned true to that moment (how long the status trailed the pods, takeovers
    included). kwok stamps exits to the second, so each figure is within a second."""
    pods = _owned(api.list(PODS, namespace))
    lags: list[float] = []
    for resource in JOB_RESOURCES:
        for job in api.list(resource, namespace):
            done = [
                _parse_time(c.get("lastTransitionTime"))
                for c in o.status(job).get("conditions") or ()
                if c.get("type") in ("Completed", "Failed") and c.get("status") == "True"
            ]
            when = next((t for t in done if t is not None), None)
            if when is None:
                continue
            exits = [
                t
                for pod in pods.get(o.meta(job).uid, ())
                for cs in o.status(pod).get("containerStatuses") or ()
                if (
                    t := _parse_time(
                        o.mapping(o.mapping(cs.get("state")).get("terminated")).get("finishedAt")
                    )
                )
                is not None
                and t <= when + 1.0
            ]
            if exits:
                lags.append(max(0.0, when - max(exits)))
    return sorted(lags)


def _percentiles(values: list[float]) -> dict[str, float]:
    def at(q: float) -> float:
        return round(values[min(len(values) - 1, int(q * len(values)))], 1) if values else 0.0

    return {"p50": at(0.5), "p99": at(0.99), "max": at(1.0)}


def snapshot(api: Api, namespace: str) -> dict[str, str]:
    """resourceVersion of every job and child in the namespace, by kind/name."""
    out: dict[str, str] = {}
    for resource in (*JOB_RESOURCES, *CHILD_RESOURCES):
        for obj in _list_served(api, resource, namespace):
            out[f"{resource.kind}/{o.meta(obj).name}"] = o.meta(obj).resource_version
    return out


# --- the campaign ----------------------------------------------------------------------------


@dataclass
class Campaign:
    api: Api
    namespace: str
    size: Size
    rng: random.Random
    ops: Operators
    history: PodHistory
    plans: list[JobPlan]
    log: Callable[[str], None]
    faults: Counter[str] = field(default_factory=Counter)
    mid_create_kills: int = 0
    takeovers: list[float] = field(default_factory=list)
    hand_deleted: Counter[str] = field(default_factory=Counter)
    edited: list[str] = field(default_factory=list)
    submitted: int = 0

    def submit(self, count: int) -> list[JobPlan]:
        wave = self.plans[self.submitted : self.submitted + count]
        for plan in wave:
            self.api.create(job_resource(plan.kind), self.namespace, plan.manifest)
        self.submitted += len(wave)
        return wave

    def restart(self, component: str) -> None:
        """SIGKILL `component` and start it again. Before an API server restart etcd's history
        is compacted, so every watch resumes from a version that is gone: 410 Gone, re-list."""
        state = cluster_tool.read_state()
        assert state is not None, "no cluster state"
        began = time.monotonic()
        compacted = ""
        if component == "kube-apiserver":
            compacted = f" after compacting etcd at revision {cluster_tool.compact_etcd(state)}"
        cluster_tool.restart_component(state, component, kill=True)
        self.faults[f"{component}-restart"] += 1
        self.log(f"restarted {component}{compacted} in {time.monotonic() - began:.1f}s")

    def _running_pods(self) -> list[Manifest]:
        pods = self.api.list(PODS, self.namespace)
        return [p for p in pods if o.status(p).get("phase") == "Running"]

    def delete_pod(self) -> None:
        """Delete a running pod of a running job by hand."""
        active = {
            o.meta(j).name
            for r in JOB_RESOURCES
            for j in self.api.list(r, self.namespace)
            if o.status(j).get("phase") not in FINAL
        } & self._untouched()
        candidates = [
            p
            for p in self._running_pods()
            if not o.meta(p).deletion_timestamp
            and o.meta(p).labels.get("tensorstack.dev/owner-name") in active
        ]
        if not candidates:
            return
        pod = self.rng.choice(candidates)
        name = o.meta(pod).name
        if self.api.delete(PODS, self.namespace, name):
            self.hand_deleted[name] += 1
            self.faults["pod-delete"] += 1
            self.log(f"deleted pod {name} by hand")

    def edit_child(self) -> None:
        """Edit the launch ConfigMap of a running DeepSpeedJob or ColossalAIJob by hand: the
        operator keeps it in line with the spec (the final check: a pass would change nothing)."""
        active = [
            o.meta(j).name
            for r in JOB_RESOURCES[1:]
            for j in self.api.list(r, self.namespace)
            if o.status(j).get("phase") not in FINAL
        ]
        if not active:
            return
        name = f"{self.rng.choice(sorted(active))}-config"
        with contextlib.suppress(ApiError):
            patch = {"data": {"edited-by-hand": "chaos"}}
            self.api.patch(CONFIG_MAPS, self.namespace, name, patch)
            self.edited.append(name)
            self.faults["child-edit"] += 1
            self.log(f"edited ConfigMap {name} by hand")

    def _untouched(self) -> set[str]:
        return {p.name for p in self.plans[: self.submitted] if not p.touched}

    def touch_job(self, action: str) -> None:
        """Submit one job and delete or pause it while its pods are being created."""
        if self.submitted >= len(self.plans):
            return
        # A job that ends, or runs: one created paused would be resumed, and one whose pods are
        # never scheduled stays Resuming after a pause (not Pending).
        later = [
            i
            for i in range(self.submitted, len(self.plans))
            if self.plans[i].outcome in ("Succeeded", "Failed", "Running")
        ]
        if not later:
            return
        i = later[0]
        self.plans[self.submitted], self.plans[i] = self.plans[i], self.plans[self.submitted]
        plan = self.plans[self.submitted]
        plan.touched = "deleted" if action == "job-delete" else "paused"
        self.submit(1)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not self.history.seen(plan.pods[0]):
            time.sleep(0.02)
        resource = job_resource(plan.kind)
        if action == "job-delete":
            self.api.delete(resource, self.namespace, plan.name)
        else:
            pause = {"spec": {"runMode": {"pause": {"enabled": True}}}}
            self.api.patch(resource, self.namespace, plan.name, pause)
            time.sleep(self.rng.uniform(0.5, 3.0))
            resume = {"spec": {"runMode": {"pause": {"enabled": False}}}}
            self.api.patch(resource, self.namespace, plan.name, resume)
        self.faults[action] += 1
        self.log(f"{action} {plan.name} while its pods were being created")

    def edit_job(self) -> None:
        """Submit a job and, while its pods are being created, change its replica count (in
        turn an elastic DeepSpeedJob's workers and a GenericJob's first replica type): it must
        end with exactly the pods of the new count."""
        kind = ("DeepSpeedJob", "GenericJob")[self.faults["job-edit"] % 2]
        later = [
            i
            for i in range(self.submitted, len(self.plans))
            if self.plans[i].kind == kind
            and self.plans[i].outcome in ("Succeeded", "Running")
            and not self.plans[i].touched
        ]
        if not later:
            return
        i = later[0]
        self.plans[self.submitted], self.plans[i] = self.plans[i], self.plans[self.submitted]
        plan = self.plans[self.submitted]
        plan.touched = "edited"
        spec = plan.manifest["spec"]
        edit: Manifest
        if kind == "DeepSpeedJob":
            before = len(plan.pods)
            spec["elastic"] = {
                "enabled": True,
                "minReplicas": 1,
                "maxReplicas": ELASTIC_MAX,
                "expectedReplicas": before,
            }
            after = self.rng.choice([n for n in range(1, ELASTIC_MAX + 1) if n != before])
            edit = {"spec": {"elastic": {"expectedReplicas": after}}}
            what = "workers"
        else:
            specs = copy.deepcopy(spec["replicaSpecs"])
            before = int(specs[0]["replicas"])
            after = self.rng.choice([n for n in range(1, 5) if n != before])
            specs[0]["replicas"] = after
            edit = {"spec": {"replicaSpecs": specs}}  # a merge patch replaces the list
            what = f"{specs[0]['type']} replicas"
        self.submit(1)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not self.history.seen(plan.pods[0]):
            time.sleep(0.02)
        self.api.patch(job_resource(plan.kind), self.namespace, plan.name, edit)
        if kind == "DeepSpeedJob":
            plan.pods = tuple(f"{plan.name}-worker-{n}" for n in range(after))
        else:
            plan.pods = tuple(
                f"{plan.name}-{r['type']}-{n}"
                for r in edit["spec"]["replicaSpecs"]
                for n in range(int(r["replicas"]))
            )
        self.faults["job-edit"] += 1
        self.log(
            f"job-edit {plan.name}: {before} -> {after} {what} while its pods were being created"
        )

    def run(self) -> dict[str, Any]:
        size = self.size
        schedule = (
            ["operator-kill"] * size.operator_kills
            + ["apiserver-restart"] * size.apiserver_restarts
            + ["etcd-restart"] * size.etcd_restarts
            + ["pod-delete"] * size.pod_deletes
            + ["job-delete"] * size.job_deletes
            + ["pause-resume"] * size.pause_resumes
            + ["child-edit"] * size.child_edits
            + ["job-edit"] * size.job_edits
        )
        self.rng.shuffle(schedule)
        touches = size.job_deletes + size.pause_resumes + size.job_edits
        waves = size.operator_kills + 1
        per_wave = max(1, (len(self.plans) - touches) // waves)
        began = time.monotonic()
        self.submit(per_wave)
        self.log(f"submitted {self.submitted} jobs; {len(schedule)} faults to inject")
        for fault in schedule:
            time.sleep(self.rng.uniform(0.2, 2.0))
            if fault == "operator-kill":
                leader = self.ops.leader()
                offset = leader.log_path.stat().st_size
                self.submit(per_wave)  # a wave of jobs: the leader is creating their pods
                mid = wait_for_create(leader, offset, 10.0)
                self.ops.kill(leader)
                killed = time.monotonic()
                self.mid_create_kills += mid
                self.ops.spawn()
                self.ops.leader(timeout=60.0)
                self.takeovers.append(time.monotonic() - killed)
                self.faults[fault] += 1
                self.log(
                    f"SIGKILLed the leader (mid-create: {mid}); standby took over in"
                    f" {self.takeovers[-1]:.1f}s"
                )
            elif fault in ("apiserver-restart", "etcd-restart"):
                self.restart("kube-apiserver" if fault == "apiserver-restart" else "etcd")
            elif fault == "pod-delete":
                self.delete_pod()
            elif fault == "child-edit":
                self.edit_child()
            elif fault == "job-edit":
                self.edit_job()
            else:
                self.touch_job(fault)
        rest = [p for p in self.plans[self.submitted :] if not p.touched]
        if rest:
            self.submit(len(self.plans) - self.submitted)
        faults_done = time.monotonic()
        self.log(f"faults done after {faults_done - began:.0f}s; waiting for convergence")

        findings = Findings(unfinished=["not checked yet"])
        deadline = faults_done + size.converge_timeout
        while time.monotonic() < deadline:
            findings = check_jobs(
                self.api, self.namespace, self.plans, self.history, self.hand_deleted
            )
            if findings.ok():
                break
            time.sleep(2.0)
        converged = time.monotonic()
        lags = status_lags(self.api, self.namespace)
        writes = self.ops.writes()
        restored = sum(
            "edited-by-hand" not in (cm.get("data") or {})
            for cm in self.api.list(CONFIG_MAPS, self.namespace)
            if o.meta(cm).name in self.edited
        )
        self.log(f"converged: {findings.ok()} after {converged - faults_done:.0f}s")
        # A scaled job ended right: no finding names it (its pods, duplicates, status).
        flagged = [line for lines in asdict(findings).values() for line in lines]
        resized = {
            p.name: not any(line.startswith(f"{p.name}:") for line in flagged)
            for p in self.plans
            if p.touched == "edited"
        }

        # A fresh operator against the converged namespace must write nothing.
        self.ops.kill_all()

        def spawn() -> Operator:
            op = self.ops.spawn()
            self.ops.leader()
            return op

        restart = restart_check(self.api, self.namespace, spawn)
        self.log(
            f"fresh operator over the converged namespace: {restart['objects_changed']} changes"
        )
        return {
            "size": asdict(size),
            "jobs": len(self.plans),
            "kinds": dict(Counter(p.kind for p in self.plans)),
            "pods": sum(len(p.pods) for p in self.plans),
            "faults": dict(self.faults),
            "faults_total": sum(self.faults.values()),
            "mid_create_kills": self.mid_create_kills,
            "watch_gone": self.history.gone,
            "child_edits": {"edited": len(self.edited), "restored": restored},
            "job_edits": {"edited": len(resized), "resized": sum(resized.values())},
            "operator_flags": dict(OPERATOR_FLAGS),
            "takeover_seconds_max": round(max(self.takeovers, default=0.0), 1),
            "fault_phase_seconds": round(faults_done - began, 1),
            "converge_seconds": round(converged - faults_done, 1),
            "status_lag_seconds": _percentiles(lags),
            "converged": findings.ok(),
            "findings": findings.summary(),
            "findings_detail": {k: v[:20] for k, v in asdict(findings).items() if v},
            "operator_writes": dict(writes),
            "restart": restart,
        }


def restart_check(api: Api, namespace: str, spawn: Callable[[], Operator]) -> dict[str, Any]:
    """With every operator stopped, record the resourceVersion of every job and child, start one
    (`spawn` returns once it leads) and let it run until its log is quiet for 3 s: what changed."""
    before = snapshot(api, namespace)
    fresh = spawn()
    began = time.monotonic()
    quiet = _wait_log_quiet(fresh, quiet=3.0, timeout=60.0)
    after = snapshot(api, namespace)
    changed = sorted(k for k, v in after.items() if before.get(k) != v)
    changed += sorted(k for k in before if k not in after)
    writes: Counter[str] = Counter()
    for line in fresh.log().splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if record.get("msg") in WRITE_ACTIONS and "job" in record:
                writes[str(record["msg"])] += 1
    phases = Counter(
        str(o.status(j).get("phase") or "none")
        for r in JOB_RESOURCES
        for j in api.list(r, namespace)
    )
    return {
        "jobs": dict(phases),
        "quiet": quiet,
        "seconds": round(time.monotonic() - began, 1),
        "objects_changed": len(changed),
        "changed_detail": changed[:20],
        "operator_writes": dict(writes),
    }


def _wait_log_quiet(op: Operator, quiet: float, timeout: float) -> bool:
    """Wait until the operator's log has not grown for `quiet` seconds; False on timeout."""
    deadline = time.monotonic() + timeout
    size, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        now_size = op.log_path.stat().st_size
        if now_size != size:
            size, since = now_size, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return True
        time.sleep(0.2)
    return False


@contextlib.contextmanager
def _namespace(api: Api, name: str) -> Iterator[str]:
    api.create(NAMESPACES, "", {"metadata": {"name": name}})
    try:
        yield name
    finally:
        with contextlib.suppress(ApiError):
            api.call(
                "DELETE", NAMESPACES.path(name=name), query={"propagationPolicy": "Background"}
            )


def run_campaign(
    kubeconfig: Path,
    size: Size,
    log_dir: Path,
    *,
    seed: int = 14,
    namespace: str | None = None,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> dict[str, Any]:
    """Run one campaign on the cluster of `kubeconfig` (its state in tools/cluster.py's
    directory, for the restarts) and return the result (see `render`)."""
    rng = random.Random(seed)
    api = Api(kubeconfig)
    ns = namespace or f"chaos-{seed}-{int(time.time())}"
    log_dir.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    try:
        with (
            contextlib.redirect_stdout(_Discard()),  # launch_operators prints whole logs
            _namespace(api, ns),
            launch_operators(
                kubeconfig, ns, log_dir, flags=[a for f in OPERATOR_FLAGS.items() for a in f]
            ) as start,
            contextlib.closing(PodHistory(api, ns)) as history,
        ):
            ops = Operators(start, size.workers)
            ops.leader()
            plans = make_jobs(size.jobs, rng, size.run_for)
            campaign = Campaign(api, ns, size, rng, ops, history, plans, log)
            result = campaign.run()
    finally:
        api.close()
    result.update(
        seed=seed,
        namespace=ns,
        total_seconds=round(time.monotonic() - began, 1),
        date=datetime.now(UTC).strftime("%Y-%m-%d"),
        operator_logs=str(log_dir),
    )
    return result


class _Discard:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


# --- load ------------------------------------------------------------------------------------


def _rss_peak_mib(pid: int) -> float:
    """Peak resident memory (VmHWM) of a live process, MiB; 0 if unknown."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _log_times(op: Operator) -> dict[str, float]:
    """Per job name, the wall-clock time (epoch seconds) of the operator's first action."""
    first: dict[str, float] = {}
    for line in op.log().splitlines():
        with contextlib.suppress(ValueError, KeyError):
            record = json.loads(line)
            if record.get("msg") in WRITE_ACTIONS and "job" in record:
                name = str(record["job"]).rsplit("/", 1)[-1]
                if name not in first:
                    stamp = datetime.strptime(record["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
                    first[name] = stamp.replace(tzinfo=UTC).timestamp()
    return first


def run_load(
    kubeconfig: Path,
    jobs: int,
    log_dir: Path,
    *,
    seed: int = 14,
    timeout: float = 900.0,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> dict[str, Any]:
    """Submit `jobs` small jobs at once to one operator: peak memory, time for the work queue to
    drain (every job's pods created), time until all finished, and how long each job waited for
    its first action (no job may wait much longer than the others: the queue is FIFO per job)."""
    from concurrent.futures import ThreadPoolExecutor

    rng = random.Random(seed)
    api = Api(kubeconfig)
    ns = f"load-{seed}-{int(time.time())}"
    log_dir.mkdir(parents=True, exist_ok=True)
    plans = []
    for n in range(jobs):
        count = rng.choice((1, 1, 1, 2))
        secs = rng.randint(3, 15)
        manifest = generic_job(
            f"load-{n}", replica("worker", count, annotations=finish(0, f"{secs}s"))
        )
        pods = tuple(f"load-{n}-worker-{i}" for i in range(count))
        plans.append(JobPlan("GenericJob", f"load-{n}", manifest, pods, "Succeeded"))
    try:
        with (
            contextlib.redirect_stdout(_Discard()),
            _namespace(api, ns),
            launch_operators(kubeconfig, ns, log_dir) as start,
            contextlib.closing(PodHistory(api, ns)) as history,
        ):
            op = start("--workers", "4", "--log-format", "json")
            op.wait_ready("leader")
            submitted: dict[str, float] = {}

            def create(plan: JobPlan) -> None:
                api.create(job_resource(plan.kind), ns, plan.manifest)
                submitted[plan.name] = time.time()

            began = time.monotonic()
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(create, plans))
            submit_seconds = time.monotonic() - began
            log(f"submitted {jobs} jobs in {submit_seconds:.1f}s")
            all_pods = {n for p in plans for n in p.pods}
            drained = finished = None
            peak = 0.0
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and finished is None:
                peak = max(peak, _rss_peak_mib(op.proc.pid))
                if drained is None and all(history.seen(n) for n in all_pods):
                    drained = time.monotonic() - began
                    log(f"every pod created after {drained:.1f}s")
                if drained is not None:
                    phases = [
                        o.status(j).get("phase") for j in api.list(job_resource("GenericJob"), ns)
                    ]
                    if all(ph == "Succeeded" for ph in phases) and len(phases) == jobs:
                        finished = time.monotonic() - began
                time.sleep(1.0)
            peak = max(peak, _rss_peak_mib(op.proc.pid))
            findings = check_jobs(api, ns, plans, history, Counter())
            first = _log_times(op)
            waits = sorted(first[p.name] - submitted[p.name] for p in plans if p.name in first)
            op.stop(signal.SIGKILL)

            def spawn() -> Operator:
                fresh = start("--workers", "4", "--log-format", "json")
                fresh.wait_ready("leader", timeout=60.0)
                return fresh

            restart = restart_check(api, ns, spawn)
            log(f"fresh operator over {jobs} finished jobs: {restart['objects_changed']} changes")
    finally:
        api.close()

    def pct(q: float) -> float:
        return round(waits[min(len(waits) - 1, int(q * len(waits)))], 1) if waits else 0.0

    return {
        "jobs": jobs,
        "pods": sum(len(p.pods) for p in plans),
        "submit_seconds": round(submit_seconds, 1),
        "drain_seconds": round(drained or -1, 1),
        "finish_seconds": round(finished or -1, 1),
        "rss_peak_mib": round(peak, 1),
        "memory_limit_mib": 512,
        "first_action_wait_seconds": {"p50": pct(0.5), "p99": pct(0.99), "max": pct(1.0)},
        "jobs_without_action": jobs - len(waits),
        "findings": findings.summary(),
        "findings_detail": {k: v[:20] for k, v in asdict(findings).items() if v},
        "converged": findings.ok() and finished is not None,
        "restart": restart,
    }


# --- the report ------------------------------------------------------------------------------


def render_table(result: Mapping[str, Any]) -> str:
    """The docs/reliability.md table for one result."""
    f = result["findings"]
    r = result["restart"]
    faults = ", ".join(f"{k} {v}" for k, v in sorted(result["faults"].items()))
    writes = result["operator_writes"]
    rw = r["operator_writes"]
    rows = [
        ("Jobs (GenericJob / DeepSpeedJob / ColossalAIJob)", _kinds(result["kinds"])),
        ("Pods the jobs should own", result["pods"]),
        ("Faults injected", f"{result['faults_total']} ({faults})"),
        ("Leader kills in the middle of a pass creating pods", result["mid_create_kills"]),
        ("Slowest takeover by the standby", f"{result['takeover_seconds_max']} s"),
        ("Duplicate pods (created again without a reason)", f["duplicates"]),
        ("Pods missing / extra / orphaned", f"{f['missing']} / {f['extra']} / {f['orphans']}"),
        (
            "ConfigMaps edited by hand: restored",
            f"{result['child_edits']['restored']} of {result['child_edits']['edited']}",
        ),
        *(
            [
                (
                    "Jobs scaled while their pods were being created: ending with exactly"
                    " the pods of the new count",
                    f"{result['job_edits']['resized']} of {result['job_edits']['edited']}",
                )
            ]
            if "job_edits" in result
            else []
        ),
        ("Jobs lost or with the wrong outcome", f["lost"]),
        ("Jobs whose status a new pass would change", f["inconsistent"]),
        ("Jobs not finished at the end", f["unfinished"]),
        ("Time to converge after the last fault", f"{result['converge_seconds']} s"),
        *(
            [
                (
                    "Status behind the pods (last pod exit to the job's final condition),"
                    " p50 / p99 / max",
                    " / ".join(f"{result['status_lag_seconds'][k]}" for k in ("p50", "p99", "max"))
                    + " s",
                )
            ]
            if "status_lag_seconds" in result
            else []
        ),
        (
            "Operator writes during the run (status / create / delete / update)",
            " / ".join(
                str(writes.get(k, 0)) for k in ("write status", "create", "delete", "update")
            ),
        ),
        (
            f"Fresh operator over the converged namespace ({sum(r['jobs'].values())} jobs):"
            " objects changed / writes",
            f"{r['objects_changed']} / {sum(rw.values())}",
        ),
        ("Whole run", f"{result['total_seconds']} s"),
    ]
    rows.insert(
        4,
        (
            "Watches ended by the server / lists paginated",
            f"every {result['operator_flags']['--watch-timeout-seconds'].replace(',', '-')}"
            f" s / pages of {result['operator_flags']['--list-page-size']} objects;"
            f" 410 Gone answers seen by the harness's own pod watch: {result['watch_gone']}",
        ),
    )
    load = result.get("load")
    if load:
        w = load["first_action_wait_seconds"]
        lf = load["findings"]
        rows += [
            ("Load: jobs submitted at once (pods)", f"{load['jobs']} ({load['pods']})"),
            (
                "Load: every pod created (work queue drained) / every job Succeeded",
                f"{load['drain_seconds']} s / {load['finish_seconds']} s",
            ),
            (
                "Load: operator peak memory (limit in operator.yaml)",
                f"{load['rss_peak_mib']} MiB ({load['memory_limit_mib']} MiB)",
            ),
            (
                "Load: wait for a job's first action, p50 / p99 / max",
                f"{w['p50']} / {w['p99']} / {w['max']} s",
            ),
            (
                "Load: duplicates / missing / lost",
                f"{lf['duplicates']} / {lf['missing']} / {lf['lost']}",
            ),
        ]
    lines = [
        f"Size `{result['size_name']}`, seed {result['seed']}, {result['date']}:",
        "",
        "| | |",
        "| --- | --- |",
        *(f"| {k} | {v} |" for k, v in rows),
    ]
    return "\n".join(lines)


def _kinds(kinds: Mapping[str, int]) -> str:
    total = sum(kinds.values())
    parts = " / ".join(
        str(kinds.get(k, 0)) for k in ("GenericJob", "DeepSpeedJob", "ColossalAIJob")
    )
    return f"{total} ({parts})"


def render(result_path: Path, doc: Path = DOC) -> None:
    """Replace the table between the markers of docs/reliability.md with the result's."""
    result = json.loads(result_path.read_text())
    text = doc.read_text()
    begin, end = text.index(TABLE_BEGIN), text.index(TABLE_END)
    text = text[: begin + len(TABLE_BEGIN)] + "\n" + render_table(result) + "\n" + text[end:]
    doc.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="run a campaign and write its result as JSON")
    p_run.add_argument("--size", choices=sorted(SIZES), default="long")
    p_run.add_argument("--jobs", type=int, help="override the number of jobs of the size")
    p_run.add_argument("--load-jobs", type=int, help="override the jobs of the load test")
    p_run.add_argument("--seed", type=int, default=14)
    p_run.add_argument("--out", type=Path, default=RESULT)
    p_render = sub.add_parser("render", help="write a result into docs/reliability.md")
    p_render.add_argument("result", type=Path, nargs="?", default=RESULT)
    args = parser.parse_args(argv)

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt  # stop the operators and delete the namespace on the way out

    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started in background
    if args.command == "render":
        render(args.result)
        return 0
    size = SIZES[args.size]
    if args.jobs:
        size = Size(**{**asdict(size), "jobs": args.jobs})
    if args.load_jobs is not None:
        size = Size(**{**asdict(size), "load_jobs": args.load_jobs})
    cluster_tool.up(quiet=True)
    log_dir = cluster_tool.STATE_DIR / "chaos" / f"seed-{args.seed}"
    result = run_campaign(
        cluster_tool.KUBECONFIG,
        size,
        log_dir,
        seed=args.seed,
        log=lambda line: print(f"[chaos] {line}", file=sys.stderr, flush=True),
    )
    result["size_name"] = args.size
    if size.load_jobs:
        result["load"] = run_load(
            cluster_tool.KUBECONFIG,
            size.load_jobs,
            log_dir / "load",
            seed=args.seed,
            log=lambda line: print(f"[chaos] load: {line}", file=sys.stderr, flush=True),
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(f"[chaos] result in {args.out}")
    print(render_table(result))
    load = result.get("load") or {"converged": True, "restart": {"objects_changed": 0}}
    ok = result["converged"] and not result["restart"]["objects_changed"]
    ok = ok and load["converged"] and not load["restart"]["objects_changed"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
