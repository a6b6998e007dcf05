"""The operator's install as files GitOps tools read: a kustomize tree and a Helm chart.

Both are made from `install_manifests()` (t9k_sdk/install.py, the source of `t9k-sdk install`),
so they hold the same objects:

    kustomize_files(image, namespace, watch_namespace="team-a") -> {relative path: text}
        base/                       the default install (cluster-wide), one file per object group
        overlays/cluster-wide/      the base as it is
        overlays/namespace-scoped/  the base with a Role and RoleBinding in the watched namespace
                                    instead of the ClusterRole, and the operator started with
                                    --namespace=<watched>; the watched namespace is one line of
                                    its kustomization.yaml (a replacement source)
        components/network-policy/  opt-in: the NetworkPolicy of `install --network-policy`

    helm_chart_files(image, namespace, watch_namespace=None) -> {relative path: text}
        Chart.yaml, values.yaml, values.schema.json, crds/, templates/ (networkPolicy: true
        adds the NetworkPolicy)

`t9k-sdk install --kustomize DIR` and `--helm-chart DIR` write them; `make install-files`
regenerates the committed copies in deploy/ (tests/operator/test_install_trees.py fails when
they are out of date).

The Helm templates are made by rendering the install with marker values (a namespace, a watched
namespace, an image) and putting template expressions where the markers land; the objects that
exist only cluster-wide or only namespace-scoped are told apart by rendering both. The CRDs go
to `crds/`, as Helm recommends: installed with the chart, never upgraded or deleted by Helm
(deleting a CRD deletes every job of its kind).
"""

from __future__ import annotations

import json
import re
from typing import Any

from t9k_sdk import __version__
from t9k_sdk._yaml import dump_documents
from t9k_sdk.install import (
    DEFAULT_IMAGE,
    DEFAULT_NAMESPACE,
    IMAGE_DIGEST_PATTERN,
    IMAGE_REPOSITORY_PATTERN,
    IMAGE_TAG_PATTERN,
    LEASE_ROLE,
    NAME,
    install_manifests,
    network_policy,
    validate_namespace,
)

__all__ = [
    "DEFAULT_WATCH_NAMESPACE",
    "IMAGE_DIGEST_PATTERN",
    "IMAGE_REPOSITORY_PATTERN",
    "IMAGE_TAG_PATTERN",
    "MAX_REPLICAS",
    "NAMESPACE_PATTERN",
    "helm_chart_files",
    "kustomize_files",
    "split_image",
]

DEFAULT_WATCH_NAMESPACE = "team-a"
"""The watched namespace of the committed namespace-scoped overlay: a placeholder to replace."""

NAMESPACE_PATTERN = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
MAX_REPLICAS = 10
"""Only the Lease holder acts; more replicas are standbys, and more than a few waste a node."""

_WATCH_PLACEHOLDER = "set-from-kustomization-yaml"
_BASE_GENERATED = (
    "# Generated from t9k_sdk/install.py by `t9k-sdk install --kustomize`; do not edit.\n"
    "# Regenerate the committed copy with `make install-files`.\n"
)
_HELM_GENERATED = (
    "# Generated from t9k_sdk/install.py by `t9k-sdk install --helm-chart`; do not edit.\n"
    "# Regenerate the committed copy with `make install-files`.\n"
)


# --- grouping the install into files ----------------------------------------------------------


def _file_of(obj: dict[str, Any]) -> str:
    kind, name = obj["kind"], obj["metadata"]["name"]
    if kind == "Namespace":
        return "namespace.yaml"
    if kind == "CustomResourceDefinition":
        group, plural = obj["spec"]["group"], obj["spec"]["names"]["plural"]
        return f"crds/{group}_{plural}.yaml"
    if kind == "ServiceAccount":
        return "service-account.yaml"
    if kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"):
        return "leader-election-rbac.yaml" if name == LEASE_ROLE else "rbac.yaml"
    if kind == "Deployment":
        return "deployment.yaml"
    raise AssertionError(f"install_manifests() returned an object no file takes: {kind} {name}")


