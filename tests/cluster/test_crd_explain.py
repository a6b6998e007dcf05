"""`kubectl explain` documents every field: the API server publishes the CRDs' descriptions in
its OpenAPI v3 document (what `kubectl explain gj.spec.replicaSpecs` reads)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from t9k_sdk import models
from tools.kit import request


def _openapi(api_client: client.ApiClient) -> dict[str, Any]:
    data = request(api_client, "GET", f"/openapi/v3/apis/{models.API_VERSION}")
    document: dict[str, Any] = json.loads(data)
    return document


def test_published_schema_has_our_descriptions(api_client: client.ApiClient) -> None:
    schemas = _openapi(api_client)["components"]["schemas"]
    gj = next(v for k, v in schemas.items() if k.endswith(".GenericJob"))
    replica = gj["properties"]["spec"]["properties"]["replicaSpecs"]["items"]
    assert replica["properties"]["replicas"]["description"].startswith(
        "The desired number of replicas of this replica type"
    )
    restart = replica["properties"]["restartPolicy"]["properties"]["policy"]
    assert restart["enum"] == ["Always", "OnFailure", "Never", "ExitCode"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_explain_documents_replica_specs(kubeconfig: Path) -> None:
    out = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), "explain", "gj.spec.replicaSpecs"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert "KIND:       GenericJob" in out
    for field in ("replicas", "restartPolicy", "template", "type"):
        assert f"  {field}\t<" in out
    assert "Restart policy for replicas of this replica type" in out
