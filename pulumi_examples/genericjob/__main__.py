"""A GenericJob with two workers running a training script (README.md: settings, running).

Usage: `pulumi config set namespace ml` (optional), then `pulumi up`.
"""

from typing import Any, cast

import pulumi

import t9k_sdk
from t9k_sdk.pulumi import AwaitPhase, GenericJob, GenericJobArgs

config = pulumi.Config()
image = config.require("image")
workers = config.require_int("workers")
namespace = config.get("namespace")
await_phase = config.require("awaitPhase")

# For the local kwok test cluster only (docs/contributing/test-cluster.md): kwok runs no
# containers, and these annotations make its fake pods exit 0 after that many seconds.
simulate = config.get_int("simulateRunSeconds") or 0
template: dict[str, Any] | None = None
if simulate > 0:
    template = {"metadata": {"annotations": {"sim.t9k.dev/run-for": f"{simulate}s"}}}

job = t9k_sdk.GenericJob(
    name="mnist",
    replicas=[
        t9k_sdk.Replica(
            type="worker",
            count=workers,
            image=image,
            command=["torchrun", "--nnodes=$(replicas[worker])", "--node-rank=$(rank)", "train.py"],
            resources=t9k_sdk.Resources(cpu=2, memory="4Gi"),
            template=template,
        )
    ],
    # The job succeeds when worker 0 has; it fails as soon as any worker fails (the default).
    success_rules=[{"worker": [0]}],
)

args: GenericJobArgs = {"job": job}
if namespace:
    args["namespace"] = namespace
if await_phase != "None":
    args["await_phase"] = cast(AwaitPhase, await_phase)  # the component checks the value
    args["timeout"] = "10m"
mnist = GenericJob("mnist", args)

pulumi.export("name", mnist.name)
pulumi.export("namespace", mnist.namespace)
pulumi.export("uid", mnist.uid)
pulumi.export("phase", mnist.phase)
