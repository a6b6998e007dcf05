"""Reconcile passes: what the controller observes, the order it acts in, and how it retries."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from t9k_operator.controller import Controller, Settings
from t9k_operator.workqueue import Backoff
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk.reconcile import Deletion, Event, Observed, Plan, Update
from tests.operator.fakes import FakeCluster, child, job

NOW = datetime(2025, 1, 1, tzinfo=UTC)
KEY = ("GenericJob", "ns", "demo")


class Core:
    """A stand-in for the pure core: returns `plan` and remembers what it was shown."""

    def __init__(self, plan: Plan | None = None) -> None:
        self.plan = plan or Plan()
        self.seen: list[tuple[Mapping[str, Any], Observed]] = []

    def __call__(self, job: Mapping[str, Any], observed: Observed, /, *, now: datetime) -> Plan:
        assert now == NOW
        self.seen.append((job, observed))
        return self.plan


def make(plan: Plan | None = None, **settings: Any) -> tuple[Controller, FakeCluster, Core]:
    cluster, core = FakeCluster(), Core(plan)
    controller = Controller(
        cluster,
        core,
        Settings(**settings),
        ssh_keygen=lambda: ("PRIVATE", "ssh-ed25519 AAAA test"),
        now=lambda: NOW,
    )
    return controller, cluster, core


def pod_manifest(name: str) -> dict[str, Any]:
    """A pod as the core plans it: controlled by the job (uid `job-uid`)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "ownerReferences": child("Pod", name)["metadata"]["ownerReferences"],
        },
    }


FULL_PLAN = Plan(
    status={"phase": "Running"},
    delete=(Deletion("v1", "Pod", "demo-worker-3", "u3", "scaled down"),),
    update=(
        Update(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "demo-worker-0", "resourceVersion": "7"},
            },
            "ports changed",
        ),
    ),
    create=(pod_manifest("demo-worker-0"), pod_manifest("demo-worker-1")),
    events=(Event("Normal", "Running", "The job is running."),),
)


def test_a_plan_is_carried_out_status_first_then_deletes_updates_creates_and_events() -> None:
    controller, cluster, _ = make(FULL_PLAN)
    controller.jobs["GenericJob"].store.put(job())
    result = controller.reconcile_key(KEY)
    assert result.outcome == "done"
    assert cluster.calls == [
        ("status", "Running"),
        ("delete", "Pod/demo-worker-3"),
        ("update", "Service/demo-worker-0"),
        ("create", "Pod/demo-worker-0"),
        ("create", "Pod/demo-worker-1"),
        ("events", "Running"),
    ]


def test_a_stale_status_write_stops_the_pass_before_any_child_is_touched_or_event_recorded() -> (
    None
):
    controller, cluster, _ = make(FULL_PLAN, backoff=Backoff(base=0.01, cap=1.0))
    controller.jobs["GenericJob"].store.put(job())
    cluster.fail["status"] = ApiError(409, "Conflict", "the object has been modified")
    controller.process(KEY)
    assert cluster.calls == [("status", "Running")]
    assert controller.queue.get(timeout=1) == KEY  # retried after a short backoff


def test_a_failed_write_backs_off_exponentially_per_job() -> None:
    controller, cluster, _ = make(
        Plan(create=(pod_manifest("demo-worker-0"),)), backoff=Backoff(base=1.0, cap=8.0)
    )
    controller.jobs["GenericJob"].store.put(job())
    cluster.fail["create"] = ApiError(500, "InternalError")
    for expected in (1, 2, 3):
        controller.process(KEY)
        assert controller.queue.failures(KEY) == expected
    assert controller.queue.get(timeout=0) is None  # waiting out the backoff, not spinning
    del cluster.fail["create"]
    controller.process(KEY)
    assert controller.queue.failures(KEY) == 0  # success resets the backoff


def test_a_crashing_core_backs_off_instead_of_killing_the_worker() -> None:
    controller, _, _core = make()
    controller.jobs["GenericJob"].store.put(job())

    def boom(job: Mapping[str, Any], observed: Observed, /, *, now: datetime) -> Plan:
        raise RuntimeError("bug")

    controller.reconcile_fn = boom
    controller.process(KEY)
    assert controller.queue.failures(KEY) == 1


