"""The job's other children: services, config maps, secrets and its pod group.

What the spec asks for (`t9k_sdk.reconcile.children.desired_others`) is compared with what the
job owns: a missing one is created, one that differs in the part the operator keeps in line
(`_mutable_part`) is replaced, one the job no longer needs is deleted (not once the job ended).
Foreign objects are never touched (see `conflicts`).

The config maps, secrets and pod group come before the pods that mount them or are scheduled
with them; the services after the pods (as Kubeflow's operator orders them), and only once no
pod waits for a later pass (a job of more than a pass of pods gets all its pods before its first
service), so pods are scheduled and pull their images while the names are being created. A
peer's name may resolve a moment after a pod starts: the SSH launchers wait for every host, and
a GenericJob's program retries (docs/operator/semantics.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from t9k_sdk import _objects as o
from t9k_sdk.reconcile.children import desired_others
from t9k_sdk.reconcile.state import PassState
from t9k_sdk.reconcile.types import Deletion, Manifest, Update

__all__ = ["keep_in_line"]


def keep_in_line(state: PassState) -> None:
    """Plan the creates, updates and deletes that make the job's other children as its spec
    asks (none once the job ended, but for nothing; none new while a conflict blocks it)."""
    # While pods wait for a later pass, the services are left as they are (none is created,
    # changed or deleted): they follow once every pod is planned, so a job of 10,000 pods
    # does not build and compare its 10,000 services in each of its 20 passes of pods.
    services = not state.deferred  # (only an active pass defers pods)
    desired = desired_others(state.rules, state.observed.ssh_key, services=services)
    wanted: dict[tuple[str, str], Manifest] = {
        (m["kind"], m["metadata"]["name"]): m for m in desired
    }
    for kind, objs in state.others_by_kind.items():
        if (kind == "Service" and not services) or kind == "Workload":
            continue  # a Workload is the admission policy's (`policies.admission`)
        for obj in objs:
            _compare(state, kind, obj, wanted.pop((kind, o.meta(obj).name), None))
    first: list[Manifest] = []
    last: list[Manifest] = []
    for (kind, name), manifest in wanted.items():
        if kind == "Secret" and manifest.get("data") is None:
            continue  # no key material yet: the operator supplies a key pair next pass
        if state.terminal or state.blocked:
            continue
        (last if kind == "Service" else first).append(manifest)
        state.notes.append(f"create {kind.lower()} {name}")
    state.create[:0] = first
    state.create.extend(last)


def _compare(state: PassState, kind: str, obj: Mapping[str, Any], want: Manifest | None) -> None:
    """Delete `obj` if it is not wanted, replace it if it differs from `want`."""
    meta = o.meta(obj)
    if state.terminal:
        return
    if want is None:
        api_version = str(obj.get("apiVersion") or "v1")
        state.delete.append(Deletion(api_version, kind, meta.name, meta.uid or None, "not needed"))
        return
    if _mutable_part(kind, want) != _mutable_part(kind, obj):
        manifest = {
            **want,
            "metadata": {**want["metadata"], "resourceVersion": meta.resource_version or None},
        }
        state.update.append(Update(manifest, f"{kind} {meta.name} differs from the spec"))


def _mutable_part(kind: str, obj: Mapping[str, Any]) -> Any:
    """The part of a child the operator keeps in line with the spec."""
    if kind == "Service":  # the server fills in protocol and targetPort: compare what we set
        return [(p.get("name"), p.get("port")) for p in o.spec(obj).get("ports") or ()]
    if kind == "ConfigMap":
        return obj.get("data") or {}
    if kind == "PodGroup":
        spec = o.spec(obj)
        return {k: spec.get(k) for k in ("minMember", "queue", "priority")}
    return None  # Secrets: key material is generated once and never replaced
