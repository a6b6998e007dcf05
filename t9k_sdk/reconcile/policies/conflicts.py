"""Conflicts and refusals: what keeps a job from getting its children.

A foreign object (another owner, or none) holding a name the job needs blocks every new child of
the job: nothing is created until it is deleted or renamed, and the job says so (Running=False,
reason NameConflict, a Warning Event, Stalled=True). It is looked at again every
`CONFLICT_RECHECK_SECONDS`, as its removal wakes no watch of ours. A create or update the API
server refused for good (a quota, a policy, an invalid object) is reported the same way, with
the server's own message, while the pass still plans it.
"""

from __future__ import annotations

from collections.abc import Collection

from t9k_sdk import _objects as o
from t9k_sdk.reconcile import ownership
from t9k_sdk.reconcile.state import PassState

__all__ = ["CONFLICT_RECHECK_SECONDS", "find", "problem", "recheck"]

CONFLICT_RECHECK_SECONDS = 30.0
"""How often a job blocked by a foreign object looks again (its removal wakes no watch of ours)."""


def find(state: PassState, others: Collection[tuple[str, str]]) -> None:
    """Record the foreign objects that hold a name the job needs: its pods' and `others`'
    ((kind, name) of its other children). An unfinished job is blocked by them."""
    if not state.foreign:
        return
    needed = {("Pod", s.name) for s in state.slots} | set(others)
    state.conflicts = sorted(
        ((kind, obj) for kind, obj in state.foreign if (kind, o.meta(obj).name) in needed),
        key=lambda c: (c[0], o.meta(c[1]).name),
    )
    state.blocked = bool(state.conflicts) and not state.terminal
    for kind, obj in state.conflicts:
        state.notes.append(f"blocked: {ownership.conflict_message(kind, obj)}")


def recheck(state: PassState, requeue: float | None) -> float | None:
    """The requeue of a blocked job: at most `CONFLICT_RECHECK_SECONDS` away."""
    if not state.blocked:
        return requeue
    return min(requeue or CONFLICT_RECHECK_SECONDS, CONFLICT_RECHECK_SECONDS)


def problem(state: PassState) -> tuple[str, str] | None:
    """(reason, message) of what keeps the job from getting its children, if anything."""
    if state.blocked:
        found = "; ".join(ownership.conflict_message(k, obj) for k, obj in state.conflicts)
        return (
            "NameConflict",
            f"{found}. The job creates no more children until that object is deleted or"
            " renamed (or delete this job and create it with another name).",
        )
    planned = {("create", m["kind"], m["metadata"]["name"]) for m in state.create}
    planned |= {
        ("update", u.manifest["kind"], u.manifest["metadata"]["name"]) for u in state.update
    }
    failures = [
        f
        for f in sorted(state.observed.failures, key=lambda f: (f.kind, f.name))
        if (f.action, f.kind, f.name) in planned
    ]
    if not failures:
        return None
    reason = "CreateFailed" if failures[0].action == "create" else "UpdateFailed"
    return reason, "; ".join(ownership.failure_message(f) for f in failures)