def test_events_are_informative_and_never_fail_the_pass() -> None:
    controller, cluster, _ = make(Plan(events=(Event("Warning", "X", "y"),)))
    controller.jobs["GenericJob"].store.put(job())
    cluster.fail["events"] = ApiError(403, "Forbidden")
    assert controller.reconcile_key(KEY).outcome == "done"


def test_identical_plans_create_nothing_twice_when_the_objects_exist() -> None:
    plan = Plan(create=(pod_manifest("demo-worker-0"),))
    controller, cluster, _ = make(plan, expectation_timeout=0.0)
    controller.jobs["GenericJob"].store.put(job())
    controller.reconcile_key(KEY)
    controller.reconcile_key(KEY)
    assert cluster.existing == {"Pod/demo-worker-0"}
    assert cluster.calls.count(("create", "Pod/demo-worker-0")) == 2  # the second is AlreadyExists


def test_a_job_that_is_gone_or_being_deleted_is_not_reconciled() -> None:
    controller, cluster, core = make(FULL_PLAN)
    assert controller.reconcile_key(KEY).outcome == "skipped"
    controller.jobs["GenericJob"].store.put(job(deleting=True))
    assert controller.reconcile_key(KEY).outcome == "skipped"
    assert core.seen == []
    assert cluster.calls == []


def test_the_core_sees_only_children_controlled_by_this_job_uid() -> None:
    controller, _, core = make()
    controller.jobs["GenericJob"].store.put(job(uid="new-uid"))
    pods = controller.children["Pod"].store
    pods.put(child("Pod", "demo-worker-0", owner_uid="new-uid"))
    pods.put(child("Pod", "demo-worker-1", owner_uid="old-uid"))  # from a deleted job of that name
    pods.put(child("Pod", "other-worker-0", owner="other", owner_uid="other-uid"))
    controller.children["Service"].store.put(child("Service", "demo-worker-0", owner_uid="new-uid"))
    controller.reconcile_key(KEY)
    ((_, observed),) = core.seen
    assert [p["metadata"]["name"] for p in observed.pods] == ["demo-worker-0"]
    assert [s["metadata"]["name"] for s in observed.services] == ["demo-worker-0"]
    assert observed.ssh_key is None  # a GenericJob needs no SSH key


@pytest.mark.parametrize(
    ("kind", "secret_cached", "wants_key"),
    [
        ("DeepSpeedJob", False, True),
        ("ColossalAIJob", False, True),
        ("DeepSpeedJob", True, False),
        ("GenericJob", False, False),
    ],
)
def test_an_ssh_key_is_generated_only_for_launcher_kinds_without_their_secret(
    kind: str, secret_cached: bool, wants_key: bool
) -> None:
    controller, _, core = make()
    controller.jobs[kind].store.put(job(kind=kind))
    if secret_cached:
        controller.children["Secret"].store.put(child("Secret", "demo-ssh"))
    controller.reconcile_key((kind, "ns", "demo"))
    ((_, observed),) = core.seen
    assert (observed.ssh_key == ("PRIVATE", "ssh-ed25519 AAAA test")) is wants_key


def test_the_next_pass_waits_until_the_caches_show_the_previous_writes() -> None:
    plan = Plan(status={"phase": "Pending"}, create=(pod_manifest("demo-worker-0"),))
    controller, _, core = make(plan)
    controller.jobs["GenericJob"].store.put(job(rv="100"))
    assert controller.reconcile_key(KEY).outcome == "done"
    assert controller.reconcile_key(KEY).outcome == "waiting"  # cache still shows rv 100, no pod
    controller.jobs["GenericJob"].store.put(job(rv="101"))
    assert controller.reconcile_key(KEY).outcome == "waiting"  # the pod is not cached yet
    controller.children["Pod"].store.put(child("Pod", "demo-worker-0"))
    assert controller.reconcile_key(KEY).outcome == "done"
    assert len(core.seen) == 2


def test_waiting_for_the_caches_ends_after_the_timeout() -> None:
    plan = Plan(create=(pod_manifest("demo-worker-0"),))
    controller, _, _core = make(plan, expectation_timeout=0.0)
    controller.jobs["GenericJob"].store.put(job())
    controller.reconcile_key(KEY)
    assert controller.reconcile_key(KEY).outcome == "done"