def _grouped(objects: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """File name -> its objects, files in the apply order of their first object."""
    files: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        files.setdefault(_file_of(obj), []).append(obj)
    return files


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return (obj["kind"], meta.get("namespace", ""), meta["name"])


# --- kustomize ------------------------------------------------------------------------------


def _kustomization(body: dict[str, Any], comment: str) -> str:
    head = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"}
    return _BASE_GENERATED + comment + dump_documents([{**head, **body}])


def _container_args(deployment: dict[str, Any]) -> list[str]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args: list[str] = container["args"]
    return args


def kustomize_files(
    image: str = DEFAULT_IMAGE,
    namespace: str = DEFAULT_NAMESPACE,
    watch_namespace: str = DEFAULT_WATCH_NAMESPACE,
) -> dict[str, str]:
    """The kustomize tree (see the module docstring): relative path -> file text.

    `kubectl kustomize base` and `overlays/cluster-wide` give `install_manifests(image,
    namespace)`; `overlays/namespace-scoped` gives `install_manifests(image, namespace,
    watch_namespace=watch_namespace)`.
    """
    validate_namespace(watch_namespace, "watch namespace")
    cluster = install_manifests(image, namespace)
    # The overlay's files name the watched namespace by a placeholder that the replacements
    # overwrite: the real name is written once, in kustomization.yaml.
    scoped = install_manifests(image, namespace, watch_namespace=_WATCH_PLACEHOLDER)
    return {
        **_kustomize_base(cluster),
        **_kustomize_cluster_wide(),
        **_kustomize_namespace_scoped(cluster, scoped, watch_namespace),
        **_kustomize_network_policy(namespace),
    }


def _kustomize_base(cluster: list[dict[str, Any]]) -> dict[str, str]:
    """base/: the cluster-wide install, one file per group of objects."""
    files: dict[str, str] = {}
    base = _grouped(cluster)
    for path, objects in base.items():
        files[f"base/{path}"] = _BASE_GENERATED + dump_documents(objects)
    files["base/kustomization.yaml"] = _kustomization(
        {"resources": list(base)},
        "# The operator's whole install, cluster-wide: the same objects as `t9k-sdk install`.\n"
        "# Use it through overlays/cluster-wide or overlays/namespace-scoped (docs/operator/install.md).\n",
    )
    return files


def _kustomize_cluster_wide() -> dict[str, str]:
    """overlays/cluster-wide: the base as it is."""
    return {
        "overlays/cluster-wide/kustomization.yaml": _kustomization(
            {"resources": ["../../base"]},
            "# The operator reconciles the jobs of every namespace (a ClusterRole): `t9k-sdk install`.\n",
        )
    }


def _kustomize_namespace_scoped(
    cluster: list[dict[str, Any]], scoped: list[dict[str, Any]], watch_namespace: str
) -> dict[str, str]:
    """overlays/namespace-scoped: what differs from the cluster-wide install, as kustomize
    edits (deletions, the Deployment's extra arguments, the watched namespace's objects)."""
    cluster_keys = {_key(o) for o in cluster}
    scoped_keys = {_key(o) for o in scoped}
    removed = [o for o in cluster if _key(o) not in scoped_keys]
    added = [o for o in scoped if _key(o) not in cluster_keys]
    (deployment,) = [o for o in scoped if o["kind"] == "Deployment"]
    (cluster_deployment,) = [o for o in cluster if o["kind"] == "Deployment"]
    before, after = _container_args(cluster_deployment), _container_args(deployment)
    extra_args = after[len(before) :]
    assert after[: len(before)] == before, "the watch namespace only appends operator arguments"
    (watch_arg,) = [a for a in extra_args if a.endswith(f"={_WATCH_PLACEHOLDER}")]
    changed = [o for o in scoped if _key(o) in cluster_keys and o not in cluster]
    assert [_key(o) for o in changed] == [_key(deployment)], "only the Deployment's args change"
    patches = [*(_delete_patch(o) for o in removed), _append_args_patch(extra_args)]
    targets = _watch_namespace_targets(added, deployment, watch_arg)
    return {
        "overlays/namespace-scoped/rbac.yaml": (
            _BASE_GENERATED
            + f"# {_WATCH_PLACEHOLDER}: the watched namespace, from kustomization.yaml's literal.\n"
            + dump_documents(added)
        ),
        "overlays/namespace-scoped/kustomization.yaml": _namespace_scoped_kustomization(
            watch_namespace, patches, targets
        ),
    }


def _delete_patch(obj: dict[str, Any]) -> dict[str, Any]:
    """A kustomize patch that deletes `obj` from the base."""
    return {
        "target": {"kind": obj["kind"], "name": obj["metadata"]["name"]},
        "patch": dump_documents(
            [
                {
                    "$patch": "delete",
                    "apiVersion": obj["apiVersion"],
                    "kind": obj["kind"],
                    "metadata": {"name": obj["metadata"]["name"]},
                }
            ]
        ),
    }


def _append_args_patch(extra_args: list[str]) -> dict[str, Any]:
    """A JSON patch that appends `extra_args` to the operator container's arguments."""
    return {
        "target": {"kind": "Deployment", "name": NAME},
        "patch": dump_documents(
            [
                [
                    {
                        "op": "add",
                        "path": "/spec/template/spec/containers/0/args/-",
                        "value": arg,
                    }
                    for arg in extra_args
                ]
            ]
        ),
    }


def _watch_namespace_targets(
    added: list[dict[str, Any]], deployment: dict[str, Any], watch_arg: str
) -> list[dict[str, Any]]:
    """Where the replacements write the watched namespace: the namespace of each added object
    in it, and the value of the Deployment's `watch_arg`."""
    targets: list[dict[str, Any]] = [
        {
            "select": {"kind": o["kind"], "name": o["metadata"]["name"]},
            "fieldPaths": ["metadata.namespace"],
        }
        for o in added
        if o["metadata"].get("namespace") == _WATCH_PLACEHOLDER
    ]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    targets.append(
        {
            "select": {"kind": "Deployment", "name": NAME},
            "fieldPaths": [
                f"spec.template.spec.containers.[name={container['name']}].args.[={watch_arg}]"
            ],
            "options": {"delimiter": "=", "index": watch_arg.count("=")},
        }
    )
    return targets


def _namespace_scoped_kustomization(
    watch_namespace: str, patches: list[dict[str, Any]], targets: list[dict[str, Any]]
) -> str:
    """The overlay's kustomization.yaml: the watched namespace as a literal, fed by the
    replacements into `targets`."""
    return _kustomization(
        {
            "resources": ["../../base", "rbac.yaml"],
            "configMapGenerator": [
                {
                    "name": "t9k-operator-watch-namespace",
                    "literals": [f"namespace={watch_namespace}"],
                    "options": {
                        "disableNameSuffixHash": True,
                        "annotations": {"config.kubernetes.io/local-config": "true"},
                    },
                }
            ],
            "patches": patches,
            "replacements": [
                {
                    "source": {
                        "kind": "ConfigMap",
                        "name": "t9k-operator-watch-namespace",
                        "fieldPath": "data.namespace",
                    },
                    "targets": targets,
                }
            ],
        },
        "# The operator reconciles the jobs of ONE namespace, with a Role there instead of the\n"
        "# ClusterRole: `t9k-sdk install --watch-namespace NS`. The watched namespace is the\n"
        "# `namespace=` literal of the configMapGenerator below (a local-config ConfigMap: it is\n"
        "# not applied, it only feeds the replacements). That namespace must exist first.\n",
    )


def _kustomize_network_policy(namespace: str) -> dict[str, str]:
    """components/network-policy: the opt-in NetworkPolicy, as a kustomize component."""
    component = "components/network-policy"
    return {
        f"{component}/network-policy.yaml": _BASE_GENERATED
        + dump_documents([network_policy(namespace)]),
        f"{component}/kustomization.yaml": (
            _BASE_GENERATED
            + "# Opt-in: add `components: [../../components/network-policy]` to an overlay. The\n"
            + "# operator's pod then admits nothing but its health port (probes, /metrics), and that\n"
            + "# only from namespaces labelled metrics=enabled (`t9k-sdk install --network-policy`).\n"
            + dump_documents(
                [
                    {
                        "apiVersion": "kustomize.config.k8s.io/v1alpha1",
                        "kind": "Component",
                        "resources": ["network-policy.yaml"],
                    }
                ]
            )
        ),
    }


# --- Helm -----------------------------------------------------------------------------------

# Marker values: rendered into the install, then replaced by template expressions. The
# namespaces must pass validate_namespace; none of them can occur in the install by chance.
_NS = "zz-t9k-helm-namespace-zz"
_WATCH = "zz-t9k-helm-watch-namespace-zz"
_IMAGE = "zz-t9k-helm-image-zz"
_REPLICAS = "ZZ_T9K_HELM_REPLICAS_ZZ"
_BLOCK = "ZZ_T9K_HELM_BLOCK_ZZ"
_OPTIONAL_POD_FIELDS = ("imagePullSecrets", "nodeSelector", "affinity", "tolerations")
_CHART = "t9k-operator"


def split_image(image: str) -> dict[str, str]:
    """`image` as the chart's values: repository and tag, or repository and digest."""
    repository, tag, digest = image, "", ""
    if "@" in image:
        repository, digest = image.split("@", 1)
    elif ":" in image.rsplit("/", 1)[-1]:
        repository, tag = image.rsplit(":", 1)
    for field, value, pattern in (
        ("image.repository", repository, IMAGE_REPOSITORY_PATTERN),
        ("image.tag", tag, IMAGE_TAG_PATTERN),
        ("image.digest", digest, IMAGE_DIGEST_PATTERN),
    ):
        if (value or field == "image.repository") and not re.fullmatch(pattern, value):
            raise ValueError(
                f"image {image!r} cannot be a chart default: {field} {value!r} does not match"
                f" {pattern} (an image reference like registry.example.com/t9k-operator:0.1.0)"
            )
    return {"repository": repository, "tag": tag, "digest": digest}


def _template_text(objects: list[dict[str, Any]]) -> str:
    text = dump_documents(objects)
    text = text.replace(_IMAGE, '{{ include "t9k-operator.image" . }}')
    text = text.replace(_WATCH, '{{ include "t9k-operator.watchNamespace" . }}')
    text = text.replace(_NS, '{{ include "t9k-operator.namespace" . }}')
    text = text.replace(f"replicas: {_REPLICAS}", "replicas: {{ .Values.replicas }}")

    def block(match: re.Match[str]) -> str:
        indent, key = match.group(1), match.group(2)
        value = f".Values.{key}"
        if key in _OPTIONAL_POD_FIELDS:
            return (
                f"{{{{- with {value} }}}}\n{indent}{key}:"
                f"\n{{{{- toYaml . | nindent {len(indent) + 2} }}}}\n{{{{- end }}}}"
            )
        return f"{indent}{key}:\n{{{{- toYaml {value} | nindent {len(indent) + 2} }}}}"

    text = re.sub(rf"(?m)^( *)([A-Za-z]+): {_BLOCK}$", block, text)
    return text


def _deployment_template(cluster: dict[str, Any], scoped: dict[str, Any]) -> str:
    """The Deployment: the lines that name the watched namespace only when it is set."""
    with_watch = _template_text([scoped]).splitlines()
    without = _template_text([cluster]).splitlines()
    marker = 'include "t9k-operator.watchNamespace"'
    assert [line for line in with_watch if marker not in line] == without
    out: list[str] = []
    for line in with_watch:
        if marker in line:
            out += ["{{- if .Values.watchNamespace }}", line, "{{- end }}"]
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def _helm_deployment(obj: dict[str, Any]) -> dict[str, Any]:
    """The Deployment with markers where values go (replicas, resources, optional fields)."""
    spec = dict(obj["spec"])
    template = dict(spec["template"])
    pod = dict(template["spec"])
    (container,) = pod["containers"]
    pod["containers"] = [{**container, "resources": _BLOCK}]
    for field in _OPTIONAL_POD_FIELDS:
        pod[field] = _BLOCK
    template["spec"] = pod
    spec["template"] = template
    spec["replicas"] = _REPLICAS
    return {**obj, "spec": spec}


_HELPERS = """\
{{/* Generated from t9k_sdk/install.py by `t9k-sdk install --helm-chart`; do not edit. */}}

{{/*
The values are checked by values.schema.json; these checks repeat the ones that keep a value
from breaking the YAML, for `--skip-schema-validation`.
*/}}
{{- define "t9k-operator.namespace" -}}
{{- $ns := .Values.namespace | toString -}}
{{- if not (regexMatch "NAMESPACE_PATTERN" $ns) -}}
{{- fail (printf "namespace %q is not a valid namespace name: it must be a DNS-1123 label, at most 63 characters of lowercase letters, digits and '-', starting and ending with a letter or digit (e.g. t9k-system)" $ns) -}}
{{- end -}}
{{- $ns -}}
{{- end -}}

{{- define "t9k-operator.watchNamespace" -}}
{{- $ns := .Values.watchNamespace | toString -}}
{{- if not (regexMatch "NAMESPACE_PATTERN" $ns) -}}
{{- fail (printf "watchNamespace %q is not a valid namespace name: it must be a DNS-1123 label, at most 63 characters of lowercase letters, digits and '-', starting and ending with a letter or digit (e.g. team-a), or empty for all namespaces" $ns) -}}
{{- end -}}
{{- $ns -}}
{{- end -}}

{{- define "t9k-operator.image" -}}
{{- $repo := .Values.image.repository | toString -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag | toString -}}
{{- $digest := .Values.image.digest | default "" | toString -}}
{{- if not (regexMatch "IMAGE_REPOSITORY_PATTERN" $repo) -}}
{{- fail (printf "image.repository %q is not an image name (e.g. registry.example.com/t9k-operator)" $repo) -}}
{{- end -}}
{{- if $digest -}}
{{- if not (regexMatch "IMAGE_DIGEST_PATTERN" $digest) -}}
{{- fail (printf "image.digest %q is not sha256:<64 hex digits>" $digest) -}}
{{- end -}}
{{- printf "%s@%s" $repo $digest -}}
{{- else -}}
{{- if not (regexMatch "IMAGE_TAG_PATTERN" $tag) -}}
{{- fail (printf "image.tag %q is not an image tag (letters, digits, '_', '.', '-'; at most 128)" $tag) -}}
{{- end -}}
{{- printf "%s:%s" $repo $tag -}}
{{- end -}}
{{- end -}}
"""


def _schema() -> dict[str, Any]:
    """values.schema.json: the image, where the operator runs and what it watches, its pod."""
    return {
        "$schema": "https://json-schema.org/draft-07/schema#",
        "title": "t9k-operator chart values",
        "type": "object",
        "additionalProperties": False,
        "required": ["image", "namespace", "replicas"],
        "properties": {
            "image": _image_schema(),
            **_namespaces_schema(),
            **_pod_schema(),
        },
    }


def _image_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["repository"],
        "properties": {
            "repository": {
                "description": "the operator image without tag, e.g. registry.example.com/t9k-operator",
                "type": "string",
                "minLength": 1,
                "maxLength": 255,
                "pattern": IMAGE_REPOSITORY_PATTERN,
            },
            "tag": {
                "description": "the image tag; empty: the chart's appVersion",
                "type": "string",
                "pattern": f"^$|{IMAGE_TAG_PATTERN}",
            },
            "digest": {
                "description": "sha256:<64 hex digits>; when set it is used instead of the tag",
                "type": "string",
                "pattern": f"^$|{IMAGE_DIGEST_PATTERN}",
            },
        },
    }


