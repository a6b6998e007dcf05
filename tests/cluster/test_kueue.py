"""Gang admission through the real Kueue (tools/kueue.py), on kwok nodes with GPUs.

The module gets four kwok nodes of its own (8 GPUs each, tainted and labelled for this module),
so that what other tests leave behind never holds their GPUs. A job without a queue lands on
them by its own node selector and toleration; a job with a queue gets them from its Kueue
ResourceFlavor, which is how the flavour's node labels and tolerations are seen to reach the
pods. The first test runs before Kueue is started: a job that names a queue where no Kueue runs
says so.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from t9k_sdk.client import Client
from tests.cluster.e2e_helpers import E2E, Jobs, condition, restart_counts
from tests.cluster.real_helpers import REAL_TIMEOUT, RealNode, logs, real, scripts_configmap
from tests.cluster.test_real_training import torchrun_job
from tools import kueue as kueue_tool
from tools.kit import (
    OWNER_LABEL,
    Operator,
    container,
    deepspeed_job,
    finish,
    generic_job,
    replica,
    template,
    wait_for,
)

KUEUE = ("kueue.x-k8s.io", "v1beta2")
GPU = "nvidia.com/gpu"
POOL = "t9k-test/kueue-pool"
NODES = tuple(f"kwok-kueue-{i}" for i in range(4))
TOLERATION = {"key": POOL, "operator": "Exists", "effect": "NoSchedule"}


# --- the module's nodes and Kueue ------------------------------------------------------------


def _node(name: str) -> dict[str, Any]:
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110", GPU: "8"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
            "labels": {"kubernetes.io/hostname": name, "type": "kwok", POOL: "gpu"},
        },
        "spec": {"taints": [{"key": POOL, "value": "gpu", "effect": "NoSchedule"}]},
        "status": {"allocatable": resources, "capacity": resources},
    }


@pytest.fixture(scope="module")
def gpu_nodes(core_v1: client.CoreV1Api) -> Iterator[tuple[str, ...]]:
    for name in NODES:
        with contextlib.suppress(ApiException):
            core_v1.delete_node(name)
        core_v1.create_node(_node(name))

    def ready() -> bool:
        nodes = [core_v1.read_node(n) for n in NODES]
        return all(
            any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or ())
            and not any(t.key.startswith("node.kubernetes.io/") for t in n.spec.taints or ())
            for n in nodes
        )

    wait_for(lambda: ready(), bool, "the module's kwok GPU nodes to be Ready", 60)
    yield NODES
    for name in NODES:
        with contextlib.suppress(ApiException):
            core_v1.delete_node(name)


@pytest.fixture(scope="module")
def kueue(cluster: Any, gpu_nodes: tuple[str, ...]) -> Iterator[None]:
    """The real Kueue, for the rest of the module; stopped after it."""
    kueue_tool.up()
    yield
    kueue_tool.down()


@pytest.fixture(scope="module")
def e2e(kueue: None, e2e: E2E) -> E2E:
    """The module's operator, started once Kueue serves its API (conftest's, after Kueue)."""
    return e2e


class Kueue:
    """The Kueue objects of one test, named after its namespace and the test (`tag`): the
    module's tests share a namespace, and what one test made is still being deleted when the
    next starts."""

    def __init__(self, custom: client.CustomObjectsApi, namespace: str, tag: str) -> None:
        self.custom = custom
        self.namespace = namespace
        self.prefix = f"{namespace}-{tag}"
        self.tag = tag
        self.cluster_objects: list[tuple[str, str]] = []
        self.local_queues: list[str] = []

    def _create(self, plural: str, name: str, spec: dict[str, Any], kind: str) -> None:
        body = {"apiVersion": "/".join(KUEUE), "kind": kind, "metadata": {"name": name}}
        body.update(spec)
        self.custom.create_cluster_custom_object(*KUEUE, plural, body)
        self.cluster_objects.append((plural, name))

    def flavor(self, name: str = "gpu", **spec: Any) -> str:
        full = f"{self.prefix}-{name}"
        self._create("resourceflavors", full, {"spec": spec}, "ResourceFlavor")
        return full

    def cluster_queue(
        self,
        name: str,
        gpus: int,
        *,
        cohort: str | None = None,
        flavor: str = "gpu",
        **preemption: str,
    ) -> str:
        full = f"{self.prefix}-{name}"
        quota = [
            {"name": "cpu", "nominalQuota": "1000"},
            {"name": "memory", "nominalQuota": "100Ti"},
            {"name": GPU, "nominalQuota": str(gpus)},
        ]
        spec: dict[str, Any] = {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory", GPU],
                    "flavors": [{"name": f"{self.prefix}-{flavor}", "resources": quota}],
                }
            ],
        }
        if cohort is not None:
            spec["cohortName"] = f"{self.prefix}-{cohort}"
        if preemption:
            spec["preemption"] = preemption
        self._create("clusterqueues", full, {"spec": spec}, "ClusterQueue")
        return full

    def local_queue(self, name: str, cluster_queue: str) -> str:
        name = f"{self.tag}-{name}"
        body = {
            "apiVersion": "/".join(KUEUE),
            "kind": "LocalQueue",
            "metadata": {"name": name},
            "spec": {"clusterQueue": cluster_queue},
        }
        self.custom.create_namespaced_custom_object(*KUEUE, self.namespace, "localqueues", body)
        self.local_queues.append(name)
        return name

    def stop(self, cluster_queue: str) -> None:
        """Hold the ClusterQueue (`stopPolicy: Hold`): Kueue admits nothing more from it."""
        self.custom.patch_cluster_custom_object(
            *KUEUE, "clusterqueues", cluster_queue, {"spec": {"stopPolicy": "Hold"}}
        )

    def priority(self, name: str, value: int) -> str:
        full = f"{self.prefix}-{name}"
        self._create("workloadpriorityclasses", full, {"value": value}, "WorkloadPriorityClass")
        return full

    def workload(self, job: str, kind: str = "deepspeedjob") -> dict[str, Any]:
        return dict(
            self.custom.get_namespaced_custom_object(
                *KUEUE, self.namespace, "workloads", f"{kind}-{job}"
            )
        )

    def close(self) -> None:
        for name in self.local_queues:
            with contextlib.suppress(ApiException):
                self.custom.delete_namespaced_custom_object(
                    *KUEUE, self.namespace, "localqueues", name
                )
        for plural, name in reversed(self.cluster_objects):
            with contextlib.suppress(ApiException):
                self.custom.delete_cluster_custom_object(*KUEUE, plural, name)


_tags = itertools.count()


@pytest.fixture
def queues(kueue: None, jobs: Jobs) -> Iterator[Kueue]:
    objects = Kueue(jobs.custom, jobs.namespace, f"t{next(_tags)}")
    objects.flavor("gpu", nodeLabels={POOL: "gpu"}, tolerations=[TOLERATION])
    yield objects
    objects.close()


def gpu_job(
    name: str,
    workers: int = 3,
    *,
    queue: str | None = None,
    priority: str | None = None,
    pinned: bool = False,
    runs_for: str | None = None,
) -> dict[str, Any]:
    """A DeepSpeedJob of `workers` x 8 GPUs; worker-0 (the launcher) ends after `runs_for`
    (never, if None). `pinned`: it selects the module's nodes itself (a job without a queue)."""
    job = deepspeed_job(name, workers)
    worker = container("worker", resources={"limits": {GPU: "8"}})
    annotations = finish(0, runs_for) if runs_for is not None else None
    job["spec"]["worker"]["template"] = template(worker, annotations=annotations)
    if pinned:
        spec = job["spec"]["worker"]["template"]["spec"]
        spec["nodeSelector"] = {POOL: "gpu"}
        spec["tolerations"] = [TOLERATION]
    labels = {}
    if queue is not None:
        labels["kueue.x-k8s.io/queue-name"] = queue
    if priority is not None:
        labels["kueue.x-k8s.io/priority-class"] = priority
    if labels:
        job["metadata"]["labels"] = labels
    return job


