"""`K8sModel.edit()`: set fields deep inside a model, named by their paths in the manifest.

A path is what the SDK's errors print and what the YAML shows: wire names joined by dots, list
items by index (`spec.worker.template.spec.containers[0].image`, `-1` for the last), and a key
that holds dots in brackets and quotes (`resources.limits["nvidia.com/gpu"]`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from t9k_sdk.errors import InvalidManifestError, Problem, format_path
from t9k_sdk.models._base import K8sModel

__all__ = ["apply_changes"]

# a name (after a dot, but the first), an index, or a quoted key in brackets
_STEP = re.compile(
    r"""(?P<name>[^.\[\]"']+)|\[(?P<index>-?[0-9]+)\]|\[(?P<key>"(?:[^"\\]|\\.)*")\]"""
)

_SYNTAX = (
    'names joined by dots, [N] for a list\'s item (-1 for the last) and ["a.b"] for a key with'
    " dots, such as spec.worker.template.spec.containers[0].image"
)


def _error(subject: str, path: str, message: str) -> InvalidManifestError:
    return InvalidManifestError(subject, [Problem(path, message)])


def _parse(path: str, subject: str) -> list[str | int]:
    """The steps of a path: names and indexes. An `InvalidManifestError` when it is not one."""
    steps: list[str | int] = []
    at = 0
    while at < len(path):
        dotted = bool(steps) and path[at] == "."
        match = _STEP.match(path, at + dotted)
        if match is None or (steps and not dotted and match["name"] is not None):
            raise _error(subject, path, f"not a path at character {at + 1}; a path is {_SYNTAX}")
        if match["name"] is not None:
            steps.append(match["name"])
        elif match["index"] is not None:
            steps.append(int(match["index"]))
        else:
            steps.append(json.loads(match["key"]))
        at = match.end()
    if not steps:
        raise _error(subject, "", f"an empty path; a path is {_SYNTAX}")
    return steps


def _what(value: Any) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return f"{type(value).__name__} {value!r}"


def _set(data: dict[str, Any], path: str, value: Any, subject: str) -> None:
    """Set `value` at `path` in the wire dict `data`; None removes a key."""
    steps = _parse(path, subject)
    node: Any = data
    for depth, step in enumerate(steps):
        here = format_path(steps[:depth]) or "the object"
        last = depth == len(steps) - 1
        if isinstance(step, int):
            if not isinstance(node, list):
                raise _error(subject, path, f"{here} is {_what(node)}, not a list: [{step}]")
            if not -len(node) <= step < len(node):
                allowed = f"0 to {len(node) - 1}, or -1 for the last" if node else "none: empty"
                raise _error(
                    subject,
                    path,
                    f"{here} has {len(node)} items; index {step} is not one ({allowed})",
                )
            if last and value is None:
                raise _error(subject, path, "a list item cannot be None; set the list without it")
        elif isinstance(node, list):
            raise _error(
                subject, path, f"{here} is {_what(node)}: give an item's index, as in {here}[0]"
            )
        elif not isinstance(node, dict):
            raise _error(subject, path, f"{here} is {_what(node)}, which has no field {step!r}")
        elif step not in node and not last:
            if value is None:
                return  # nothing there to remove
            if isinstance(steps[depth + 1], int):
                raise _error(
                    subject,
                    path,
                    f"{format_path(steps[: depth + 1])} is not set; set the whole list first",
                )
            node[step] = {}
        if last:
            if value is None:
                if isinstance(step, str):
                    node.pop(step, None)
            else:
                node[step] = value
            return
        node = node[step]


def _wire(value: Any) -> Any:
    """A value to set, as its manifest form (a model becomes its wire dict)."""
    if isinstance(value, K8sModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        return {k: _wire(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_wire(v) for v in value]
    return value


def apply_changes(model: K8sModel, changes: Mapping[str, Any], subject: str) -> dict[str, Any]:
    """The wire dict of `model` with `changes` (path -> value) made, in order; an
    `InvalidManifestError` about `subject` for a path that is not one, or leads nowhere."""
    data: dict[str, Any] = model.model_dump(mode="json", exclude_none=True)
    for path, value in changes.items():
        if not isinstance(path, str):
            raise _error(subject, str(path), f"a path is a string ({_SYNTAX}); got {_what(path)}")
        _set(data, path, _wire(value), subject)
    return data