def _namespaces_schema() -> dict[str, Any]:
    """namespace, createNamespace, watchNamespace and networkPolicy."""
    namespace = {
        "type": "string",
        "pattern": NAMESPACE_PATTERN,
        "maxLength": 63,
    }
    return {
        "namespace": {
            **namespace,
            "description": "the namespace the operator runs in (and its Lease lives in)",
            "minLength": 1,
        },
        "createNamespace": {
            "description": "render the Namespace object (false when it exists already)",
            "type": "boolean",
        },
        "watchNamespace": {
            "description": "reconcile only the jobs of this namespace, with a Role there"
            " instead of the ClusterRole; empty: every namespace",
            "type": "string",
            "pattern": f"^$|{NAMESPACE_PATTERN}",
            "maxLength": 63,
        },
        "networkPolicy": {
            "description": "also render a NetworkPolicy: only the health port is"
            " reachable, from namespaces labelled metrics=enabled",
            "type": "boolean",
        },
    }


def _pod_schema() -> dict[str, Any]:
    """replicas, resources, and the pod's scheduling and pulling fields."""
    resource_list = {
        "type": "object",
        "additionalProperties": {"type": ["string", "number"], "pattern": r"^[0-9A-Za-z.+-]+$"},
    }
    return {
        "replicas": {
            "description": "operator pods; only the Lease holder acts, the others stand by",
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_REPLICAS,
        },
        "resources": {
            "description": "the operator container's resources",
            "type": "object",
            "additionalProperties": False,
            "properties": {"requests": resource_list, "limits": resource_list},
        },
        "imagePullSecrets": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name"],
                "additionalProperties": False,
                "properties": {"name": {"type": "string", "pattern": NAMESPACE_PATTERN}},
            },
        },
        "nodeSelector": {
            "type": "object",
            "additionalProperties": {"type": "string", "pattern": r"^[A-Za-z0-9_.-]{0,63}$"},
        },
        "affinity": {"type": "object"},
        "tolerations": {"type": "array", "items": {"type": "object"}},
    }