def finished(queues: Kueue, job: str, kind: str = "deepspeedjob") -> dict[str, Any]:
    """The job's Workload once it is `Finished` (the operator writes that in the pass that
    ends the job, beside the job's status: a reader may see the job's phase first)."""
    return wait_for(
        lambda: queues.workload(job, kind),
        lambda w: condition(w.get("status") or {}, "Finished").get("status") == "True",
        f"Kueue's Finished on {job}'s Workload",
        15,
    )


class PodWatch:
    """Every pod event of a namespace, checked as it comes: which jobs hold live pods (created,
    not ending, not finished) at the same moment."""

    def __init__(self, core_v1: client.CoreV1Api, namespace: str) -> None:
        self.core_v1 = core_v1
        self.namespace = namespace
        self.live: dict[str, str] = {}
        self.overlaps: list[dict[str, str]] = []
        self.seen: set[str] = set()
        self._watch = watch.Watch()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with contextlib.suppress(Exception):
            for event in self._watch.stream(
                self.core_v1.list_namespaced_pod, self.namespace, timeout_seconds=600
            ):
                pod = event["object"]
                job = (pod.metadata.labels or {}).get(OWNER_LABEL, "")
                ended = pod.metadata.deletion_timestamp is not None or pod.status.phase in (
                    "Succeeded",
                    "Failed",
                )
                if event["type"] == "DELETED" or ended:
                    self.live.pop(pod.metadata.name, None)
                else:
                    self.live[pod.metadata.name] = job
                    self.seen.add(job)
                if len(set(self.live.values())) > 1:
                    self.overlaps.append(dict(self.live))

    def close(self) -> None:
        self._watch.stop()


