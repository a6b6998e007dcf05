"""The data the pure reconcile core takes and returns. No I/O, no clock, no randomness here.

The operator (`t9k_operator`) observes the cluster, calls `reconcile(job, observed, now=...)`,
and carries out the `Plan` it gets back; `t9k-sdk plan` calls the same functions without a
cluster. Objects travel as plain camelCase dicts, exactly as the API server speaks them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Deletion", "Event", "Manifest", "Observed", "Plan", "Update"]

Manifest = dict[str, Any]
"""A Kubernetes object as a camelCase dict."""


@dataclass(frozen=True)
class Observed:
    """What exists for one job, as the API server returned it (raw dicts).

    Only objects controlled by the job (controller owner reference with the job's uid) belong
    here; the operator filters them. Order does not matter.
    """

    pods: tuple[Mapping[str, Any], ...] = ()
    services: tuple[Mapping[str, Any], ...] = ()
    config_maps: tuple[Mapping[str, Any], ...] = ()
    secrets: tuple[Mapping[str, Any], ...] = ()
    pod_groups: tuple[Mapping[str, Any], ...] = ()
    ssh_key: tuple[str, str] | None = None
    """A fresh (private key PEM, public key OpenSSH) pair the shell generated, used only if the
    job needs an SSH secret and none exists yet (key generation is random, so it is an input)."""


@dataclass(frozen=True)
class Update:
    """Replace an existing object with `manifest` (which carries its `resourceVersion`)."""

    manifest: Manifest
    reason: str


@dataclass(frozen=True)
class Deletion:
    """Delete one object. `uid` is a precondition: never delete a newer object of that name."""

    api_version: str
    kind: str
    name: str
    uid: str | None
    reason: str
    grace_period_seconds: int | None = None
    """None: the object's own grace period (graceful, as for pause); 0: at once."""


@dataclass(frozen=True)
class Event:
    """A Kubernetes Event to record on the job, after the status write succeeded."""

    type: Literal["Normal", "Warning"]
    reason: str
    message: str


@dataclass(frozen=True)
class Plan:
    """What one reconcile pass wants done, in this order: status, deletes, updates, creates."""

    status: dict[str, Any] | None = None
    """The job's complete new `status`, or None when it is unchanged (then nothing is written)."""
    delete: tuple[Deletion, ...] = ()
    update: tuple[Update, ...] = ()
    create: tuple[Manifest, ...] = ()
    """Objects to create (AlreadyExists means a previous pass created it: not an error)."""
    events: tuple[Event, ...] = ()
    requeue_after: float | None = None
    """Seconds after which to reconcile again even without a change (deadlines, timeouts)."""
    finished: bool = False
    """The job reached a final phase; nothing more will happen unless it is changed."""
    notes: tuple[str, ...] = field(default=())
    """Human-readable lines for logs (why each action is taken)."""
