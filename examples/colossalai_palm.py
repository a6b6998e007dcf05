# ColossalAIJob: PaLM trained with ColossalAI on 2 workers with 4 GPUs each.
#
# Shows: the launcher (a small pod that runs `colossalai run` and reaches the workers over ssh)
# with its own resources, the workers running the script from working_dir (so the PVC holding
# the code is mounted on every worker), and clean_up_workers, which deletes the workers when the
# job ends and keeps the launcher for its logs.
#
#   t9k-sdk render examples/colossalai_palm.py

from t9k_sdk import PVC, ColossalAIJob, Launcher, Resources

job = ColossalAIJob(
    name="palm",
    image="hpcaitech/colossalai:0.3.0",
    workers=2,
    gpus_per_worker=4,
    cpu_per_worker=16,
    memory_per_worker="64Gi",
    script=["train.py", "--distplan=colossalai", "--tp_degree=2"],
    working_dir="/workspace/palm",
    volumes=[PVC(claim="palm-code", mount_path="/workspace")],
    launcher=Launcher(resources=Resources(cpu=1, memory="2Gi")),
    clean_up_workers=True,
)
