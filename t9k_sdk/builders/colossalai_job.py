"""`ColossalAIJob` builder: a launcher runs `colossalai run` against N sshd workers."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from t9k_sdk import models
from t9k_sdk.builders._common import (
    Resources,
    RestartPolicyArg,
    _Builder,
    _Container,
    _free_form,
    _member,
    _TrainingContainer,
    _unless_empty,
    _WorkerResources,
)
from t9k_sdk.errors import Problem
from t9k_sdk.models import core_v1
from t9k_sdk.models._base import Int
from t9k_sdk.models._rules import (
    CAIJ_EXTRA_ARG,
    CAIJ_OWNED_ARG,
    CAIJ_SCRIPT,
    Msg,
    mount_problems,
)
from t9k_sdk.models.batch_v1beta1 import COLOSSALAI_OPERATOR_PATHS, colossalai_reserved_paths

__all__ = ["ColossalAIJob", "Launcher"]


class Launcher(_Container):
    """The launcher pod. Unset settings (image, working_dir, env) are taken from the job."""

    image: str | None = None
    """Container image of the launcher; by default the job's `image`."""
    resources: Resources | core_v1.ResourceRequirements | None = None
    """Resources of the launcher; it only starts the workers, so little is needed."""

    def _container_name(self) -> str:
        return "launcher"


class ColossalAIJob(_Builder, _WorkerResources, _TrainingContainer):
    """A ColossalAIJob: `<job>-launcher` runs `colossalai run` over ssh on `workers` pods.

    The workers run `script` from the launcher's working directory, so `working_dir` (applied to
    the launcher and the workers) must hold the script on the workers.

    Example:
        ColossalAIJob(name="palm", image="hpcaitech/colossalai:0.3.0", workers=2,
                      gpus_per_worker=4, script=["train.py", "--distplan=colossalai"],
                      working_dir="/workspace", volumes=[PVC(claim="code", mount_path="/workspace")])
    """

    script: Annotated[list[str], Field(min_length=1)]
    """The training script and its arguments, run on every worker."""
    _argument_synonyms: ClassVar[dict[str, str]] = {"replicas": "workers"}

    workers: Annotated[Int, Field(ge=1)] = 1
    """Number of worker pods."""
    proc_per_worker: Annotated[Int, Field(ge=1)] | None = None
    """Processes per worker (`--nproc_per_node`); defaults to `gpus_per_worker`, or 1."""
    extra_args: list[str] | None = None
    """More torchrun arguments."""
    launcher: Launcher | None = None
    """Launcher settings; by default it uses the job's image and working directory."""
    ssh_auth_mount_path: str | None = None
    """Where the SSH keys are mounted (default /root/.ssh)."""
    sshd_path: str | None = None
    """Absolute path of sshd in the image (default /usr/sbin/sshd)."""
    clean_up_workers: bool | None = None
    """Delete the workers when the job finishes (the launcher stays for its logs)."""
    restart_policy: RestartPolicyArg | None = None
    """Restart policy of the workers (ColossalAI cannot rejoin a restarted worker)."""

    def _argument_problems(self) -> list[Problem]:
        problems = super()._argument_problems()
        if not CAIJ_SCRIPT.fullmatch(self.script[0]):
            problems.append(Problem("script", f"{Msg.CAIJ_SCRIPT}; got {self.script[0]!r}"))
        for i, a in enumerate(self.extra_args or ()):
            if not CAIJ_EXTRA_ARG.fullmatch(a):
                problems.append(Problem(f"extra_args[{i}]", f"{Msg.CAIJ_EXTRA_ARGS}; got {a!r}"))
            elif CAIJ_OWNED_ARG.match(a):
                problems.append(
                    Problem(f"extra_args[{i}]", f"{Msg.CAIJ_EXTRA_ARGS_OWNED}; got {a!r}")
                )
        ssh_dir = self.ssh_auth_mount_path or str(models.SSHConfig.default_of("auth_mount_path"))
        if mount_problems([ssh_dir], COLOSSALAI_OPERATOR_PATHS):
            problems.append(
                Problem("ssh_auth_mount_path", f"{Msg.AUTH_MOUNT_PATH}; got {ssh_dir!r}")
            )
            return problems
        reserved = colossalai_reserved_paths(ssh_dir)
        for prefix, volumes in (
            ("volumes", self.volumes),
            ("launcher.volumes", self.launcher.volumes if self.launcher else None),
        ):
            problems += [
                Problem(f"{prefix}[{i}].mount_path", message)
                for i, message in mount_problems([v.mount_path for v in volumes or ()], reserved)
            ]
        return problems

    def _argument_paths(self) -> dict[str, str]:
        launcher, worker = "spec.replicaSpecs[0]", "spec.replicaSpecs[1]"
        return {
            **super()._argument_paths(),
            **self._launcher_pod()._pod_paths(f"{launcher}.template", "launcher."),
            **self._pod_paths(f"{worker}.template", ""),
            f"{worker}.replicas": "workers",
            f"{worker}.restartPolicy.policy": "restart_policy",
            "spec.torchConfig.procPerWorker": "proc_per_worker",
            "spec.torchConfig.script": "script*",
            "spec.torchConfig.extraArgs": "extra_args*",
            "spec.ssh.authMountPath": "ssh_auth_mount_path",
            "spec.ssh.sshdPath": "sshd_path",
            "spec.runPolicy.cleanUpWorkers": "clean_up_workers",
        }

    def _launcher_pod(self) -> Launcher:
        """The launcher's settings, with the job's where it has none."""
        launcher = self.launcher or Launcher()
        return launcher.model_copy(
            update={
                "image": launcher.image or self.image,
                "working_dir": launcher.working_dir or self.working_dir,
                "env": launcher.env if launcher.env is not None else self.env,
                "image_pull_policy": launcher.image_pull_policy or self.image_pull_policy,
            }
        )

    def _manifest(self) -> models.ColossalAIJob:
        launcher = self._launcher_pod()
        run_policy = None
        if self.clean_up_workers is not None:
            run_policy = models.ColossalAIRunPolicy.model_construct(
                clean_up_workers=self.clean_up_workers
            )
        workers_restart = None
        if self.restart_policy:
            workers_restart = models.RestartPolicy.model_construct(
                policy=_member(models.RestartPolicyType, self.restart_policy)
            )
        spec = models.ColossalAIJobSpec.model_construct(
            ssh=_unless_empty(
                models.SSHConfig.model_construct(
                    auth_mount_path=self.ssh_auth_mount_path, sshd_path=self.sshd_path
                )
            ),
            run_mode=self._run_mode(["launcher", "worker"]),
            run_policy=run_policy,
            scheduler=self._scheduler(),
            torch_config=models.TorchConfig.model_construct(
                proc_per_worker=self.proc_per_worker or (self.gpus_per_worker or None),
                script=self.script,
                extra_args=self.extra_args,
            ),
            replica_specs=[
                models.ColossalAIReplicaSpec.model_construct(
                    type=models.ColossalAIReplicaType.LAUNCHER,
                    replicas=1,
                    template=_free_form(launcher._template(resources=launcher.resources)),
                ),
                models.ColossalAIReplicaSpec.model_construct(
                    type=models.ColossalAIReplicaType.WORKER,
                    replicas=self.workers,
                    restart_policy=workers_restart,
                    template=_free_form(self._template(resources=self._worker_resources())),
                ),
            ],
        )
        return models.ColossalAIJob.model_construct(metadata=self._metadata(), spec=spec)

    def build(self) -> models.ColossalAIJob:
        """The wire model."""
        job = self._built
        assert isinstance(job, models.ColossalAIJob)
        return job