def test_a_deletion_is_seen_once_the_object_is_gone_or_terminating() -> None:
    plan = Plan(delete=(Deletion("v1", "Pod", "demo-worker-0", "demo-worker-0-uid", "restart"),))
    controller, _, _ = make(plan)
    controller.jobs["GenericJob"].store.put(job())
    pods = controller.children["Pod"].store
    pods.put(child("Pod", "demo-worker-0"))
    controller.reconcile_key(KEY)
    assert controller.reconcile_key(KEY).outcome == "waiting"
    terminating = child("Pod", "demo-worker-0", rv="2")
    terminating["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    pods.put(terminating)
    assert controller.reconcile_key(KEY).outcome == "done"


def test_requeue_after_schedules_the_next_pass() -> None:
    controller, _, _ = make(Plan(requeue_after=0.05))
    controller.jobs["GenericJob"].store.put(job())
    controller.process(KEY)
    assert controller.queue.get(timeout=0) is None
    assert controller.queue.get(timeout=5) == KEY


def test_events_on_children_wake_their_owner_job() -> None:
    controller, _, _ = make()
    controller._on_child("MODIFIED", child("Pod", "demo-worker-0", owner="demo"), None)
    controller._on_child("DELETED", None, child("Pod", "x-worker-0", owner="x"))
    controller._on_child("ADDED", {"metadata": {"name": "orphan", "namespace": "ns"}}, None)
    woken = {controller.queue.get(timeout=0), controller.queue.get(timeout=0)}
    assert woken == {("GenericJob", "ns", "demo"), ("GenericJob", "ns", "x")}
    assert controller.queue.get(timeout=0) is None


def test_a_foreign_ssh_secret_in_the_cache_is_not_taken_for_the_jobs_own() -> None:
    """A `<job>-ssh` Secret with the operator's labels but another owner: the core still gets a
    key (so it plans its own Secret, whose create then finds the foreign one and reports it)."""
    controller, _, core = make()
    controller.jobs["DeepSpeedJob"].store.put(job(kind="DeepSpeedJob"))
    controller.children["Secret"].store.put(child("Secret", "demo-ssh", owner_uid="attacker"))
    controller.reconcile_key(("DeepSpeedJob", "ns", "demo"))
    ((_, observed),) = core.seen
    assert observed.secrets == ()
    assert observed.ssh_key is not None


def secret_manifest(name: str) -> dict[str, Any]:
    return {**pod_manifest(name), "kind": "Secret", "data": {"id_ed25519": "bXk="}}


REFUSING_PLAN = Plan(
    status={"phase": "Pending"},
    create=(
        {**pod_manifest("demo-config"), "kind": "ConfigMap"},
        pod_manifest("demo-worker-0"),
    ),
    events=(
        Event("Normal", "Pending", "The job is pending."),
        Event(
            "Normal",
            "SuccessfulCreatePod",
            "Created pod: demo-worker-0",
            "create Pod/demo-worker-0",
        ),
    ),
)


def test_a_refused_create_stops_the_creates_claims_nothing_and_reaches_the_core() -> None:
    controller, cluster, core = make(REFUSING_PLAN, backoff=Backoff(base=0.01, cap=1.0))
    controller.jobs["GenericJob"].store.put(job())
    message = 'ConfigMap "demo-config" is invalid: []: Too long: must have at most 1048576 bytes'
    cluster.fail["create"] = ApiError(422, "Invalid", message)
    controller.process(KEY)
    assert ("create", "Pod/demo-worker-0") not in cluster.calls  # stopped at the refusal
    assert [e.reason for e in cluster.events] == ["Pending"]  # no "Created pod"
    assert controller.queue.failures(KEY) == 1  # backs off, no hot loop

    controller.memory.clear_expectations(KEY)
    controller.reconcile_key(KEY)
    (failure,) = core.seen[-1][1].failures
    assert (failure.action, failure.kind, failure.name) == ("create", "ConfigMap", "demo-config")
    assert (failure.status, failure.reason, failure.message) == (422, "Invalid", message)

    del cluster.fail["create"]  # what refused it was fixed
    time.sleep(0.05)  # the job's backoff (0.01 s) passes: until then the create is held back
    controller.memory.clear_expectations(KEY)
    assert controller.reconcile_key(KEY).outcome == "done"
    assert "SuccessfulCreatePod" in [e.reason for e in cluster.events]
    controller.memory.clear_expectations(KEY)
    controller.reconcile_key(KEY)
    assert core.seen[-1][1].failures == ()  # forgotten once the create went through


@pytest.mark.parametrize("status", [500, 503, 429, 0])
def test_transient_create_errors_are_retried_without_being_put_on_the_job(status: int) -> None:
    controller, cluster, core = make(REFUSING_PLAN, expectation_timeout=0.0)
    controller.jobs["GenericJob"].store.put(job())
    cluster.fail["create"] = ApiError(status, "ServerTimeout")
    with pytest.raises(ApiError):
        controller.reconcile_key(KEY)
    del cluster.fail["create"]
    controller.reconcile_key(KEY)
    assert core.seen[-1][1].failures == ()


def test_a_create_that_finds_someone_elses_object_stops_and_shows_it_to_the_core() -> None:
    plan = Plan(
        create=(secret_manifest("demo-ssh"), pod_manifest("demo-worker-0")),
        events=(
            Event(
                "Normal",
                "SuccessfulCreatePod",
                "Created pod: demo-worker-0",
                "create Pod/demo-worker-0",
            ),
        ),
    )
    controller, cluster, core = make(plan, backoff=Backoff(base=0.01, cap=1.0))
    controller.jobs["DeepSpeedJob"].store.put(job(kind="DeepSpeedJob"))
    planted = secret_manifest("demo-ssh")  # no owner reference, the attacker's key
    del planted["metadata"]["ownerReferences"]
    cluster.objects["Secret/demo-ssh"] = planted
    key = ("DeepSpeedJob", "ns", "demo")
    controller.process(key)
    assert ("create", "Pod/demo-worker-0") not in cluster.calls  # nothing mounts it
    assert cluster.events == []
    assert controller.queue.failures(key) == 1

    controller.reconcile_key(key)
    (seen,) = core.seen[-1][1].secrets
    assert seen["metadata"]["name"] == "demo-ssh"
    assert "ownerReferences" not in seen["metadata"]
    assert "data" not in seen  # someone else's keys are never kept

    del cluster.objects["Secret/demo-ssh"]  # removed: forgotten on the next pass
    controller.reconcile_key(key)
    assert core.seen[-1][1].secrets == ()


def test_a_create_that_finds_the_jobs_own_object_carries_on() -> None:
    plan = Plan(create=(secret_manifest("demo-ssh"), pod_manifest("demo-worker-0")))
    controller, cluster, _ = make(plan)
    controller.jobs["DeepSpeedJob"].store.put(job(kind="DeepSpeedJob"))
    cluster.objects["Secret/demo-ssh"] = secret_manifest("demo-ssh")  # ours, cache lagging
    assert controller.reconcile_key(("DeepSpeedJob", "ns", "demo")).outcome == "done"
    assert ("create", "Pod/demo-worker-0") in cluster.calls


def test_a_refusal_is_forgotten_once_the_job_no_longer_wants_that_object() -> None:
    controller, cluster, core = make(REFUSING_PLAN, expectation_timeout=0.0)
    controller.jobs["GenericJob"].store.put(job())
    cluster.fail["create"] = ApiError(422, "Invalid", "bad port")
    controller.reconcile_key(KEY)
    core.plan = Plan()  # the job was edited: no service any more
    controller.reconcile_key(KEY)
    controller.reconcile_key(KEY)
    assert core.seen[-1][1].failures == ()


class NameFailingCluster(FakeCluster):
    """Fails the creates of the names in `fail_names` with the given ApiError."""

    def __init__(self, fail_names: Mapping[str, ApiError]) -> None:
        super().__init__()
        self.fail_names = dict(fail_names)

    def create(self, manifest: Mapping[str, Any], namespace: str) -> dict[str, Any] | None:
        name = f"{manifest['kind']}/{manifest['metadata']['name']}"
        if name in self.fail_names:
            self.calls.append(("create", name))
            raise self.fail_names[name]
        return super().create(manifest, namespace)


def child_manifest(kind: str, name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name}}


