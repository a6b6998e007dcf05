"""Errors and warnings of the SDK, and the one place where validation errors become `Problem`s."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

__all__ = [
    "InvalidManifestError",
    "InvalidYAMLError",
    "LegacyManifestWarning",
    "Problem",
    "T9kError",
    "format_path",
    "problems_from_validation_error",
]


class T9kError(Exception):
    """Base class of every error the SDK raises on purpose."""


class LegacyManifestWarning(FutureWarning):
    """A manifest used an old spelling or schema that the SDK converted to the current one."""


class InvalidYAMLError(T9kError, yaml.YAMLError):
    """A YAML input that cannot be read as Kubernetes objects: not UTF-8, too large, bad syntax,
    nested too deep, aliases that expand too far or form a cycle, a key that is not a string or
    is given twice, or a value JSON cannot hold (`!!set`, `!!binary`, `.nan`, ...).

    `line` and `column` (1-based) say where, when known; `message` says what. It is also a
    `yaml.YAMLError`, so code that catches PyYAML's errors keeps working.
    """

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        self.message = message
        self.line = line
        self.column = column
        where = f"line {line}, column {column}: " if line is not None else ""
        super().__init__(f"{where}invalid YAML: {message}")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a manifest or a builder: where, what, and the offending value."""

    path: str
    """Field path with wire names, e.g. `spec.replicaSpecs[0].replicas`, or for a builder the
    argument as written, e.g. `replicas[0].count`; empty for the whole object."""
    message: str
    """What is wrong and what is allowed."""

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class InvalidManifestError(T9kError):
    """A manifest or a builder argument is invalid. `problems` lists every field at fault.

    Not a `ValueError` on purpose: pydantic turns a `ValueError` raised while validating into
    its own `ValidationError`, and builders raise this error from their validation.
    """

    def __init__(self, subject: str, problems: Sequence[Problem]) -> None:
        self.subject = subject
        self.problems = tuple(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{subject} is invalid:\n{lines}")


def format_path(loc: Iterable[str | int]) -> str:
    """`("spec", "replicaSpecs", 0, "type")` -> `spec.replicaSpecs[0].type`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _join(base: str, sub: str) -> str:
    if not sub:
        return base
    if not base:
        return sub
    return base + sub if sub.startswith("[") else f"{base}.{sub}"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_PLAIN = {
    "missing": "required field is missing",
    "int_type": "expected an integer",
    "int_from_float": "expected an integer",
    "bool_type": "expected true or false",
    "string_type": "expected a string",
    "list_type": "expected a list",
    "dict_type": "expected a mapping",
    "model_type": "expected a mapping",
    "model_attributes_type": "expected a mapping",
    "datetime_type": "expected an RFC 3339 timestamp",
    "datetime_from_date_parsing": "expected an RFC 3339 timestamp",
    "timezone_aware": "expected an RFC 3339 timestamp with a time zone",
}


def problems_from_validation_error(
    exc: ValidationError, root: type[BaseModel] | None = None, prefix: Sequence[str | int] = ()
) -> list[Problem]:
    """Turn pydantic's errors into `Problem`s with wire paths, values and allowed values.

    `root` is the model class that was validated; with it, an unknown field is reported with the
    fields that are allowed there and the nearest one ("did you mean 'slotsPerWorker'?").
    """
    problems: list[Problem] = []
    for err in _merge_unions(exc.errors(include_url=False)):
        base = format_path([*prefix, *err["loc"]])
        kind = err["type"]
        ctx = err.get("ctx") or {}
        if kind == "extra_forbidden":
            problems.append(Problem(base, _unknown_field(root, err["loc"])))
            continue
        if kind == "t9k_rule":
            for sub, message in ctx["problems"]:
                problems.append(Problem(_join(base, sub), message))
            continue
        if kind in ("union_tag_invalid", "union_tag_not_found"):
            problems.append(Problem(base, err["msg"]))
            continue
        if kind == "missing":
            problems.append(Problem(base, _PLAIN[kind]))
            continue
        if kind.startswith("t9k_"):  # our own messages already show the value
            problems.append(Problem(base, err["msg"]))
            continue
        message = _PLAIN.get(kind) or _lower_first(err["msg"])
        if kind == "union_type":
            message = err["msg"]
        if kind == "value_error":
            message = _lower_first(err["msg"].removeprefix("Value error, "))
        message = f"{message}; got {_show(err['input'])}"
        if kind in ("enum", "literal_error"):
            message += _suggest(err["input"], re.findall(r"'([^']*)'", str(ctx.get("expected"))))
        problems.append(Problem(base, message))
    return _dedupe(problems)


def _suggest(value: Any, choices: Sequence[str]) -> str:
    """`"; did you mean 'Unfinished'?"` for a misspelled or miscased choice, else nothing."""
    if not isinstance(value, str) or not choices:
        return ""
    by_lower = {c.lower(): c for c in choices}
    close = difflib.get_close_matches(value.lower(), list(by_lower), n=1, cutoff=0.6)
    return f"; did you mean {by_lower[close[0]]!r}?" if close else ""


def _unknown_field(root: type[BaseModel] | None, loc: tuple[str | int, ...]) -> str:
    key = str(loc[-1])
    owner = _model_at(root, loc[:-1]) if root is not None else None
    if owner is None:
        return f"unknown field {key!r}"
    allowed = [f.alias or n for n, f in owner.model_fields.items()]
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    synonyms: dict[str, str] = getattr(owner, "_argument_synonyms", {})
    if key in synonyms:  # what Kubeflow or Kubernetes call it: `replicas` is `count` here
        close = [synonyms[key]]
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"unknown field {key!r}; {hint}allowed fields of {owner.__name__}: {', '.join(allowed)}"


def _model_at(cls: type[BaseModel], loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The model class found by following `loc` (wire names, list indices, map keys) from `cls`."""
    annotation: Any = cls
    for part in loc:
        annotation = _unwrap(annotation, part)
        if annotation is None:
            return None
    model = _as_model(annotation)
    return model


def _as_model(annotation: Any) -> type[BaseModel] | None:
    for candidate in _members(annotation):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _members(annotation: Any) -> list[Any]:
    origin = get_origin(annotation)
    if origin is Annotated:
        return _members(get_args(annotation)[0])
    if origin in (Union, UnionType):
        return [m for a in get_args(annotation) for m in _members(a)]
    return [annotation]


def _unwrap(annotation: Any, part: str | int) -> Any:
    for member in _members(annotation):
        if isinstance(member, type) and issubclass(member, BaseModel) and isinstance(part, str):
            for name, field in member.model_fields.items():
                if part in (name, field.alias):
                    return field.annotation
            continue
        origin = get_origin(member)
        if origin is list and isinstance(part, int):
            return get_args(member)[0]
        if origin is dict and isinstance(part, str):
            return get_args(member)[1]
    return None


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


_VALIDATOR_TAG = re.compile(r"function-(?:after|before|wrap|plain)\[.*, (\w+)\]")
_MEMBER_TAGS = {"constrained-int": "int", "constrained-str": "str"}
_UNION_TAGS = {"int": "an integer", "str": "a string", "bool": "true or false", "float": "a number"}


def _member(part: str | int) -> str | int:
    """A union member with a validator or bounds is tagged `function-after[f(), int]` or
    `constrained-int` in an error's location: `int`."""
    if not isinstance(part, str):
        return part
    m = _VALIDATOR_TAG.fullmatch(part)
    if m is not None:
        return m.group(1)
    return _MEMBER_TAGS.get(part, part)


def _merge_unions(errors: list[Any]) -> list[Any]:
    """A value that fails every member of `int | str` yields one error per member (with the
    member as the last element of `loc`); report it once: "expected an integer or a string".
    A value of the right type that fails that member's own check (an int beyond int64) is
    reported with that check's message alone."""
    normalized = []
    for err in errors:
        loc = tuple(_member(p) for p in err["loc"])
        normalized.append({**err, "loc": loc})
    checked = {
        e["loc"][:-1]
        for e in normalized
        if e["loc"] and e["loc"][-1] in _UNION_TAGS and not e["type"].endswith("_type")
    }
    merged: list[Any] = []
    by_loc: dict[tuple[Any, ...], Any] = {}
    for err in normalized:
        loc = err["loc"]
        if loc and loc[-1] in _UNION_TAGS and loc[:-1] in checked:
            if not err["type"].endswith("_type"):
                merged.append({**err, "loc": loc[:-1]})
            continue
        if loc and loc[-1] in _UNION_TAGS and err["type"].endswith("_type"):
            key = loc[:-1]
            if key in by_loc:
                by_loc[key]["_expected"].append(_UNION_TAGS[loc[-1]])
                continue
            entry = {**err, "loc": key, "_expected": [_UNION_TAGS[loc[-1]]]}
            by_loc[key] = entry
            merged.append(entry)
        else:
            merged.append(err)
    for entry in by_loc.values():
        entry["msg"] = "expected " + " or ".join(entry.pop("_expected"))
        entry["type"] = "union_type"
    return merged


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: set[tuple[str, str]] = set()
    out: list[Problem] = []
    for p in problems:
        if (p.path, p.message) not in seen:
            seen.add((p.path, p.message))
            out.append(p)
    return out
