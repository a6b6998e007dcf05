"""The CRDs from operator/deploy/crds/ (and the test CRD) are installed and Established."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tools import cluster as cluster_tool

OPERATOR_CRDS = cluster_tool.CRD_DIRS[0]


def _condition(crd: Any, kind: str) -> str | None:
    return next((c.status for c in crd.status.conditions or [] if c.type == kind), None)


def test_every_crd_file_is_installed_and_established(api_client: client.ApiClient) -> None:
    ext = client.ApiextensionsV1Api(api_client)
    docs = cluster_tool.load_crds()
    # The test CRD is always there; the project's own come from operator/deploy/crds/.
    assert "testowners.testing.t9k.dev" in {d.name for d in docs}
    for doc in docs:
        crd = ext.read_custom_resource_definition(doc.name)
        spec = doc.body["spec"]
        assert _condition(crd, "Established") == "True", doc.name
        assert _condition(crd, "NamesAccepted") == "True", doc.name
        assert crd.spec.group == spec["group"]
        assert crd.spec.names.kind == spec["names"]["kind"]
        assert crd.spec.scope == spec["scope"]
        assert sorted(v.name for v in crd.spec.versions if v.served) == sorted(
            v["name"] for v in spec["versions"] if v.get("served", True)
        )


def test_operator_crds_are_the_files_in_the_repository(api_client: client.ApiClient) -> None:
    """Every CRD in operator/deploy/crds/ is on the server and served in its group."""
    ext = client.ApiextensionsV1Api(api_client)
    in_files = {d.name for d in cluster_tool.load_crds() if d.source.parent == OPERATOR_CRDS}
    on_server = {c.metadata.name for c in ext.list_custom_resource_definition().items}
    assert in_files <= on_server, f"not installed: {sorted(in_files - on_server)}"
    groups = {d.body["spec"]["group"] for d in cluster_tool.load_crds() if d.name in in_files}
    apis = client.ApisApi(api_client).get_api_versions()
    served_groups = {g.name for g in apis.groups}
    assert groups <= served_groups, f"groups not served: {sorted(groups - served_groups)}"


def test_custom_resources_are_validated_by_the_crd_schema(
    api_client: client.ApiClient, namespace: str
) -> None:
    custom = client.CustomObjectsApi(api_client)
    args = ("testing.t9k.dev", "v1", namespace, "testowners")

    def body(name: str, replicas: object) -> dict[str, Any]:
        return {
            "apiVersion": "testing.t9k.dev/v1",
            "kind": "TestOwner",
            "metadata": {"name": name},
            "spec": {"replicas": replicas},
        }

    created = custom.create_namespaced_custom_object(*args, body("good", 2))
    assert created["spec"]["replicas"] == 2
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object(*args, body("bad", -1))
    assert err.value.status == 422
    assert "spec.replicas" in str(err.value.body)