def make_failing(plan: Plan, fail_names: Mapping[str, ApiError], **settings: Any) -> Any:
    cluster, core = NameFailingCluster(fail_names), Core(plan)
    controller = Controller(cluster, core, Settings(**settings), now=lambda: NOW)
    return controller, cluster


# Services interleaved with the pods, as a plan may list them.
INTERLEAVED = Plan(
    create=(
        child_manifest("ConfigMap", "demo-config"),
        *[
            m
            for n in range(6)
            for m in (
                child_manifest("Service", f"demo-worker-{n}"),
                pod_manifest(f"demo-worker-{n}"),
            )
        ],
    ),
)


@pytest.mark.parametrize("parallel", [1, 4, 16])
def test_what_pods_mount_goes_first_then_the_pods_then_the_services(parallel: int) -> None:
    controller, cluster = make_failing(INTERLEAVED, {}, parallel_creates=parallel)
    controller.jobs["GenericJob"].store.put(job())
    assert controller.reconcile_key(KEY).outcome == "done"
    created = [name for action, name in cluster.calls if action == "create"]
    kinds = [name.split("/")[0] for name in created]
    assert kinds[0] == "ConfigMap"  # created before anything is sent that mounts it
    assert sorted(created[1:]) == sorted(
        [f"Pod/demo-worker-{n}" for n in range(6)] + [f"Service/demo-worker-{n}" for n in range(6)]
    )
    if parallel == 1:
        assert kinds == ["ConfigMap"] + ["Pod"] * 6 + ["Service"] * 6
    else:  # sent in order, but the last pods in flight may reach the server after a service;
        # the slow start's first batches (1 and 2 pods) are done before any service is sent
        assert kinds.index("Service") >= 4


