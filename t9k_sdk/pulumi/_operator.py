"""`T9kOperator`: the operator's install (`t9k_sdk.install.install_manifests`) as Pulumi resources."""

from __future__ import annotations

from typing import Any, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from t9k_sdk import install
from t9k_sdk.pulumi._args import unknown_keys_error

__all__ = ["T9kOperator", "T9kOperatorArgs"]


class T9kOperatorArgs(TypedDict, total=False):
    """Inputs of `t9k_sdk.pulumi.T9kOperator`; every key is optional."""

    image: str
    """The operator image (built from operator/Dockerfile); default `t9k-operator:<version>`."""
    namespace: str
    """Namespace of the ServiceAccount and the Deployment; default "t9k-system"."""
    watch_namespace: str
    """Reconcile only the jobs of this namespace (which must exist), with a Role there instead
    of the ClusterRole; default: all namespaces."""
    create_namespace: bool
    """Create (and on destroy delete) the namespace; default True. Set False to install into a
    namespace that exists already and is not this stack's to delete."""
    retain_crds: bool
    """Keep the CRDs on `destroy` (default True, as Helm keeps a chart's CRDs): deleting a CRD
    deletes every job of that kind in the cluster, including jobs of other stacks."""
    network_policy: bool
    """Also create the NetworkPolicy of `t9k-sdk install --network-policy` (default False):
    only the health port is reachable, from namespaces labelled `metrics=enabled`."""


