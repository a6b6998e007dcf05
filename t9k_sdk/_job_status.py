"""The wire shape of a T9k job's `status.tasks`, written once.

The operator's core writes these entries (`t9k_sdk.reconcile`), the readers of `t9k_sdk._objects`
read them (and through them the client and the CLI), and mypy checks both against the same keys.
The wire models (`models.Tasks`, `models.ReplicaStatus`, `models.ContainerStatus`) describe the
same fields to users and to the CRD; a test keeps them in step with this shape.

Entries read back from the API server may have been written by anyone: the readers in
`_objects` still check each value's type.
"""

from __future__ import annotations

from typing import Required, TypedDict

__all__ = ["ContainerEntry", "ReplicaEntry", "TaskEntry"]


class ContainerEntry(TypedDict, total=False):
    """`status.tasks[].replicas[].containers[]`: one container's state."""

    name: Required[str]
    state: Required[str]
    """`Running`, `Waiting`, `Terminated` or `Unknown`."""
    exitCode: int
    reason: str
    message: str


class ReplicaEntry(TypedDict, total=False):
    """`status.tasks[].replicas[]`: a replica slot and what its pod did."""

    name: Required[str]
    uid: str
    phase: Required[str]
    containers: list[ContainerEntry]
    restartCount: int
    """The replica's own restarts (absent while 0)."""


class TaskEntry(TypedDict, total=False):
    """`status.tasks[]`: a replica type, its restarts and its replicas."""

    type: Required[str]
    restartCount: Required[int]
    replicas: list[ReplicaEntry]
