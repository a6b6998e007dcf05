"""`T9kOperator`: the operator's install (`t9k_sdk.install.install_manifests`) as Pulumi resources."""

from __future__ import annotations

from typing import Any, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from t9k_sdk import install
from t9k_sdk.pulumi._args import checked_input, unknown_keys_error
from t9k_sdk.pulumi._outputs import deferred, with_outputs

__all__ = ["T9kOperator", "T9kOperatorArgs"]


class T9kOperatorArgs(TypedDict, total=False):
    """Inputs of `t9k_sdk.pulumi.T9kOperator`; every key is optional."""

    image: pulumi.Input[str]
    """The operator image; default the release's, `ghcr.io/t9k/t9k-operator:<version>`.
    May be another resource's Output, such as the image a `docker.Image` of the stack builds."""
    namespace: pulumi.Input[str]
    """Namespace of the ServiceAccount and the Deployment; default "t9k-system"."""
    watch_namespace: pulumi.Input[str]
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

    The string arguments take a plain `str` or a `pulumi.Input[str]` (an Output of another
    resource of the stack): the children get the Output's value when Pulumi knows it, checked
    then as a plain string is checked at once (a bad value fails `up` with
    `InvalidOutputArgumentError`).

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
    """What was installed: `install_manifests(image, namespace, watch_namespace=...)`, with a
    `deferred` placeholder for each argument given as an Output."""

    def __init__(
        self,
        resource_name: str,
        args: T9kOperatorArgs | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        given = args or {}
        image, namespace, watch = _checked_args(resource_name, given)
        # An Output stands in the manifests as its placeholder; `with_outputs` puts the Output
        # back into the children's inputs, so they get its (checked) value.
        namespace_text = _stand_in(namespace)
        self.manifests = install.install_manifests(
            _stand_in(image), namespace_text, watch_namespace=_stand_in(watch)
        )
        super().__init__("t9k:operator:T9kOperator", resource_name, {}, opts)

        by_kind: dict[str, list[dict[str, Any]]] = {}
        for manifest in self.manifests:
            by_kind.setdefault(manifest["kind"], []).append(manifest)
        ns_name, created = self._create_namespace(
            resource_name, by_kind, namespace_text, given.get("create_namespace", True)
        )
        self.namespace = pulumi.Output.from_input(ns_name)
        self.crds = self._create_crds(resource_name, by_kind, given.get("retain_crds", True))
        bindings = self._create_rbac(resource_name, by_kind, ns_name, created)
        deployment = by_kind["Deployment"][0]
        self.deployment = k8s.apps.v1.Deployment(
            f"{resource_name}-deployment",
            metadata=_in_namespace(deployment["metadata"], ns_name),
            spec=with_outputs(deployment["spec"]),
            opts=self._child(*bindings, *self.crds.values()),
        )
        self.network_policy = None
        if given.get("network_policy", False):
            policy = install.network_policy(namespace_text)
            self.network_policy = k8s.networking.v1.NetworkPolicy(
                f"{resource_name}-network-policy",
                metadata=_in_namespace(policy["metadata"], ns_name),
                spec=policy["spec"],
                opts=self._child(),
            )
        self.register_outputs(
            {
                "namespace": self.namespace,
                "deployment": self.deployment.metadata.apply(lambda m: m.name),
                "crds": [c.metadata.apply(lambda m: m.name) for c in self.crds.values()],
            }
        )

    def _child(self, *depends_on: pulumi.Resource, retain: bool = False) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(
            parent=self, depends_on=list(depends_on), retain_on_delete=retain
        )

    def _create_namespace(
        self,
        resource_name: str,
        by_kind: dict[str, list[dict[str, Any]]],
        namespace_text: Any,
        create: bool,
    ) -> tuple[pulumi.Input[str], list[pulumi.Resource]]:
        """The namespace's name for the children, and the Namespace if this stack creates it."""
        ns_name: pulumi.Input[str] = with_outputs(namespace_text)
        created: list[pulumi.Resource] = []
        if create:
            ns = k8s.core.v1.Namespace(
                f"{resource_name}-namespace",
                metadata=with_outputs(by_kind["Namespace"][0]["metadata"]),
                opts=self._child(),
            )
            ns_name = ns.metadata.apply(lambda m: str(m.name))
            created.append(ns)
        return ns_name, created

    def _create_crds(
        self, resource_name: str, by_kind: dict[str, list[dict[str, Any]]], retain: bool
    ) -> dict[str, k8s.apiextensions.v1.CustomResourceDefinition]:
        crds = {}
        for crd in by_kind["CustomResourceDefinition"]:
            kind = crd["spec"]["names"]["kind"]
            crds[kind] = k8s.apiextensions.v1.CustomResourceDefinition(
                f"{resource_name}-{crd['spec']['names']['plural']}",
                metadata=crd["metadata"],
                spec=crd["spec"],
                opts=self._child(retain=retain),
            )
        return crds

    def _create_rbac(
        self,
        resource_name: str,
        by_kind: dict[str, list[dict[str, Any]]],
        ns_name: pulumi.Input[str],
        created: list[pulumi.Resource],
    ) -> list[pulumi.Resource]:
        """The ServiceAccount, the ClusterRole or Roles and their bindings; returns the bindings
        (the Deployment waits for them)."""
        sa = by_kind["ServiceAccount"][0]
        self.service_account = k8s.core.v1.ServiceAccount(
            f"{resource_name}-service-account",
            metadata=_in_namespace(sa["metadata"], ns_name),
            opts=self._child(),
        )
        subjects: Any = [{"kind": "ServiceAccount", "name": install.NAME, "namespace": ns_name}]
        self.cluster_role = self.cluster_role_binding = None
        bindings: list[pulumi.Resource] = []
        for role in by_kind.get("ClusterRole", ()):
            self.cluster_role = k8s.rbac.v1.ClusterRole(
                f"{resource_name}-cluster-role",
                metadata=role["metadata"],
                rules=role["rules"],
                opts=self._child(),
            )
            binding = by_kind["ClusterRoleBinding"][0]
            self.cluster_role_binding = k8s.rbac.v1.ClusterRoleBinding(
                f"{resource_name}-cluster-role-binding",
                metadata=binding["metadata"],
                role_ref=binding["roleRef"],
                subjects=subjects,
                opts=self._child(self.cluster_role, self.service_account),
            )
            bindings.append(self.cluster_role_binding)
        self._create_roles(resource_name, by_kind, subjects, created)
        bindings.extend(self.role_bindings)
        return bindings

    def _create_roles(
        self,
        resource_name: str,
        by_kind: dict[str, list[dict[str, Any]]],
        subjects: Any,
        created: list[pulumi.Resource],
    ) -> None:
        # The Roles live in the operator's namespace or the watched one, which may be the same
        # (unknown until an Output resolves): after the namespace this stack creates, if any.
        self.roles, self.role_bindings = [], []
        for role, binding in zip(by_kind["Role"], by_kind["RoleBinding"], strict=True):
            made = k8s.rbac.v1.Role(
                f"{resource_name}-role-{role['metadata']['name']}",
                metadata=with_outputs(role["metadata"]),
                rules=role["rules"],
                opts=self._child(*created),
            )
            self.roles.append(made)
            self.role_bindings.append(
                k8s.rbac.v1.RoleBinding(
                    f"{resource_name}-role-binding-{binding['metadata']['name']}",
                    metadata=with_outputs(binding["metadata"]),
                    role_ref=binding["roleRef"],
                    subjects=subjects,
                    opts=self._child(made, self.service_account),
                )
            )


_Checked = str | pulumi.Output[str] | None


def _checked_args(
    resource_name: str, given: T9kOperatorArgs
) -> tuple[_Checked, _Checked, _Checked]:
    """The image, namespace and watched namespace, checked (an Output: once it resolves)."""
    unknown = unknown_keys_error(
        "T9kOperator", resource_name, given, list(T9kOperatorArgs.__annotations__)
    )
    if unknown is not None:
        raise unknown
    subject = f"T9kOperator {resource_name!r}"
    image = checked_input(
        subject, "image", given.get("image", install.DEFAULT_IMAGE), install.validate_image
    )
    namespace = checked_input(
        subject,
        "namespace",
        given.get("namespace", install.DEFAULT_NAMESPACE),
        install.validate_namespace,
    )
    watch = checked_input(
        subject,
        "watch_namespace",
        given.get("watch_namespace"),
        lambda value: install.validate_namespace(value, "watch namespace"),
    )
    return image, namespace, watch


def _in_namespace(metadata: dict[str, Any], ns_name: pulumi.Input[str]) -> Any:
    """`metadata` in the namespace `ns_name`. The install manifests are plain dicts (checked by
    tests against the API server); Any keeps them assignable to every pulumi-kubernetes
    release's TypedDicts."""
    return {**with_outputs(metadata), "namespace": ns_name}


def _stand_in(value: str | pulumi.Output[str] | None) -> Any:
    """`value`, or for an Output the `deferred` placeholder standing for it."""
    return deferred(value) if isinstance(value, pulumi.Output) else value
