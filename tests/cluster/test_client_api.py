"""`t9k_sdk.client.Client` against the real API server, the real operator, and kwok's pods."""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from t9k_sdk import DeepSpeedJob, Elastic, GenericJob, Replica, models
from t9k_sdk.client import (
    Client,
    ClientError,
    ImagePullError,
    JobDeletedError,
    JobFailedError,
    JobNotFoundError,
    ScaleError,
    TargetUnreachableError,
    UnschedulableError,
    WaitTimeoutError,
)
from t9k_sdk.client._watch import Watcher, WatchEvent
from tests.cluster.client_helpers import (
    FAILS,
    SUCCEEDS,
    client_fixture,  # noqa: F401  (fixture `client`)
    generic_job,
    operator_fixture,  # noqa: F401  (fixture `operator`)
)
from tools.kit import Operator, request, wait_for

RUNS = "Running"
GPU = "nvidia.com/gpu"


def pods_of(c: Client, kind: str, name: str) -> dict[str, str]:
    return {p.name: p.uid for p in c.pods(kind, name)}


# -- apply, get, list, delete (no operator needed) -------------------------------------------------


def test_applying_the_same_job_twice_changes_nothing(client: Client, namespace: str) -> None:
    builder = GenericJob(
        name="mnist", replicas=[Replica(type="worker", count=2, image="pt:2")], labels={"a": "1"}
    )
    first = client.apply_report(builder)
    assert first.action == "created"
    assert str(first) == "genericjob/mnist created"
    stored = first.job
    assert isinstance(stored, models.GenericJob)
    assert stored.metadata.namespace == namespace
    assert stored.metadata.uid
    # No operator runs here, so nothing has stored a status yet: the API server shows the CRDs'
    # default (`{observedGeneration: 0}`), and the first update of the job stores it, once. The
    # spec and generation stay; with an operator running, its first status write stores it.
    settled = client.apply_report(builder)
    assert settled.action == "unchanged"
    assert settled.job.metadata.generation == stored.metadata.generation
    assert client.get_manifest("gj", "mnist")["status"] == {"observedGeneration": 0}
    stored = settled.job
    # The same job again, as a builder or as its wire model: nothing changes at all.
    for same in (builder, builder.build()):
        again = client.apply_report(same)
        assert again.action == "unchanged"
        assert again.job.metadata.resource_version == stored.metadata.resource_version
    # The job as the server returns it (with defaulted fields) leaves the spec as it is; only the
    # ownership of the defaulted fields moves to t9k-sdk.
    fetched = client.apply_report(client.get_manifest("gj", "mnist"))
    assert fetched.action == "unchanged"
    assert fetched.job.metadata.generation == stored.metadata.generation
    changed = GenericJob(
        name="mnist", replicas=[Replica(type="worker", count=3, image="pt:2")], labels={"a": "1"}
    )
    result = client.apply_report(changed)
    assert result.action == "configured"
    assert result.job.metadata.generation == (stored.metadata.generation or 0) + 1
    managers = client.get_manifest("gj", "mnist")["metadata"]["managedFields"]
    assert {m["manager"] for m in managers} == {"t9k-sdk"}


def test_apply_refuses_a_job_declaring_another_namespace(client: Client, namespace: str) -> None:
    job = generic_job("x")
    job["metadata"]["namespace"] = "elsewhere"
    with pytest.raises(ClientError, match="declares namespace 'elsewhere' but namespace"):
        client.apply(job, namespace=namespace)


