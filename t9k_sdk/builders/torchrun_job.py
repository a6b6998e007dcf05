"""`TorchrunJob` builder: PyTorch DDP with `torchrun` on N worker pods, as a GenericJob.

Kubeflow's PyTorchJob conventions on top of GenericJob: every worker pod gets MASTER_ADDR,
MASTER_PORT, WORLD_SIZE, RANK and torchrun's PET_* variables, and runs
`torchrun --nnodes=N --nproc_per_node=P --node_rank=R --master_addr=... --master_port=...`.
Worker 0 is the master (rank 0); the job succeeds when it succeeds. Every value is a GenericJob
variable the operator substitutes per pod (`$(rank)`, `$(service.worker[0].host)`), so no
runtime support beyond GenericJob is needed, and `t9k-sdk plan` shows the resolved values.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from t9k_sdk import models
from t9k_sdk.builders._common import (
    CleanUpPolicyArg,
    Resources,
    RestartPolicyArg,
    _Builder,
    _container_index,
    _free_form,
    _member,
    _settings,
    _TrainingContainer,
    _WorkerResources,
)
from t9k_sdk.errors import Problem
from t9k_sdk.models import core_v1
from t9k_sdk.models._base import Int

__all__ = ["TORCHRUN_ENV", "TorchrunJob"]

WORKER = "worker"
"""The replica type of the worker pods: pods and their services are `<job>-worker-<i>`."""

PORT_NAME = "torchrun"
"""Name of the rendezvous port on every worker's service."""

TORCHRUN_ENV = (
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
    "PET_NNODES",
    "PET_NPROC_PER_NODE",
    "PET_NODE_RANK",
)
"""The environment variables a TorchrunJob sets in every worker (so `env` may not set them)."""