def _values_yaml(values: dict[str, Any]) -> str:
    def dump(data: dict[str, Any]) -> str:
        return dump_documents([data]).removeprefix("---\n")

    return (
        _HELM_GENERATED
        + "# Checked by values.schema.json: a value that is not allowed stops helm with the field's name.\n"
        + "\n# The operator image: repository, and a tag (empty: the chart's appVersion) or a digest.\n"
        + dump({"image": values["image"]})
        + "\n# Where the operator runs and its Lease lives. createNamespace renders the Namespace\n"
        + "# object, as `t9k-sdk install` does: set it to false when the namespace exists (for\n"
        + "# example when it is Helm's release namespace, `helm install -n NS --create-namespace`).\n"
        + dump({"namespace": values["namespace"], "createNamespace": values["createNamespace"]})
        + "\n# Empty: the operator reconciles the jobs of every namespace (a ClusterRole). A namespace:\n"
        + "# only the jobs there, with a Role and RoleBinding in it (it must exist first).\n"
        + f"watchNamespace: {json.dumps(values['watchNamespace'])}\n"
        + "\n# true: a NetworkPolicy admits nothing but the operator's health port (probes, /metrics),\n"
        + "# and that only from namespaces labelled metrics=enabled (`t9k-sdk install --network-policy`).\n"
        + f"networkPolicy: {json.dumps(values['networkPolicy'])}\n"
        + f"\n# Operator pods (at most {MAX_REPLICAS}): only the Lease holder acts, the others stand by.\n"
        + dump({"replicas": values["replicas"]})
        + "\n# The operator container's resources.\n"
        + dump({"resources": values["resources"]})
        + "\n# Pod scheduling and pulling; empty: not set.\n"
        + "imagePullSecrets: []\nnodeSelector: {}\naffinity: {}\ntolerations: []\n"
    )


