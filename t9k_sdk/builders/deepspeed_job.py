"""`DeepSpeedJob` builder: N workers; worker-0 launches `deepspeed` over ssh."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from t9k_sdk import models
from t9k_sdk.builders._common import (
    AutotuneArg,
    CleanUpPolicyArg,
    RestartPolicyArg,
    _Builder,
    _free_form,
    _member,
    _Piece,
    _TrainingContainer,
    _unless_empty,
    _WorkerResources,
)
from t9k_sdk.errors import Problem
from t9k_sdk.models._base import Int
from t9k_sdk.models._rules import mount_problems
from t9k_sdk.models.batch_v1beta1 import DEEPSPEED_RESERVED_PATHS

__all__ = ["DeepSpeedJob", "Elastic"]


class Elastic(_Piece):
    """Elastic training: the job runs with `expected` workers, between `min` and `max`."""

    min: Annotated[Int, Field(ge=1)]
    """Fewest workers (fixed once created)."""
    max: Annotated[Int, Field(ge=1)]
    """Most workers (fixed once created)."""
    expected: Annotated[Int, Field(ge=1)] | None = None
    """Workers to run now; change it later to scale. Defaults to `workers`."""

    def _argument_problems(self) -> list[Problem]:
        problems = super()._argument_problems()
        if self.min > self.max:
            problems.append(Problem("max", f"must be at least min ({self.min}); got {self.max}"))
        elif self.expected is not None and not self.min <= self.expected <= self.max:
            problems.append(
                Problem(
                    "expected",
                    f"must be between min and max ({self.min}-{self.max}); got {self.expected}",
                )
            )
        return problems


class DeepSpeedJob(_Builder, _WorkerResources, _TrainingContainer):
    """A DeepSpeedJob: `workers` pods; worker-0 runs `deepspeed` and reaches the others over ssh.

    Exactly one of `run` (a Python script and its arguments), `module`, `exec` or
    `custom_command` says what to launch.

    Example:
        DeepSpeedJob(name="bert", image="...", workers=4, gpus_per_worker=8,
                     run=["train.py", "--deepspeed_config", "ds.json"])
    """

    _argument_synonyms: ClassVar[dict[str, str]] = {"replicas": "workers"}

    workers: Annotated[Int, Field(ge=1)] = 1
    """Number of worker pods."""
    run: list[str] | None = None
    """A Python script and its arguments: `deepspeed ... train.py --epochs 3`."""
    module: list[str] | None = None
    """A Python module and its arguments: `deepspeed --module ...`."""
    exec: list[str] | None = None
    """An executable and its arguments: `deepspeed --no_python ...`."""
    custom_command: str | None = None
    """A shell command that replaces the whole launch (the hostfile is still generated)."""
    slots_per_worker: Annotated[Int, Field(ge=1)] | None = None
    """Processes per worker; defaults to `gpus_per_worker`, or 1 without GPUs."""
    local_rank: bool | None = None
    """Pass --local_rank to the program (default true); false adds --no_local_rank."""
    autotune: AutotuneArg | None = None
    """DeepSpeed autotuning: none, tune or run."""
    other_args: list[str] | None = None
    """More `deepspeed` launcher arguments, e.g. ["--master_port=29600"]."""
    disable_custom_env: bool | None = None
    """Do not forward the container's environment to the training processes."""
    restart_policy: RestartPolicyArg | None = None
    """Always, OnFailure (default), Never or ExitCode."""
    backoff_limit: Annotated[Int, Field(ge=0)] | None = None
    """Restarts allowed before the job fails (default 3)."""
    active_deadline_seconds: Annotated[Int, Field(ge=1)] | None = None
    """Seconds the job may run before it is failed."""
    clean_up_policy: CleanUpPolicyArg | None = None
    """Which pods to delete when the job finishes: None (default), Unfinished or All."""
    elastic: Elastic | None = None
    """Elastic training bounds."""

    def _argument_problems(self) -> list[Problem]:
        problems = super()._argument_problems()
        given = [
            n for n in ("run", "module", "exec", "custom_command") if getattr(self, n) is not None
        ]
        if len(given) > 1:
            problems.append(
                Problem(
                    given[1], f"give only one of run, module, exec, custom_command; got {given}"
                )
            )
        if not given and not self.debug:
            problems.append(
                Problem(
                    "run",
                    "say what to launch: run=[script, args...], module=[...], exec=[...] or"
                    " custom_command='...' (or debug=True to start the workers without a program)",
                )
            )
        if self.custom_command is not None and not self.custom_command.strip() and not self.debug:
            problems.append(
                Problem(
                    "custom_command",
                    f"custom_command={self.custom_command!r} launches nothing: give the shell"
                    " command (an empty one is allowed only with debug=True)",
                )
            )
        for n in ("run", "module", "exec"):
            value = getattr(self, n)
            if value is not None and (not value or not value[0]) and not self.debug:
                problems.append(
                    Problem(
                        n,
                        f"{n}={value!r} launches nothing: give the script, module or program"
                        " first, e.g. run=['train.py', '--epochs', '3'] (an empty list is"
                        " allowed only with debug=True)",
                    )
                )
        elastic = self.elastic
        if elastic and elastic.expected is None and not elastic.min <= self.workers <= elastic.max:
            problems.append(
                Problem(
                    "workers",
                    f"must be between elastic min and max ({elastic.min}-{elastic.max}), or give"
                    f" elastic expected=; got {self.workers}",
                )
            )
        problems += [
            Problem(f"volumes[{i}].mount_path", message)
            for i, message in mount_problems(
                [v.mount_path for v in self.volumes or ()], DEEPSPEED_RESERVED_PATHS
            )
        ]
        return problems

    def _argument_paths(self) -> dict[str, str]:
        return {
            **super()._argument_paths(),
            **self._pod_paths("spec.worker.template", ""),
            "spec.worker.replicas": "workers",
            "spec.worker.restartPolicy": "restart_policy",
            "spec.config.run.python": "run*",
            "spec.config.run.module": "module*",
            "spec.config.run.exec": "exec*",
            "spec.config.customCommand": "custom_command",
            "spec.config.slotsPerWorker": "slots_per_worker",
            "spec.config.localRank": "local_rank",
            "spec.config.autotune": "autotune",
            "spec.config.otherArgs": "other_args*",
            "spec.disableCustomEnv": "disable_custom_env",
            "spec.runPolicy.backoffLimit": "backoff_limit",
            "spec.runPolicy.activeDeadlineSeconds": "active_deadline_seconds",
            "spec.runPolicy.cleanUpPolicy": "clean_up_policy",
            "spec.elastic": "elastic",
        }

    def _manifest(self) -> models.DeepSpeedJob:
        run = None
        if self.run is not None or self.module is not None or self.exec is not None:
            run = models.RunType.model_construct(
                python=self.run, module=self.module, exec=self.exec
            )
        config = models.Config.model_construct(
            custom_command=self.custom_command,
            slots_per_worker=self.slots_per_worker or (self.gpus_per_worker or None),
            local_rank=self.local_rank,
            autotune=_member(models.AutotuneType, self.autotune),
            run=run,
            other_args=self.other_args,
        )
        policy = models.DeepSpeedRunPolicy.model_construct(
            active_deadline_seconds=self.active_deadline_seconds,
            backoff_limit=self.backoff_limit,
            clean_up_policy=_member(models.CleanUpPolicy, self.clean_up_policy),
        )
        elastic = None
        if self.elastic is not None:
            elastic = models.ElasticConfig.model_construct(
                enabled=True,
                min_replicas=self.elastic.min,
                max_replicas=self.elastic.max,
                expected_replicas=self.elastic.expected or self.workers,
            )
        worker = models.Worker.model_construct(
            replicas=self.workers,
            template=_free_form(self._template(resources=self._worker_resources())),
            restart_policy=_member(models.RestartPolicyType, self.restart_policy),
        )
        spec = models.DeepSpeedJobSpec.model_construct(
            scheduler=self._scheduler(),
            run_policy=_unless_empty(policy),
            run_mode=self._run_mode(["worker"]),
            elastic=elastic,
            config=_unless_empty(config),
            disable_custom_env=self.disable_custom_env,
            worker=worker,
        )
        return models.DeepSpeedJob.model_construct(metadata=self._metadata(), spec=spec)

    def build(self) -> models.DeepSpeedJob:
        """The wire model."""
        job = self._built
        assert isinstance(job, models.DeepSpeedJob)
        return job
