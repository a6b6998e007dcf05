"""The API resources the SDK and the operator read and write, described as plain data.

A `Resource` turns into REST paths; the job resources come from the kind registry
(`t9k_sdk._kinds.JOB_KINDS`, with group and version from `t9k_sdk.models`). Importing this module needs no Kubernetes
client: the controller, the tests and the tools use these descriptors as data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import quote

from t9k_sdk import _conventions as conventions
from t9k_sdk import _kinds, models

__all__ = [
    "CHILD_RESOURCES",
    "CLUSTER_QUEUES",
    "CONFIG_MAPS",
    "EVENTS",
    "JOB_RESOURCES",
    "LEASES",
    "LOCAL_QUEUES",
    "NAMESPACES",
    "NODES",
    "PERSISTENT_VOLUMES",
    "PERSISTENT_VOLUME_CLAIMS",
    "PODS",
    "POD_GROUPS",
    "RESOURCE_FLAVORS",
    "SECRETS",
    "SERVICES",
    "WORKLOADS",
    "WORKLOAD_PRIORITY_CLASSES",
    "Resource",
    "job_resource",
    "resource_for",
]


@dataclass(frozen=True)
class Resource:
    """One REST resource: `group/version`, plural and kind (all namespaced here)."""

    group: str
    """API group; "" for the core group."""
    version: str
    plural: str
    kind: str

    @property
    def api_version(self) -> str:
        """`group/version`, or just `version` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The REST path: the collection (all namespaces or one), an object, or a subresource.

        Names are quoted, so a name with a `/` cannot reach another path."""
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        path = (
            f"{root}/namespaces/{_q(namespace)}/{self.plural}"
            if namespace
            else f"{root}/{self.plural}"
        )
        if name is not None:
            path = f"{path}/{_q(name)}"
            if subresource is not None:
                path = f"{path}/{subresource}"
        return path

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


JOB_RESOURCES: Final = tuple(
    Resource(models.GROUP, models.VERSION, k.plural, k.kind) for k in _kinds.JOB_KINDS
)
"""The job kinds (`GenericJob`, `DeepSpeedJob`, `ColossalAIJob`), in the registry's order."""

PODS: Final = Resource("", "v1", "pods", "Pod")
NODES: Final = Resource("", "v1", "nodes", "Node")
"""Cluster-scoped: whether the node a job's pod is bound to still exists and is Ready."""
SERVICES: Final = Resource("", "v1", "services", "Service")
CONFIG_MAPS: Final = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS: Final = Resource("", "v1", "secrets", "Secret")
_PG_GROUP, _PG_VERSION = conventions.PODGROUP_API_VERSION.split("/")
POD_GROUPS: Final = Resource(_PG_GROUP, _PG_VERSION, "podgroups", "PodGroup")

_KUEUE_GROUP, _KUEUE_VERSION = conventions.KUEUE_API_VERSION.split("/")
WORKLOADS: Final = Resource(_KUEUE_GROUP, _KUEUE_VERSION, "workloads", "Workload")
"""Kueue's Workloads: the operator creates one per job that names a LocalQueue."""
RESOURCE_FLAVORS: Final = Resource(
    _KUEUE_GROUP, _KUEUE_VERSION, "resourceflavors", "ResourceFlavor"
)
"""Cluster-scoped: what an admitted flavour adds to the pods (node labels, tolerations)."""
WORKLOAD_PRIORITY_CLASSES: Final = Resource(
    _KUEUE_GROUP, _KUEUE_VERSION, "workloadpriorityclasses", "WorkloadPriorityClass"
)
"""Cluster-scoped: the priority value a job's Workload carries for its priority class."""
LOCAL_QUEUES: Final = Resource(_KUEUE_GROUP, _KUEUE_VERSION, "localqueues", "LocalQueue")
"""What a job's `kueue.x-k8s.io/queue-name` label names; the SDK reads its ClusterQueue."""
CLUSTER_QUEUES: Final = Resource(_KUEUE_GROUP, _KUEUE_VERSION, "clusterqueues", "ClusterQueue")
"""Cluster-scoped: the quota a LocalQueue draws on; the SDK reads it to show what is free."""

CHILD_RESOURCES: Final = (PODS, SERVICES, CONFIG_MAPS, SECRETS, POD_GROUPS, WORKLOADS)
"""Everything a job may own; watched with `conventions.MANAGED_SELECTOR`."""

EVENTS: Final = Resource("", "v1", "events", "Event")
NAMESPACES: Final = Resource("", "v1", "namespaces", "Namespace")
PERSISTENT_VOLUMES: Final = Resource("", "v1", "persistentvolumes", "PersistentVolume")
"""Cluster-scoped: `path()` without a namespace."""
PERSISTENT_VOLUME_CLAIMS: Final = Resource(
    "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim"
)
LEASES: Final = Resource("coordination.k8s.io", "v1", "leases", "Lease")

_BY_KIND: Final = {
    (r.api_version, r.kind): r for r in (*JOB_RESOURCES, *CHILD_RESOURCES, EVENTS, LEASES)
}


def _q(part: str) -> str:
    return quote(part, safe="")


def job_resource(kind: str) -> Resource:
    """The resource of a job kind (`GenericJob`, ...); ValueError for another kind."""
    for resource in JOB_RESOURCES:
        if resource.kind == kind:
            return resource
    raise ValueError(f"{kind} is not a T9k job kind")


def resource_for(api_version: str, kind: str) -> Resource:
    """The resource of objects with this `apiVersion` and `kind`; ValueError if not one of ours."""
    try:
        return _BY_KIND[(api_version, kind)]
    except KeyError:
        known = ", ".join(sorted(f"{k} ({v})" for v, k in _BY_KIND))
        raise ValueError(
            f"{kind} ({api_version}) is not a resource the operator manages; it knows {known}"
        ) from None