# --- without Kueue ---------------------------------------------------------------------------


def test_a_job_that_names_a_queue_where_kueue_is_absent_says_so_and_creates_no_pod(
    cluster: Any,
    start_operator: Any,
    namespace: str,
    custom: client.CustomObjectsApi,
    core_v1: client.CoreV1Api,
    kubeconfig: Any,
) -> None:
    kueue_tool.down()  # a cluster kept from an earlier run may have it
    operator: Operator = start_operator()
    operator.wait_ready("leader")
    job = gpu_job("lost", queue="team-a")
    custom.create_namespaced_custom_object(
        "batch.tensorstack.dev", "v1beta1", namespace, "deepspeedjobs", job
    )

    def status() -> dict[str, Any]:
        got = custom.get_namespaced_custom_object(
            "batch.tensorstack.dev", "v1beta1", namespace, "deepspeedjobs", "lost"
        )
        return dict(got.get("status") or {})

    got = wait_for(
        status,
        lambda s: condition(s, "Running").get("reason") == "QueueUnavailable",
        "the job to say Kueue is absent",
        30,
    )
    assert got["phase"] == "Pending"
    assert "install Kueue, or remove the label" in condition(got, "Running")["message"]
    events = core_v1.list_namespaced_event(namespace, field_selector="involvedObject.name=lost")
    assert [(e.type, e.reason) for e in events.items if e.reason == "QueueUnavailable"] == [
        ("Warning", "QueueUnavailable")
    ]
    assert core_v1.list_namespaced_pod(namespace).items == []
    with Client(kubeconfig=kubeconfig, namespace=namespace) as api:
        first = api.diagnose("deepspeedjob", "lost")[0]
    assert first.message.startswith("not admitted by Kueue (QueueUnavailable")
    assert "install Kueue" in (first.hint or "")


# --- the deadlock, and the queue that prevents it ----------------------------------------------


