"""CustomResourceDefinitions generated from the wire models.

The schema of each kind is the pydantic JSON schema of its model, made structural (every `$ref`
inlined, `anyOf: [X, null]` collapsed, no `additionalProperties: false`), with the upstream
core/v1 schema (vendored in `_schemas/core_v1.json`, see tools/vendor_core_schema.py) in place of
the partly-typed pod template and service port models. Field descriptions come from the models'
docstrings, so `kubectl explain gj.spec.replicaSpecs` documents every field; the cross-field rules
of the models are carried as CEL `x-kubernetes-validations` with the same messages.

    generate_crds() -> [CRD dict, ...]     crd_for(models.GenericJob) -> CRD dict
    core_definitions() -> {name: schema}   (the vendored core/v1 schemas, for validation)
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from t9k_sdk import _kinds, models
from t9k_sdk._kinds import AnyJob, PrinterColumn

__all__ = ["CATEGORY", "core_definitions", "crd_for", "generate_crds", "structural_schema"]

CATEGORY = "t9k"

_KEEP = {
    "type",
    "description",
    "properties",
    "required",
    "items",
    "additionalProperties",
    "enum",
    "default",
    "format",
    "pattern",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "maxProperties",
    "minProperties",
    "nullable",
    "anyOf",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-validations",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-embedded-resource",
}

# Models typed only in part (K8sPassthroughModel): their schema is the upstream one.
_CORE_STANDINS = {"PodTemplateSpec": "PodTemplateSpec", "ServicePort": "ServicePort"}

_TEMPLATE_METADATA: dict[str, Any] = {
    "type": "object",
    "description": "Labels and annotations copied onto every pod of the replica.",
    "properties": {
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "name": {"type": "string"},
        "namespace": {"type": "string"},
        "generateName": {"type": "string"},
        "finalizers": {"type": "array", "items": {"type": "string"}},
    },
}


def _column(column: PrinterColumn) -> dict[str, Any]:
    return {
        "name": column.name,
        "type": column.type,
        "jsonPath": column.json_path,
        "description": column.description,
    }


@cache
def core_definitions() -> dict[str, Any]:
    """The vendored core/v1 schemas, by short name (`Container`, `meta.ObjectMeta`, ...)."""
    text = resources.files("t9k_sdk._schemas").joinpath("core_v1.json").read_text()
    data: dict[str, Any] = json.loads(text)
    return data


def _inline_core(name: str, description: str | None, stack: tuple[str, ...]) -> dict[str, Any]:
    if name in stack:
        raise ValueError(f"recursive core/v1 schema at {' -> '.join((*stack, name))}")
    schema = dict(core_definitions()[name])
    out = _walk_core(schema, (*stack, name))
    if name == "Container":  # a pod cannot be created without: say so when the job is
        rule = {
            "rule": "has(self.image) && size(self.image) > 0",
            "message": models.core_v1.IMAGE_REQUIRED,
            "fieldPath": ".image",
        }
        out["x-kubernetes-validations"] = [*out.get("x-kubernetes-validations", []), rule]
    if name == "ServicePort":  # the API server refuses other ports, but only at the Service
        bounds = models.core_v1.ServicePort.model_json_schema()["properties"]["port"]
        out["properties"]["port"] = {
            **out["properties"]["port"],
            "minimum": bounds["minimum"],
            "maximum": bounds["maximum"],
        }
    # What the API server checks only when it creates the pods (or Service): the names, the
    # image's surrounding white space, negative requests and limits. The rules are the models'.
    for model, field, keys in _CHECKED_AT_THE_POD.get(name, ()):
        out["properties"][field] = {**out["properties"][field], **_field_rule(model, field, keys)}
    if description:
        out["description"] = description
    return out


_STRING_RULE = ("pattern", "maxLength")
_CHECKED_AT_THE_POD: dict[str, tuple[tuple[type[models.K8sModel], str, tuple[str, ...]], ...]] = {
    "Container": (
        (models.core_v1.Container, "name", _STRING_RULE),
        (models.core_v1.Container, "image", _STRING_RULE),
    ),
    "ContainerPort": ((models.core_v1.ContainerPort, "name", _STRING_RULE),),
    "ServicePort": ((models.core_v1.ServicePort, "name", _STRING_RULE),),
    "ResourceRequirements": (
        (models.core_v1.ResourceRequirements, "limits", ("additionalProperties",)),
        (models.core_v1.ResourceRequirements, "requests", ("additionalProperties",)),
    ),
}
"""core/v1 fields whose model rules go into the CRD: (model, field, schema keys to take)."""


@cache
def _field_rule(model: type[models.K8sModel], field: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """The schema keys `keys` of `model.field` (the non-null branch of an optional field); once
    per field, however often the core/v1 type appears in a job's schema."""
    schema = model.model_json_schema(by_alias=True)["properties"][field]
    for branch in schema.get("anyOf", [schema]):
        if branch.get("type") != "null":
            schema = branch
    return {k: schema[k] for k in keys if k in schema}


