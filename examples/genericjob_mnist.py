# GenericJob: MNIST trained by four data-parallel PyTorch workers.
#
# Shows: one replica type with a count, resources and a restart policy (a failed worker is
# restarted at most 3 times); success and failure rules (the job succeeds when worker 0 has
# succeeded, and fails when worker 0 or worker 1 has failed for good); and cleaning up the pods
# that are still running when the job ends.
#
#   t9k-sdk render examples/genericjob_mnist.py

from t9k_sdk import GenericJob, Replica, Resources
from t9k_sdk.models import CleanUpPolicy, RestartPolicyType

job = GenericJob(
    name="mnist",
    replicas=[
        Replica(
            type="worker",
            count=4,
            image="pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime",
            command=["python", "mnist.py", "--epochs=10", "--rank=$(rank)"],
            working_dir="/workspace/mnist",
            resources=Resources(cpu=4, memory="8Gi", gpus=1),
            restart_policy=RestartPolicyType.ON_FAILURE,
            restart_limit=3,
        )
    ],
    success_rules=[{"worker": [0]}],
    failure_rules=[{"worker": [0]}, {"worker": [1]}],
    clean_up_policy=CleanUpPolicy.UNFINISHED,
)
