# DeepSpeedJob: elastic GPT training that can run on 2 to 8 workers.
#
# Shows: Elastic bounds (min and max are fixed once the job exists; change
# spec.elastic.expectedReplicas later to scale it, and the launch restarts from the last
# checkpoint on the new set of workers), a module to run instead of a script, extra `deepspeed`
# launcher arguments, and a deadline and backoff limit for the whole job.
#
#   t9k-sdk render examples/deepspeed_elastic.py

from t9k_sdk import PVC, DeepSpeedJob, Elastic

job = DeepSpeedJob(
    name="gpt-elastic",
    image="registry.example.com/t9k/deepspeed-gpt:0.14.0",
    workers=4,
    elastic=Elastic(min=2, max=8),
    gpus_per_worker=4,
    module=["gpt.train", "--resume-from=/workspace/checkpoints/latest"],
    other_args=["--master_port=29600"],
    volumes=[PVC(claim="gpt-workspace", mount_path="/workspace")],
    backoff_limit=5,
    active_deadline_seconds=7 * 24 * 3600,
)
