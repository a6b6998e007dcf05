# DeepSpeedJob: BERT pre-training on 4 workers with 8 GPUs each (32 GPUs in all).
#
# Shows: the run script and its arguments (worker-0 runs `deepspeed ... train.py` and reaches the
# other workers over ssh; slots per worker follow the GPUs), per-worker CPU and memory, a PVC
# with code and data, a larger /dev/shm (a memory-backed EmptyDir, needed by NCCL and data
# loaders), and gang scheduling in a T9k Scheduler queue with a priority.
#
#   t9k-sdk render examples/deepspeed_bert.py

from t9k_sdk import PVC, DeepSpeedJob, EmptyDir

job = DeepSpeedJob(
    name="bert",
    image="registry.example.com/t9k/deepspeed-bert:0.14.0",
    workers=4,
    gpus_per_worker=8,
    cpu_per_worker=32,
    memory_per_worker="256Gi",
    run=["train.py", "--epochs", "3", "--deepspeed_config", "ds_config.json"],
    working_dir="/workspace/bert",
    env={"NCCL_DEBUG": "INFO"},
    volumes=[
        PVC(claim="bert-workspace", mount_path="/workspace"),
        EmptyDir(mount_path="/dev/shm", medium="Memory", size_limit="64Gi"),
    ],
    queue="research",
    priority=80,
)
