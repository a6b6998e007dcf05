"""The T9k operator and a DeepSpeedJob in one stack; the job is created once the CRDs exist.

Usage: `pulumi up` (the release's operator image; `pulumi config set operatorImage ...` names another)
(README.md: every setting, and running it against the local test cluster).
"""

from typing import Any, cast

import pulumi

import t9k_sdk
from t9k_sdk.pulumi import AwaitPhase, DeepSpeedJob, DeepSpeedJobArgs, T9kOperator

config = pulumi.Config()

operator = T9kOperator(
    "t9k",
    {
        "image": config.require("operatorImage"),
        "namespace": config.require("operatorNamespace"),
    },
)

# For the local kwok test cluster only (docs/contributing/test-cluster.md): kwok runs no
# containers, and these annotations make its fake pods exit 0 after that many seconds.
simulate = config.get_int("simulateRunSeconds") or 0
template: dict[str, Any] | None = None
if simulate > 0:
    template = {"metadata": {"annotations": {"sim.t9k.dev/run-for": f"{simulate}s"}}}

job = t9k_sdk.DeepSpeedJob(
    name="bert",
    image=config.require("image"),
    workers=config.require_int("workers"),
    gpus_per_worker=config.require_int("gpusPerWorker"),
    run=["train.py", "--deepspeed_config", "ds_config.json", "--epochs", "3"],
    template=template,
)

args: DeepSpeedJobArgs = {
    "job": job,
    "namespace": config.require("namespace"),
    "operator": operator,  # created after the CRDs and the operator's Deployment
}
await_phase = config.require("awaitPhase")
if await_phase != "None":
    args["await_phase"] = cast(AwaitPhase, await_phase)  # the component checks the value
    args["timeout"] = "20m"
bert = DeepSpeedJob("bert", args)

pulumi.export("operatorNamespace", operator.namespace)
pulumi.export("name", bert.name)
pulumi.export("namespace", bert.namespace)
pulumi.export("phase", bert.phase)