def _walk_core(node: dict[str, Any], stack: tuple[str, ...]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref is not None:
        if ref == "meta.ObjectMeta":
            out = dict(_TEMPLATE_METADATA)
        else:
            out = _inline_core(ref, None, stack)
        if "description" in node:
            out["description"] = node["description"]
        return out
    out = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {k: _walk_core(v, stack) for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _walk_core(value, stack)
        else:
            out[key] = value
    return out


def structural_schema(model: type[models.K8sModel]) -> dict[str, Any]:
    """The structural OpenAPI v3 schema of a job model, as a CRD's `openAPIV3Schema`."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs: dict[str, Any] = raw.get("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, list):
            return [resolve(n) for n in node]
        if not isinstance(node, dict):
            return node
        node = _collapse_optional(node)
        ref = node.get("$ref")
        if ref is not None:
            name = ref.rsplit("/", 1)[-1]
            if name in _CORE_STANDINS:
                return _inline_core(_CORE_STANDINS[name], node.get("description"), ())
            target = resolve(defs[name])
            target = {**target, **{k: resolve(v) for k, v in node.items() if k != "$ref"}}
            return _clean(target)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "properties":
                out[key] = {k: resolve(v) for k, v in value.items()}
            elif key in _VERBATIM:
                out[key] = value
            else:
                out[key] = resolve(value)
        return _clean(out)

    schema: dict[str, Any] = resolve({k: v for k, v in raw.items() if k != "$defs"})
    props = schema["properties"]
    for key in ("apiVersion", "kind"):
        props[key] = {"type": "string", "description": _ENVELOPE[key]}
    props["metadata"] = {"type": "object"}
    schema["required"] = [r for r in schema.get("required", []) if r == "spec"]
    return schema


_VERBATIM = {
    "x-kubernetes-validations",
    "enum",
    "default",
    "required",
    "x-kubernetes-list-map-keys",
}

_ENVELOPE = {
    "apiVersion": "APIVersion defines the versioned schema of this representation of an object.",
    "kind": "Kind is a string value representing the REST resource this object represents.",
}


def _collapse_optional(node: dict[str, Any]) -> dict[str, Any]:
    """`{anyOf: [X, {type: null}], description, default: null}` -> X plus the description."""
    options = node.get("anyOf")
    if not isinstance(options, list):
        return node
    real = [o for o in options if o != {"type": "null"}]
    if len(real) == len(options):
        return node
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    if len(real) == 1:
        return {**real[0], **rest}
    return {**rest, "anyOf": real}


def _clean(node: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in node.items() if k in _KEEP}
    # every Int is bounded to int64 in the SDK; the API server's integers are int64 already
    if out.get("minimum") == models.INT64_MIN:
        del out["minimum"]
    if out.get("maximum") == models.INT64_MAX:
        del out["maximum"]
    if out.get("default", 0) is None:
        del out["default"]
    if isinstance(out.get("additionalProperties"), bool):
        # structural schemas prune unknown fields instead, and forbid additionalProperties
        # next to properties (passthrough models say `true` in their pydantic schema)
        del out["additionalProperties"]
    if "enum" in node and "type" not in out:
        out["type"] = "string"
    if "const" in node:
        out.update(type="string", enum=[node["const"]])
    if out.get("x-kubernetes-int-or-string"):
        out.pop("anyOf", None)
        out.pop("type", None)
    return out


def crd_for(model: type[AnyJob]) -> dict[str, Any]:
    """The CustomResourceDefinition of one job kind."""
    registered = _kinds.by_kind(model.KIND)
    kind = registered.kind
    schema = structural_schema(model)
    columns = [
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase",
         "description": "Where the job is in its lifecycle"},
        *map(_column, registered.printer_columns),
        {"name": "Ready", "type": "string", "priority": 1,
         "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
         "description": "The Ready condition GitOps tools read (kubectl get -o wide)"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]  # fmt: skip
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{registered.plural}.{models.GROUP}"},
        "spec": {
            "group": models.GROUP,
            "names": {
                "kind": kind,
                "listKind": registered.list_kind,
                "plural": registered.plural,
                "singular": registered.singular,
                "shortNames": [registered.short_name],
                "categories": [CATEGORY],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": models.VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def generate_crds() -> list[dict[str, Any]]:
    """The CRDs of every job kind: GenericJob, DeepSpeedJob and ColossalAIJob, in that order."""
    return [crd_for(k.model) for k in _kinds.JOB_KINDS]
