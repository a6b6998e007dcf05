# GenericJob: MNIST trained by four data-parallel PyTorch workers with torchrun (DDP).
#
# Shows: `TorchrunJob`, the PyTorch builder on top of GenericJob: each worker pod runs
# `torchrun --nnodes=4 --nproc_per_node=1 --node_rank=<i> --master_addr=mnist-worker-0 ...` and
# gets MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK (a per-worker service makes worker 0
# reachable as `mnist-worker-0`); resources and a restart policy (a failed worker is restarted at
# most 3 times); the job succeeds when worker 0 (rank 0) has succeeded; and cleaning up the pods
# that are still running when the job ends.
#
#   t9k-sdk render examples/genericjob_mnist.py
#   t9k-sdk plan examples/genericjob_mnist.py     # the resolved env of every worker

from t9k_sdk import TorchrunJob
from t9k_sdk.models import CleanUpPolicy, RestartPolicyType

job = TorchrunJob(
    name="mnist",
    image="pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime",
    workers=4,
    run=["mnist.py", "--epochs=10"],
    working_dir="/workspace/mnist",
    cpu_per_worker=4,
    memory_per_worker="8Gi",
    gpus_per_worker=1,
    restart_policy=RestartPolicyType.ON_FAILURE,
    restart_limit=3,
    clean_up_policy=CleanUpPolicy.UNFINISHED,
)
