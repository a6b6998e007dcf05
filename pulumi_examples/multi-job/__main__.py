"""Several jobs from stack config: one GenericJob per learning rate, and a ColossalAIJob.

Usage (README.md: every setting):
- `pulumi config set image registry.example.com/ml/train:1.2`, `... replicas 4`, `... namespace ml`
- `pulumi config set --path 'learningRates[0]' 0.001` (and `[1]`, ...; replaces the default list)
- `pulumi up`
"""

from typing import Any, cast

import pulumi
import pulumi_kubernetes as k8s

import t9k_sdk
from t9k_sdk.pulumi import AwaitPhase, ColossalAIJob, ColossalAIJobArgs, GenericJob, GenericJobArgs

config = pulumi.Config()
image = config.require("image")
replicas = config.require_int("replicas")
learning_rates = [str(lr) for lr in config.require_object("learningRates")]
await_phase = config.require("awaitPhase")

namespace: pulumi.Input[str] = config.require("namespace")
if config.get_bool("createNamespace"):
    ns = k8s.core.v1.Namespace("namespace", metadata={"name": namespace})
    namespace = ns.metadata.name  # the jobs wait for the namespace

# For the local kwok test cluster only (docs/contributing/test-cluster.md): kwok runs no
# containers, and these annotations make its fake pods exit 0 after that many seconds.
simulate = config.get_int("simulateRunSeconds") or 0
template: dict[str, Any] | None = None
if simulate > 0:
    template = {"metadata": {"annotations": {"sim.t9k.dev/run-for": f"{simulate}s"}}}


def awaited(args: GenericJobArgs | ColossalAIJobArgs) -> None:
    """Give a job the await settings of the stack."""
    if await_phase != "None":
        args["await_phase"] = cast(AwaitPhase, await_phase)  # the component checks the value
        args["timeout"] = "15m"


sweep = []
for index, lr in enumerate(learning_rates):
    job = t9k_sdk.GenericJob(
        name=f"sweep-{index}",
        labels={"sweep": "lr", "learning-rate": lr},
        replicas=[
            t9k_sdk.Replica(
                type="worker",
                count=replicas,
                image=image,
                command=["torchrun", "--nnodes=$(replicas[worker])", "--node-rank=$(rank)"],
                args=["train.py", f"--lr={lr}"],
                template=template,
            )
        ],
    )
    sweep_args: GenericJobArgs = {"job": job, "namespace": namespace}
    awaited(sweep_args)
    sweep.append(GenericJob(f"sweep-{index}", sweep_args))

finetune = t9k_sdk.ColossalAIJob(
    name="finetune",
    image=image,
    workers=replicas,
    script=["finetune.py", "--plugin=gemini"],
    # The launcher runs `colossalai run` over ssh on the workers; its exit ends the job.
    launcher=t9k_sdk.Launcher(template=template) if template else None,
)
finetune_args: ColossalAIJobArgs = {"job": finetune, "namespace": namespace}
awaited(finetune_args)
colossalai = ColossalAIJob("finetune", finetune_args)

pulumi.export("sweep", [job.name for job in sweep])
pulumi.export("sweepPhases", [job.phase for job in sweep])
pulumi.export("finetunePhase", colossalai.phase)
pulumi.export("namespace", colossalai.namespace)