_NOTES = """\
The t9k-operator is installed in namespace {{ include "t9k-operator.namespace" . }}
{{- if .Values.watchNamespace }}, reconciling the jobs of namespace {{ include "t9k-operator.watchNamespace" . }} only{{ else }}, reconciling the jobs of every namespace{{ end }}.

  kubectl -n {{ include "t9k-operator.namespace" . }} rollout status deploy/t9k-operator
  kubectl -n {{ include "t9k-operator.namespace" . }} get lease t9k-operator

The CRDs in the chart's crds/ directory are installed once and never upgraded or deleted by
Helm: after an upgrade of the chart, apply them yourself (docs/operator/install.md, "With Helm").
"""


def helm_chart_files(
    image: str = DEFAULT_IMAGE,
    namespace: str = DEFAULT_NAMESPACE,
    watch_namespace: str | None = None,
) -> dict[str, str]:
    """The Helm chart (see the module docstring): relative path -> file text.

    With the default values, `helm template --include-crds` gives `install_manifests(image,
    namespace, watch_namespace=watch_namespace)`; the values change what `t9k-sdk install`'s
    options change.
    """
    install_manifests(image, namespace, watch_namespace=watch_namespace)  # validates them
    cluster = install_manifests(_IMAGE, _NS)
    scoped = install_manifests(_IMAGE, _NS, watch_namespace=_WATCH)
    files: dict[str, str] = {}
    files["Chart.yaml"] = _chart_yaml()
    files["values.yaml"] = _values_yaml(_values(image, namespace, watch_namespace, cluster))
    files["values.schema.json"] = json.dumps(_schema(), indent=2) + "\n"
    files["templates/_helpers.tpl"] = _helpers_tpl()
    files["templates/NOTES.txt"] = _NOTES
    files.update(_manifest_templates(cluster, scoped))
    files["templates/network-policy.yaml"] = _network_policy_template()
    return files


