"""User code that must type-check under `mypy --strict`: documented strings for enum arguments,
floats for CPU, and copies that keep the builder's type."""

from __future__ import annotations

from t9k_sdk import (
    ColossalAIJob,
    DeepSpeedJob,
    GenericJob,
    Launcher,
    Replica,
    Resources,
    TorchrunJob,
    models,
)

worker = Replica(
    type="worker",
    count=2,
    image="pytorch/pytorch:2.4.0",
    command=["torchrun", "train.py"],
    restart_policy="ExitCode",
    resources=Resources(cpu=0.5, memory="2Gi", gpus=1),
)
job = GenericJob(name="mnist", replicas=[worker], clean_up_policy="Unfinished")
with_enum = GenericJob(name="mnist", replicas=[worker], clean_up_policy=models.CleanUpPolicy.ALL)
sweep: list[GenericJob] = [job.replace(name=f"mnist-lr{i}") for i in range(3)]
copied: GenericJob = job.model_copy(update={"name": "mnist-copy"})
bert = DeepSpeedJob(
    name="bert",
    image="deepspeed/deepspeed:v072_torch112_cu117",
    workers=2,
    cpu_per_worker=4,
    run=["train.py"],
    autotune="tune",
    restart_policy="Never",
    clean_up_policy="All",
)
policy: models.CleanUpPolicy | str | None = job.clean_up_policy
image: str = bert.image
mnist = TorchrunJob(
    name="mnist", image="pytorch/pytorch:2.4.0", run=["mnist.py"], restart_policy="Never",
    clean_up_policy="All",
)  # fmt: skip
palm = ColossalAIJob(
    name="palm", image="hpcaitech/colossalai:0.3.0", script=["train.py"], launcher=Launcher()
)
