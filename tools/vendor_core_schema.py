"""Vendor the Kubernetes core/v1 schemas the T9k jobs embed, in CRD-ready (structural) form.

    python tools/vendor_core_schema.py [path/to/api__v1_openapi.json]

The source is `api/openapi-spec/v3/api__v1_openapi.json` of the `k8s.io/kubernetes` module that
tools/gobuild/k8s builds (found in the Go module cache), so the schema matches the API server the
tests run. The output, t9k_sdk/_schemas/core_v1.json, is committed: the SDK needs it at run time
(CRD generation, `validate_manifest`) and nothing may be downloaded then.

What the conversion does, per node: `allOf: [$ref]` wrappers become plain `$ref`s (short names);
Quantity and IntOrString become `x-kubernetes-int-or-string`; empty-object defaults, patch
strategies and union discriminators are dropped (a structural CRD schema does not allow or need
them); scalar defaults are kept (list-map keys such as `protocol` must be defaulted) except on required
properties, where a default would hide a missing value.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOTS = (
    "io.k8s.api.core.v1.PodTemplateSpec",
    "io.k8s.api.core.v1.ServicePort",
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
)
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]"
    r"|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
DROP = {
    "x-kubernetes-patch-merge-key",
    "x-kubernetes-patch-strategy",
    "x-kubernetes-unions",
    "discriminator",
}
OUT = Path(__file__).resolve().parents[1] / "t9k_sdk" / "_schemas" / "core_v1.json"


def short(ref: str) -> str:
    """`#/components/schemas/io.k8s.api.core.v1.Container` -> `Container` (meta: `meta.X`)."""
    name = ref.rsplit("/", 1)[-1]
    if name.startswith("io.k8s.api.core.v1."):
        return name.removeprefix("io.k8s.api.core.v1.")
    return "meta." + name.rsplit(".", 1)[-1]


def convert(node: Any) -> Any:
    if isinstance(node, list):
        return [convert(n) for n in node]
    if not isinstance(node, dict):
        return node
    if "allOf" in node and len(node["allOf"]) == 1 and "$ref" in node["allOf"][0]:
        merged = {k: v for k, v in node.items() if k != "allOf"}
        merged["$ref"] = node["allOf"][0]["$ref"]
        node = merged
    out: dict[str, Any] = {}
    ref = node.get("$ref")
    if ref is not None:
        target = ref.rsplit("/", 1)[-1]
        if target == QUANTITY:
            out.update({"x-kubernetes-int-or-string": True, "pattern": QUANTITY_PATTERN})
        elif target == INT_OR_STRING:
            out["x-kubernetes-int-or-string"] = True
        else:
            out["$ref"] = short(ref)
    for key, value in node.items():
        if key in DROP or key in ("$ref", "allOf"):
            continue
        if key == "default" and (isinstance(value, dict | list) or ref is not None):
            continue
        if key == "properties":
            required = set(node.get("required", ()))
            props = {k: convert(v) for k, v in value.items()}
            for name in required & props.keys():
                props[name].pop("default", None)  # a default would mask "required"
            out[key] = props
        else:
            out[key] = convert(value)
    return out


def closure(schemas: dict[str, Any]) -> list[str]:
    seen: list[str] = []
    todo = list(ROOTS)
    while todo:
        name = todo.pop(0)
        if name in seen or name in (QUANTITY, INT_OR_STRING):
            continue
        seen.append(name)
        text = json.dumps(schemas[name])
        for part in text.split('"$ref": "')[1:]:
            todo.append(part.split('"', 1)[0].rsplit("/", 1)[-1])
    return sorted(seen)


def default_source() -> Path:
    moddir = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes"],
        cwd=Path(__file__).resolve().parent / "gobuild" / "k8s",
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return Path(moddir) / "api" / "openapi-spec" / "v3" / "api__v1_openapi.json"


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else default_source()
    schemas = json.loads(source.read_text())["components"]["schemas"]
    names = closure(schemas)
    out = {short(n): convert(schemas[n]) for n in names}
    for name, schema in out.items():  # FieldsV1 and RawExtension hold free-form JSON
        if (
            schema.get("type") == "object"
            and "properties" not in schema
            and ("additionalProperties" not in schema)
        ):
            schema["x-kubernetes-preserve-unknown-fields"] = True
        out[name] = schema
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=None, sort_keys=True, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({len(out)} definitions, {OUT.stat().st_size // 1024} KiB) from {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