def _chart_yaml() -> str:
    return _HELM_GENERATED + dump_documents(
        [
            {
                "apiVersion": "v2",
                "name": _CHART,
                "description": "The t9k-operator: GenericJob, DeepSpeedJob and ColossalAIJob"
                " (batch.tensorstack.dev) reconciled into pods",
                "type": "application",
                "version": __version__,
                "appVersion": __version__,
            }
        ]
    ).removeprefix("---\n")


def _values(
    image: str, namespace: str, watch_namespace: str | None, cluster: list[dict[str, Any]]
) -> dict[str, Any]:
    """The chart's default values: those of `t9k-sdk install` with the same options."""
    (deployment,) = [o for o in cluster if o["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return {
        "image": split_image(image),
        "namespace": namespace,
        "createNamespace": True,
        "watchNamespace": watch_namespace or "",
        "networkPolicy": False,
        "replicas": deployment["spec"]["replicas"],
        "resources": container["resources"],
    }


def _helpers_tpl() -> str:
    """templates/_helpers.tpl, with the patterns the values are checked against."""
    helpers = _HELPERS
    for name, pattern in (
        ("NAMESPACE_PATTERN", NAMESPACE_PATTERN),
        ("IMAGE_REPOSITORY_PATTERN", IMAGE_REPOSITORY_PATTERN),
        ("IMAGE_TAG_PATTERN", IMAGE_TAG_PATTERN),
        ("IMAGE_DIGEST_PATTERN", IMAGE_DIGEST_PATTERN),
    ):
        helpers = helpers.replace(f'"{name}"', json.dumps(pattern))
    return helpers


_TEMPLATE_HEADER = "{{- /* Generated from t9k_sdk/install.py by `t9k-sdk install --helm-chart`; do not edit. */}}\n"


def _manifest_templates(
    cluster: list[dict[str, Any]], scoped: list[dict[str, Any]]
) -> dict[str, str]:
    """The install's files: the CRDs as they are (crds/), the rest as templates/."""
    files: dict[str, str] = {}
    for path, objects in _grouped(cluster).items():
        if path.startswith("crds/"):
            # `---` first: `helm show crds` concatenates the files as they are
            files[path] = _HELM_GENERATED + "---\n" + dump_documents(objects)
        elif path == "namespace.yaml":
            files[f"templates/{path}"] = _namespace_template(objects)
        elif path == "deployment.yaml":
            (deployment,) = [o for o in cluster if o["kind"] == "Deployment"]
            (scoped_deployment,) = [o for o in scoped if o["kind"] == "Deployment"]
            files[f"templates/{path}"] = _TEMPLATE_HEADER + _deployment_template(
                _helm_deployment(deployment), _helm_deployment(scoped_deployment)
            )
        elif path == "rbac.yaml":
            files[f"templates/{path}"] = _rbac_template(objects, cluster, scoped)
        else:
            files[f"templates/{path}"] = _TEMPLATE_HEADER + _template_text(objects)
    return files


def _namespace_template(objects: list[dict[str, Any]]) -> str:
    """The Namespace, with createNamespace; never the release's own namespace."""
    return (
        _TEMPLATE_HEADER
        + "{{- if .Values.createNamespace }}\n"
        + "{{- if eq .Values.namespace .Release.Namespace }}\n"
        + '{{- fail (printf "createNamespace=true makes the chart create namespace %s, but'
        " Helm already uses it for the release (-n %s): set createNamespace=false, or"
        ' install the release in another namespace" .Values.namespace .Release.Namespace) }}\n'
        + "{{- end }}\n"
        + _template_text(objects)
        + "{{- end }}\n"
    )


def _rbac_template(
    objects: list[dict[str, Any]], cluster: list[dict[str, Any]], scoped: list[dict[str, Any]]
) -> str:
    """The ClusterRole and its binding, or with watchNamespace the Role and RoleBinding."""
    cluster_keys = {_key(o) for o in cluster}
    scoped_keys = {_key(o) for o in scoped}
    only_cluster = [o for o in objects if _key(o) not in scoped_keys]
    only_scoped = [o for o in scoped if _key(o) not in cluster_keys]
    assert len(only_cluster) == len(objects)
    return (
        _TEMPLATE_HEADER
        + "{{- if .Values.watchNamespace }}\n"
        + _template_text(only_scoped)
        + "{{- else }}\n"
        + _template_text(only_cluster)
        + "{{- end }}\n"
    )


def _network_policy_template() -> str:
    return (
        _TEMPLATE_HEADER
        + "{{- if .Values.networkPolicy }}\n"
        + _template_text([network_policy(_NS)])
        + "{{- end }}\n"
    )
