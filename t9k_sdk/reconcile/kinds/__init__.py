"""The rules of each job kind, one module per kind, and the registry that finds them.

    rules_for(job) -> KindRules

`_base.py` holds what every kind shares (the `KindRules` interface, replica slots and groups,
child metadata and pods); `generic_job.py`, `deepspeed_job.py` and `colossalai_job.py` hold what
each kind adds (GenericJob's variables and finish rules; DeepSpeedJob's hostfile, launch
command, elastic resizing and outcome; ColossalAIJob's launcher). A new kind is a new module with
its `KindRules` subclass, registered in `RULES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from t9k_sdk.codecs import AnyJob
from t9k_sdk.reconcile.kinds._base import KindRules, Mode, ReplicaGroup
from t9k_sdk.reconcile.kinds.colossalai_job import ColossalAIJobRules
from t9k_sdk.reconcile.kinds.deepspeed_job import DeepSpeedJobRules
from t9k_sdk.reconcile.kinds.generic_job import GenericJobRules

__all__ = ["RULES", "KindRules", "Mode", "ReplicaGroup", "rules_for"]

RULES: Final[Mapping[str, type[KindRules]]] = {
    "GenericJob": GenericJobRules,
    "DeepSpeedJob": DeepSpeedJobRules,
    "ColossalAIJob": ColossalAIJobRules,
}
"""The rules class of each job kind, by `kind`."""


def rules_for(job: AnyJob) -> KindRules:
    """The kind rules of a job."""
    return RULES[job.kind](job)
