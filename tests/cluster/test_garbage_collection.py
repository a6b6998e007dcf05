"""kube-controller-manager's garbage collector deletes pods whose owner is deleted."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from tools.kit import pod, pod_gone, read_pod, wait_for, wait_phase

HOLD = "testing.t9k.dev/hold"


def _owner_ref(obj: Any, api_version: str, kind: str) -> client.V1OwnerReference:
    return client.V1OwnerReference(
        api_version=api_version,
        kind=kind,
        name=obj.metadata.name if hasattr(obj, "metadata") else obj["metadata"]["name"],
        uid=obj.metadata.uid if hasattr(obj, "metadata") else obj["metadata"]["uid"],
        controller=True,
        block_owner_deletion=True,
    )


def _config_map(core_v1: client.CoreV1Api, namespace: str, name: str) -> Any:
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data={"k": "v"})
    return core_v1.create_namespaced_config_map(namespace, body)


def _config_map_gone(core_v1: client.CoreV1Api, namespace: str, name: str) -> bool:
    return not any(
        cm.metadata.name == name for cm in core_v1.list_namespaced_config_map(namespace).items
    )


def test_deleting_the_owner_deletes_the_owned_pod(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    owner = _config_map(core_v1, namespace, "owner")
    core_v1.create_namespaced_pod(
        namespace, pod("owned", owner=_owner_ref(owner, "v1", "ConfigMap"))
    )
    core_v1.create_namespaced_pod(namespace, pod("bystander"))
    wait_phase(core_v1, namespace, "owned", ("Running",))

    core_v1.delete_namespaced_config_map("owner", namespace)  # background propagation
    wait_for(lambda: pod_gone(core_v1, namespace, "owned"), bool, "GC to delete the owned pod")
    assert read_pod(core_v1, namespace, "bystander").metadata.deletion_timestamp is None


def test_foreground_deletion_keeps_the_owner_until_its_pod_is_gone(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    owner = _config_map(core_v1, namespace, "fg-owner")
    held = pod("fg-owned", owner=_owner_ref(owner, "v1", "ConfigMap"))
    held.metadata.finalizers = [HOLD]  # keeps the pod, and so the owner, until the test lets go
    core_v1.create_namespaced_pod(namespace, held)
    wait_phase(core_v1, namespace, "fg-owned", ("Running",))

    core_v1.delete_namespaced_config_map("fg-owner", namespace, propagation_policy="Foreground")
    wait_for(
        lambda: read_pod(core_v1, namespace, "fg-owned"),
        lambda p: p.metadata.deletion_timestamp is not None,
        "GC to delete the owned pod",
    )
    pending = core_v1.read_namespaced_config_map("fg-owner", namespace)
    assert pending.metadata.deletion_timestamp is not None
    assert "foregroundDeletion" in (pending.metadata.finalizers or [])

    core_v1.patch_namespaced_pod("fg-owned", namespace, {"metadata": {"finalizers": None}})
    wait_for(lambda: pod_gone(core_v1, namespace, "fg-owned"), bool, "the pod to go")
    wait_for(
        lambda: _config_map_gone(core_v1, namespace, "fg-owner"),
        bool,
        "the owner to go once its dependents are gone",
    )


def test_orphan_deletion_keeps_the_pod_and_drops_its_owner_reference(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    owner = _config_map(core_v1, namespace, "orphaner")
    core_v1.create_namespaced_pod(
        namespace, pod("orphan", owner=_owner_ref(owner, "v1", "ConfigMap"))
    )
    wait_phase(core_v1, namespace, "orphan", ("Running",))

    core_v1.delete_namespaced_config_map("orphaner", namespace, propagation_policy="Orphan")
    p = wait_for(
        lambda: read_pod(core_v1, namespace, "orphan"),
        lambda p: not p.metadata.owner_references,
        "GC to orphan the pod",
    )
    assert p.metadata.deletion_timestamp is None
    assert p.status.phase == "Running"


def test_deleting_a_custom_resource_deletes_the_pod_it_owns(
    api_client: client.ApiClient, core_v1: client.CoreV1Api, namespace: str
) -> None:
    # TestOwner is the test CRD from tests/cluster/crds/. It is installed before
    # kube-controller-manager starts, so the GC knows the kind at once; installed later, the GC
    # would only notice it at its next 30 s discovery resync and this wait would time out.
    custom = client.CustomObjectsApi(api_client)
    owner = custom.create_namespaced_custom_object(
        "testing.t9k.dev",
        "v1",
        namespace,
        "testowners",
        {"apiVersion": "testing.t9k.dev/v1", "kind": "TestOwner", "metadata": {"name": "boss"}},
    )
    ref = _owner_ref(owner, "testing.t9k.dev/v1", "TestOwner")
    core_v1.create_namespaced_pod(namespace, pod("worker", owner=ref))
    wait_phase(core_v1, namespace, "worker", ("Running",))

    custom.delete_namespaced_custom_object("testing.t9k.dev", "v1", namespace, "testowners", "boss")
    wait_for(lambda: pod_gone(core_v1, namespace, "worker"), bool, "GC to delete the owned pod", 15)
