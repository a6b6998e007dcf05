"""Everything needed to run the operator in a cluster, as manifests in apply order.

    install_manifests(image="registry.example/t9k-operator:0.1.0", namespace="t9k-system")
        -> [Namespace, 3 CRDs, ServiceAccount, ClusterRole, ClusterRoleBinding, Deployment]

`t9k-sdk install` prints them as YAML; `operator/deploy/` holds the same objects rendered with
the defaults (tests keep the two in step). The PodGroup CRD (scheduler.tensorstack.dev) is not
here: it belongs to the T9k scheduler, which installs it. Without it, jobs that ask for the T9k
scheduler cannot get their PodGroup, and the operator logs that podgroups are not served.

The ClusterRole grants only what the operator does (see docs/operator/install.md):

* jobs of the three kinds: list, watch; their `status` subresource: update; their `finalizers`
  subresource: update (needed to create children whose owner reference sets
  `blockOwnerDeletion`, where the OwnerReferencesPermissionEnforcement admission plugin is on);
* pods, services, configmaps, secrets and podgroups: list, watch, create, update, delete;
* events: create, patch (a repeated event bumps its count);
* leases: get, create, update (leader election).
"""

from __future__ import annotations

from typing import Any

from t9k_sdk import __version__, crds, models
from t9k_sdk._yaml import dump_documents

__all__ = [
    "DEFAULT_IMAGE",
    "DEFAULT_NAMESPACE",
    "NAME",
    "cluster_role_rules",
    "deploy_files",
    "install_manifests",
]

NAME = "t9k-operator"
DEFAULT_IMAGE = f"t9k-operator:{__version__}"
"""Built from operator/Dockerfile; push it to your registry and pass its name as `image`."""
DEFAULT_NAMESPACE = "t9k-system"
HEALTH_PORT = 8081

_LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/version": __version__}
_CHILD_VERBS = ["list", "watch", "create", "update", "delete"]


def cluster_role_rules() -> list[dict[str, Any]]:
    """The operator's permissions: no wildcards, only the verbs it uses."""
    jobs = sorted(cls.PLURAL for cls in models.JOB_KINDS.values())
    return [
        {"apiGroups": [models.GROUP], "resources": jobs, "verbs": ["list", "watch"]},
        {
            "apiGroups": [models.GROUP],
            "resources": [f"{plural}/status" for plural in jobs],
            "verbs": ["update"],
        },
        {
            "apiGroups": [models.GROUP],
            "resources": [f"{plural}/finalizers" for plural in jobs],
            "verbs": ["update"],
        },
        {
            "apiGroups": [""],
            "resources": ["configmaps", "pods", "secrets", "services"],
            "verbs": list(_CHILD_VERBS),
        },
        {
            "apiGroups": ["scheduler.tensorstack.dev"],
            "resources": ["podgroups"],
            "verbs": list(_CHILD_VERBS),
        },
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "create", "update"],
        },
    ]


def _metadata(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = dict(_LABELS)
    return meta


def _deployment(image: str, namespace: str) -> dict[str, Any]:
    probe = {"httpGet": {"path": "/healthz", "port": "health"}, "periodSeconds": 10}
    selector = {"app.kubernetes.io/name": NAME}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(NAME, namespace),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            # Never two pods at once during a rollout: the Lease would keep the new one standing
            # by anyway, but Recreate makes the hand-over quick (the old pod releases the Lease).
            "strategy": {"type": "Recreate"},
            "template": {
                "metadata": {"labels": dict(_LABELS)},
                "spec": {
                    "serviceAccountName": NAME,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 65532,
                        "runAsGroup": 65532,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "terminationGracePeriodSeconds": 30,
                    "containers": [
                        {
                            "name": "operator",
                            "image": image,
                            "args": [
                                "--leader-elect",
                                f"--health-port={HEALTH_PORT}",
                                "--log-format=json",
                            ],
                            "env": [
                                {
                                    "name": "POD_NAMESPACE",
                                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
                                }
                            ],
                            "ports": [{"name": "health", "containerPort": HEALTH_PORT}],
                            "livenessProbe": {**probe, "initialDelaySeconds": 5},
                            "readinessProbe": {
                                "httpGet": {"path": "/readyz", "port": "health"},
                                "periodSeconds": 5,
                            },
                            "resources": {
                                "requests": {"cpu": "100m", "memory": "128Mi"},
                                "limits": {"cpu": "1", "memory": "512Mi"},
                            },
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                        }
                    ],
                    "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}],
                },
            },
        },
    }


def install_manifests(
    image: str = DEFAULT_IMAGE, namespace: str = DEFAULT_NAMESPACE
) -> list[dict[str, Any]]:
    """The operator's install, in apply order (see the module docstring)."""
    if not image.strip():
        raise ValueError("image must not be empty")
    if not namespace.strip():
        raise ValueError("namespace must not be empty")
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _metadata(namespace)},
        *crds.generate_crds(),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _metadata(NAME, namespace)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _metadata(NAME),
            "rules": cluster_role_rules(),
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _metadata(NAME),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": NAME,
            },
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}],
        },
        _deployment(image, namespace),
    ]


_RBAC_KINDS = ("ClusterRole", "ClusterRoleBinding")
_GENERATED = (
    "# Generated from t9k_sdk/install.py (install_manifests with the defaults); do not edit.\n"
    "# Regenerate: T9K_REGENERATE=1 pytest tests/operator/test_install.py\n"
)


def deploy_files(image: str = DEFAULT_IMAGE, namespace: str = DEFAULT_NAMESPACE) -> dict[str, str]:
    """`operator/deploy/` without the CRDs (those are in `crds/`): file name -> YAML.

    `kubectl apply -R -f operator/deploy/` reads `crds/`, then `operator.yaml` (Namespace,
    ServiceAccount, Deployment), then `rbac.yaml` (ClusterRole, ClusterRoleBinding).
    """
    objects = [
        m for m in install_manifests(image, namespace) if m["kind"] != "CustomResourceDefinition"
    ]
    rbac = [m for m in objects if m["kind"] in _RBAC_KINDS]
    rest = [m for m in objects if m["kind"] not in _RBAC_KINDS]
    return {
        "operator.yaml": _GENERATED + dump_documents(rest),
        "rbac.yaml": _GENERATED + dump_documents(rbac),
    }