def test_a_refused_pod_stops_the_services_of_the_pass() -> None:
    controller, cluster = make_failing(
        INTERLEAVED, {"Pod/demo-worker-0": ApiError(403, "Forbidden", "exceeded quota")}
    )
    controller.jobs["GenericJob"].store.put(job())
    assert controller.reconcile_key(KEY).outcome == "refused"
    created = [name for action, name in cluster.calls if action == "create"]
    assert created == ["ConfigMap/demo-config", "Pod/demo-worker-0"]


def test_creates_go_out_in_slow_start_batches_and_a_refusal_ends_them_after_its_batch() -> None:
    pods = tuple(pod_manifest(f"demo-worker-{n}") for n in range(12))
    refused = ApiError(403, "Forbidden", "exceeded quota")
    # batches: [0], [1, 2], [3, 4, 5, 6], [7..11]; worker-4 is refused in the third batch
    controller, cluster = make_failing(
        Plan(create=pods), {"Pod/demo-worker-4": refused}, parallel_creates=16
    )
    controller.jobs["GenericJob"].store.put(job())
    result = controller.reconcile_key(KEY)
    assert result.outcome == "refused"
    created = {name for action, name in cluster.calls if action == "create"}
    assert created == {f"Pod/demo-worker-{n}" for n in range(7)}  # the batch completes, no more
    assert "create refused Pod/demo-worker-4" in result.actions
    assert sum(a.startswith("create Pod/") for a in result.actions) == 6


@pytest.mark.parametrize("parallel", [1, 2])
def test_after_the_slow_start_a_refusal_stops_the_creates_that_follow_it(parallel: int) -> None:
    """Past the slow start the rest go out through a window of `parallel` in flight, not in
    batches: a refusal stops the sending, so a quota never gets the job's every pod thrown at it."""
    pods = tuple(pod_manifest(f"demo-worker-{n}") for n in range(40))
    refused = ApiError(403, "Forbidden", "exceeded quota")
    controller, cluster = make_failing(
        Plan(create=pods), {"Pod/demo-worker-9": refused}, parallel_creates=parallel
    )
    controller.jobs["GenericJob"].store.put(job())
    assert controller.reconcile_key(KEY).outcome == "refused"
    created = [name for action, name in cluster.calls if action == "create"]
    assert "Pod/demo-worker-9" in created
    assert {f"Pod/demo-worker-{n}" for n in range(10)} <= set(created)  # all up to it went
    assert len(created) < len(pods)  # and the rest never went out


def test_a_transient_error_in_a_batch_fails_the_pass_but_its_creates_still_count() -> None:
    pods = tuple(pod_manifest(f"demo-worker-{n}") for n in range(3))
    events = tuple(
        Event(
            "Normal",
            "SuccessfulCreatePod",
            f"Created pod: {m['metadata']['name']}",
            f"create Pod/{m['metadata']['name']}",
        )
        for m in pods
    )
    controller, cluster = make_failing(
        Plan(create=pods, events=events),
        {"Pod/demo-worker-2": ApiError(503, "ServiceUnavailable")},
        parallel_creates=16,
    )
    controller.jobs["GenericJob"].store.put(job())
    with pytest.raises(ApiError):
        controller.reconcile_key(KEY)
    assert sorted(e.message for e in cluster.events) == [
        "Created pod: demo-worker-0",
        "Created pod: demo-worker-1",
    ]


