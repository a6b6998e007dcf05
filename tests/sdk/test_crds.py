"""The generated CRDs: committed copies are current, every model field is in the schema with its
wire name and description, and the cross-field rules travel as CEL with the models' messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from t9k_sdk import codecs, crds, models
from t9k_sdk.models._rules import Msg

COMMITTED = Path(__file__).parents[2] / "operator" / "deploy" / "crds"
KINDS = [models.GenericJob, models.DeepSpeedJob, models.ColossalAIJob]


def _file(crd: dict[str, Any]) -> Path:
    return COMMITTED / f"{crd['spec']['group']}_{crd['spec']['names']['plural']}.yaml"


@pytest.mark.parametrize("crd", crds.generate_crds(), ids=lambda c: c["spec"]["names"]["kind"])
def test_committed_crd_is_up_to_date(crd: dict[str, Any]) -> None:
    path = _file(crd)
    assert path.read_text() == codecs.dump_all_yaml(
        [crd]
    ), f"{path} is stale: run `make crds` and commit the result"


def _schema(kind: type[models.K8sModel]) -> dict[str, Any]:
    crd = crds.crd_for(kind)  # type: ignore[arg-type]
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _model_paths(cls: type[models.K8sModel], prefix: str, seen: tuple[type, ...]) -> list[str]:
    """Wire paths of every field of a T9k-owned model (core/v1 passthroughs excluded)."""
    from t9k_sdk.errors import _as_model  # the same annotation walker the errors use

    paths = []
    for name, field in cls.model_fields.items():
        wire = field.alias or name
        path = f"{prefix}.{wire}" if prefix else wire
        paths.append(path)
        sub = _as_model(_element(field.annotation))
        if (
            sub is not None
            and issubclass(sub, models.K8sModel)
            and not issubclass(sub, models.K8sPassthroughModel)
            and sub not in seen
        ):
            paths.extend(_model_paths(sub, path, (*seen, sub)))
    return paths


def _element(annotation: Any) -> Any:
    from typing import get_args, get_origin

    from t9k_sdk.errors import _members

    for member in _members(annotation):
        if get_origin(member) is list:
            return get_args(member)[0]
    return annotation


def _lookup(schema: dict[str, Any], path: str) -> dict[str, Any] | None:
    node: dict[str, Any] | None = schema
    for part in path.split("."):
        while node is not None and node.get("type") == "array":
            node = node.get("items")
        if node is None or part not in node.get("properties", {}):
            return None
        node = node["properties"][part]
    return node


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.KIND)
def test_every_model_field_is_in_the_crd_with_a_description(kind: type[models.K8sModel]) -> None:
    schema = _schema(kind)
    missing, undocumented = [], []
    for path in _model_paths(kind, "", (kind,)):
        node = _lookup(schema, path)
        if node is None:
            missing.append(path)
        elif path not in ("apiVersion", "kind", "metadata") and not node.get("description"):
            undocumented.append(path)
    assert not missing, f"fields missing from the CRD: {missing}"
    assert not undocumented, f"fields without a description (kubectl explain): {undocumented}"


def test_pod_template_uses_the_upstream_core_v1_schema() -> None:
    container = _lookup(_schema(models.GenericJob), "spec.replicaSpecs.template.spec.containers")
    assert container is not None
    props = container["items"]["properties"]
    assert {"livenessProbe", "securityContext", "envFrom", "volumeMounts"} <= props.keys()
    limits = props["resources"]["properties"]["limits"]["additionalProperties"]
    assert limits["x-kubernetes-int-or-string"] is True  # `nvidia.com/gpu: 2` is accepted


@pytest.mark.parametrize(
    ("kind", "short"),
    [(models.GenericJob, "gj"), (models.DeepSpeedJob, "dj"), (models.ColossalAIJob, "caij")],
)
def test_names_categories_status_and_columns(kind: type[models.GenericJob], short: str) -> None:
    crd = crds.crd_for(kind)
    names = crd["spec"]["names"]
    assert names["shortNames"] == [short]
    assert names["categories"] == ["t9k"]
    assert names["listKind"] == f"{kind.KIND}List"
    version = crd["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    assert columns[0] == "Phase"
    assert columns[-1] == "Age"
    assert "Running" in columns


def _rules(node: Any) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    if isinstance(node, dict):
        found.extend(node.get("x-kubernetes-validations", []))
        for value in node.values():
            found.extend(_rules(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_rules(value))
    return found


def test_cel_rules_carry_the_sdk_messages() -> None:
    messages = {r["message"] for kind in KINDS for r in _rules(_schema(kind))}
    expected = {
        Msg.POD_NAME_LENGTH,
        Msg.TYPES_UNIQUE,
        Msg.FINISH_RULES,
        Msg.FINISH_RULE_EMPTY,
        Msg.MODE_TYPES,
        Msg.CONTAINERS,
        Msg.RUN_EXACTLY_ONE,
        Msg.LAUNCH,
        Msg.OTHER_ARGS,
        Msg.ELASTIC_ORDER,
        Msg.ELASTIC_BOUNDS,
        Msg.ELASTIC_IMMUTABLE,
        Msg.RESUME_IMMUTABLE,
        Msg.CAIJ_LAUNCHER,
        Msg.CAIJ_WORKER,
        f"metadata.name {Msg.NAME_DNS}",
    }
    assert expected <= messages


def test_crd_yaml_is_plain_yaml_without_anchors() -> None:
    text = codecs.dump_all_yaml(crds.generate_crds())
    assert "&id" not in text
    assert "*id" not in text
    assert [d["kind"] for d in yaml.safe_load_all(text)] == ["CustomResourceDefinition"] * 3
