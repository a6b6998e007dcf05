"""Everything needed to run the operator in a cluster, as manifests in apply order.

    install_manifests(image="registry.example/t9k-operator:0.1.0", namespace="t9k-system")
        -> [Namespace, 3 CRDs, ServiceAccount, ClusterRole, ClusterRoleBinding,
            Role, RoleBinding (the Lease), Deployment]
    install_manifests(..., watch_namespace="team-a")
        -> the same with a Role and RoleBinding in team-a instead of the ClusterRole and its
           binding, and the operator started with --namespace=team-a

`t9k-sdk install` prints them as YAML; `operator/deploy/` holds the same objects rendered with
the defaults (tests keep the two in step). The PodGroup CRD (scheduler.tensorstack.dev) is not
here: it belongs to the T9k scheduler, which installs it. Without it, jobs that ask for the T9k
scheduler cannot get their PodGroup, and the operator logs that podgroups are not served.

The roles grant only what the operator does (see docs/operator/install.md):

* jobs of the three kinds: list, watch; their `status` subresource: update; their `finalizers`
  subresource: update (needed to create children whose owner reference sets
  `blockOwnerDeletion`, where the OwnerReferencesPermissionEnforcement admission plugin is on);
* pods and secrets: get, list, watch, create, delete (never updated: a pod is replaced, an SSH
  key pair is generated once); services, configmaps and podgroups: the same and update; `get`
  reads the object a create found under a child's name, to tell the job's own from a foreign one;
* Kueue's workloads (a job that names a LocalQueue gets one): as configmaps; their `status`
  subresource: update (the operator tells Kueue a job's pods are ready, evicted or finished);
  resourceflavors and workloadpriorityclasses: list, watch (cluster-scoped: read by an operator
  that watches every namespace; a namespace-scoped Role cannot grant them);
* nodes: get, list, watch (cluster-scoped, likewise: whether a pod's node is NotReady or gone,
  so that its pod is replaced; a namespace-scoped operator leaves such pods to Kubernetes);
* events: create, patch (a repeated event bumps its count);
* leases, in the operator's namespace only: get and update on the one Lease named `t9k-operator`,
  and create (RBAC cannot restrict `create` to a name: the name is not known before the object
  exists, so `resourceNames` does not apply to it).
"""

from __future__ import annotations

import re
from typing import Any

from t9k_sdk import __version__, crds, models
from t9k_sdk._yaml import dump_documents

__all__ = [
    "DEFAULT_IMAGE",
    "DEFAULT_NAMESPACE",
    "IMAGE_DIGEST_PATTERN",
    "IMAGE_REPOSITORY_PATTERN",
    "IMAGE_TAG_PATTERN",
    "LEASE_ROLE",
    "NAME",
    "RELEASE_REPOSITORY",
    "cluster_role_rules",
    "deploy_files",
    "install_manifests",
    "lease_role_rules",
    "validate_image",
    "validate_namespace",
]

NAME = "t9k-operator"
RELEASE_REPOSITORY = "ghcr.io/t9k/t9k-operator"
DEFAULT_IMAGE = f"{RELEASE_REPOSITORY}:{__version__}"
"""The image a release publishes, tagged with this package's version: `make operator-image`
builds it (tools/images.py, the one recipe). Pass another name, or this one by digest
(`ghcr.io/t9k/t9k-operator@sha256:...`), as `image`."""

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE_REPOSITORY_PATTERN = (
    rf"^(?:[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?(?::[0-9]+)?/)?{_COMPONENT}(?:/{_COMPONENT})*$"
)
"""An image name without tag or digest (the distribution reference grammar, one line)."""
IMAGE_TAG_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$"
IMAGE_DIGEST_PATTERN = r"^sha256:[a-f0-9]{64}$"
_NAME_RULE = (
    "an image name: lowercase letters and digits, separated by '.', '_', '__' or '-', in"
    " parts joined by '/', after an optional registry host[:port]/"
)
_TAG_RULE = "a tag: up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'"
_DIGEST_RULE = "a digest: sha256: and 64 lowercase hexadecimal digits"
DEFAULT_NAMESPACE = "t9k-system"
HEALTH_PORT = 8081

LEASE_ROLE = f"{NAME}-leader-election"
"""The Role (in the operator's namespace) for its leader-election Lease, named `NAME`."""

_LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/version": __version__}
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def validate_namespace(value: str, what: str = "namespace") -> str:
    """`value` if it can name a namespace (a DNS-1123 label), else ValueError saying why."""
    if not value.strip():
        raise ValueError(f"{what} must not be empty")
    if len(value) > 63 or not _DNS1123_LABEL.fullmatch(value):
        raise ValueError(
            f"{what} {value!r} is not a valid namespace name: it must be a DNS-1123 label, at"
            " most 63 characters of lowercase letters, digits and '-', starting and ending with"
            " a letter or digit (e.g. 't9k-system')"
        )
    return value


def validate_image(value: str) -> str:
    """`value` if it is an image reference (`NAME`, `NAME:TAG`, `NAME@sha256:DIGEST` or
    `NAME:TAG@sha256:DIGEST`), else ValueError naming the part that is wrong."""
    if not value.strip():
        raise ValueError("image must not be empty")
    example = f"e.g. {DEFAULT_IMAGE} or {RELEASE_REPOSITORY}@sha256:<64 hex digits>"
    if len(value) > 512:
        raise ValueError(f"image is {len(value)} characters long; at most 512 ({example})")
    name, _, digest = value.partition("@")
    repository, tag = name, ""
    if ":" in name.rsplit("/", 1)[-1]:
        repository, tag = name.rsplit(":", 1)
    for part, text, pattern, allowed in (
        ("name", repository, IMAGE_REPOSITORY_PATTERN, _NAME_RULE),
        ("tag", tag, IMAGE_TAG_PATTERN, _TAG_RULE),
        ("digest", digest, IMAGE_DIGEST_PATTERN, _DIGEST_RULE),
    ):
        if (text or part == "name") and not re.fullmatch(pattern, text):
            raise ValueError(
                f"image {value!r} is not an image reference: its {part} {text!r} is not"
                f" {allowed} ({example})"
            )
    if "@" in value and not digest:
        raise ValueError(f"image {value!r} ends in '@' without a digest ({example})")
    return value


def cluster_role_rules() -> list[dict[str, Any]]:
    """The operator's permissions on jobs and their children: no wildcards, only the verbs it
    uses. A ClusterRole with them, or a Role in the one namespace a namespace-scoped operator
    watches. The Lease is separate (`lease_role_rules`)."""
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
            "resources": ["pods", "secrets"],
            "verbs": ["get", "list", "watch", "create", "delete"],
        },
        {
            "apiGroups": [""],
            "resources": ["configmaps", "services"],
            "verbs": ["get", "list", "watch", "create", "update", "delete"],
        },
        {
            "apiGroups": ["scheduler.tensorstack.dev"],
            "resources": ["podgroups"],
            "verbs": ["get", "list", "watch", "create", "update", "delete"],
        },
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["workloads"],
            "verbs": ["get", "list", "watch", "create", "update", "delete"],
        },
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["update"]},
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["resourceflavors", "workloadpriorityclasses"],
            "verbs": ["list", "watch"],
        },
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
    ]


def lease_role_rules(lease_name: str = NAME) -> list[dict[str, Any]]:
    """Leader election, for a Role in the operator's namespace: read and renew the one Lease;
    create it (`create` cannot be limited by `resourceNames`: the object has no name yet when
    RBAC decides, so this rule allows creating any Lease in that namespace)."""
    return [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [lease_name],
            "verbs": ["get", "update"],
        },
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
    ]


def _metadata(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = dict(_LABELS)
    return meta


_TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def _api_access_volume() -> dict[str, Any]:
    """What the ServiceAccount admission plugin would mount: a bound token that kubelet renews
    (valid an hour), the cluster's CA and the pod's namespace."""
    return {
        "name": "api-access",
        "projected": {
            "defaultMode": 0o444,
            "sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                {
                    "configMap": {
                        "name": "kube-root-ca.crt",
                        "items": [{"key": "ca.crt", "path": "ca.crt"}],
                    }
                },
                {
                    "downwardAPI": {
                        "items": [
                            {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}
                        ]
                    }
                },
            ],
        },
    }


def _deployment(image: str, namespace: str, watch_namespace: str | None) -> dict[str, Any]:
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
                "metadata": {
                    "labels": dict(_LABELS),
                    # /metrics on the health port, for Prometheus' pod discovery
                    # (docs/operator/metrics.md)
                    "annotations": {
                        "prometheus.io/scrape": "true",
                        "prometheus.io/port": str(HEALTH_PORT),
                        "prometheus.io/path": "/metrics",
                    },
                },
                "spec": {
                    "serviceAccountName": NAME,
                    # The token is mounted in the operator's container only (_operator_container)
                    # rather than by the ServiceAccount admission plugin: the same files at the
                    # same path, on clusters that turn automounting off too.
                    "automountServiceAccountToken": False,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 65532,
                        "runAsGroup": 65532,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "terminationGracePeriodSeconds": 30,
                    "containers": [_operator_container(image, watch_namespace)],
                    "volumes": [
                        {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
                        _api_access_volume(),
                    ],
                },
            },
        },
    }