def test_a_refused_create_is_held_back_until_its_backoff_passes_unless_the_job_changes() -> None:
    """Pods go out before services, so a job with a refused Service has pods whose progress wakes
    it again and again; those passes must not send the refused create each time."""
    refused = ApiError(403, "Forbidden", 'services "demo-worker-0" is forbidden: exceeded quota')
    service = child_manifest("Service", "demo-worker-0")
    plan = Plan(create=(pod_manifest("demo-worker-0"), service))
    cluster, core = NameFailingCluster({"Service/demo-worker-0": refused}), Core(plan)
    clock = [100.0]
    controller = Controller(
        cluster,
        core,
        Settings(backoff=Backoff(base=1.0, cap=60.0), expectation_timeout=0.0),
        now=lambda: NOW,
        clock=lambda: clock[0],
    )
    controller.jobs["GenericJob"].store.put(job())

    def service_creates() -> int:
        return cluster.calls.count(("create", "Service/demo-worker-0"))

    controller.process(KEY)  # refused: 1 s of backoff
    assert service_creates() == 1
    for _ in range(5):  # the pod's progress wakes the job
        clock[0] += 0.01  # (past the expectation deadline of the pod create, not the backoff)
        controller.process(KEY)
    assert service_creates() == 1
    assert core.seen[-1][1].failures  # the job still shows the refusal
    assert controller.queue.failures(KEY) == 1  # a held pass does not lengthen the backoff

    clock[0] += 1.5  # the backoff has passed
    controller.process(KEY)
    assert service_creates() == 2  # refused again: 2 s of backoff now

    core.plan = Plan(create=({**service, "spec": {"ports": [{"port": 80}]}},))  # the job changed
    controller.process(KEY)
    assert service_creates() == 3  # sent at once: it is not the create that was refused


def test_a_child_deleted_right_after_its_create_does_not_hold_the_job_until_the_deadline() -> None:
    """The watch shows the new pod's deletion before the pod ever reached the cache (someone
    deleted it at once): its create's expectation is met, and the next pass runs now instead
    of after `expectation_timeout` (30 s), so the pod is recreated at once."""
    controller, cluster, core = make(
        Plan(create=(pod_manifest("demo-worker-0"),)), expectation_timeout=60.0
    )
    controller.jobs["GenericJob"].store.put(job())
    created: list[dict[str, Any]] = []
    original = cluster.create

    def create(manifest: Mapping[str, Any], namespace: str) -> dict[str, Any] | None:
        out = original(manifest, namespace)
        if out is not None:
            out["metadata"] = {**out["metadata"], "uid": f"uid-{len(created)}", "namespace": "ns"}
            created.append(out)
        return out

    cluster.create = create  # type: ignore[method-assign]
    assert controller.reconcile_key(KEY).outcome == "done"
    assert controller.reconcile_key(KEY).outcome == "waiting"  # the cache has not shown it yet
    controller._on_child("DELETED", None, created[0])  # added and deleted: only the delete seen
    passes = len(core.seen)
    assert controller.reconcile_key(KEY).outcome != "waiting"
    assert len(core.seen) == passes + 1


@pytest.mark.parametrize(
    ("plan", "paced"),
    [(Plan(), True), (Plan(create=(pod_manifest("demo-worker-0"),)), False)],
    ids=["status only", "creates"],
)
def test_a_costly_pass_that_only_watches_spaces_the_jobs_next_pass(plan: Plan, paced: bool) -> None:
    """A job of thousands of pods asks for a pass on each pod event; a pass whose core took
    0.1 s makes the next wait 1 s (ten times as long), unless it had children to write."""
    clock = [100.0]
    inner = Core(plan)

    def slow_core(job: Mapping[str, Any], observed: Observed, /, *, now: datetime) -> Plan:
        clock[0] += 0.1
        return inner(job, observed, now=now)

    controller = Controller(
        FakeCluster(),
        slow_core,
        Settings(expectation_timeout=0.0),
        now=lambda: NOW,
        clock=lambda: clock[0],
    )
    controller.jobs["GenericJob"].store.put(job())
    controller.queue.add(KEY)
    assert controller.queue.get(timeout=0) == KEY
    controller.process(KEY)
    controller.queue.done(KEY)
    controller.queue.add(KEY)  # a pod event
    assert (controller.queue.get(timeout=0) is None) is paced
    clock[0] += 1.0
    if paced:
        assert controller.queue.get(timeout=0) == KEY