def test_get_and_list_return_typed_jobs(
    client: Client, namespace: str, kubeconfig: Path, core_v1: k8s.CoreV1Api
) -> None:
    client.apply(generic_job("b-job"))
    client.apply(generic_job("a-job"))
    client.apply(DeepSpeedJob(name="ds", image="ds", workers=1, run=["t.py"]))
    job = client.get("GenericJob", "a-job")
    assert isinstance(job, models.GenericJob)
    assert job.spec.replica_specs[0].replicas == 2
    assert [(j.kind, j.metadata.name) for j in client.list()] == [
        ("GenericJob", "a-job"),
        ("GenericJob", "b-job"),
        ("DeepSpeedJob", "ds"),
    ]
    assert [j.metadata.name for j in client.list("dj")] == ["ds"]
    everywhere = client.list("gj", all_namespaces=True)
    assert {("a-job", namespace), ("b-job", namespace)} <= {
        (j.metadata.name, j.metadata.namespace) for j in everywhere
    }
    other = Client(kubeconfig=kubeconfig, namespace="default")
    try:
        assert other.get("gj", "a-job", namespace) == job
        with pytest.raises(JobNotFoundError, match="GenericJob 'a-job' not found in namespace"):
            other.get("gj", "a-job")
    finally:
        other.close()


@pytest.mark.smoke
def test_delete_waits_until_the_job_is_gone(client: Client) -> None:
    client.apply(generic_job("gone"))
    client.delete("gj", "gone", wait=True, timeout=20)
    with pytest.raises(JobNotFoundError):
        client.get("gj", "gone")
    with pytest.raises(JobNotFoundError, match="GenericJob 'gone' not found"):
        client.delete("gj", "gone")


# -- wait ------------------------------------------------------------------------------------------


@pytest.mark.smoke
@pytest.mark.usefixtures("operator")
def test_wait_returns_the_succeeded_job_and_reports_progress(client: Client) -> None:
    client.apply(generic_job("ok", annotations=SUCCEEDS))
    seen: list[str] = []
    start = time.monotonic()
    job = client.wait(
        "gj",
        "ok",
        timeout=30,
        on_progress=lambda p: seen.append(
            p.job.status.phase.value if p.job.status and p.job.status.phase else "-"
        ),
    )
    assert job.status is not None
    assert job.status.phase == models.JobPhase.SUCCEEDED
    assert time.monotonic() - start < 15
    assert seen[-1] == "Succeeded"
    assert "Running" in seen


@pytest.mark.usefixtures("operator")
def test_wait_fails_fast_with_the_failure_message(client: Client) -> None:
    client.apply(generic_job("bad", annotations=FAILS))
    start = time.monotonic()
    with pytest.raises(JobFailedError) as err:
        client.wait("gj", "bad", timeout=60)
    assert time.monotonic() - start < 15
    assert err.value.reason == "Failed"
    assert "exited with error code 3" in err.value.message
    assert err.value.job is not None
    assert str(err.value).startswith("GenericJob 'bad' (")


@pytest.mark.usefixtures("operator")
def test_wait_detects_an_unschedulable_job_after_the_grace_period(client: Client) -> None:
    client.apply(generic_job("huge", replicas=1, limits={"nvidia.com/gpu": "99"}))
    start = time.monotonic()
    with pytest.raises(UnschedulableError) as err:
        client.wait("gj", "huge", timeout=60, stuck_grace=2)
    elapsed = time.monotonic() - start
    assert 2 <= elapsed < 12
    assert err.value.reason == "Unschedulable"
    assert "Insufficient nvidia.com/gpu" in err.value.message
    assert "Pod[huge-worker-0] cannot be scheduled" in err.value.message
    # Already stuck longer than the grace period: the next wait fails at once.
    start = time.monotonic()
    time.sleep(1.1)  # the condition's transition time has whole seconds
    with pytest.raises(UnschedulableError):
        client.wait("gj", "huge", timeout=60, stuck_grace=1)
    assert time.monotonic() - start < 5


