"""`GenericJob` builder: any set of replica types, with success and failure rules."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field

from t9k_sdk import codecs, models
from t9k_sdk.builders._common import (
    CleanUpPolicyArg,
    Resources,
    RestartPolicyArg,
    _Builder,
    _free_form,
    _member,
    _TrainingContainer,
)
from t9k_sdk.models import core_v1
from t9k_sdk.models._base import Int

__all__ = ["GenericJob", "Replica"]


class Replica(_TrainingContainer):
    """One replica type of a GenericJob: `count` pods named `<job>-<type>-<index>`.

    Example:
        Replica(type="worker", count=4, image="pytorch/pytorch:2.4.0",
                command=["torchrun", "train.py"], resources=Resources(gpus=8))
    """

    _argument_synonyms: ClassVar[dict[str, str]] = {"replicas": "count"}

    type: str
    """Replica type, e.g. master, worker, ps: part of the pod names."""
    count: Annotated[Int, Field(ge=0)] = 1
    """Number of replicas of this type."""
    command: list[str] | None = None
    """Command of the training container. `$(type)`, `$(rank)`, `$(replicas[t])`,
    `$(service.t[i].host)` and `$(service.port[name])` are substituted by the operator."""
    args: list[str] | None = None
    """Arguments of the training container (same substitutions)."""
    resources: Resources | core_v1.ResourceRequirements | None = None
    """Compute resources of each replica."""
    ports: dict[str, int] | None = None
    """Named container ports, e.g. {"http": 8080}."""
    restart_policy: RestartPolicyArg | None = None
    """Always, OnFailure (the default), Never or ExitCode (restart on exit codes 128-255)."""
    restart_limit: Annotated[Int, Field(ge=0)] | None = None
    """How many times a replica may be restarted (default 0)."""
    container_name: str | None = None
    """Name of the training container; defaults to the replica type."""

    def build(self) -> models.ReplicaSpec:
        """The wire replica spec."""
        return models.ReplicaSpec.model_validate(codecs.to_wire(self._wire()))

    def _container_name(self) -> str:
        return self.container_name or self.type

    def _replica_paths(self, wire: str, argument: str) -> dict[str, str]:
        """`_Builder._argument_paths` of this replica at `wire`, arguments under `argument`."""
        name = "container_name" if self.container_name else "type"
        return {
            **self._pod_paths(
                f"{wire}.template",
                argument,
                command="command*",
                args="args*",
                ports="ports",
                name=name,
            ),
            f"{wire}.type": f"{argument}type",
            f"{wire}.replicas": f"{argument}count",
            f"{wire}.restartPolicy.policy": f"{argument}restart_policy",
            f"{wire}.restartPolicy.limit": f"{argument}restart_limit",
        }

    def _wire(self) -> models.ReplicaSpec:
        """The replica spec, unvalidated (see `_Builder._manifest`)."""
        policy = None
        if self.restart_policy is not None or self.restart_limit is not None:
            policy = models.RestartPolicy.model_construct(
                policy=_member(models.RestartPolicyType, self.restart_policy),
                limit=self.restart_limit,
            )
        template = self._template(
            command=self.command,
            args=self.args,
            resources=self.resources,
            ports=self.ports,
        )
        return models.ReplicaSpec.model_construct(
            type=self.type,
            replicas=self.count,
            restart_policy=policy,
            template=_free_form(template),
        )


class GenericJob(_Builder):
    """A GenericJob: a general-purpose distributed job made of replica types.

    Example:
        GenericJob(
            name="mnist",
            replicas=[Replica(type="worker", count=4, image="...", command=["python", "train.py"])],
            success_rules=[{"worker": [0]}],
        )
    """

    _argument_synonyms: ClassVar[dict[str, str]] = {
        "replica_specs": "replicas",
        "replicaSpecs": "replicas",
    }

    replicas: Annotated[list[Replica], Field(min_length=1)]
    """The replica types, in order."""
    success_rules: list[dict[str, list[int]]] | None = None
    """The job succeeds when every replica of any one rule succeeded; default: all replicas."""
    failure_rules: list[dict[str, list[int]]] | None = None
    """The job fails when every replica of any one rule failed; default: any replica."""
    service_ports: dict[str, int] | list[core_v1.ServicePort] | None = None
    """Create a service per replica (named like its pod) exposing these ports."""
    clean_up_policy: CleanUpPolicyArg | None = None
    """Which pods to delete when the job finishes: None (default), Unfinished or All."""

    def _argument_paths(self) -> dict[str, str]:
        paths = {
            **super()._argument_paths(),
            "spec.successRules": "success_rules*",
            "spec.failureRules": "failure_rules*",
            "spec.service.ports": "service_ports",
            "spec.cleanUpPolicy": "clean_up_policy",
        }
        for i, r in enumerate(self.replicas):
            paths |= r._replica_paths(f"spec.replicaSpecs[{i}]", f"replicas[{i}].")
        return paths

    def _manifest(self) -> models.GenericJob:
        service = None
        if self.service_ports is not None:
            ports = (
                [
                    core_v1.ServicePort.model_construct(name=n, port=p)
                    for n, p in self.service_ports.items()
                ]
                if isinstance(self.service_ports, dict)
                else self.service_ports
            )
            service = models.ServiceOption.model_construct(ports=ports)
        spec = models.GenericJobSpec.model_construct(
            scheduler=self._scheduler(),
            run_mode=self._run_mode([r.type for r in self.replicas]),
            service=service,
            success_rules=_finish_rules(self.success_rules),
            failure_rules=_finish_rules(self.failure_rules),
            clean_up_policy=_member(models.CleanUpPolicy, self.clean_up_policy),
            replica_specs=[r._wire() for r in self.replicas],
        )
        return models.GenericJob.model_construct(metadata=self._metadata(), spec=spec)

    def build(self) -> models.GenericJob:
        """The wire model."""
        job = self._built
        assert isinstance(job, models.GenericJob)
        return job


def _finish_rules(rules: list[dict[str, list[int]]] | None) -> list[models.FinishRule] | None:
    """Success or failure rules as the wire types them (where an index may also be a string)."""
    return None if rules is None else [{t: list[int | str](i) for t, i in r.items()} for r in rules]
