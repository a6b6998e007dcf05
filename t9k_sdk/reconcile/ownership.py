"""Who owns an object, and what the job says when it cannot have a child (pure).

A job's children are the objects whose controller owner reference carries the job's **uid**.
Names and labels prove nothing: anyone who may create a Secret can name it `<job>-ssh` and copy
the operator's labels. So an object that has a name the job needs but another controller (or
none) is never used, changed or deleted; the job reports the conflict and waits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from t9k_sdk import _objects as o
from t9k_sdk.reconcile.types import ChildFailure

__all__ = ["conflict_message", "controller_uid", "failure_message", "owned_by"]


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    """The uid in `obj`'s controller owner reference, or None when it has no controller."""
    ref = o.meta(obj).controller
    return ref.uid if ref is not None else None


def owned_by(obj: Mapping[str, Any], uid: str) -> bool:
    """Whether `obj`'s controller owner reference carries `uid` (and so `obj` is a child)."""
    return controller_uid(obj) == uid


def conflict_message(kind: str, obj: Mapping[str, Any]) -> str:
    """What the job says about a foreign object that has the name one of its children needs."""
    meta = o.meta(obj)
    ref = meta.controller
    if ref is None:
        owner = "it has no controller owner"
    else:
        owner = f"it belongs to {ref.kind} {ref.name} (uid {ref.uid})"
    return f"{kind} {meta.name} exists but is not this job's: {owner}"


def failure_message(failure: ChildFailure) -> str:
    """What the job says about a create or update the API server refused."""
    detail = f": {failure.message}" if failure.message else ""
    return (
        f"Cannot {failure.action} {failure.kind} {failure.name}: the API server refused it"
        f" ({failure.status} {failure.reason}){detail}"
    )
