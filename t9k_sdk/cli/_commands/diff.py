"""`t9k-sdk diff`: show what apply would change, as a unified diff of YAML."""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import Any

from t9k_sdk.cli._declare import Subcommands, command, file_options
from t9k_sdk.cli._errors import (
    DIFF_EXIT_CODES,
    EXIT_DIFF,
    EXIT_DIFF_ERROR,
    EXIT_OK,
    error,
    exit_status_help,
)
from t9k_sdk.cli._terminal import for_terminal

__all__ = ["add", "run"]


def add(sub: Subcommands) -> None:
    parser = command(
        sub,
        "diff",
        help="show what apply would change, as a unified diff of YAML",
        description="Show how the jobs on the cluster would change if the files were applied:"
        " for each job,\n"
        "a unified diff between its live object and the object the API server would store\n"
        "(a server-side dry run of the apply: nothing is changed). A job that does not exist yet\n"
        "is shown as all new. managedFields and resourceVersion are left out. Reads FILE as\n"
        "apply does (a directory's kustomization.yaml is skipped).\n\n"
        "The dry run applies as field manager t9k-sdk, so a field another tool applied and the\n"
        "file no longer has is not shown as removed. To see what the GitOps tool that applies\n"
        "the jobs would change, removals included, diff as its field manager: Flux's\n"
        "kustomize-controller, or Argo CD's argocd-controller (with ServerSideApply=true).",
        examples="  t9k-sdk diff -f manifests/\n  t9k-sdk render jobs/ | t9k-sdk diff -f -\n"
        "  t9k-sdk diff -f manifests/ -n ml-team --field-manager kustomize-controller",
        run=run,
        cluster=True,
        exit_status=exit_status_help(DIFF_EXIT_CODES, " (as kubectl diff)"),
        failure=EXIT_DIFF_ERROR,
    )
    file_options(parser, required=True)
    parser.add_argument(
        "--field-manager",
        default="t9k-sdk",  # the client's FIELD_MANAGER (not imported: the client is an extra)
        metavar="NAME",
        help="apply (dry run) as this field manager, as kubectl diff --field-manager (default:"
        " t9k-sdk); kustomize-controller for Flux, argocd-controller for Argo CD",
    )


def run(args: argparse.Namespace) -> int:
    from t9k_sdk.cli import _cluster
    from t9k_sdk.client.errors import ClientError

    jobs = _cluster.load(args, "diff")
    if jobs is None:
        return EXIT_DIFF_ERROR
    differs = failed = False
    with _cluster.connect(args) as client:
        for item in jobs:
            ref = _cluster.ref(item.job)
            try:
                live, merged = client.diff(
                    item.job, args.namespace, field_manager=args.field_manager
                )
            except ClientError as exc:
                failed = True
                error(f"{ref} ({item.origin}): {exc}")
                continue
            if live != merged:
                differs = True
                sys.stdout.write(for_terminal(_diff_text(ref, live, merged)))
    if failed:
        return EXIT_DIFF_ERROR
    return EXIT_DIFF if differs else EXIT_OK


def _diff_text(ref: str, live: dict[str, Any] | None, merged: dict[str, Any]) -> str:
    """A unified diff of the YAML of the live object and of the object after applying."""
    from t9k_sdk import codecs

    before = codecs.dump_all_yaml([live]).splitlines(keepends=True) if live is not None else []
    after = codecs.dump_all_yaml([merged]).splitlines(keepends=True)
    return "".join(
        difflib.unified_diff(
            before,
            after,
            fromfile=f"live/{ref}" if live is not None else "/dev/null",
            tofile=f"merged/{ref}",
        )
    )