def test_without_a_queue_two_jobs_hold_every_gpu_and_neither_can_start(
    gpu_nodes: tuple[str, ...], jobs: Jobs, kubeconfig: Any
) -> None:
    """The deadlock gang admission exists for: 2 x 3 workers of 8 GPUs on 32 GPUs."""
    jobs.create(gpu_job("left", pinned=True), gpu_job("right", pinned=True))

    def placed() -> dict[str, tuple[str, str]]:
        pods = {**jobs.pods("left"), **jobs.pods("right")}
        return {n: (p.spec.node_name or "", p.status.phase) for n, p in pods.items()}

    def stuck(pods: dict[str, tuple[str, str]]) -> bool:
        workers = {f"{j}-worker-{i}" for j in ("left", "right") for i in (1, 2)}
        running = {n for n, (node, phase) in pods.items() if node and phase == "Running"}
        launchers = {n: pods.get(n) for n in ("left-worker-0", "right-worker-0")}
        return running == workers and all(p == ("", "Pending") for p in launchers.values())

    # worker-0, each job's launcher, is created once the other workers run: no node has room
    # left for it, and none ever will
    got = wait_for(placed, stuck, "each job's workers 1, 2 running and worker-0 unplaced", 60)
    assert all(node in NODES for node, _ in got.values() if node)
    for job in ("left", "right"):
        pod = jobs.pod(f"{job}-worker-0")
        scheduled = next(c for c in pod.status.conditions if c.type == "PodScheduled")
        assert (scheduled.status, scheduled.reason) == ("False", "Unschedulable")
        assert jobs.status(job)["phase"] != "Running"
    # and it is named as such, with the queue as the way out
    with Client(kubeconfig=kubeconfig, namespace=jobs.namespace) as api:
        first = api.diagnose("deepspeedjob", "left")[0]
    assert (first.severity, first.subject) == ("error", "job")
    assert "2 of its pods are placed and hold nvidia.com/gpu=16" in first.message
    assert "kueue.x-k8s.io/queue-name=<LocalQueue>" in (first.hint or "")
    jobs.delete("left")
    jobs.delete("right")
    wait_for(placed, lambda p: p == {}, "the deadlocked jobs' pods to go", 60)


def test_with_a_queue_the_two_jobs_run_one_after_the_other_and_both_finish(
    queues: Kueue, jobs: Jobs
) -> None:
    queue = queues.local_queue("gpus", queues.cluster_queue("gpus", 32))
    seen = PodWatch(jobs.core_v1, jobs.namespace)
    try:
        jobs.create(
            gpu_job("first", queue=queue, runs_for="3s"),
            gpu_job("second", queue=queue, runs_for="3s"),
        )
        for name in ("first", "second"):
            jobs.wait_phase(name, "Succeeded", timeout=120)
    finally:
        seen.close()
    assert seen.seen == {"first", "second"}
    assert seen.overlaps == [], "two jobs held pods at the same moment"
    for name in ("first", "second"):
        finished(queues, name)
        assert restart_counts(jobs.status(name)) == {"worker": 0}


def test_the_flavours_node_labels_and_tolerations_reach_the_pods_and_kueue_sees_them_ready(
    queues: Kueue, jobs: Jobs
) -> None:
    queue = queues.local_queue("gpus", queues.cluster_queue("gpus", 32))
    jobs.create(gpu_job("placed", 2, queue=queue))
    pods = jobs.wait_running("placed", {"placed-worker-0", "placed-worker-1"}, timeout=60)
    for pod in pods.values():
        assert pod.spec.node_selector == {POOL: "gpu"}
        assert any(t.key == POOL and t.effect == "NoSchedule" for t in pod.spec.tolerations)
        assert pod.spec.node_name in NODES
    wait_for(
        lambda: queues.workload("placed").get("status") or {},
        lambda s: condition(s, "PodsReady").get("status") == "True",
        "Kueue's PodsReady on the job's Workload",
        30,
    )


def test_a_job_larger_than_any_quota_is_refused_with_kueues_message(
    queues: Kueue, jobs: Jobs
) -> None:
    queue = queues.local_queue("gpus", queues.cluster_queue("gpus", 32))
    jobs.create(gpu_job("huge", 5, queue=queue))
    status = jobs.wait_status(
        "huge",
        lambda s: condition(s, "Running").get("reason") == "Inadmissible",
        "Kueue's refusal on the job",
        60,
    )
    message = condition(status, "Running")["message"]
    assert "insufficient quota for nvidia.com/gpu" in message
    assert "> maximum capacity (32)" in message
    assert status["phase"] == "Pending"
    assert jobs.pods("huge") == {}


# --- preemption, borrowing, reclaiming, pause ----------------------------------------------------


