"""The data the pure reconcile core takes and returns. No I/O, no clock, no randomness here.

The operator (`t9k_operator`) observes the cluster, calls `reconcile(job, observed, now=...)`,
and carries out the `Plan` it gets back; `t9k-sdk plan` calls the same functions without a
cluster. Objects travel as plain camelCase dicts, exactly as the API server speaks them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["ChildFailure", "Deletion", "Event", "Manifest", "Observed", "Plan", "Update"]

Manifest = dict[str, Any]
"""A Kubernetes object as a camelCase dict."""


@dataclass(frozen=True)
class ChildFailure:
    """The API server refused to create or update one of a job's children, for a reason that
    retrying the same request will not fix (400, 403, 404, 413, 422: an invalid object, a quota or
    policy rejection, a missing API). The operator remembers it and shows it to the core, which
    puts it on the job."""

    action: Literal["create", "update"]
    kind: str
    name: str
    status: int
    """The HTTP status of the refusal."""
    reason: str
    """The server's reason (`Invalid`, `Forbidden`, ...)."""
    message: str
    """The server's message, quoted to the user as is."""


@dataclass(frozen=True)
class Observed:
    """What exists for one job, as the API server returned it (raw dicts).

    The job's children (controller owner reference with the job's uid), and objects that occupy
    a name the job needs but belong to someone else (another owner, or none). The core decides
    ownership by that uid alone (never by labels or names): it never updates, deletes, counts
    or mounts an object it does not own, and reports a conflict instead. Order does not matter.
    """

    pods: tuple[Mapping[str, Any], ...] = ()
    services: tuple[Mapping[str, Any], ...] = ()
    config_maps: tuple[Mapping[str, Any], ...] = ()
    secrets: tuple[Mapping[str, Any], ...] = ()
    pod_groups: tuple[Mapping[str, Any], ...] = ()
    workloads: tuple[Mapping[str, Any], ...] = ()
    """Kueue Workloads (`kueue.x-k8s.io/v1beta2`) of the job's namespace handed over."""
    kueue: bool | None = None
    """Whether the API server serves Kueue's Workloads (None: not known, as offline; a job that
    names a queue then gets its Workload planned as on a cluster that runs Kueue)."""
    flavors: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Kueue ResourceFlavor name -> its `spec` (node labels and tolerations for admitted pods)."""
    priorities: Mapping[str, int] | None = None
    """Kueue WorkloadPriorityClass name -> its value (None: not known, as offline; a job's
    Workload then gets no priority)."""
    ssh_key: tuple[str, str] | None = None
    """A fresh (private key PEM, public key OpenSSH) pair the shell generated, used only if the
    job needs an SSH secret and none exists yet (key generation is random, so it is an input)."""
    failures: tuple[ChildFailure, ...] = ()
    """Creates and updates the API server refused in earlier passes (and not yet done since)."""
    nodes: Mapping[str, Mapping[str, Any]] | None = None
    """The nodes the job's pods are bound to that exist, by name (their `status.conditions`
    at least); a pod whose node is not here has lost it. None: not known (offline, or an
    operator that may not read nodes): no pod is replaced for its node (`policies.lost_nodes`)."""
    node_lost_after: int = 300
    """Seconds a pod's node may be NotReady before the pod is replaced, for a job without the
    annotation `t9k-sdk.dev/node-lost-after` (the operator's `--node-lost-after`)."""


@dataclass(frozen=True)
class Update:
    """Replace an existing object with `manifest` (which carries its `resourceVersion`)."""

    manifest: Manifest
    reason: str
    subresource: Literal["status"] | None = None
    """"status": replace the object's status subresource (a Kueue Workload's, for example)."""


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
    after: str | None = None
    """The action this Event reports, as `"create Pod/<name>"` or `"delete Pod/<name>"`: the
    Event is recorded only if that action was carried out (a refused create claims nothing)."""


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
