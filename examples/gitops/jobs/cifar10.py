"""CIFAR-10 with ResNet-18 on two PyTorch workers (torchrun, DDP). Rendered to
manifests/genericjob-cifar10-resnet.yaml by `t9k-sdk render jobs/ --out-dir manifests
--kustomization --prune` (run from examples/gitops/)."""

from t9k_sdk import TorchrunJob
from t9k_sdk.models import CleanUpPolicy

job = TorchrunJob(
    name="cifar10-resnet",
    image="pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime",
    workers=2,
    run=["train.py", "--model=resnet18", "--epochs=30"],
    working_dir="/workspace/cifar10",
    cpu_per_worker=4,
    memory_per_worker="16Gi",
    gpus_per_worker=1,
    # the pods still running when the job ends are deleted; the job object stays (see the guide)
    clean_up_policy=CleanUpPolicy.UNFINISHED,
)