@pytest.mark.usefixtures("operator")
def test_wait_detects_an_image_pull_error_the_kubelet_reports(
    client: Client, core_v1: k8s.CoreV1Api, namespace: str
) -> None:
    """kwok pulls no images; the test writes the status a kubelet writes when it cannot."""
    client.apply(generic_job("pull", replicas=1))
    client.wait("gj", "pull", for_phase=RUNS, timeout=30)
    waiting = {
        "waiting": {
            "reason": "ImagePullBackOff",
            "message": 'Back-off pulling image "example.invalid/t9k:sim"',
        }
    }
    request(
        core_v1.api_client,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/pull-worker-0/status",
        headers={"Content-Type": "application/json-patch+json"},
        body=[
            {"op": "replace", "path": "/status/phase", "value": "Pending"},
            {"op": "replace", "path": "/status/containerStatuses/0/state", "value": waiting},
            {"op": "replace", "path": "/status/containerStatuses/0/ready", "value": False},
        ],
    )
    with pytest.raises(ImagePullError) as err:
        client.wait("gj", "pull", timeout=30, stuck_grace=0)
    assert err.value.reason == "ImagePullBackOff"
    assert 'Back-off pulling image "example.invalid/t9k:sim"' in err.value.message


@pytest.mark.usefixtures("operator")
def test_wait_for_a_condition_and_an_unreachable_target(client: Client) -> None:
    client.apply(generic_job("cond", annotations=SUCCEEDS))
    job = client.wait("gj", "cond", for_condition="Completed", timeout=30)
    assert job.status is not None
    assert job.status.phase == models.JobPhase.SUCCEEDED
    with pytest.raises(TargetUnreachableError, match="the job has succeeded"):
        client.wait("gj", "cond", for_phase="Failed", timeout=5)


@pytest.mark.usefixtures("operator")
def test_wait_times_out_while_the_job_runs(client: Client) -> None:
    client.apply(generic_job("forever", replicas=1))
    start = time.monotonic()
    with pytest.raises(WaitTimeoutError) as err:
        client.wait("gj", "forever", timeout=1.5)
    assert 1.5 <= time.monotonic() - start < 6
    assert "phase=Succeeded not reached within 1s; the job is" in err.value.message


def test_wait_for_a_missing_job_or_a_deleted_one(client: Client) -> None:
    with pytest.raises(JobNotFoundError):
        client.wait("gj", "nope", timeout=5)
    client.apply(generic_job("doomed", replicas=1))
    errors: queue.Queue[BaseException] = queue.Queue()

    def wait() -> None:
        try:
            client.wait("gj", "doomed", timeout=30)
        except BaseException as exc:
            errors.put(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.5)
    client.delete("gj", "doomed")
    waiter.join(30)
    assert isinstance(errors.get(timeout=1), JobDeletedError)


# -- pause, resume, scale ----------------------------------------------------------------------------


@pytest.mark.usefixtures("operator")
def test_pause_deletes_the_pods_and_resume_brings_new_ones(client: Client) -> None:
    client.apply(generic_job("pausable"))
    client.wait("gj", "pausable", for_phase=RUNS, timeout=30)
    before = pods_of(client, "gj", "pausable")
    assert len(before) == 2
    paused = client.pause("gj", "pausable")
    assert paused.spec.run_mode is not None
    client.wait("gj", "pausable", for_condition="Paused", timeout=30)
    wait_for(lambda: pods_of(client, "gj", "pausable"), lambda p: not p, "pods to be deleted")
    assert client.get("gj", "pausable").status.phase == models.JobPhase.PAUSED  # type: ignore[union-attr]
    client.pause("gj", "pausable")  # again: nothing changes
    client.resume("gj", "pausable")
    job = client.wait("gj", "pausable", for_phase=RUNS, timeout=30)
    assert job.status is not None
    after = pods_of(client, "gj", "pausable")
    assert set(after) == set(before)
    assert not set(after.values()) & set(before.values())  # new pods


@pytest.mark.usefixtures("operator")
def test_a_finished_job_cannot_be_paused(client: Client) -> None:
    client.apply(generic_job("done", annotations=SUCCEEDS))
    client.wait("gj", "done", timeout=30)
    with pytest.raises(ClientError, match="has already succeeded; pausing it would change nothing"):
        client.pause("gj", "done")


