"""The manifest corpus (tests/corpus/) against the real API server with our CRDs: every invalid
file is rejected (422) naming the field its header names, as `t9k-sdk validate` does
(tests/sdk/test_corpus.py); every valid file passes a server-side dry-run create."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from t9k_sdk import _yaml
from t9k_sdk.validation import validate_manifest
from tests.cluster.test_crd_validation import _dry_run_create, _server_fields
from tests.sdk.test_corpus import INVALID, VALID, expected_path


@pytest.fixture
def custom(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


def _load(file: Path) -> dict[str, Any]:
    (manifest,) = _yaml.load_documents(file.read_bytes())
    assert isinstance(manifest, dict)
    return manifest


@pytest.mark.parametrize("file", INVALID, ids=lambda f: f.stem)
def test_server_rejects_the_invalid_case_at_the_same_field(
    custom: client.CustomObjectsApi, namespace: str, file: Path
) -> None:
    path = expected_path(file)
    manifest = _load(file)
    with pytest.raises(ApiException) as info:
        _dry_run_create(custom, namespace, manifest)
    assert info.value.status == 422, info.value.body
    message: str = json.loads(info.value.body).get("message", "")
    fields = _server_fields(message)
    if any(path == f or path.startswith(f + ".") or path.startswith(f + "[") for f in fields):
        return
    # a rule on the whole object: the server names no field for it; its message is the SDK's
    assert (
        '<nil>: Invalid value: "object"' in message
    ), f"server fields {fields} vs {path}: {message}"
    sdk = [p.message.split(";")[0] for p in validate_manifest(manifest) if p.path == path]
    assert any(m in message for m in sdk), f"SDK {sdk} vs server: {message}"


@pytest.mark.parametrize("file", VALID, ids=lambda f: f.stem)
def test_server_accepts_the_valid_case(
    custom: client.CustomObjectsApi, namespace: str, file: Path
) -> None:
    _dry_run_create(custom, namespace, _load(file))
