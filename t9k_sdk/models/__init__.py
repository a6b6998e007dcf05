"""Wire models (L1): exact, frozen pydantic models of the T9k job kinds and what they embed.

Reach them module-qualified (`models.GenericJob`): the builders at the top of `t9k_sdk` carry the
same kind names. Every model validates at construction, dumps camelCase wire names, and keeps
`None` for absent fields.
"""

from typing import Annotated

from pydantic import Field

from t9k_sdk.models import core_v1, meta_v1
from t9k_sdk.models._base import INT64_MAX, INT64_MIN, K8sModel, K8sPassthroughModel
from t9k_sdk.models.batch_v1beta1 import *  # noqa: F403 - the module curates __all__
from t9k_sdk.models.batch_v1beta1 import (
    ColossalAIJob,
    ColossalAIJobList,
    DeepSpeedJob,
    DeepSpeedJobList,
    GenericJob,
    GenericJobList,
)
from t9k_sdk.models.batch_v1beta1 import __all__ as _batch_all

AnyJob = Annotated[GenericJob | DeepSpeedJob | ColossalAIJob, Field(discriminator="kind")]
"""Any of the three job kinds, told apart by `kind`."""

JOB_KINDS: dict[str, type[GenericJob] | type[DeepSpeedJob] | type[ColossalAIJob]] = {
    "GenericJob": GenericJob,
    "DeepSpeedJob": DeepSpeedJob,
    "ColossalAIJob": ColossalAIJob,
}
"""Job classes by kind."""

LIST_KINDS: dict[str, type[GenericJobList] | type[DeepSpeedJobList] | type[ColossalAIJobList]] = {
    "GenericJobList": GenericJobList,
    "DeepSpeedJobList": DeepSpeedJobList,
    "ColossalAIJobList": ColossalAIJobList,
}
"""List classes by kind."""

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "JOB_KINDS",
    "LIST_KINDS",
    "AnyJob",
    "K8sModel",
    "K8sPassthroughModel",
    "core_v1",
    "meta_v1",
    *_batch_all,
]