def _operator_container(image: str, watch_namespace: str | None) -> dict[str, Any]:
    """The operator's container: its arguments, probes, resources, and the API token mount."""
    probe = {"httpGet": {"path": "/healthz", "port": "health"}, "periodSeconds": 10}
    return {
        "name": "operator",
        "image": image,
        "args": [
            "--leader-elect",
            f"--health-port={HEALTH_PORT}",
            "--log-format=json",
            *([f"--namespace={watch_namespace}"] if watch_namespace else []),
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
        "volumeMounts": [
            {"name": "tmp", "mountPath": "/tmp"},
            {
                "name": "api-access",
                "mountPath": _TOKEN_DIR,
                "readOnly": True,
            },
        ],
    }


def _role(
    kind: str, name: str, namespace: str | None, rules: list[dict[str, Any]], sa_namespace: str
) -> list[dict[str, Any]]:
    """A (Cluster)Role with `rules` and its (Cluster)RoleBinding to the operator's account."""
    rbac = "rbac.authorization.k8s.io"
    return [
        {
            "apiVersion": f"{rbac}/v1",
            "kind": kind,
            "metadata": _metadata(name, namespace),
            "rules": rules,
        },
        {
            "apiVersion": f"{rbac}/v1",
            "kind": f"{kind}Binding",
            "metadata": _metadata(name, namespace),
            "roleRef": {"apiGroup": rbac, "kind": kind, "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": sa_namespace}],
        },
    ]


def install_manifests(
    image: str = DEFAULT_IMAGE,
    namespace: str = DEFAULT_NAMESPACE,
    *,
    watch_namespace: str | None = None,
) -> list[dict[str, Any]]:
    """The operator's install, in apply order (see the module docstring).

    `namespace` is where the operator runs (and its Lease lives). With `watch_namespace` the
    operator reconciles only the jobs of that namespace (it may be `namespace` itself) and its
    permissions are a Role and RoleBinding there: it cannot read or touch anything in any other
    namespace. That namespace must exist before the install is applied.
    """
    validate_image(image)
    validate_namespace(namespace)
    if watch_namespace is not None:
        validate_namespace(watch_namespace, "watch namespace")
        work = _role("Role", NAME, watch_namespace, cluster_role_rules(), namespace)
    else:
        work = _role("ClusterRole", NAME, None, cluster_role_rules(), namespace)
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _metadata(namespace)},
        *crds.generate_crds(),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _metadata(NAME, namespace)},
        *work,
        *_role("Role", LEASE_ROLE, namespace, lease_role_rules(), namespace),
        _deployment(image, namespace, watch_namespace),
    ]


METRICS_NAMESPACE_LABEL = ("metrics", "enabled")
"""The label a namespace needs for its pods (Prometheus) to reach the operator's health port
under `network_policy()`: kubebuilder's convention."""


def network_policy(namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
    """A NetworkPolicy for the operator's pod: nothing reaches it but its health port (probes
    and `/metrics`), and that only from namespaces labelled `metrics=enabled` (as kubebuilder's
    optional policy does). The kubelet's probes come from the node, which network plugins
    admit whatever the policy says. Opt-in: `t9k-sdk install --network-policy`."""
    validate_namespace(namespace)
    key, value = METRICS_NAMESPACE_LABEL
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _metadata(NAME, namespace),
        "spec": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": NAME}},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [{"namespaceSelector": {"matchLabels": {key: value}}}],
                    "ports": [{"protocol": "TCP", "port": HEALTH_PORT}],
                }
            ],
        },
    }


_RBAC_KINDS = ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
_GENERATED = (
    "# Generated from t9k_sdk/install.py (install_manifests with the defaults); do not edit.\n"
    "# Regenerate: T9K_REGENERATE=1 pytest tests/operator/test_install.py\n"
)


def deploy_files(image: str = DEFAULT_IMAGE, namespace: str = DEFAULT_NAMESPACE) -> dict[str, str]:
    """`operator/deploy/` without the CRDs (those are in `crds/`): file name -> YAML.

    `kubectl apply -R -f operator/deploy/` reads `crds/`, then `operator.yaml` (Namespace,
    ServiceAccount, Deployment), then `rbac.yaml` (ClusterRole, ClusterRoleBinding, and the
    Role and RoleBinding of the Lease).
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