@pytest.mark.usefixtures("operator")
def test_scale_changes_the_workers_of_an_elastic_deepspeedjob(client: Client) -> None:
    client.apply(
        DeepSpeedJob(name="gpt", image="ds", workers=2, elastic=Elastic(min=1, max=4), run=["t.py"])
    )
    client.wait("dj", "gpt", for_phase=RUNS, timeout=30)
    scaled = client.scale("gpt", 3)
    assert scaled.spec.elastic is not None
    assert scaled.spec.elastic.expected_replicas == 3
    wait_for(
        lambda: sorted(pods_of(client, "dj", "gpt")),
        lambda names: names == ["gpt-worker-0", "gpt-worker-1", "gpt-worker-2"],
        "a third worker",
    )
    with pytest.raises(ScaleError, match=r"can run on 1 to 4 workers .* 5 is outside that range"):
        client.scale("gpt", 5)
    client.apply(DeepSpeedJob(name="fixed", image="ds", workers=2, run=["t.py"]))
    with pytest.raises(ScaleError, match="'fixed' is not elastic"):
        client.scale("fixed", 3)


# -- events and diagnosis --------------------------------------------------------------------------


@pytest.mark.usefixtures("operator")
def test_events_of_the_job_and_its_pods_in_time_order(client: Client) -> None:
    client.apply(generic_job("ev", annotations=SUCCEEDS))
    client.wait("gj", "ev", timeout=30)
    events = client.events("gj", "ev")
    assert events == sorted(
        events, key=lambda e: (int(e.time.timestamp()) if e.time else 0, e.sequence, e.object)
    )
    reasons = {(e.object, e.reason) for e in events}
    assert {
        ("GenericJob/ev", "SuccessfulCreatePod"),
        ("GenericJob/ev", "Succeeded"),
        ("Pod/ev-worker-0", "Scheduled"),
        ("Pod/ev-worker-1", "SimulatedExit"),
    } <= reasons
    # A new job under the same name starts with a clean slate.
    client.delete("gj", "ev", wait=True)
    client.apply(generic_job("ev", replicas=1, limits={"nvidia.com/gpu": "99"}))
    wait_for(
        lambda: {e.reason for e in client.events("gj", "ev")},
        lambda r: "FailedScheduling" in r,
        "the scheduler's event",
    )
    assert "Succeeded" not in {e.reason for e in client.events("gj", "ev")}
    assert "SimulatedExit" not in {e.reason for e in client.events("gj", "ev")}


@pytest.mark.usefixtures("operator")
def test_diagnose_explains_an_unschedulable_pod(client: Client) -> None:
    client.apply(generic_job("big", replicas=1, limits={"nvidia.com/gpu": "99"}))
    with pytest.raises(UnschedulableError):
        client.wait("gj", "big", timeout=30, stuck_grace=0)
    findings = client.diagnose("gj", "big")
    first = findings[0]
    assert first.severity == "error"
    assert first.subject == "pod big-worker-0 (worker-0)"
    assert "Insufficient nvidia.com/gpu" in first.message
    assert (
        first.hint
        == "it asks for nvidia.com/gpu=99; lower the request, or wait until a node has room"
    )


