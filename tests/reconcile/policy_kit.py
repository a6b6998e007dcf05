"""Builders for the tests that call one policy of the reconcile core directly (test_policy_*.py,
test_scheduling.py): a job as the API server returns it (uid, namespace, the status an earlier
pass wrote), the objects a pass observes, and the pass' state, read as `core.reconcile` reads it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from t9k_sdk import codecs, models
from t9k_sdk._conventions import Slot
from t9k_sdk.reconcile.policies.batching import PLAN_BYTES_PER_PASS, POD_CREATES_PER_PASS
from t9k_sdk.reconcile.state import PassState, read_state
from t9k_sdk.reconcile.types import ChildFailure, Observed

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
"""The time of the pass under test."""
JOB_UID = "job-uid"
NAMESPACE = "ns"
Owner = tuple[str, str, str]
"""(kind, name, uid) of an object's controller owner."""
THE_JOB: Owner = ("GenericJob", "demo", JOB_UID)
"""The job under test as a controller owner (ownership is its uid alone; the kind is not read)."""
KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n-----END OPENSSH PRIVATE KEY-----\n",
    "ssh-ed25519 AAAA test",
)


def served(
    manifest: Mapping[str, Any],
    *,
    phase: str | None = None,
    replicas: Mapping[str, list[dict[str, Any]]] | None = None,
    restarts: Mapping[str, int] | None = None,
    conditions: Iterable[dict[str, Any]] = (),
    backoff: int | None = None,
) -> dict[str, Any]:
    """`manifest` as the API server returns it: with a uid and a namespace and, when any is
    given, the status an earlier pass wrote (`replicas`: the entries of each replica type)."""
    job: dict[str, Any] = {**manifest, "metadata": {**manifest["metadata"]}}
    job["metadata"].setdefault("uid", JOB_UID)
    job["metadata"].setdefault("namespace", NAMESPACE)
    status: dict[str, Any] = {}
    if phase is not None:
        status["phase"] = phase
    types = {**dict.fromkeys(restarts or {}), **dict.fromkeys(replicas or {})}
    if types:
        status["tasks"] = [
            {
                "type": t,
                "restartCount": (restarts or {}).get(t, 0),
                "replicas": list((replicas or {}).get(t, [])),
            }
            for t in types
        ]
    conditions = list(conditions)
    if conditions:
        status["conditions"] = conditions
    if backoff is not None:
        status["backoffCount"] = backoff
    if status:
        job["status"] = status
    return job


def read(
    job: Mapping[str, Any],
    *,
    pods: Iterable[Mapping[str, Any]] = (),
    services: Iterable[Mapping[str, Any]] = (),
    config_maps: Iterable[Mapping[str, Any]] = (),
    secrets: Iterable[Mapping[str, Any]] = (),
    pod_groups: Iterable[Mapping[str, Any]] = (),
    ssh_key: tuple[str, str] | None = None,
    failures: Iterable[ChildFailure] = (),
    now: datetime = NOW,
    pod_limit: int = POD_CREATES_PER_PASS,
    byte_limit: int = PLAN_BYTES_PER_PASS,
) -> PassState:
    """The state of a pass over `job` (a manifest, made `served` if it is not) that observed
    these objects: parsed and read as `core.reconcile` does (the spec alone is parsed)."""
    raw = job if "uid" in job["metadata"] else served(job)
    parsed = codecs.from_manifest({k: v for k, v in raw.items() if k != "status"})
    observed = Observed(
        pods=tuple(pods),
        services=tuple(services),
        config_maps=tuple(config_maps),
        secrets=tuple(secrets),
        pod_groups=tuple(pod_groups),
        ssh_key=ssh_key,
        failures=tuple(failures),
    )
    return read_state(parsed, raw, observed, now, pod_limit=pod_limit, byte_limit=byte_limit)


def slot(state: PassState, name: str) -> Slot:
    """The slot of the replica named `name`."""
    return next(s for s in state.slots if s.name == name)


def metadata(name: str, owner: Owner | None = THE_JOB, **extra: Any) -> dict[str, Any]:
    """Metadata of an object in the job's namespace, controlled by `owner` (None: nobody)."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NAMESPACE,
        "uid": f"{name}-uid",
        "resourceVersion": "7",
        **extra,
    }
    if owner is not None:
        kind, owner_name, uid = owner
        meta["ownerReferences"] = [
            {
                "apiVersion": models.API_VERSION,
                "kind": kind,
                "name": owner_name,
                "uid": uid,
                "controller": True,
            }
        ]
    return meta


def pod(
    name: str,
    phase: str = "Running",
    *,
    code: int | None = None,
    owner: Owner | None = THE_JOB,
    terminating: bool = False,
    scheduled: bool = True,
) -> dict[str, Any]:
    """A pod as kubelet reports it: `phase` (Pending, Running, Succeeded, Failed); a finished
    one exited with `code` (0 when it succeeded, 1 when it failed, unless given)."""
    meta = metadata(name, owner)
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T11:59:00Z"
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox"}]}
    if scheduled:
        spec["nodeName"] = "node-0"
    status: dict[str, Any] = {"phase": phase}
    if phase in ("Succeeded", "Failed"):
        exit_code = code if code is not None else (0 if phase == "Succeeded" else 1)
        reason = "Completed" if exit_code == 0 else "Error"
        terminated = {"exitCode": exit_code, "reason": reason}
        status["containerStatuses"] = [{"name": "main", "state": {"terminated": terminated}}]
    elif phase == "Running":
        status["containerStatuses"] = [{"name": "main", "state": {"running": {}}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def child(kind: str, name: str, owner: Owner | None = THE_JOB, **fields: Any) -> dict[str, Any]:
    """A Service, ConfigMap, Secret or PodGroup named `name`, controlled by `owner`."""
    api_version = "scheduler.tensorstack.dev/v1beta1" if kind == "PodGroup" else "v1"
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata(name, owner), **fields}


def entry(
    name: str, phase: str, *, code: int | None = None, restarts: int | None = None
) -> dict[str, Any]:
    """A replica's entry in the status an earlier pass wrote (`code`: how its container
    exited)."""
    out: dict[str, Any] = {"name": name, "uid": f"{name}-uid", "phase": phase}
    if code is not None:
        terminated = {"name": "main", "state": "Terminated", "exitCode": code}
        out["containers"] = [terminated]
    if restarts is not None:
        out["restartCount"] = restarts
    return out


def condition(type_: str, status: str, at: str, reason: str = "-") -> dict[str, Any]:
    """A condition of the job's status, as an earlier pass wrote it."""
    return {"type": type_, "status": status, "lastTransitionTime": at, "reason": reason}


def names(objs: Iterable[Mapping[str, Any]], kind: str | None = None) -> list[str]:
    """The names of `objs` (of `kind` only, when given), in order."""
    return [m["metadata"]["name"] for m in objs if kind is None or m["kind"] == kind]


def stored(manifest: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    """`manifest` (a child a pass planned) as the API server stores it: with a uid and a
    resourceVersion, and the top-level fields in `changes` replaced."""
    meta = {**manifest["metadata"], "resourceVersion": "7"}
    meta["uid"] = f"{meta['name']}-uid"
    return {**manifest, "metadata": meta, **changes}