def _evicted_and_back(jobs: Jobs, name: str) -> None:
    """The evicted job waits, with the reason, holding no pod; its restarts are unspent."""
    status = jobs.wait_status(
        name,
        lambda s: condition(s, "Running").get("reason") == "Evicted",
        "the job to wait again after its eviction",
        60,
    )
    assert status["phase"] == "Pending"
    wait_for(lambda: jobs.pods(name), lambda p: p == {}, f"{name}'s pods to go", 60)
    assert restart_counts(jobs.status(name)) == {"worker": 0}
    assert int(jobs.status(name).get("backoffCount") or 0) == 0


def test_a_higher_priority_job_evicts_a_lower_one_which_runs_again_and_finishes(
    queues: Kueue, jobs: Jobs, kubeconfig: Any
) -> None:
    cq = queues.cluster_queue("gpus", 32, withinClusterQueue="LowerPriority")
    queue = queues.local_queue("gpus", cq)
    low, high = queues.priority("low", 100), queues.priority("high", 1000)
    jobs.create(gpu_job("low", queue=queue, priority=low))
    jobs.wait_running("low", {f"low-worker-{i}" for i in range(3)}, timeout=60)
    jobs.create(gpu_job("high", queue=queue, priority=high, runs_for="3s"))
    _evicted_and_back(jobs, "low")
    with Client(kubeconfig=kubeconfig, namespace=jobs.namespace) as api:
        first = api.diagnose("deepspeedjob", "low")[0]
    assert first.message.startswith("not admitted by Kueue (Evicted")
    assert "the eviction spent no restart" in (first.hint or "")
    jobs.wait_phase("high", "Succeeded", timeout=60)
    jobs.wait_running("low", {f"low-worker-{i}" for i in range(3)}, timeout=60)
    jobs.end_pod("low-worker-0")
    jobs.wait_phase("low", "Succeeded", timeout=60)
    assert restart_counts(jobs.status("low")) == {"worker": 0}
    assert "Evicted" in jobs.reasons("low")


def test_two_teams_in_a_cohort_borrow_and_reclaim(queues: Kueue, jobs: Jobs) -> None:
    team_a = queues.local_queue("team-a", queues.cluster_queue("a", 16, cohort="gpus"))
    team_b = queues.local_queue(
        "team-b", queues.cluster_queue("b", 16, cohort="gpus", reclaimWithinCohort="Any")
    )
    # team A's 24 GPUs are 8 more than its quota: borrowed from team B, which uses none
    jobs.create(gpu_job("borrower", queue=team_a))
    jobs.wait_running("borrower", {f"borrower-worker-{i}" for i in range(3)}, timeout=60)
    # team B wants its quota back: Kueue reclaims it, team A's job is evicted and waits
    jobs.create(gpu_job("owner", 2, queue=team_b, runs_for="3s"))
    _evicted_and_back(jobs, "borrower")
    jobs.wait_phase("owner", "Succeeded", timeout=60)
    jobs.wait_running("borrower", {f"borrower-worker-{i}" for i in range(3)}, timeout=60)
    jobs.end_pod("borrower-worker-0")
    jobs.wait_phase("borrower", "Succeeded", timeout=60)


