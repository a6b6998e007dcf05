"""Base classes and scalar types shared by every wire model.

Two base classes:

* `K8sModel` is *closed*: an unknown key is an error that names the key and suggests the nearest
  known one (`slotPerWorker` -> `slotsPerWorker`). Every T9k-owned type uses it.
* `K8sPassthroughModel` is *open*: Kubernetes core/v1 shapes (pod templates, service ports) are
  typed only in the fields the SDK and the operator touch; every other key is kept as given, so a
  manifest round-trips without loss. `t9k_sdk.validate_manifest` (in `t9k_sdk.validation`) reports such keys against the
  upstream core/v1 schema, as `kubectl apply --validate=strict` would.

Both are frozen: change a model with `replace()`, which validates again (pydantic's
`model_copy(update=...)` does not).
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    Strict,
    ValidationError,
    WithJsonSchema,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from t9k_sdk.errors import InvalidManifestError, problems_from_validation_error

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "RESOURCE_QUANTITY_PATTERN",
    "Bool",
    "Int",
    "IntOrString",
    "K8sModel",
    "K8sPassthroughModel",
    "Quantity",
    "ResourceQuantity",
    "Time",
    "rule_error",
    "wire_default",
]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


Int = Annotated[int, Strict(), Field(ge=INT64_MIN, le=INT64_MAX)]
"""An integer on the wire (int64). `"2"` and `2.0` are rejected, as the API server rejects them."""

Bool = Annotated[bool, Strict()]
"""A boolean on the wire. `"true"` and `1` are rejected."""

IntOrString = Annotated[
    Int | str,
    WithJsonSchema({"x-kubernetes-int-or-string": True}),
]
"""Kubernetes `intstr.IntOrString`: kept as given (2 stays 2, "2" stays "2")."""

QUANTITY_PATTERN = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
_QUANTITY = re.compile(QUANTITY_PATTERN.removeprefix("^").removesuffix("$"))


def _quantity(value: int | str) -> int | str:
    # fullmatch: in Python's re, `$` also matches before a trailing newline; in Go's it does not
    if isinstance(value, str) and not _QUANTITY.fullmatch(value):
        raise PydanticCustomError(
            "t9k_quantity",
            "must be a resource quantity: a number with an optional suffix (m, k, M, G, T, P, E,"
            f" Ki, Mi, Gi, Ti, Pi, Ei or an exponent), such as 2, '500m', '1.5' or '16Gi'; got"
            f" {value!r}",
        )
    return value


Quantity = Annotated[
    Int | str,
    AfterValidator(_quantity),
    WithJsonSchema({"x-kubernetes-int-or-string": True, "pattern": QUANTITY_PATTERN}),
]
"""A resource quantity such as `2`, `"500m"` or `"16Gi"`. Ints stay ints through a round-trip."""

RESOURCE_QUANTITY_PATTERN = QUANTITY_PATTERN.replace(r"^(\+|-)?", r"^\+?", 1)
"""A quantity without a minus sign: what a container's requests and limits may be."""


def _resource_quantity(value: int | str) -> int | str:
    if (isinstance(value, int) and value < 0) or (isinstance(value, str) and value.startswith("-")):
        raise PydanticCustomError(
            "t9k_quantity",
            "must not be negative: a container's requests and limits are amounts to reserve"
            f" (the API server refuses the pod); got {value!r}",
        )
    return value


ResourceQuantity = Annotated[
    Quantity,
    AfterValidator(_resource_quantity),
    WithJsonSchema(
        {
            "x-kubernetes-int-or-string": True,
            "pattern": RESOURCE_QUANTITY_PATTERN,  # strings
            "minimum": 0,  # integers
        }
    ),
]
"""A `Quantity` that is not negative (requests and limits)."""


def _format_time(value: datetime) -> str:
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


