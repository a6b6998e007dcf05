"""`core/v1` shapes the T9k jobs embed: pod templates and service ports.

These models type the fields the SDK and the operator read or write; every other key of the
Kubernetes schema is accepted and kept unchanged (they are `K8sPassthroughModel`s). Use
`t9k_sdk.validate_manifest` (in `t9k_sdk.validation`) to check the whole template against the upstream core/v1 schema.
"""

from __future__ import annotations

from typing import Annotated, Any, Self

from pydantic import Field, model_validator

from t9k_sdk.models._base import (
    Bool,
    Int,
    IntOrString,
    K8sPassthroughModel,
    Quantity,
    rule_error,
)
from t9k_sdk.models.meta_v1 import ObjectMeta

__all__ = [
    "IMAGE_REQUIRED",
    "Container",
    "ContainerPort",
    "EnvVar",
    "PodSpec",
    "PodTemplateSpec",
    "ResourceRequirements",
    "ServicePort",
    "Volume",
    "VolumeMount",
]


class EnvVar(K8sPassthroughModel):
    """An environment variable of a container."""

    name: str
    """Name of the variable."""
    value: str | None = None
    """Value; `$(VAR)` references to earlier variables are expanded by the kubelet."""
    value_from: dict[str, Any] | None = None
    """Source of the value (a secret, a config map, a field of the pod, a resource)."""


class ContainerPort(K8sPassthroughModel):
    """A network port of a container."""

    container_port: Int
    """Port number on the pod's IP address."""
    name: str | None = None
    """Name of the port, unique within the pod."""
    protocol: str | None = None
    """UDP, TCP or SCTP. Defaults to TCP."""


class ResourceRequirements(K8sPassthroughModel):
    """Compute resources of a container, for example `{"cpu": 4, "nvidia.com/gpu": 2}`."""

    limits: dict[str, Quantity] | None = None
    """Maximum amount of each resource."""
    requests: dict[str, Quantity] | None = None
    """Minimum amount of each resource; defaults to the limits where only they are given."""


class VolumeMount(K8sPassthroughModel):
    """A volume mounted into a container."""

    name: str
    """Name of a volume of the pod."""
    mount_path: str
    """Path in the container where the volume is mounted."""
    sub_path: str | None = None
    """Path within the volume to mount instead of its root."""
    read_only: Bool | None = None
    """Mount read-only."""


class Volume(K8sPassthroughModel):
    """A volume of a pod. The source (`persistentVolumeClaim`, `emptyDir`, ...) is kept as given."""

    name: str
    """Name of the volume, unique within the pod."""


IMAGE_REQUIRED = "every container needs an image"
"""Message of the rule (SDK and CRD) that a container names its image: the kubelet cannot start
one without, and the API server refuses such a pod, so the job would fail only once it runs."""


class Container(K8sPassthroughModel):
    """A container of a pod."""

    name: str
    """Name of the container, unique within the pod."""
    image: str | None = None
    """Container image."""
    command: list[str] | None = None
    """Entrypoint array; replaces the image's ENTRYPOINT."""
    args: list[str] | None = None
    """Arguments to the entrypoint; replace the image's CMD."""
    working_dir: str | None = None
    """Working directory of the container."""
    env: list[EnvVar] | None = None
    """Environment variables."""
    ports: list[ContainerPort] | None = None
    """Ports to expose from the container."""
    resources: ResourceRequirements | None = None
    """Compute resources."""
    volume_mounts: list[VolumeMount] | None = None
    """Volumes to mount into the container."""
    image_pull_policy: str | None = None
    """Always, Never or IfNotPresent."""

    @model_validator(mode="after")
    def _image(self) -> Self:
        if not self.image:
            raise rule_error([("image", f"{IMAGE_REQUIRED}; got {self.image!r}")])
        return self


class PodSpec(K8sPassthroughModel):
    """The specification of a pod."""

    containers: list[Container] | None = None
    """Containers of the pod; at least one."""
    init_containers: list[Container] | None = None
    """Containers run to completion, in order, before the regular containers start."""
    volumes: list[Volume] | None = None
    """Volumes the containers may mount."""
    restart_policy: str | None = None
    """Ignored for T9k job replicas: the controller sets `Never` and decides restarts itself."""
    node_selector: dict[str, str] | None = None
    """Labels a node must carry for the pod to be scheduled on it."""
    scheduler_name: str | None = None
    """Scheduler that places the pod."""
    service_account_name: str | None = None
    """Service account the pod runs as."""
    hostname: str | None = None
    """Hostname of the pod."""
    subdomain: str | None = None
    """Subdomain of the pod: with a headless service of that name, the pod gets a DNS name."""
    tolerations: list[dict[str, Any]] | None = None
    """Taints the pod tolerates."""
    affinity: dict[str, Any] | None = None
    """Scheduling constraints."""


class PodTemplateSpec(K8sPassthroughModel):
    """Template of the pods of a replica."""

    metadata: ObjectMeta | None = None
    """Labels and annotations copied onto every pod."""
    spec: PodSpec | None = None
    """Specification of every pod."""


class ServicePort(K8sPassthroughModel):
    """A port exposed by a service."""

    port: Annotated[Int, Field(ge=1, le=65535)]
    """Port number the service exposes, 1 to 65535 (the API server refuses any other)."""
    name: str | None = None
    """Name of the port; `$(service.port[<name>])` in a GenericJob refers to it."""
    protocol: str | None = None
    """TCP, UDP or SCTP. Defaults to TCP."""
    target_port: IntOrString | None = None
    """Port number or name on the pod; defaults to `port`."""
    app_protocol: str | None = None
    """Application protocol of the port."""
    node_port: Int | None = None
    """Port on each node (NodePort and LoadBalancer services only)."""
