"""The rules of each job kind, one module per kind, and the registry that finds them.

    rules_for(job) -> KindRules

`_base.py` holds what every kind shares (the `KindRules` interface, replica slots and groups,
child metadata and pods); `generic_job.py`, `deepspeed_job.py` and `colossalai_job.py` hold what
each kind adds (GenericJob's variables and finish rules; DeepSpeedJob's hostfile, launch
command, elastic resizing and outcome; ColossalAIJob's launcher). A new kind is a new module with
its `KindRules` subclass, registered in `_RULES` under the wire model of a kind of the kind
registry (`t9k_sdk._kinds.JOB_KINDS`): `RULES` follows the registry, and rules for a model that
no registered kind has are an error when this package is imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from t9k_sdk import _kinds, models
from t9k_sdk._kinds import AnyJob
from t9k_sdk.reconcile.kinds._base import KindRules, Mode, ReplicaGroup
from t9k_sdk.reconcile.kinds.colossalai_job import ColossalAIJobRules
from t9k_sdk.reconcile.kinds.deepspeed_job import DeepSpeedJobRules
from t9k_sdk.reconcile.kinds.generic_job import GenericJobRules

__all__ = ["RULES", "KindRules", "Mode", "ReplicaGroup", "rules_for"]

_RULES: Final[Mapping[type[AnyJob], type[KindRules]]] = {
    models.GenericJob: GenericJobRules,
    models.DeepSpeedJob: DeepSpeedJobRules,
    models.ColossalAIJob: ColossalAIJobRules,
}
"""The rules class of each kind's wire model: the registration of each kind module."""


def _registered(rules: Mapping[type[AnyJob], type[KindRules]]) -> Mapping[str, type[KindRules]]:
    """`rules` by kind, in the order of the kind registry; ValueError for rules of a model that
    no registered kind has."""
    unknown = [model.__name__ for model in rules if model not in _kinds.MODELS]
    if unknown:
        raise ValueError(
            f"kind rules for {', '.join(unknown)}, which t9k_sdk._kinds.JOB_KINDS does not"
            " register"
        )
    return {k.kind: rules[k.model] for k in _kinds.JOB_KINDS if k.model in rules}


RULES: Final[Mapping[str, type[KindRules]]] = _registered(_RULES)
"""The rules class of each job kind, by `kind`, in the order of the kind registry."""


def rules_for(job: AnyJob) -> KindRules:
    """The kind rules of a job."""
    return RULES[job.kind](job)