Time = Annotated[
    AwareDatetime,
    PlainSerializer(_format_time, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
"""`metav1.Time`: an RFC 3339 timestamp with a zone, written back with `Z` for UTC."""


def wire_default(value: Any, **kwargs: Any) -> Any:
    """A field that is absent (None) unless given, whose documented default is `value`.

    The default is not filled in by the SDK (a manifest keeps only what its author wrote); it is
    recorded in the JSON schema, from where the CRD (server-side defaulting) and the API reference
    take it, and the operator reads it through `default_of()`.
    """
    extra = kwargs.pop("json_schema_extra", {}) or {}
    return Field(default=None, json_schema_extra={**extra, "default": value}, **kwargs)


def rule_error(problems: Sequence[tuple[str, str]]) -> PydanticCustomError:
    """One validation error carrying several (relative wire path, message) problems.

    `t9k_sdk.errors` expands it into one `Problem` per entry, each with the full field path.
    """
    summary = "; ".join(f"{path}: {message}" if path else message for path, message in problems)
    return PydanticCustomError("t9k_rule", "{summary}", {"summary": summary, "problems": problems})


@cache
def _attribute_docstrings(module: str) -> dict[str, dict[str, str]]:
    """Class qualname -> field -> the docstring written under the field, for every class of
    `module` (what pydantic's `use_attribute_docstrings` reads, in one parse of the module rather
    than one per class)."""
    path = getattr(sys.modules.get(module), "__file__", None)
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8")) if path else None
    except (OSError, SyntaxError, ValueError):
        tree = None
    found: dict[str, dict[str, str]] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                name = prefix + node.name
                docs = found.setdefault(name, {})
                for field, doc in zip(node.body, node.body[1:], strict=False):
                    if (
                        isinstance(field, ast.AnnAssign)
                        and isinstance(field.target, ast.Name)
                        and isinstance(doc, ast.Expr)
                        and isinstance(doc.value, ast.Constant)
                        and isinstance(doc.value.value, str)
                    ):
                        docs[field.target.id] = inspect.cleandoc(doc.value.value)
                visit(node.body, name + ".")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(node.body, f"{prefix}{node.name}.<locals>.")

    visit(tree.body if tree else [], "")
    return found


class K8sModel(BaseModel):
    """A closed, frozen Kubernetes-shaped model: snake_case in Python, camelCase on the wire."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="forbid",
        frozen=True,
        use_enum_values=False,
        regex_engine="python-re",
        defer_build=True,  # built by __pydantic_init_subclass__, once the fields are documented
    )

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Document each field with the docstring written under it (the JSON schema, the CRDs'
        descriptions and the API reference show it), then build the model as pydantic builds a
        model it does not defer.

        This is pydantic's `use_attribute_docstrings`, which reads the source of each class apart:
        about 0.05 s of CPU at every import of these models, where one parse of each module takes
        about 0.015 s."""
        super().__pydantic_init_subclass__(**kwargs)
        docs = _attribute_docstrings(cls.__module__).get(cls.__qualname__, {})
        for name, info in cls.__pydantic_fields__.items():
            if info.description is None and name in docs:
                info.description = docs[name]
        # As at class creation: a model that refers to a class defined further down stays
        # incomplete, and pydantic completes it on first use.
        cls.model_rebuild(raise_errors=False, _parent_namespace_depth=0)

    @classmethod
    def wire_fields(cls) -> dict[str, str]:
        """Wire name -> Python name of every field."""
        return {(f.alias or n): n for n, f in cls.model_fields.items()}

    def replace(self, **changes: Any) -> Self:
        """Return a copy with `changes` applied (Python field names), validated like new input."""
        data = self.model_dump(by_alias=False, exclude_unset=True, round_trip=True)
        data.update(changes)
        return self.model_validate(data)

    def edit(self, changes: Mapping[str, Any]) -> Self:
        """Return a copy with the fields at the paths of `changes` set, validated like new input.

        A path names a field as the manifest does: wire names joined by dots, `[N]` for a list's
        item (`[-1]` for the last) and `["a.b"]` for a key with dots. A value is what the
        manifest holds there (a model is written as its manifest form); None removes a field.
        Mappings on the way that are not set yet are created:

            job = job.edit({
                "spec.worker.replicas": 4,
                "spec.worker.template.spec.containers[0].image": "pytorch:2.4",
                "spec.config.run.python[2]": "5",
                'spec.worker.template.spec.containers[0].resources.limits["nvidia.com/gpu"]': 8,
            })

        Raises `InvalidManifestError` naming every field at fault, by the paths above.
        """
        from t9k_sdk.models._edit import apply_changes  # it builds on this module

        subject = type(self).__name__
        name = getattr(getattr(self, "metadata", None), "name", None)
        if name:
            subject += f" {name!r}"
        data = apply_changes(self, changes, subject)
        try:
            return self.model_validate(data)
        except ValidationError as exc:
            raise InvalidManifestError(
                subject, problems_from_validation_error(exc, type(self))
            ) from None

    @classmethod
    def default_of(cls, field: str) -> Any:
        """The documented wire default of `field` (Python or wire name), or None."""
        name = cls.wire_fields().get(field, field)
        if name not in cls.model_fields:
            raise KeyError(
                f"{cls.__name__} has no field {field!r}; fields: {', '.join(cls.wire_fields())}"
            )
        extra = cls.model_fields[name].json_schema_extra
        return extra.get("default") if isinstance(extra, dict) else None


class K8sPassthroughModel(K8sModel):
    """An open Kubernetes core/v1 shape: typed where the SDK needs it, other keys kept as given.

    Unknown keys survive a round-trip unchanged; `t9k_sdk.validate_manifest` (in `t9k_sdk.validation`) reports them.
    """

    model_config = ConfigDict(extra="allow")