class T9kOperator(pulumi.ComponentResource):
    """The T9k operator: CRDs, RBAC and the Deployment, as `t9k-sdk install` prints them.

        op = T9kOperator("t9k", {"image": "registry.example/t9k-operator:0.1.0"})
        DeepSpeedJob("bert", {"job": job, "operator": op})   # created after the CRDs

    Children, in order: the Namespace (unless `create_namespace=False`), one
    CustomResourceDefinition per job kind (`crds`; pulumi-kubernetes waits until each is
    Established), the ServiceAccount, ClusterRole and ClusterRoleBinding (with
    `watch_namespace`: a Role and RoleBinding in that namespace), the Role and RoleBinding of
    the leader-election Lease, then the Deployment (waited for until its pod is available). The
    ClusterRole and ClusterRoleBinding are cluster-scoped and named `t9k-operator`: one
    cluster-wide operator install per cluster.
    """

    crds: dict[str, k8s.apiextensions.v1.CustomResourceDefinition]
    """The CRDs by job kind ("GenericJob", "DeepSpeedJob", "ColossalAIJob"), for `depends_on`."""
    namespace: pulumi.Output[str]
    """The namespace the operator runs in."""
    service_account: k8s.core.v1.ServiceAccount
    cluster_role: k8s.rbac.v1.ClusterRole | None
    """None with `watch_namespace` (then `roles` holds the Role in that namespace)."""
    cluster_role_binding: k8s.rbac.v1.ClusterRoleBinding | None
    roles: list[k8s.rbac.v1.Role]
    """The Roles: the Lease's in the operator's namespace, and with `watch_namespace` the
    operator's permissions there."""
    role_bindings: list[k8s.rbac.v1.RoleBinding]
    deployment: k8s.apps.v1.Deployment
    network_policy: k8s.networking.v1.NetworkPolicy | None
    """With `network_policy=True`; else None."""
    manifests: list[dict[str, Any]]
    """What was installed: `install_manifests(image, namespace)`."""

    def __init__(
        self,
        resource_name: str,
        args: T9kOperatorArgs | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        given = args or {}
        unknown = unknown_keys_error(
            "T9kOperator", resource_name, given, list(T9kOperatorArgs.__annotations__)
        )
        if unknown is not None:
            raise unknown
        image = given.get("image", install.DEFAULT_IMAGE)
        namespace = given.get("namespace", install.DEFAULT_NAMESPACE)
        watch = given.get("watch_namespace")
        # Validates image and namespaces before anything is registered.
        self.manifests = install.install_manifests(image, namespace, watch_namespace=watch)
        super().__init__("t9k:operator:T9kOperator", resource_name, {}, opts)

        by_kind: dict[str, list[dict[str, Any]]] = {}
        for manifest in self.manifests:
            by_kind.setdefault(manifest["kind"], []).append(manifest)

        def child(*depends_on: pulumi.Resource, retain: bool = False) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions(
                parent=self, depends_on=list(depends_on), retain_on_delete=retain
            )

        ns_name: pulumi.Input[str] = namespace
        if given.get("create_namespace", True):
            ns = k8s.core.v1.Namespace(
                f"{resource_name}-namespace",
                metadata=by_kind["Namespace"][0]["metadata"],
                opts=child(),
            )
            ns_name = ns.metadata.apply(lambda m: str(m.name))
        self.namespace = pulumi.Output.from_input(ns_name)

        retain = given.get("retain_crds", True)
        self.crds = {}
        for crd in by_kind["CustomResourceDefinition"]:
            kind = crd["spec"]["names"]["kind"]
            self.crds[kind] = k8s.apiextensions.v1.CustomResourceDefinition(
                f"{resource_name}-{crd['spec']['names']['plural']}",
                metadata=crd["metadata"],
                spec=crd["spec"],
                opts=child(retain=retain),
            )

        # The install manifests are plain dicts (checked by tests against the API server); Any
        # keeps them assignable to every pulumi-kubernetes release's TypedDicts.
        def in_namespace(metadata: dict[str, Any]) -> Any:
            return {**metadata, "namespace": ns_name}

        sa = by_kind["ServiceAccount"][0]
        self.service_account = k8s.core.v1.ServiceAccount(
            f"{resource_name}-service-account", metadata=in_namespace(sa["metadata"]), opts=child()
        )
        subjects: Any = [{"kind": "ServiceAccount", "name": install.NAME, "namespace": ns_name}]
        self.cluster_role = self.cluster_role_binding = None
        bindings: list[pulumi.Resource] = []
        for role in by_kind.get("ClusterRole", ()):
            self.cluster_role = k8s.rbac.v1.ClusterRole(
                f"{resource_name}-cluster-role",
                metadata=role["metadata"],
                rules=role["rules"],
                opts=child(),
            )
            binding = by_kind["ClusterRoleBinding"][0]
            self.cluster_role_binding = k8s.rbac.v1.ClusterRoleBinding(
                f"{resource_name}-cluster-role-binding",
                metadata=binding["metadata"],
                role_ref=binding["roleRef"],
                subjects=subjects,
                opts=child(self.cluster_role, self.service_account),
            )
            bindings.append(self.cluster_role_binding)

        def role_metadata(metadata: dict[str, Any]) -> Any:
            # In the operator's namespace: after it is created (the watched one must exist).
            return in_namespace(metadata) if metadata["namespace"] == namespace else metadata

        self.roles, self.role_bindings = [], []
        for role, binding in zip(by_kind["Role"], by_kind["RoleBinding"], strict=True):
            made = k8s.rbac.v1.Role(
                f"{resource_name}-role-{role['metadata']['name']}",
                metadata=role_metadata(role["metadata"]),
                rules=role["rules"],
                opts=child(),
            )
            self.roles.append(made)
            self.role_bindings.append(
                k8s.rbac.v1.RoleBinding(
                    f"{resource_name}-role-binding-{binding['metadata']['name']}",
                    metadata=role_metadata(binding["metadata"]),
                    role_ref=binding["roleRef"],
                    subjects=subjects,
                    opts=child(made, self.service_account),
                )
            )
        bindings.extend(self.role_bindings)
        deployment = by_kind["Deployment"][0]
        self.deployment = k8s.apps.v1.Deployment(
            f"{resource_name}-deployment",
            metadata=in_namespace(deployment["metadata"]),
            spec=deployment["spec"],
            opts=child(*bindings, *self.crds.values()),
        )
        self.network_policy = None
        if given.get("network_policy", False):
            policy = install.network_policy(namespace)
            self.network_policy = k8s.networking.v1.NetworkPolicy(
                f"{resource_name}-network-policy",
                metadata=in_namespace(policy["metadata"]),
                spec=policy["spec"],
                opts=child(),
            )
        self.register_outputs(
            {
                "namespace": self.namespace,
                "deployment": self.deployment.metadata.apply(lambda m: m.name),
                "crds": [c.metadata.apply(lambda m: m.name) for c in self.crds.values()],
            }
        )
