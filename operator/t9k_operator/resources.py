"""The API resources the operator reads and writes, described as plain data.

`cluster.py` turns a `Resource` into URL paths; the controller and the tests use these
descriptors without importing a Kubernetes client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from t9k_sdk import models
from t9k_sdk.reconcile import names

__all__ = [
    "CHILD_RESOURCES",
    "CONFIG_MAPS",
    "EVENTS",
    "JOB_RESOURCES",
    "LEASES",
    "PODS",
    "POD_GROUPS",
    "SECRETS",
    "SERVICES",
    "Resource",
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
        """The REST path: the collection (all namespaces or one), an object, or a subresource."""
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        path = (
            f"{root}/namespaces/{namespace}/{self.plural}" if namespace else f"{root}/{self.plural}"
        )
        if name is not None:
            path = f"{path}/{name}"
            if subresource is not None:
                path = f"{path}/{subresource}"
        return path

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


JOB_RESOURCES: Final = tuple(
    Resource(models.GROUP, models.VERSION, cls.PLURAL, cls.KIND)
    for cls in models.JOB_KINDS.values()
)
"""The three job kinds the operator reconciles."""

PODS: Final = Resource("", "v1", "pods", "Pod")
SERVICES: Final = Resource("", "v1", "services", "Service")
CONFIG_MAPS: Final = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS: Final = Resource("", "v1", "secrets", "Secret")
_PG_GROUP, _PG_VERSION = names.PODGROUP_API_VERSION.split("/")
POD_GROUPS: Final = Resource(_PG_GROUP, _PG_VERSION, "podgroups", "PodGroup")

CHILD_RESOURCES: Final = (PODS, SERVICES, CONFIG_MAPS, SECRETS, POD_GROUPS)
"""Everything a job may own; watched with `names.MANAGED_SELECTOR`."""

EVENTS: Final = Resource("", "v1", "events", "Event")
LEASES: Final = Resource("coordination.k8s.io", "v1", "leases", "Lease")

_BY_KIND: Final = {
    (r.api_version, r.kind): r for r in (*JOB_RESOURCES, *CHILD_RESOURCES, EVENTS, LEASES)
}


def resource_for(api_version: str, kind: str) -> Resource:
    """The resource of objects with this `apiVersion` and `kind`; ValueError if not one of ours."""
    try:
        return _BY_KIND[(api_version, kind)]
    except KeyError:
        known = ", ".join(sorted(f"{k} ({v})" for v, k in _BY_KIND))
        raise ValueError(
            f"the operator does not manage {kind} ({api_version}); it knows {known}"
        ) from None
