"""`t9k-sdk render`: write the jobs defined in Python files as YAML manifests."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from t9k_sdk.cli._declare import Subcommands, command, output_options
from t9k_sdk.cli._errors import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    error,
    list_payload,
    print_data,
    warn,
)
from t9k_sdk.cli._output import format_and_directory, plural, write_files

if TYPE_CHECKING:
    from t9k_sdk.cli._sources import Built

__all__ = ["add", "run"]

_HELP = """\
Import Python files or modules that define T9k jobs and write their manifests as YAML.

Every module-level job is rendered, in definition order: builders (t9k_sdk.GenericJob,
TorchrunJob, DeepSpeedJob, ColossalAIJob), wire models (t9k_sdk.models.*), and lists or tuples
of them.
PATH is a .py file, a directory (every *.py below it, sorted; directories starting with `.` or
`_` are skipped) or a module name importable from the current directory (pkg.jobs). YAML
manifests are not read (a usage error): `t9k-sdk convert` rewrites them.

Without --out-dir the jobs go to stdout as one multi-document YAML stream (-o json: one JSON
object, or a List of several). With --out-dir DIR each job is written to DIR/<kind>-<name>.yaml
(e.g. deepspeedjob-bert.yaml), starting with a comment line that marks it as rendered; files
are written only if every job is valid. --kustomization also writes DIR/kustomization.yaml
listing them (for Argo CD, Flux or `kubectl apply -k`); --prune deletes the files an earlier
render wrote whose job is gone (files without the header line are never deleted).

-o is an output format, as everywhere in t9k-sdk and kubectl; a directory is --out-dir DIR. Any
other -o value is a usage error that writes nothing (earlier versions took it as a directory).

Two different jobs with the same kind, namespace and name (a sweep that kept one name) are an
error naming both; the same job reached twice, or two that render identically, is written once.
"""


def add(sub: Subcommands) -> None:
    parser = command(
        sub,
        "render",
        help="write the jobs defined in Python files as YAML manifests",
        description=_HELP,
        examples="  t9k-sdk render jobs/ --out-dir manifests/\n"
        "  t9k-sdk render jobs/ --out-dir manifests/ --kustomization --prune\n"
        "  t9k-sdk render jobs/bert.py > bert.yaml\n  t9k-sdk render mypkg.jobs",
        run=run,
    )
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="a .py file, a directory or a module"
    )
    output_options(parser, "write one file per job into DIR (created if missing)")
    parser.add_argument(
        "--kustomization",
        action="store_true",
        help="also write DIR/kustomization.yaml listing the job files (an existing one keeps its"
        " other keys and entries; only the jobs' entries in `resources` are rewritten)",
    )
    parser.add_argument(
        "--prune",
        action="store_true",
        help="delete the job files an earlier render wrote into DIR whose job is gone (only"
        " files that start with render's header line)",
    )


def run(args: argparse.Namespace) -> int:
    from t9k_sdk import codecs
    from t9k_sdk.cli import _sources
    from t9k_sdk.cli._kustomize import plan_out_dir

    output, directory = format_and_directory(args)
    for flag, on in (("--kustomization", args.kustomization), ("--prune", args.prune)):
        if on and directory is None:
            raise UsageError(f"{flag} works with --out-dir DIR (it acts on the files in DIR)")
    result = _sources.load_jobs(_sources.expand(args.paths, _sources.RENDER))
    if directory is not None:
        result.errors.extend(_file_collisions(result.jobs))
    for message in result.errors:
        error(message)
    if result.errors:
        nothing = "; nothing was written" if directory is not None else ""
        print(
            f"t9k-sdk: render failed with {plural(len(result.errors), 'error')}{nothing}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    if not result.jobs:
        where = ", ".join(args.paths)
        error(
            f"no jobs found in {where}. Define them at module level, e.g."
            " `job = GenericJob(...)` (builders from t9k_sdk, wire models from t9k_sdk.models,"
            " or lists of them)"
        )
        return EXIT_FAILED
    if directory is None:
        if output == "json":
            print_data(list_payload([codecs.to_manifest(b.job) for b in result.jobs]), "json")
        else:
            sys.stdout.write(codecs.dump_all_yaml(b.job for b in result.jobs))
        return EXIT_OK
    jobs = {b.filename: codecs.dump_all_yaml([b.job]) for b in result.jobs}
    try:
        plan = plan_out_dir(directory, jobs, kustomization=args.kustomization, prune=args.prune)
    except UsageError as exc:
        error(f"{exc}; nothing was written")
        return EXIT_FAILED
    try:
        written = write_files(directory, plan.files)
    except OSError as exc:
        error(f"cannot write to {directory}: {exc.strerror or exc}; nothing was written")
        return EXIT_FAILED
    print(f"wrote {plural(len(result.jobs), 'manifest')} to {directory}:", file=sys.stderr)
    for built, path in zip(result.jobs, written, strict=False):
        print(f"  {path}  ({built.title} from {built.origin})", file=sys.stderr)
    if plan.kustomization is not None:
        if plan.kustomization_created:
            print(f"wrote {directory / plan.kustomization}", file=sys.stderr)
        elif plan.kustomization_changed:
            print(f"updated resources in {directory / plan.kustomization}", file=sys.stderr)
        else:
            print(f"{directory / plan.kustomization} unchanged", file=sys.stderr)
    failed = False
    for path in plan.prune:
        try:
            path.unlink()
        except OSError as exc:
            error(f"cannot delete {path}: {exc.strerror or exc}")
            failed = True
            continue
        print(f"deleted {path}  (rendered earlier; its job is gone)", file=sys.stderr)
    for path in plan.stale:
        listed = " (no longer listed in the kustomization)" if plan.kustomization else ""
        warn(
            f"{path} was rendered earlier but its job is gone; left in place{listed}: a GitOps"
            " tool applying the directory would keep applying it. Delete it, or render again"
            " with --prune"
        )
    return EXIT_FAILED if failed else EXIT_OK


def _file_collisions(jobs: Sequence[Built]) -> list[str]:
    """Errors for jobs that would be written to the same file (same kind and name)."""
    first: dict[str, Built] = {}
    errors: list[str] = []
    for built in jobs:
        other = first.setdefault(built.filename, built)
        if other is not built:
            errors.append(
                f"{other.origin} and {built.origin} would both be written to {built.filename}"
                " (same kind and name, different namespaces); give them different names or"
                " render without --out-dir"
            )
    return errors
