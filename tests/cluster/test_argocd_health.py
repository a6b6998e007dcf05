"""Argo CD's view of real jobs: the health check (t9k_sdk/argocd/health.lua) run, as Argo CD runs
it (tests/argocd/runner.py), on jobs read back from the local control plane while the real
operator drives them through every phase; and the argocd-cm patch applied with kustomize and
kubectl.

With T9K_RECORD_ARGOCD=1 (`make argocd-testdata`) the jobs are also saved, with their uids and
times made fixed, as deploy/argocd/.../<Kind>/testdata/live-<state>.yaml, and their cases written
into health_test.yaml.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from t9k_sdk import argocd, models
from t9k_sdk._yaml import dump_documents
from tests.argocd.runner import REPO, ArgoLua
from tests.cluster.e2e_helpers import Jobs, condition
from tools import argocd_testdata
from tools import cluster as cluster_tool
from tools.kit import (
    colossalai_job,
    deepspeed_job,
    finish,
    generic_job,
    pod,
    replica,
    request,
    wait_for,
)

RECORD = os.environ.get("T9K_RECORD_ARGOCD", "") == "1"
PREFIX = {"GenericJob": "gj", "DeepSpeedJob": "dj", "ColossalAIJob": "cj"}
REPLICAS = {"GenericJob": 1, "DeepSpeedJob": 1, "ColossalAIJob": 2}
LONG = finish(0, after="1h")
HOSTILE = "]] os.exit(1) --[[ ${HOME} {{ .Values }} %s"


@pytest.fixture(scope="module")
def lua() -> ArgoLua:
    return ArgoLua.ensure()


def kubectl() -> Path:
    return cluster_tool.binary_dir(build=False) / "kubectl"


# -- manifests --------------------------------------------------------------------------------


def templates(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    spec = manifest["spec"]
    if manifest["kind"] == "DeepSpeedJob":
        return [spec["worker"]["template"]]
    return [r["template"] for r in spec["replicaSpecs"]]


def job(
    kind: str,
    name: str,
    *,
    code: int | None = None,
    unschedulable: bool = False,
    invalid: bool = False,
    **spec: Any,
) -> dict[str, Any]:
    """A job of `kind` whose pods run for an hour, or end with `code` after a second (the
    ColossalAIJob launcher only), or are never scheduled, or whose spec only the operator
    refuses."""
    ends = LONG if code is None else finish(code, after="1s")
    if kind == "GenericJob":
        manifest = generic_job(name, replica("worker", 1, annotations=ends), **spec)
    elif kind == "DeepSpeedJob":
        manifest = deepspeed_job(name, 1, annotations=ends, runPolicy={"backoffLimit": 0}, **spec)
        if invalid:  # a mount at /root/.ssh in a second container: beyond the CRD's rule
            worker = manifest["spec"]["worker"]["template"]["spec"]
            mount = {"name": "keys", "mountPath": "/root/.ssh"}
            worker["containers"] = [
                {"name": "proxy", "image": "busybox"},
                {**worker["containers"][0], "volumeMounts": [mount]},
            ]
            worker["volumes"] = [{"name": "keys", "emptyDir": {}}]
    else:
        manifest = colossalai_job(
            name,
            1,
            launcher_annotations=ends,
            worker_annotations=LONG,
            worker_container="trainer" if invalid else "worker",
            **spec,
        )
    if unschedulable:  # no scheduler of that name: the pods stay Pending
        for template in templates(manifest):
            template["spec"]["schedulerName"] = "nobody"
    return manifest


# -- reading a job as Argo CD reads it ------------------------------------------------------


def read(custom: client.CustomObjectsApi, namespace: str, kind: str, name: str) -> dict[str, Any]:
    plural = models.JOB_KINDS[kind].PLURAL
    out: dict[str, Any] = custom.get_namespaced_custom_object(
        models.GROUP, models.VERSION, namespace, plural, name
    )
    return out


def settle(
    lua: ArgoLua,
    fetch: Callable[[], dict[str, Any]],
    done: Callable[[dict[str, Any]], bool],
    what: str,
) -> tuple[dict[str, Any], dict[str, str]]:
    """Wait until the live job satisfies `done`; return it and its health."""
    obj = wait_for(fetch, done, what, 60.0)
    health = lua.health(obj)
    assert health is not None
    return obj, health


def blocked_message(status: dict[str, Any]) -> str:
    """Where a blocked job says why: Stalled where the operator sets it, else Running."""
    stalled = condition(status, "Stalled")
    if stalled.get("status") == "True" and stalled.get("message"):
        return str(stalled["message"])
    return str(condition(status, "Running")["message"])


# -- recording testdata -----------------------------------------------------------------------


def sanitized(obj: dict[str, Any]) -> dict[str, Any]:
    """The live object with what changes from run to run (uids, times, versions) made fixed."""
    out = copy.deepcopy(obj)
    meta = out["metadata"]
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
        meta.pop(key, None)
    meta["namespace"] = "default"

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: (
                    argocd_testdata.T
                    if k.endswith("Time") or k.endswith("Timestamp")
                    else "00000000-0000-0000-0000-000000000000" if k == "uid" else walk(v)
                )
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    out["status"] = walk(out.get("status")) if "status" in out else None
    if out["status"] is None:
        del out["status"]
    return out


def record(kind: str, seen: dict[str, tuple[dict[str, Any], dict[str, str]]]) -> None:
    directory = argocd_testdata.kind_dir(kind)
    for old in (directory / "testdata").glob("live-*.yaml"):
        old.unlink()
    entries = []
    for state, (obj, health) in sorted(seen.items()):
        path = f"testdata/live-{state}.yaml"
        (directory / path).write_text(dump_documents([sanitized(obj)]), encoding="utf-8")
        entries.append({"healthStatus": health, "inputPath": path})
    for path, text in argocd_testdata.files(live={kind: entries}).items():
        if path.is_relative_to(directory):
            path.write_text(text, encoding="utf-8")


# -- jobs in every phase ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", argocd.KINDS)
def test_live_jobs_have_the_health_of_their_phase(
    lua: ArgoLua,
    jobs: Jobs,
    custom: client.CustomObjectsApi,
    namespace: str,
    kind: str,
) -> None:
    p = PREFIX[kind]
    n = REPLICAS[kind]
    waiting = f"Waiting for {n} of {n} replicas to start running."
    resuming, resuming_reason = waiting, "Resuming"
    if kind == "ColossalAIJob":  # the launcher is created once its worker runs
        waiting = (
            f"The launcher {p}-pending-launcher starts once every worker it needs is running;"
            f" waiting for {p}-pending-worker-0."
        )
        resuming = waiting.replace(f"{p}-pending", f"{p}-resuming")
        resuming_reason = "WaitingForWorkers"
    seen: dict[str, tuple[dict[str, Any], dict[str, str]]] = {}

    # A foreign object holds a name the job needs: a Secret for the SSH kinds, a pod otherwise.
    conflict = f"{p}-conflict"
    if kind == "GenericJob":
        jobs.core_v1.create_namespaced_pod(jobs.namespace, pod(f"{conflict}-worker-0"))
    else:
        jobs.core_v1.create_namespaced_secret(
            jobs.namespace,
            client.V1Secret(metadata=client.V1ObjectMeta(name=f"{conflict}-ssh")),
        )
    running = job(kind, f"{p}-running")
    running["metadata"]["annotations"] = {"note": HOSTILE}
    manifests = [
        job(kind, f"{p}-pending", unschedulable=True),
        running,
        job(kind, f"{p}-succeeded", code=0),
        job(kind, f"{p}-failed", code=1),
        job(kind, f"{p}-paused"),
        job(kind, f"{p}-resuming", unschedulable=True),
        job(kind, conflict),
    ]
    if kind != "GenericJob":  # a spec the API server accepts and the operator refuses
        manifests.append(job(kind, f"{p}-invalid", invalid=True))
    jobs.create(*manifests)

    def live(name: str) -> Callable[[], dict[str, Any]]:
        return lambda: jobs.read(name)

    def phase_is(phase: str) -> Callable[[dict[str, Any]], bool]:
        return lambda o: (o.get("status") or {}).get("phase") == phase

    # No status yet: in a namespace no operator watches.
    custom.create_namespaced_custom_object(
        models.GROUP,
        models.VERSION,
        namespace,
        models.JOB_KINDS[kind].PLURAL,
        job(kind, f"{p}-new"),
    )
    obj = read(custom, namespace, kind, f"{p}-new")
    # The CRDs default the status to {observedGeneration: 0} (kstatus: not yet observed).
    assert obj.get("status") in (None, {"observedGeneration": 0})
    seen["no-status"] = (obj, lua.health(obj) or {})
    assert seen["no-status"][1] == {
        "status": "Progressing",
        "message": f"Waiting for the operator to start the {kind}.",
    }

    obj, health = settle(
        lua,
        live(f"{p}-pending"),
        lambda o: condition(o.get("status") or {}, "Running").get("message") == waiting,
        "pods waiting for a scheduler",
    )
    assert obj["status"]["phase"] == "Pending"
    assert health == {"status": "Progressing", "message": waiting}
    seen["pending"] = (obj, health)

    obj, health = settle(lua, live(f"{p}-running"), phase_is("Running"), "Running")
    assert health == {"status": "Progressing", "message": "All pods are running normally."}
    seen["running"] = (obj, health)

    obj, health = settle(lua, live(f"{p}-succeeded"), phase_is("Succeeded"), "Succeeded")
    completed = condition(obj["status"], "Completed")
    assert health == {"status": "Healthy", "message": completed["message"]}
    assert completed["message"]
    seen["succeeded"] = (obj, health)

    obj, health = settle(lua, live(f"{p}-failed"), phase_is("Failed"), "Failed")
    failed = condition(obj["status"], "Failed")
    assert health == {"status": "Degraded", "message": failed["message"]}
    assert f"{p}-failed" in failed["message"] or "rule" in failed["message"]
    seen["failed"] = (obj, health)

    if kind != "GenericJob":
        obj, health = settle(lua, live(f"{p}-invalid"), phase_is("Failed"), "Failed")
        failed = condition(obj["status"], "Failed")
        assert failed["reason"] == "InvalidSpec"
        assert health == {"status": "Degraded", "message": failed["message"]}
        assert health["message"].startswith("spec.")
        seen["invalid-spec"] = (obj, health)

    obj, health = settle(
        lua,
        live(conflict),
        lambda o: condition(o.get("status") or {}, "Running").get("reason") == "NameConflict",
        "NameConflict",
    )
    assert health == {"status": "Degraded", "message": blocked_message(obj["status"])}
    assert "exists but is not this job's" in health["message"]
    seen["name-conflict"] = (obj, health)

    # Pause a running job: Suspended once its pods are gone.
    settle(lua, live(f"{p}-paused"), phase_is("Running"), "Running")
    jobs.patch(f"{p}-paused", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    obj, health = settle(
        lua,
        live(f"{p}-paused"),
        lambda o: condition(o.get("status") or {}, "Paused").get("status") == "True",
        "Paused=True",
    )
    assert obj["status"]["phase"] == "Paused"
    assert health == {
        "status": "Suspended",
        "message": "The job is paused: all replicas are deleted or being deleted.",
    }
    seen["paused"] = (obj, health)

    # Pause a pending job and resume it: its pods wait for a scheduler again, Resuming.
    settle(lua, live(f"{p}-resuming"), phase_is("Pending"), "Pending")
    jobs.patch(f"{p}-resuming", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    obj, health = settle(
        lua,
        live(f"{p}-resuming"),
        lambda o: condition(o.get("status") or {}, "Paused").get("status") == "True",
        "Paused=True",
    )
    assert health["status"] == "Suspended"
    jobs.patch(f"{p}-resuming", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    obj, health = settle(
        lua,
        live(f"{p}-resuming"),
        lambda o: condition(o.get("status") or {}, "Running").get("reason") == resuming_reason
        and condition(o["status"], "Running").get("message") == resuming,
        "Resuming, pods waiting",
    )
    assert obj["status"]["phase"] == "Resuming"
    assert health == {"status": "Progressing", "message": resuming}
    seen["resuming"] = (obj, health)

    if RECORD:
        record(kind, seen)


def test_a_spec_edit_the_operator_has_not_acted_on_is_progressing(
    lua: ArgoLua, api_client: client.ApiClient, custom: client.CustomObjectsApi, namespace: str
) -> None:
    """An edit bumps metadata.generation (a status write does not); until the status says the
    operator acted on it (observedGeneration), Argo CD sees the job as Progressing. The status
    is written here, as an operator would, in a namespace no operator watches."""
    plural = models.JOB_KINDS["GenericJob"].PLURAL
    base = f"/apis/{models.API_VERSION}/namespaces/{namespace}/{plural}/edited"
    custom.create_namespaced_custom_object(
        models.GROUP, models.VERSION, namespace, plural, job("GenericJob", "edited")
    )
    status = {
        "observedGeneration": 1,
        "phase": "Running",
        "conditions": [
            {
                "type": "Running",
                "status": "True",
                "reason": "-",
                "message": "All pods are running normally.",
                "lastTransitionTime": argocd_testdata.T,
            }
        ],
    }
    merge = {"Content-Type": "application/merge-patch+json", "Accept": "application/json"}
    request(api_client, "PATCH", f"{base}/status", headers=merge, body={"status": status})
    before = read(custom, namespace, "GenericJob", "edited")
    assert before["metadata"]["generation"] == 1
    assert lua.health(before) == {
        "status": "Progressing",
        "message": "All pods are running normally.",
    }

    request(
        api_client,
        "PATCH",
        base,
        headers=merge,
        body={"spec": {"replicaSpecs": [replica("worker", 2, annotations=LONG)]}},
    )
    after = read(custom, namespace, "GenericJob", "edited")
    assert after["metadata"]["generation"] == 2
    if "observedGeneration" in after["status"]:
        assert lua.health(after) == {
            "status": "Progressing",
            "message": "Waiting for the operator to act on generation 2 of the spec (it last"
            " acted on generation 1).",
        }
    else:  # CRDs without status.observedGeneration: the API server prunes it; phase decides
        assert lua.health(after) == {
            "status": "Progressing",
            "message": "All pods are running normally.",
        }


# -- installing the check into argocd-cm ----------------------------------------------------

ARGOCD_CM = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {
        "name": "argocd-cm",
        "labels": {"app.kubernetes.io/name": "argocd-cm", "app.kubernetes.io/part-of": "argocd"},
    },
    "data": {"url": "https://argocd.example.com"},
}
PATCH = REPO / "deploy" / "argocd" / argocd.PATCH_FILE


def run_kubectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(kubectl()), *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_kustomize_patches_argocd_cm_as_the_docs_say(tmp_path: Path) -> None:
    """docs/how-to/argocd-health.md: copy argocd-cm-patch.yaml next to the kustomization that
    installs Argo CD and list it under `patches`; the keys join argocd-cm's own data."""
    (tmp_path / "argocd-cm.yaml").write_text(yaml.safe_dump(ARGOCD_CM))
    (tmp_path / argocd.PATCH_FILE).write_text(PATCH.read_text())
    (tmp_path / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: argocd\n"
        "resources:\n- argocd-cm.yaml\npatches:\n- path: argocd-cm-patch.yaml\n"
    )
    proc = run_kubectl("kustomize", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    (cm,) = list(yaml.safe_load_all(proc.stdout))
    assert (cm["metadata"]["name"], cm["metadata"]["namespace"]) == ("argocd-cm", "argocd")
    assert cm["data"] == {
        "url": "https://argocd.example.com",
        **{argocd.config_map_key(k): argocd.health_lua() for k in argocd.KINDS},
    }


def test_the_patch_listed_as_a_resource_is_refused_by_kustomize(tmp_path: Path) -> None:
    """A newcomer who lists the patch under `resources` gets kustomize's error, not a second
    argocd-cm replacing the first."""
    (tmp_path / "argocd-cm.yaml").write_text(yaml.safe_dump(ARGOCD_CM))
    (tmp_path / argocd.PATCH_FILE).write_text(PATCH.read_text())
    (tmp_path / "kustomization.yaml").write_text(
        "resources:\n- argocd-cm.yaml\n- argocd-cm-patch.yaml\n"
    )
    proc = run_kubectl("kustomize", str(tmp_path))
    assert proc.returncode != 0
    assert "already registered id" in proc.stderr


@pytest.mark.parametrize("patch_type", ["strategic", "merge"])
def test_kubectl_patch_installs_the_check_into_a_live_argocd_cm(
    lua: ArgoLua,
    kubeconfig: Path,
    core_v1: client.CoreV1Api,
    namespace: str,
    patch_type: str,
) -> None:
    """`kubectl patch configmap argocd-cm -n argocd --patch-file argocd-cm-patch.yaml` (the
    docs' command) keeps argocd-cm's own keys, and the script read back from the API server
    judges a job as the source does."""
    body = {**ARGOCD_CM, "metadata": {**ARGOCD_CM["metadata"], "namespace": namespace}}
    core_v1.create_namespaced_config_map(namespace, body)
    proc = run_kubectl(
        "--kubeconfig",
        str(kubeconfig),
        "patch",
        "configmap",
        "argocd-cm",
        "-n",
        namespace,
        "--type",
        patch_type,
        "--patch-file",
        str(PATCH),
    )
    assert proc.returncode == 0, proc.stderr
    data = core_v1.read_namespaced_config_map("argocd-cm", namespace).data
    assert data["url"] == "https://argocd.example.com"
    failed = {
        "apiVersion": models.API_VERSION,
        "kind": "DeepSpeedJob",
        "metadata": {"name": "x", "generation": 1},
        "status": {
            "phase": "Failed",
            "conditions": [{"type": "Failed", "status": "True", "message": "worker-0 failed"}],
        },
    }
    for kind in argocd.KINDS:
        script = data[argocd.config_map_key(kind)]
        assert script == argocd.health_lua()
        assert lua.health({**failed, "kind": kind}, script) == {
            "status": "Degraded",
            "message": "worker-0 failed",
        }
    assert json.loads(json.dumps(data))  # plain strings only