class TorchrunJob(_Builder, _WorkerResources, _TrainingContainer):
    """PyTorch distributed training with `torchrun` on `workers` pods (a GenericJob).

    Worker `i` is pod and service `<name>-worker-<i>`; worker 0 is the master. Each worker runs
    `torchrun --nnodes=<workers> --nproc_per_node=<nproc> --node_rank=<i>
    --master_addr=<name>-worker-0 --master_port=<port> <run...>` and has, as Kubeflow's
    PyTorchJob sets them: MASTER_ADDR, MASTER_PORT, WORLD_SIZE (workers x nproc_per_node),
    RANK (the worker's index, 0 on the master) and PET_NNODES, PET_NPROC_PER_NODE,
    PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT. The job succeeds when worker 0 succeeds
    and fails when any worker fails for good.

    Exactly one of `run` (a script and its arguments) or `module` (`torchrun -m`) says what
    to start.

    Example:
        TorchrunJob(name="mnist", image="pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime",
                    workers=4, gpus_per_worker=2, run=["mnist.py", "--epochs=10"])
    """

    workers: Annotated[Int, Field(ge=1)] = 1
    """Number of worker pods (torchrun's nodes)."""
    run: list[str] | None = None
    """A Python script and its arguments: `torchrun ... train.py --epochs 3`."""
    module: list[str] | None = None
    """A Python module and its arguments: `torchrun ... -m package.train --epochs 3`."""
    nproc_per_node: Annotated[Int, Field(ge=1)] | None = None
    """Processes per worker pod; defaults to the GPUs of a worker (`gpus_per_worker`, or the
    nvidia.com/gpu of `resources`), or 1 without GPUs."""
    master_port: Annotated[Int, Field(ge=1, le=65535)] = 29500
    """Port the master (worker 0) listens on for the rendezvous."""
    torchrun_args: list[str] | None = None
    """More torchrun arguments, placed before the script, e.g. ["--max-restarts=3"]."""
    restart_policy: RestartPolicyArg | None = None
    """Always, OnFailure (the default), Never or ExitCode (restart on exit codes 128-255)."""
    restart_limit: Annotated[Int, Field(ge=0)] | None = None
    """How many times a worker pod may be restarted (default 0)."""
    clean_up_policy: CleanUpPolicyArg | None = None
    """Which pods to delete when the job finishes: None (default), Unfinished or All."""

    def _argument_problems(self) -> list[Problem]:
        problems = super()._argument_problems()
        given = [k for k in ("run", "module") if getattr(self, k) is not None]
        if len(given) != 1:
            problems.append(
                Problem(
                    "run",
                    "give exactly one of run= (a script and its arguments) or module= "
                    f"(a module and its arguments); got {' and '.join(given) or 'neither'}",
                )
            )
        elif not getattr(self, given[0]):
            problems.append(Problem(given[0], f"{given[0]}= is empty: name the script to start"))
        env = self.env
        names = env.keys() if isinstance(env, dict) else [e.name for e in env or ()]
        taken = sorted(set(names) & set(TORCHRUN_ENV), key=TORCHRUN_ENV.index)
        if taken:
            problems.append(
                Problem(
                    "env",
                    f"{', '.join(taken)} {'is' if len(taken) == 1 else 'are'} set by TorchrunJob "
                    f"for each worker; remove {'it' if len(taken) == 1 else 'them'} from env "
                    "(change workers, nproc_per_node or master_port instead)",
                )
            )
        return problems

    def _nproc(self) -> int:
        """`nproc_per_node`, else one process per GPU of a worker, else 1."""
        if self.nproc_per_node is not None:
            return self.nproc_per_node
        resources = self._worker_resources()
        if isinstance(resources, Resources):
            return resources.gpus or 1
        if resources is not None:
            gpus = (resources.limits or {}).get("nvidia.com/gpu")
            if isinstance(gpus, int) or (isinstance(gpus, str) and gpus.isdigit()):
                return int(gpus) or 1
        return 1

    def _command(self) -> list[str]:
        argv = [
            "torchrun",
            f"--nnodes={self.workers}",
            f"--nproc_per_node={self._nproc()}",
            "--node_rank=$(rank)",
            f"--master_addr=$(service.{WORKER}[0].host)",
            f"--master_port={self.master_port}",
            *(self.torchrun_args or ()),
        ]
        if self.module is not None:
            return [*argv, "-m", *self.module]
        return [*argv, *(self.run or ())]

    def _env(self) -> list[core_v1.EnvVar]:
        master = f"$(service.{WORKER}[0].host)"
        values = {
            "MASTER_ADDR": master,
            "MASTER_PORT": str(self.master_port),
            "WORLD_SIZE": str(self.workers * self._nproc()),
            "RANK": "$(rank)",
            "PET_MASTER_ADDR": master,
            "PET_MASTER_PORT": str(self.master_port),
            "PET_NNODES": str(self.workers),
            "PET_NPROC_PER_NODE": str(self._nproc()),
            "PET_NODE_RANK": "$(rank)",
        }
        return [core_v1.EnvVar.model_construct(name=k, value=values[k]) for k in TORCHRUN_ENV]

    def _argument_paths(self) -> dict[str, str]:
        worker = "spec.replicaSpecs[0]"
        code = "module" if self.module is not None else "run"
        return {
            **super()._argument_paths(),
            **self._pod_paths(f"{worker}.template", "", command=code, ports="master_port"),
            f"{worker}.replicas": "workers",
            f"{worker}.restartPolicy.policy": "restart_policy",
            f"{worker}.restartPolicy.limit": "restart_limit",
            "spec.service.ports": "master_port",
            "spec.cleanUpPolicy": "clean_up_policy",
        }

    def _manifest(self) -> models.GenericJob:
        template = self._template(
            command=self._command(),
            resources=self._worker_resources(),
            ports={PORT_NAME: self.master_port},
        )
        containers = template["spec"]["containers"]
        c = containers[_container_index(containers, self._container_name())]
        settings = core_v1.Container.model_construct(name=WORKER, env=self._env())
        ((key, env),) = _settings(settings).items()
        c[key] = [*env, *(c.get(key) or ())]
        policy = None
        if self.restart_policy is not None or self.restart_limit is not None:
            policy = models.RestartPolicy.model_construct(
                policy=_member(models.RestartPolicyType, self.restart_policy),
                limit=self.restart_limit,
            )
        spec = models.GenericJobSpec.model_construct(
            scheduler=self._scheduler(),
            run_mode=self._run_mode([WORKER]),
            service=models.ServiceOption.model_construct(
                ports=[core_v1.ServicePort.model_construct(name=PORT_NAME, port=self.master_port)]
            ),
            success_rules=[{WORKER: [0]}],
            clean_up_policy=_member(models.CleanUpPolicy, self.clean_up_policy),
            replica_specs=[
                models.ReplicaSpec.model_construct(
                    type=WORKER,
                    replicas=self.workers,
                    restart_policy=policy,
                    template=_free_form(template),
                )
            ],
        )
        return models.GenericJob.model_construct(metadata=self._metadata(), spec=spec)

    def build(self) -> models.GenericJob:
        """The wire model: a GenericJob."""
        job = self._built
        assert isinstance(job, models.GenericJob)
        return job