def test_a_paused_job_gives_its_quota_back_and_the_next_one_runs(queues: Kueue, jobs: Jobs) -> None:
    queue = queues.local_queue("gpus", queues.cluster_queue("gpus", 24))
    jobs.create(gpu_job("pausing", queue=queue))
    jobs.wait_running("pausing", {f"pausing-worker-{i}" for i in range(3)}, timeout=60)
    jobs.create(gpu_job("next", queue=queue, runs_for="3s"))
    jobs.patch("pausing", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    wait_for(
        lambda: queues.workload("pausing")["spec"],
        lambda s: s.get("active") is False,
        "the paused job's Workload to be inactive",
        30,
    )
    jobs.wait_phase("next", "Succeeded", timeout=60)
    jobs.patch("pausing", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    jobs.wait_running("pausing", {f"pausing-worker-{i}" for i in range(3)}, timeout=60)


def test_kueues_wait_for_pods_ready_evicts_a_job_whose_pods_never_run_and_spends_no_restart(
    queues: Kueue, jobs: Jobs
) -> None:
    """Admitted, but a pod fits no node (a selector no node has): after waitForPodsReady's
    timeout (tools/kueue.py) Kueue evicts the job, which waits again holding nothing."""
    queue = queues.local_queue("gpus", queues.cluster_queue("gpus", 32))
    job = gpu_job("stuck", 2, queue=queue)
    job["spec"]["worker"]["template"]["spec"]["nodeSelector"] = {"t9k-test/nowhere": "x"}
    jobs.create(job)
    jobs.wait_pods("stuck", lambda p: len(p) >= 1, "the admitted job's pods", 30)
    status = jobs.wait_status(
        "stuck",
        lambda s: "PodsReadyTimeout" in condition(s, "Running").get("message", ""),
        "Kueue's eviction for waitForPodsReady",
        float(kueue_tool.PODS_READY_TIMEOUT.rstrip("s")) + 60,
    )
    assert condition(status, "Running")["reason"] == "Evicted"
    assert restart_counts(status) == {"worker": 0}
    assert int(status.get("backoffCount") or 0) == 0


# --- why is my job waiting? one answer per blocker ---------------------------------------------

Blocker = tuple[str, str, str]
"""(severity of the first finding, words it must hold, words its hint must hold)."""


def _blocked_jobs(queues: Kueue, gpus: str) -> dict[str, tuple[dict[str, Any], Blocker]]:
    """One job per blocker on the module's kwok nodes, each waiting for its own reason;
    `gpus`: a LocalQueue whose 8 GPUs the job `hog` takes."""
    stopped = queues.local_queue("held", queues.cluster_queue("held", 32))
    queues.stop(f"{queues.prefix}-held")
    hog = gpu_job("hog", 1, queue=gpus)  # holds the 8 GPUs of `gpus`
    claim = gpu_job("claim", 1, pinned=True)
    pod_spec = claim["spec"]["worker"]["template"]["spec"]
    pod_spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "absent"}}]
    pod_spec["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    selector = gpu_job("selector", 1)
    selector["spec"]["worker"]["template"]["spec"]["nodeSelector"] = {"t9k-test/nowhere": "x"}
    tainted = gpu_job("tainted", 1)
    tainted["spec"]["worker"]["template"]["spec"]["nodeSelector"] = {POOL: "gpu"}
    paused = gpu_job("paused", 1, queue=gpus)
    paused["spec"]["runMode"] = {"pause": {"enabled": True}}
    huge_pod = gpu_job("hugepod", 1, pinned=True)
    huge_pod["spec"]["worker"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {GPU: "99"}
    }
    return {
        "hog": (hog, ("info", "", "")),
        "behind": (gpu_job("behind", 1, queue=gpus), ("info", "(Queued, LocalQueue", "admits")),
        "noqueue": (
            gpu_job("noqueue", 1, queue="missing"),
            ("error", "LocalQueue missing doesn't exist", "check the LocalQueue's name"),
        ),
        "huge": (
            gpu_job("huge", 2, queue=gpus),
            ("error", "> maximum capacity (8)", "ask for less"),
        ),
        "nopriority": (
            gpu_job("nopriority", 1, queue=gpus, priority="absent"),
            ("error", "WorkloadPriorityClass 'absent'", "check the LocalQueue"),
        ),
        "held": (gpu_job("held", 1, queue=stopped), ("error", "(Inadmissible", "ClusterQueue")),
        "hugepod": (huge_pod, ("error", "Insufficient nvidia.com/gpu", "lower the request")),
        "claim": (claim, ("error", 'persistentvolumeclaim "absent" not found', "absent does not")),
        "selector": (selector, ("error", "node affinity/selector", "fix the selector")),
        "tainted": (tainted, ("error", "untolerated taint", "add a toleration")),
        "paused": (paused, ("info", "is paused", "t9k-sdk resume")),
    }


def _real_node_job(name: str, **change: Any) -> dict[str, Any]:
    """A GenericJob of one worker on the real node, its container changed by `change`."""
    job = real(generic_job(name, replica("worker", command=["sleep", "600"])))
    job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0].update(change)
    return job


