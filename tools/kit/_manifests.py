"""Manifests for the local control plane, whose nodes are kwok's: jobs of the three kinds and
bare pods, with the `sim.t9k.dev/*` annotations that make kwok end a pod (tools/kwok/stages.yaml).

    generic_job("a", replica("worker", 2, annotations=finish(code=1, after="3s")))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubernetes import client

from t9k_sdk import models

# Annotations read by the pod-finish stage in tools/kwok/stages.yaml.
RUN_FOR = "sim.t9k.dev/run-for"
EXIT_CODE = "sim.t9k.dev/exit-code"
REASON = "sim.t9k.dev/reason"

IMAGE = "example.invalid/t9k:sim"
"""kwok never pulls an image: any name will do."""
OWNER_LABEL = "tensorstack.dev/owner-name"
"""The label the operator puts on a job's pods (its value: the job's name)."""


def pod(
    name: str,
    annotations: dict[str, str] | None = None,
    containers: tuple[str, ...] = ("main",),
    init_containers: tuple[str, ...] = (),
    limits: dict[str, str] | None = None,
    owner: client.V1OwnerReference | None = None,
) -> client.V1Pod:
    """A pod for a kwok node: the image is never pulled, so any name will do."""

    def container(cname: str, res: dict[str, str] | None) -> client.V1Container:
        resources = client.V1ResourceRequirements(limits=res) if res else None
        return client.V1Container(name=cname, image=IMAGE, resources=resources)

    return client.V1Pod(
        metadata=client.V1ObjectMeta(
            name=name,
            annotations=annotations,
            owner_references=[owner] if owner is not None else None,
        ),
        spec=client.V1PodSpec(
            restart_policy="Never",
            containers=[container(c, limits) for c in containers],
            init_containers=[container(c, None) for c in init_containers] or None,
        ),
    )


def finish(code: int = 0, after: str = "1s", reason: str | None = None) -> dict[str, str]:
    """kwok annotations: the pod runs for `after`, then every container exits with `code`."""
    out = {RUN_FOR: after, EXIT_CODE: str(code)}
    if reason is not None:
        out[REASON] = reason
    return out


def container(
    name: str = "worker", command: list[str] | None = None, **extra: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "image": IMAGE}
    if command is not None:
        out["command"] = command
    out.update(extra)
    return out


def template(
    *containers: dict[str, Any],
    annotations: Mapping[str, str] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers) or [container()]}
    if init_containers:
        spec["initContainers"] = init_containers
    out: dict[str, Any] = {"spec": spec}
    if annotations:
        out["metadata"] = {"annotations": dict(annotations)}
    return out


def replica(
    type_: str,
    count: int = 1,
    *,
    annotations: Mapping[str, str] | None = None,
    command: list[str] | None = None,
    restart: tuple[str, int] | None = None,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A GenericJob replica spec; `restart` is (policy, limit)."""
    cs = containers or [container("worker", command or ["train", "--rank=$(rank)"])]
    out: dict[str, Any] = {
        "type": type_,
        "replicas": count,
        "template": template(*cs, annotations=annotations, init_containers=init_containers),
    }
    if restart is not None:
        out["restartPolicy"] = {"policy": restart[0], "limit": restart[1]}
    return out


def generic_job(name: str, *replicas: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": models.API_VERSION,
        "kind": "GenericJob",
        "metadata": {"name": name},
        "spec": {**spec, "replicaSpecs": list(replicas) or [replica("worker")]},
    }


def deepspeed_job(
    name: str,
    workers: int = 2,
    *,
    annotations: Mapping[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": models.API_VERSION,
        "kind": "DeepSpeedJob",
        "metadata": {"name": name},
        "spec": {
            "config": {"slotsPerWorker": 1, "run": {"python": ["train.py", "--epochs=1"]}},
            **spec,
            "worker": {
                "replicas": workers,
                "template": template(container("worker"), annotations=annotations),
            },
        },
    }


def colossalai_job(
    name: str,
    workers: int = 2,
    *,
    launcher_annotations: Mapping[str, str] | None = None,
    worker_annotations: Mapping[str, str] | None = None,
    worker_container: str = "worker",
    worker_restart: tuple[str, int] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    worker: dict[str, Any] = {
        "type": "worker",
        "replicas": workers,
        "template": template(container(worker_container), annotations=worker_annotations),
    }
    if worker_restart is not None:
        worker["restartPolicy"] = {"policy": worker_restart[0], "limit": worker_restart[1]}
    return {
        "apiVersion": models.API_VERSION,
        "kind": "ColossalAIJob",
        "metadata": {"name": name},
        "spec": {
            "torchConfig": {"procPerWorker": 2, "script": ["train.py", "--epochs=1"]},
            **spec,
            "replicaSpecs": [
                {
                    "type": "launcher",
                    "replicas": 1,
                    "template": template(container("launcher"), annotations=launcher_annotations),
                },
                worker,
            ],
        },
    }
