"""`t9k-sdk argocd-health`: print the Argo CD health check of the job kinds (an argocd-cm
patch), or its Lua script, or write both in Argo CD's layout."""

from __future__ import annotations

import argparse
import sys

from t9k_sdk.cli._declare import Subcommands, command
from t9k_sdk.cli._errors import EXIT_OK, UsageError, print_data
from t9k_sdk.cli._output import write_and_report

__all__ = ["add", "run"]

_HELP = """\
Print the Argo CD health check of GenericJob, DeepSpeedJob and ColossalAIJob: a patch of Argo
CD's argocd-cm ConfigMap with one key per kind
(resource.customizations.health.batch.tensorstack.dev_<Kind>) holding the Lua script. Without
it Argo CD shows a job as Healthy as soon as it exists; with it a job is Progressing while it
waits and runs, Healthy once it succeeded, Degraded when it failed or is blocked, Suspended while
paused.

Apply it to a running Argo CD with kubectl, or add the file to the kustomization that installs
Argo CD (`patches: [{path: argocd-cm-patch.yaml}]`). -o lua prints the script alone (the same
for the three kinds); --out-dir DIR writes it in Argo CD's resource_customizations layout,
DIR/resource_customizations/batch.tensorstack.dev/<Kind>/health.lua, with DIR/argocd-cm-patch.yaml.
See docs/how-to/argocd-health.md.
"""


def add(sub: Subcommands) -> None:
    parser = command(
        sub,
        "argocd-health",
        help="print the Argo CD health check of the job kinds (an argocd-cm patch)",
        description=_HELP,
        examples="  t9k-sdk argocd-health > argocd-cm-patch.yaml\n"
        "  kubectl patch configmap argocd-cm -n argocd --patch-file argocd-cm-patch.yaml\n"
        "  t9k-sdk argocd-health -o lua > health.lua\n"
        "  t9k-sdk argocd-health --out-dir deploy/argocd/",
        run=run,
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=("yaml", "json", "lua"),
        default=None,
        help="yaml (default: the argocd-cm patch), json (the same patch), or lua (the script)",
    )
    parser.add_argument(
        "--out-dir",
        metavar="DIR",
        help="write the scripts in Argo CD's resource_customizations layout and"
        " argocd-cm-patch.yaml into DIR",
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from t9k_sdk import argocd

    if args.out_dir is not None:
        if args.output is not None:
            raise UsageError(
                f"-o {args.output} and --out-dir: --out-dir writes every file (the scripts and"
                f" {argocd.PATCH_FILE}); give one or the other"
            )
        directory = Path(args.out_dir)
        return write_and_report(directory, argocd.deploy_files(), "file")
    if args.output == "lua":
        sys.stdout.write(argocd.health_lua())
    elif args.output == "json":
        print_data(argocd.argocd_cm_patch(), "json")
    else:
        sys.stdout.write(argocd.argocd_cm_patch_yaml())
    return EXIT_OK