@pytest.mark.usefixtures("operator")
def test_diagnose_names_a_missing_volume_claim_rather_than_asking_for_less(client: Client) -> None:
    """The scheduler holds back a pod whose PersistentVolumeClaim does not exist: no node has
    room for it, but the advice is to create the claim, not to lower the request."""
    manifest = generic_job("claim", replicas=1, limits={"nvidia.com/gpu": "1"})
    pod_spec = manifest["spec"]["replicaSpecs"][0]["template"]["spec"]
    pod_spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "absent"}}]
    pod_spec["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    client.apply(manifest)
    findings = wait_for(
        lambda: client.diagnose("gj", "claim"),
        lambda found: bool(found) and found[0].message.startswith("cannot be scheduled"),
        "the scheduler's verdict on claim-worker-0",
    )
    first = findings[0]
    assert 'persistentvolumeclaim "absent" not found' in first.message
    assert first.hint is not None
    assert first.hint.startswith(
        f"its volume's PersistentVolumeClaim absent does not exist in namespace {client.namespace}"
    )


@pytest.mark.usefixtures("operator")
def test_diagnose_names_pods_that_hold_gpus_while_the_rest_find_no_room(
    client: Client, core_v1: k8s.CoreV1Api
) -> None:
    """One more 8-GPU worker than the cluster has 8-GPU nodes: the default scheduler places
    the pods one by one, so all but one run and hold their GPUs while the last finds no room.
    `diagnose` says that first, with what the placed pods hold and how to free it."""
    nodes = core_v1.list_node().items
    gpu_nodes = sum(1 for n in nodes if int((n.status.allocatable or {}).get(GPU, "0")) >= 8)
    replicas = gpu_nodes + 1
    client.apply(generic_job("split", replicas=replicas, limits={GPU: "8"}))
    findings = wait_for(
        lambda: client.diagnose("gj", "split"),
        lambda found: bool(found) and "are placed and hold" in found[0].message,
        "the job-level finding about its placed pods, first",
        timeout=60,
    )
    first = findings[0]
    placed = sum(1 for p in client.pods("gj", "split") if p.node)
    assert first.severity == "error"
    assert first.message.startswith(
        f"{placed} of its pods are placed and hold {GPU}={8 * placed},"
        f" while {replicas - placed} {'finds' if replicas - placed == 1 else 'find'} no room"
    )
    assert first.hint is not None
    assert first.hint.startswith("free what it holds: t9k-sdk pause genericjob split")
    # pausing frees them: the job-level finding is gone with the pods
    client.pause("gj", "split")
    wait_for(lambda: client.pods("gj", "split"), lambda p: not p, "the paused job's pods to go")
    assert not [f for f in client.diagnose("gj", "split") if "are placed and hold" in f.message]


def test_a_job_nobody_reconciles_is_diagnosed_as_such(client: Client) -> None:
    """No operator in this test: the job never gets a status (only the one the API server
    shows by default, `{observedGeneration: 0}`)."""
    client.apply(generic_job("orphan"))
    (finding,) = client.diagnose("gj", "orphan")
    assert finding.message == "was just created; the operator has not reported yet"


# -- the watch underneath wait -----------------------------------------------------------------------


def _drain_until(sink: queue.Queue[WatchEvent], done: Any, timeout: float = 20) -> list[WatchEvent]:
    seen: list[WatchEvent] = []
    deadline = time.monotonic() + timeout
    while not done(seen):
        remaining = deadline - time.monotonic()
        assert (
            remaining > 0
        ), f"timed out; saw {[(e.type, e.obj.get('metadata', {}).get('name')) for e in seen]}"
        try:
            seen.append(sink.get(timeout=remaining))
        except queue.Empty:
            continue
    return seen


def test_the_watch_lists_again_after_410_gone(client: Client, namespace: str) -> None:
    client.apply(generic_job("w1"))
    sink: queue.Queue[WatchEvent] = queue.Queue()
    url = f"/apis/{models.API_VERSION}/namespaces/{namespace}/{models.GenericJob.PLURAL}"
    # A resourceVersion the API server no longer has: it answers 410 Gone ("too old").
    watcher = Watcher(client._api, url, sink, resource_version="1").start()
    try:
        seen = _drain_until(sink, lambda s: any(e.type == "SYNC" for e in s))
        sync = next(e for e in seen if e.type == "SYNC")
        assert [o["metadata"]["name"] for o in sync.objects] == ["w1"]
        assert watcher.relists == 1
        client.apply(generic_job("w2"))
        _drain_until(sink, lambda s: any(e.obj.get("metadata", {}).get("name") == "w2" for e in s))
    finally:
        watcher.close()


def test_the_watch_is_renewed_when_the_server_ends_it_and_loses_nothing(
    client: Client, namespace: str
) -> None:
    sink: queue.Queue[WatchEvent] = queue.Queue()
    url = f"/apis/{models.API_VERSION}/namespaces/{namespace}/{models.GenericJob.PLURAL}"
    watcher = Watcher(client._api, url, sink, watch_seconds=1).start()
    try:
        _drain_until(sink, lambda s: any(e.type == "SYNC" for e in s))
        wait_for(lambda: watcher.rewatches, lambda n: n >= 3, "the watch to be renewed twice", 10)
        client.apply(generic_job("late"))
        seen = _drain_until(
            sink, lambda s: any(e.obj.get("metadata", {}).get("name") == "late" for e in s)
        )
        assert [e.type for e in seen if e.obj] == ["ADDED"]
        assert watcher.relists == 1  # renewed from the last version, never listed again
    finally:
        watcher.close()
    watcher.join(5)


def test_an_operator_fixture_scoped_to_the_namespace(operator: Operator, namespace: str) -> None:
    """The fixture's operator watches only this test's namespace (other runs are not disturbed)."""
    assert f"namespace={namespace}" in operator.log()


@pytest.mark.usefixtures("operator")
def test_wait_watches_instead_of_polling(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """However long it waits, wait() makes one list and one watch request (no poll loop)."""
    client.apply(generic_job("quiet", replicas=1))
    client.wait("gj", "quiet", for_phase=RUNS, timeout=30)
    calls: list[tuple[str, dict[str, Any]]] = []
    real_call = client._api.call

    def counting(method: str, url: str, **kwargs: Any) -> Any:
        calls.append((method, dict(kwargs.get("query") or {})))
        return real_call(method, url, **kwargs)

    monkeypatch.setattr(client._api, "call", counting)
    with pytest.raises(WaitTimeoutError):
        client.wait("gj", "quiet", timeout=4)
    assert [(m, q.get("watch", False)) for m, q in calls] == [("GET", False), ("GET", True)]


def test_in_cluster_configuration_with_a_service_account(
    kubeconfig: Path,
    namespace: str,
    core_v1: k8s.CoreV1Api,
    api_client: k8s.ApiClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In a pod: the service account's token, CA and namespace, with no kubeconfig anywhere."""
    import base64

    import yaml
    from kubernetes.config import incluster_config

    from t9k_sdk._kube import config as config_module

    core_v1.create_namespaced_service_account(
        namespace, k8s.V1ServiceAccount(metadata=k8s.V1ObjectMeta(name="runner"))
    )
    rbac = k8s.RbacAuthorizationV1Api(api_client)
    rbac.create_namespaced_role(
        namespace,
        k8s.V1Role(
            metadata=k8s.V1ObjectMeta(name="jobs"),
            rules=[
                k8s.V1PolicyRule(
                    api_groups=[models.GROUP],
                    resources=[models.GenericJob.PLURAL],
                    verbs=["get", "list", "watch", "create", "patch"],
                )
            ],
        ),
    )
    rbac.create_namespaced_role_binding(
        namespace,
        k8s.V1RoleBinding(
            metadata=k8s.V1ObjectMeta(name="jobs"),
            role_ref=k8s.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role", name="jobs"),
            subjects=[k8s.RbacV1Subject(kind="ServiceAccount", name="runner", namespace=namespace)],
        ),
    )
    token = core_v1.create_namespaced_service_account_token(
        "runner",
        namespace,
        k8s.AuthenticationV1TokenRequest(spec=k8s.V1TokenRequestSpec(audiences=[])),
    ).status.token
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    secrets = tmp_path / "serviceaccount"
    secrets.mkdir()
    (secrets / "token").write_text(token)
    (secrets / "ca.crt").write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    (secrets / "namespace").write_text(namespace)
    host, port = cluster["server"].removeprefix("https://").rsplit(":", 1)
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(secrets / "token"))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(secrets / "ca.crt"))
    monkeypatch.setattr(config_module, "SERVICE_ACCOUNT_DIR", secrets)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config: in-cluster is chosen
    with Client() as inside:
        assert inside.namespace == namespace
        inside.apply(generic_job("from-a-pod"))
        assert [j.metadata.name for j in inside.list("gj")] == ["from-a-pod"]
        with pytest.raises(ClientError, match="forbidden"):
            inside.list("dj")  # the Role grants GenericJobs only
