"""`core/v1` shapes the T9k jobs embed: pod templates and service ports.

These models type the fields the SDK and the operator read or write; every other key of the
Kubernetes schema is accepted and kept unchanged (they are `K8sPassthroughModel`s). Use
`t9k_sdk.validate_manifest` (in `t9k_sdk.validation`) to check the whole template against the upstream core/v1 schema.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Self

from pydantic import AfterValidator, Field, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from t9k_sdk.models._base import (
    Bool,
    Int,
    IntOrString,
    K8sPassthroughModel,
    Quantity,
    ResourceQuantity,
    rule_error,
)
from t9k_sdk.models._names import DNS_LABEL_PATTERN, is_dns_label
from t9k_sdk.models.meta_v1 import ObjectMeta

__all__ = [
    "IMAGE_REQUIRED",
    "Container",
    "ContainerName",
    "ContainerPort",
    "EmptyDirVolumeSource",
    "EnvVar",
    "PersistentVolumeClaimVolumeSource",
    "PodSpec",
    "PodTemplateSpec",
    "PortName",
    "ResourceRequirements",
    "SecretVolumeSource",
    "ServicePort",
    "Volume",
    "VolumeMount",
]


def _dns_label(value: str) -> str:
    if not is_dns_label(value):
        raise PydanticCustomError(
            "t9k_dns_label",
            "must be a DNS label: at most 63 characters of a-z, 0-9 and '-', starting and ending"
            f" with a letter or digit (the API server refuses the pod otherwise); got {value!r}",
        )
    return value


ContainerName = Annotated[
    str,
    AfterValidator(_dns_label),
    WithJsonSchema({"type": "string", "maxLength": 63, "pattern": DNS_LABEL_PATTERN}),
]
"""A container's (or a service port's) name: a DNS-1123 label, as the API server requires."""

# '-'-separated runs of a-z and 0-9, one of them with a letter: no lookahead, so the CRD's
# pattern (Go's regexp) is the same expression
_PORT_NAME_PATTERN = "([a-z0-9]+-)*[a-z0-9]*[a-z][a-z0-9]*(-[a-z0-9]+)*"
_PORT_NAME = re.compile(_PORT_NAME_PATTERN)
_PORT_NAME_RULE = (
    "a port name is at most 15 characters of a-z, 0-9 and '-', with at least one letter, no"
    " '--' and no '-' at either end (an IANA service name, as the API server requires)"
)


def _port_name(value: str) -> str:
    if len(value) > 15 or not _PORT_NAME.fullmatch(value):
        raise PydanticCustomError("t9k_port_name", f"{_PORT_NAME_RULE}; got {value!r}")
    return value


PortName = Annotated[
    str,
    AfterValidator(_port_name),
    WithJsonSchema({"type": "string", "maxLength": 15, "pattern": f"^{_PORT_NAME_PATTERN}$"}),
]
"""A container port's name: an IANA service name."""

# Go's unicode.IsSpace, which the API server trims an image name with before it compares
_WHITE_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
_GO_WHITE_SPACE = (
    r"\t\n\v\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}"
)
IMAGE_PATTERN = f"(?s)^([^{_GO_WHITE_SPACE}](.*[^{_GO_WHITE_SPACE}])?)?$"
"""An image name without white space at either end (Go regexp syntax, for the CRD)."""
IMAGE_SPACE = (
    "an image name must not begin or end with white space (a space, tab or newline): the API"
    " server refuses such a pod"
)


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
    name: PortName | None = None
    """Name of the port, unique within the pod."""
    protocol: str | None = None
    """UDP, TCP or SCTP. Defaults to TCP."""


class ResourceRequirements(K8sPassthroughModel):
    """Compute resources of a container, for example `{"cpu": 4, "nvidia.com/gpu": 2}`."""

    limits: dict[str, ResourceQuantity] | None = None
    """Maximum amount of each resource."""
    requests: dict[str, ResourceQuantity] | None = None
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


class PersistentVolumeClaimVolumeSource(K8sPassthroughModel):
    """A PersistentVolumeClaim of the pod's namespace, as a volume."""

    claim_name: str
    """Name of the claim."""
    read_only: Bool | None = None
    """Mount the volume read-only everywhere."""


class EmptyDirVolumeSource(K8sPassthroughModel):
    """A directory that starts empty and lives as long as the pod."""

    medium: str | None = None
    """`Memory` for a tmpfs; by default the node's disk."""
    size_limit: Quantity | None = None
    """Most space the directory may use, e.g. "8Gi"."""


class SecretVolumeSource(K8sPassthroughModel):
    """A Secret's keys as files."""

    secret_name: str | None = None
    """Name of the Secret, in the pod's namespace."""


class Volume(K8sPassthroughModel):
    """A volume of a pod. The sources the SDK writes (`persistentVolumeClaim`, `emptyDir`,
    `secret`) are typed; any other source (`hostPath`, `configMap`, ...) is kept as given."""

    name: str
    """Name of the volume, unique within the pod."""
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    """A PersistentVolumeClaim."""
    empty_dir: EmptyDirVolumeSource | None = None
    """A scratch directory."""
    secret: SecretVolumeSource | None = None
    """A Secret's keys as files."""


IMAGE_REQUIRED = "every container needs an image"
"""Message of the rule (SDK and CRD) that a container names its image: the kubelet cannot start
one without, and the API server refuses such a pod, so the job would fail only once it runs."""


class Container(K8sPassthroughModel):
    """A container of a pod."""

    name: ContainerName
    """Name of the container, unique within the pod."""
    image: Annotated[str, WithJsonSchema({"type": "string", "pattern": IMAGE_PATTERN})] | None = (
        None
    )
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
        if self.image != self.image.strip(_WHITE_SPACE):
            raise rule_error([("image", f"{IMAGE_SPACE}; got {self.image!r}")])
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

    @model_validator(mode="after")
    def _unique_container_names(self) -> Self:
        """The API server refuses a pod whose containers (init containers included) share a
        name; say so when the job is submitted, not when its pods are created."""
        seen: dict[str, str] = {}
        problems = []
        for key, containers in (
            ("initContainers", self.init_containers),
            ("containers", self.containers),
        ):
            for i, c in enumerate(containers or ()):
                where = f"{key}[{i}]"
                if c.name in seen:
                    problems.append(
                        (
                            f"{where}.name",
                            f"container names must be unique within a pod (the API server"
                            f" refuses the pod); {c.name!r} is also {seen[c.name]}'s",
                        )
                    )
                else:
                    seen[c.name] = where
        if problems:
            raise rule_error(problems)
        return self


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
    name: ContainerName | None = None
    """Name of the port; `$(service.port[<name>])` in a GenericJob refers to it."""
    protocol: str | None = None
    """TCP, UDP or SCTP. Defaults to TCP."""
    target_port: IntOrString | None = None
    """Port number or name on the pod; defaults to `port`."""
    app_protocol: str | None = None
    """Application protocol of the port."""
    node_port: Int | None = None
    """Port on each node (NodePort and LoadBalancer services only)."""
