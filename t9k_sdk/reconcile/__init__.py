"""The pure core of the operator: desired children and status from a job and what exists.

    reconcile(job_manifest, Observed(...), now=datetime) -> Plan
    desired_children(job) -> Children      (what `t9k-sdk plan` prints)

Nothing here performs I/O, reads the clock or draws random numbers: the operator
(`t9k_operator`) observes, calls these functions, and carries out the plan. They live in the SDK
so that `t9k-sdk plan` can show what the operator would create without a cluster, while the SDK
still never imports the operator.
"""

from t9k_sdk.reconcile.children import Children, desired_children
from t9k_sdk.reconcile.core import reconcile, restart_allowed
from t9k_sdk.reconcile.types import (
    ChildFailure,
    Deletion,
    Event,
    Manifest,
    Observed,
    Plan,
    Update,
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
