"""Pulumi components for T9k jobs and the operator (extra `[pulumi]`).

    import t9k_sdk
    from t9k_sdk.pulumi import DeepSpeedJob, T9kOperator

    op = T9kOperator("t9k", {"image": "registry.example/t9k-operator:0.1.0"})
    job = t9k_sdk.DeepSpeedJob(name="bert", image="...", workers=4, run=["train.py"])
    DeepSpeedJob("bert", {"job": job, "operator": op, "await_phase": "Running"})

A value another resource produces (an image built in the same stack, say) goes into every
string argument of the components as it is (they take `pulumi.Input[str]`), and into any string
field of a builder as a `pulumi.Output`, or through `deferred(output)` where it must type-check
as `str`; the components resolve and validate it at `up`.

Only this package imports `pulumi` and `pulumi_kubernetes`; the rest of t9k_sdk never does. See
docs/how-to/pulumi.md for awaiting, the update-or-replace table and the examples.
"""

from t9k_sdk.pulumi._args import InvalidOutputArgumentError
from t9k_sdk.pulumi._jobs import (
    DEFAULT_TIMEOUT,
    REPLACE_ON_CHANGES,
    AwaitPhase,
    ColossalAIJob,
    ColossalAIJobArgs,
    DeepSpeedJob,
    DeepSpeedJobArgs,
    GenericJob,
    GenericJobArgs,
    InvalidJobOutputError,
    JobFailedError,
    parse_timeout,
)
from t9k_sdk.pulumi._operator import T9kOperator, T9kOperatorArgs
from t9k_sdk.pulumi._outputs import deferred

__all__ = [
    "DEFAULT_TIMEOUT",
    "REPLACE_ON_CHANGES",
    "AwaitPhase",
    "ColossalAIJob",
    "ColossalAIJobArgs",
    "DeepSpeedJob",
    "DeepSpeedJobArgs",
    "GenericJob",
    "GenericJobArgs",
    "InvalidJobOutputError",
    "InvalidOutputArgumentError",
    "JobFailedError",
    "T9kOperator",
    "T9kOperatorArgs",
    "deferred",
    "parse_timeout",
]
