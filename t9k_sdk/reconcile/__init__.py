"""The pure core of the operator: desired children and status from a job and what exists.

    reconcile(job_manifest, Observed(...), now=datetime) -> Plan
    desired_children(job) -> Children      (what `t9k-sdk plan` prints)

Nothing here performs I/O, reads the clock or draws random numbers: the operator
(`t9k_operator`) observes, calls these functions, and carries out the plan. They live in the SDK
so that `t9k-sdk plan` can show what the operator would create without a cluster, while the SDK
still never imports the operator.

The names below are imported from their modules on first use, so a module that needs one part
(`t9k_sdk.validation` reads `bootstrap`'s limits) does not load the whole core.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from t9k_sdk._lazy_names import lazy_names

if TYPE_CHECKING:
    from t9k_sdk.reconcile.children import Children, desired_children
    from t9k_sdk.reconcile.core import reconcile
    from t9k_sdk.reconcile.policies.restart import restart_allowed
    from t9k_sdk.reconcile.types import (
        ChildFailure,
        Deletion,
        Event,
        Manifest,
        Observed,
        Plan,
        Update,
    )

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_names(
        __name__,
        globals(),
        {
            "reconcile": "t9k_sdk.reconcile.core",
            "restart_allowed": "t9k_sdk.reconcile.policies.restart",
            "Children": "t9k_sdk.reconcile.children",
            "desired_children": "t9k_sdk.reconcile.children",
            **dict.fromkeys(
                ("ChildFailure", "Deletion", "Event", "Manifest", "Observed", "Plan", "Update"),
                "t9k_sdk.reconcile.types",
            ),
        },
    )

__all__ = [
    "ChildFailure",
    "Children",
    "Deletion",
    "Event",
    "Manifest",
    "Observed",
    "Plan",
    "Update",
    "desired_children",
    "reconcile",
    "restart_allowed",
]