def _blocked_on_the_real_node() -> dict[str, tuple[dict[str, Any], Blocker]]:
    """Blockers only a kubelet shows: an image it may not pull, a Secret that is not there (in
    the environment, and as a volume)."""
    no_volume = _real_node_job("novolume", volumeMounts=[{"name": "keys", "mountPath": "/k"}])
    no_volume["spec"]["replicaSpecs"][0]["template"]["spec"]["volumes"] = [
        {"name": "keys", "secret": {"secretName": "absent-keys"}}
    ]
    token = {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "absent", "key": "token"}}}
    return {
        "neverpull": (
            _real_node_job("neverpull", image="localhost/t9k-absent:1"),
            ("error", "ErrImageNeverPull", "the image is not on the node"),
        ),
        "nosecret": (
            _real_node_job("nosecret", env=[token]),
            ("error", 'CreateContainerConfigError: secret "absent" not found', "Secret absent"),
        ),
        "novolume": (
            no_volume,
            ("error", 'cannot start: MountVolume.SetUp failed for volume "keys"', "absent-keys"),
        ),
    }


@pytest.mark.realnode
def test_why_is_my_job_waiting_has_one_answer_per_blocker(
    real_node: RealNode, queues: Kueue, jobs: Jobs, kubeconfig: Any
) -> None:
    """Each of 13 jobs waits for one seeded reason; `Client.diagnose()` names it first, with
    what to do; a queued job's answer has its place in the queue and the quota it needs against
    what is free; and the job's Running condition carries Kueue's reasons and the kubelet's.
    (Kueue absent, the deadlock without a queue and an eviction are answered in their tests
    above.)"""
    cluster_queue = queues.cluster_queue("gpus", 8)
    seeded = _blocked_jobs(queues, queues.local_queue("gpus", cluster_queue))
    seeded.update(_blocked_on_the_real_node())
    jobs.create(seeded.pop("hog")[0])
    jobs.wait_running("hog", {"hog-worker-0"}, timeout=60)
    jobs.create(*(manifest for manifest, _ in seeded.values()))
    assert len(seeded) >= 12
    with Client(kubeconfig=kubeconfig, namespace=jobs.namespace) as api:
        for name, (manifest, (severity, words, hint)) in seeded.items():

            def first(name: str = name, kind: str = manifest["kind"]) -> Any:
                found = api.diagnose(kind.lower(), name)
                return found[0] if found else None

            def right(found: Any, words: str = words, severity: str = severity) -> bool:
                return found is not None and found.severity == severity and words in found.message

            finding = wait_for(first, right, f"{name}: the verdict {severity}: ...{words}...", 60)
            assert hint in (finding.hint or ""), (name, finding)
        behind = api.diagnose("deepspeedjob", "behind")[0].message
    assert " waiting in LocalQueue " in behind, behind
    assert f"ClusterQueue {cluster_queue} has free" in behind, behind
    assert "nvidia.com/gpu 0 of 8" in behind, behind
    for name in ("behind", "noqueue", "huge", "nopriority", "held"):
        running = condition(jobs.status(name), "Running")
        assert running["reason"] in ("Queued", "Inadmissible"), (name, running)
        assert jobs.pods(name) == {}, name
    for name, reason in (("neverpull", "ErrImageNeverPull"), ("nosecret", "CreateContainer")):
        running = condition(jobs.status(name), "Running")
        assert reason in f"{running.get('reason')} {running.get('message')}", (name, running)


# --- real training ---------------------------------------------------------------------------


@pytest.mark.realnode
def test_a_torchrun_job_admitted_through_kueue_trains_on_the_real_node_to_succeeded(
    real_node: RealNode, queues: Kueue, jobs: Jobs
) -> None:
    scripts_configmap(jobs.core_v1, jobs.namespace)
    queues.flavor("node")  # no labels: the job places itself on the real node
    queue = queues.local_queue("cpus", queues.cluster_queue("cpus", 0, flavor="node"))
    job = torchrun_job("kq", steps=20)
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": queue}
    jobs.create(job)
    status = jobs.wait_final("kq", REAL_TIMEOUT)
    assert status["phase"] == "Succeeded", status
    workload = finished(queues, "kq", "genericjob")
    assert condition(workload["status"], "Admitted")["status"] == "True"
    assert "loss fell from" in logs(jobs.core_v1, jobs.namespace, "kq-worker-0")
