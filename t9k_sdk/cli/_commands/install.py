"""`t9k-sdk install`: print the operator's install (CRDs, RBAC, Deployment) as YAML, or write it
as a kustomize tree or a Helm chart."""

from __future__ import annotations

import argparse
import sys

from t9k_sdk.cli._declare import Subcommands, command
from t9k_sdk.cli._errors import EXIT_FAILED, EXIT_OK, UsageError, error
from t9k_sdk.cli._output import plural, write_files

__all__ = ["add", "run"]

_HELP = """\
Print everything needed to run the t9k-operator in a cluster, as YAML in apply order: the
namespace, the three CRDs, the service account, a least-privilege ClusterRole and its binding,
a Role and binding for the leader-election Lease, and the Deployment. Apply it with server-side
apply (the CRDs are larger than client-side apply's annotation limit):

  t9k-sdk install | kubectl apply --server-side -f -

The operator's image is the one this release of t9k-sdk publishes,
ghcr.io/t9k/t9k-operator:VERSION, unless --image names another (a mirror of it, or the same by
digest: --image ghcr.io/t9k/t9k-operator@sha256:...). The image used is said on stderr.

With --watch-namespace NS the operator reconciles only the jobs in NS, and its permissions are
a Role and RoleBinding in NS instead of the ClusterRole (NS must exist first).

--kustomize DIR writes the same install as a kustomize tree instead (what deploy/kustomize
holds, with your --image and --namespace): DIR/base (cluster-wide), DIR/overlays/cluster-wide
and DIR/overlays/namespace-scoped, which watches --watch-namespace (default: team-a, a
placeholder). --helm-chart DIR writes a Helm chart whose default values are your options (what
deploy/helm/t9k-operator holds). Existing files of the same names are overwritten; nothing
else in DIR is touched.

  t9k-sdk install --kustomize ops/t9k --image registry.example.com/t9k-operator:0.1.0
  kubectl kustomize ops/t9k/overlays/cluster-wide | kubectl apply --server-side -f -
"""


def add(sub: Subcommands) -> None:
    parser = command(
        sub,
        "install",
        help="print the operator's install (CRDs, RBAC, Deployment) as YAML",
        description=_HELP,
        run=run,
    )
    parser.add_argument(
        "--image",
        default=None,
        help="operator image, NAME:TAG or NAME@sha256:DIGEST (default: the release's,"
        " ghcr.io/t9k/t9k-operator:VERSION)",
    )
    parser.add_argument(
        "--namespace", default=None, help="namespace to run in (default: t9k-system)"
    )
    parser.add_argument(
        "--watch-namespace",
        default=None,
        metavar="NS",
        help="reconcile only the jobs in NS, with a Role there instead of a ClusterRole"
        " (default: all namespaces)",
    )
    parser.add_argument(
        "--network-policy",
        action="store_true",
        help="also print a NetworkPolicy: only the health port is reachable, and only from"
        " namespaces labelled metrics=enabled (docs/operator/security.md)",
    )
    parser.add_argument(
        "--no-crds",
        action="store_true",
        help="leave the CRDs out: to install them separately, or to uninstall the operator and"
        " keep every job (t9k-sdk install --no-crds | kubectl delete -f -)",
    )
    parser.add_argument(
        "--kustomize",
        default=None,
        metavar="DIR",
        help="write a kustomize base and overlays to DIR instead of printing YAML",
    )
    parser.add_argument(
        "--helm-chart",
        default=None,
        metavar="DIR",
        help="write a Helm chart to DIR instead of printing YAML",
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from t9k_sdk import codecs
    from t9k_sdk.install import (
        DEFAULT_IMAGE,
        DEFAULT_NAMESPACE,
        install_manifests,
        network_policy,
    )
    from t9k_sdk.install_trees import (
        DEFAULT_WATCH_NAMESPACE,
        helm_chart_files,
        kustomize_files,
    )

    image = args.image or DEFAULT_IMAGE
    namespace = DEFAULT_NAMESPACE if args.namespace is None else args.namespace
    if args.kustomize is not None and args.helm_chart is not None:
        raise UsageError("--kustomize and --helm-chart write different trees: give one of them")
    if args.no_crds and (args.kustomize is not None or args.helm_chart is not None):
        raise UsageError(
            "--no-crds applies to the printed install only; the kustomize tree and the Helm"
            " chart keep the CRDs apart already (base/crds, the chart's crds/)"
        )
    if args.network_policy and (args.kustomize is not None or args.helm_chart is not None):
        raise UsageError(
            "--network-policy adds to the printed install only; for a kustomize tree or a Helm"
            " chart, take the NetworkPolicy from `t9k-sdk install --network-policy` and add it"
            " as a resource of your own"
        )
    try:
        if args.kustomize is not None:
            directory = Path(args.kustomize)
            watch = args.watch_namespace or DEFAULT_WATCH_NAMESPACE
            files = kustomize_files(image, namespace, watch)
            what = "kustomize base and overlays"
        elif args.helm_chart is not None:
            directory = Path(args.helm_chart)
            files = helm_chart_files(image, namespace, args.watch_namespace)
            what = "Helm chart"
        else:
            objects = install_manifests(image, namespace, watch_namespace=args.watch_namespace)
            if args.network_policy:
                objects.append(network_policy(namespace))
            if args.no_crds:
                objects = [o for o in objects if o["kind"] != "CustomResourceDefinition"]
            sys.stdout.write(codecs.dump_all_yaml(objects))
            _say_image(image, args.image is None)
            return EXIT_OK
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        written = write_files(directory, files)
    except OSError as exc:
        error(f"cannot write to {directory}: {exc.strerror or exc}; nothing was written")
        return EXIT_FAILED
    print(f"wrote the {what} ({plural(len(written), 'file')}) to {directory}", file=sys.stderr)
    _say_image(image, args.image is None)
    return EXIT_OK


def _say_image(image: str, default: bool) -> None:
    origin = " (this release's; --image names another)" if default else ""
    print(f"t9k-sdk install: the operator's image is {image}{origin}", file=sys.stderr)
