"""Fine-tuning a language model with DeepSpeed on two workers of four GPUs. Rendered to
manifests/deepspeedjob-llm-finetune.yaml."""

from t9k_sdk import DeepSpeedJob, EmptyDir

job = DeepSpeedJob(
    name="llm-finetune",
    image="registry.example.com/ml/deepspeed-finetune:0.15.0",
    workers=2,
    gpus_per_worker=4,
    cpu_per_worker=16,
    memory_per_worker="128Gi",
    run=["finetune.py", "--deepspeed_config", "ds_config.json"],
    volumes=[EmptyDir(mount_path="/dev/shm", medium="Memory", size_limit="32Gi")],
)
