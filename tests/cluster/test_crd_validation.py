"""The generated CRDs on the real API server: every example is accepted by a server-side dry-run,
every invalid manifest of the SDK's rule table is rejected, and the server names the same field
as the SDK's validator (or, for rules at the object root, the same message)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from t9k_sdk import codecs, load_all_yaml, models
from t9k_sdk.validation import validate_manifest
from tests.sdk.manifests import colossalai_job, deepspeed_job, generic_job
from tests.sdk.test_rules import INVALID, STRICT_ONLY

EXAMPLES = Path(__file__).parents[2] / "examples"


def _dry_run_create(api: client.CustomObjectsApi, namespace: str, manifest: dict[str, Any]) -> None:
    plural = models.JOB_KINDS[manifest["kind"]].PLURAL
    api.create_namespaced_custom_object(
        models.GROUP,
        models.VERSION,
        namespace,
        plural,
        manifest,
        dry_run="All",
        field_validation="Strict",  # what `kubectl apply` asks for
    )


@pytest.fixture
def custom(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


def _example_manifests() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for job in load_all_yaml(path):
            out.append((f"{path.stem}/{job.name}", codecs.to_manifest(job)))
    return out


def test_there_are_examples_to_check() -> None:
    assert len(_example_manifests()) >= 3


@pytest.mark.parametrize(
    ("label", "manifest"),
    [
        *_example_manifests(),
        ("minimal/GenericJob", generic_job()),
        ("minimal/DeepSpeedJob", deepspeed_job()),
        ("minimal/ColossalAIJob", colossalai_job()),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_valid_manifests_pass_a_server_side_dry_run(
    custom: client.CustomObjectsApi, namespace: str, label: str, manifest: dict[str, Any]
) -> None:
    assert validate_manifest(manifest) == [], label
    _dry_run_create(custom, namespace, manifest)


SERVER_CASES = [
    c
    for c in INVALID
    if c[0] not in STRICT_ONLY and c[0] not in ("wrong-kind", "wrong-api-version")
]
_FIELD = re.compile(r"(?:^|[\s:*\[\"])((?:spec|metadata)(?:\.[A-Za-z0-9]+|\[\d+\])*)")


def _server_fields(message: str) -> list[str]:
    return _FIELD.findall(message)


@pytest.mark.parametrize(
    ("manifest", "path", "fragment"),
    [c[1:] for c in SERVER_CASES],
    ids=[c[0] for c in SERVER_CASES],
)
def test_invalid_manifest_is_rejected_by_the_server_at_the_same_field(
    custom: client.CustomObjectsApi,
    namespace: str,
    manifest: dict[str, Any],
    path: str,
    fragment: str,
) -> None:
    with pytest.raises(ApiException) as info:
        _dry_run_create(custom, namespace, manifest)
    assert info.value.status in (400, 422)
    body = json.loads(info.value.body)
    message: str = body.get("message", "")
    sdk = [p for p in validate_manifest(manifest) if p.path == path]
    assert sdk, f"the SDK does not report {path}"
    fields = _server_fields(message)
    if fields:
        # the server's field is the SDK's, or the list/object that holds it
        assert any(
            path == f or path.startswith(f + ".") or path.startswith(f + "[") for f in fields
        ), f"server fields {fields} vs SDK {path}: {message}"
    else:
        # a rule on the whole object (no field path): the message is the SDK's own
        assert any(p.message.split(";")[0] in message for p in sdk), message
    rule_messages = [p.message.split(";")[0] for p in sdk]
    cel = [m for m in rule_messages if m in message]
    # a CEL rule failed at the SDK's field: the server's message is the SDK's (a CEL rule at
    # another field, e.g. the sum of replicas next to one replicas above its maximum, may fail
    # on the server where the SDK stops at the field's own error)
    cel_fields = re.findall(r'([\w.\[\]]+): Invalid value: "(?:object|array)"', message)
    if not cel_fields and (
        'Invalid value: "object"' in message or 'Invalid value: "array"' in message
    ):
        cel_fields = [path]
    if path in cel_fields:
        assert cel, f"CEL message differs from the SDK's: {message} vs {rule_messages}"


def test_offline_only_rule_is_documented_as_such(
    custom: client.CustomObjectsApi, namespace: str
) -> None:
    """A ColossalAIJob worker without a container named 'worker' is accepted by the server (the
    check would cost too much CEL budget), so the SDK and the operator are where it is caught."""
    (case,) = [c for c in INVALID if c[0] == "colossalai-worker-container-name"]
    _dry_run_create(custom, namespace, case[1])
    assert validate_manifest(case[1])
