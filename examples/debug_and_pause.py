# Run modes: start a job in debug mode, or created paused and resumed later.
#
# Shows: `debug=True` (pods start with the training command replaced, `sleep inf` for a
# GenericJob and the job's own sshd set-up for a DeepSpeedJob, so you can exec into worker-0 and
# run `deepspeed` by hand); a Debug that skips the init containers (a Debug(command=[...]) would
# replace sshd too); and `paused=True` with a Resume that runs a
# different command when the job is resumed (set spec.runMode.pause.enabled to false).
#
#   t9k-sdk render examples/debug_and_pause.py

from t9k_sdk import Debug, DeepSpeedJob, GenericJob, Replica, Resume

IMAGE = "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime"
worker = Replica(type="worker", count=2, image=IMAGE, command=["python", "train.py"])

jobs = [
    GenericJob(name="train-debug", replicas=[worker], debug=True),
    DeepSpeedJob(
        name="ds-debug",
        image="registry.example.com/t9k/deepspeed-bert:0.14.0",
        workers=2,
        gpus_per_worker=1,
        run=["train.py"],
        debug=Debug(skip_init_containers=True),
    ),
    GenericJob(
        name="train-paused",
        replicas=[worker],
        paused=True,
        resume={"worker": Resume(command=["python", "train.py", "--resume=latest"])},
    ),
]
