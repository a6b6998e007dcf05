"""The offline commands of `t9k-sdk`: render, validate, crds, convert, plan, install,
argocd-health, completion.

    t9k-sdk render jobs/ --out-dir manifests/  # one YAML file per job
    t9k-sdk render pkg.jobs > jobs.yaml      # or one multi-document stream on stdout
    t9k-sdk validate manifests/*.yaml        # exit 1 on any problem
    t9k-sdk crds --out-dir deploy/crds/      # the CustomResourceDefinitions

None of them needs a cluster or the Kubernetes client. They read their inputs through
`t9k_sdk.cli._sources` and report through `t9k_sdk.cli._errors`. The `_cmd_*` functions only
read arguments and print; the work is done by functions that return data (`_validate_text`,
`_write_files`, `_crd_files`, the reader's `load_jobs`).
"""

from __future__ import annotations

import argparse
import difflib
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from t9k_sdk import _objects as o
from t9k_sdk import _yaml, codecs, models
from t9k_sdk.cli import _sources
from t9k_sdk.cli._completion import SHELLS, completion_script
from t9k_sdk.cli._errors import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    error,
    exit_status_summary,
    list_payload,
    print_data,
    warn,
)
from t9k_sdk.cli._kustomize import plan_out_dir
from t9k_sdk.cli._sources import Built, Manifest
from t9k_sdk.crds import generate_crds
from t9k_sdk.errors import (
    InvalidManifestError,
    InvalidYAMLError,
    LegacyManifestWarning,
    Problem,
)
from t9k_sdk.validation import manifest_warnings, validate_manifest

__all__ = ["add_commands", "add_completion"]


# -- render ------------------------------------------------------------------------------------


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


def _write_files(directory: Path, files: Mapping[str, str]) -> list[Path]:
    """Write `files` (name -> text) into `directory`: all of them or, on an error, none.

    Every file is written to a temporary name first and renamed once all are written.
    """
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{directory}: exists and is not a directory")
    directory.mkdir(parents=True, exist_ok=True)
    staged: list[tuple[Path, Path]] = []
    try:
        for name, text in files.items():
            final = directory / name  # a name may hold subdirectories: base/crds/x.yaml
            final.parent.mkdir(parents=True, exist_ok=True)
            temp = final.with_name(f".{final.name}.tmp")
            staged.append((temp, final))
            temp.write_text(text, encoding="utf-8")
    except OSError:
        for temp, _ in staged:
            temp.unlink(missing_ok=True)
        raise
    for temp, final in staged:
        temp.replace(final)
    return [final for _, final in staged]


# -- validate ------------------------------------------------------------------------------


@dataclass
class _Report:
    """The outcome of validating YAML streams: one line per problem, and the counts."""

    lines: list[str] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)
    """The problems as data (`validate -o json|yaml`): file, document, object, path, message."""
    documents: int = 0
    invalid_documents: int = 0
    problems: int = 0
    syntax_errors: int = 0
    warnings: int = 0
    """Valid, but probably not meant (`validation.manifest_warnings`): shown, exit status 0."""

    @property
    def ok(self) -> bool:
        return self.problems == 0 and self.syntax_errors == 0

    def summary(self, files: int) -> str:
        if self.ok:
            warned = f" ({_plural(self.warnings, 'warning')})" if self.warnings else ""
            return f"{_plural(self.documents, 'document')} valid{warned}"
        parts = []
        if self.problems:
            parts.append(
                f"{_plural(self.problems, 'problem')} in {self.invalid_documents} of"
                f" {_plural(self.documents, 'document')}"
            )
        if self.syntax_errors:
            parts.append(f"{_plural(self.syntax_errors, 'file')} with invalid YAML")
        return f"{'; '.join(parts)} ({_plural(files, 'file')} checked)"


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _validate_text(text: bytes, label: str, report: _Report, *, strict: bool = False) -> None:
    """Validate every document of one YAML stream, adding its problems to `report`.

    Documents are numbered from 0 in the order of the stream (empty ones count, as in
    `load_all_yaml`). Input that is not valid YAML (see `t9k_sdk._yaml`) ends the stream: it is
    reported with its line and column.
    """
    try:
        for index, doc in enumerate(_yaml.iter_documents(text)):
            if doc is None:
                continue
            report.documents += 1
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", LegacyManifestWarning)
                found = _document_problems(doc)
            where = f"{label}: document {index}{_describe(doc)}"
            legacy = False
            for w in caught:
                if issubclass(w.category, LegacyManifestWarning) and strict:
                    # --strict: as kubectl, Argo CD and Flux send it, which the API server rejects
                    report.problems += 1
                    legacy = True
                    message = (
                        f"{w.message}; the API server rejects the legacy form:"
                        f" `t9k-sdk convert {label}` rewrites it in the current schema"
                    )
                    report.lines.append(f"{where}: {message}")
                    report.entries.append(
                        _entry(label, index, _describe(doc), Problem("", message))
                    )
                elif issubclass(w.category, LegacyManifestWarning):
                    # t9k-sdk apply, plan and render convert it: valid, and said
                    report.warnings += 1
                    report.lines.append(
                        f"{where}: warning: {w.message}. t9k-sdk apply, plan and render convert"
                        " it; kubectl, Argo CD and Flux send it as written, which the API server"
                        f" rejects: `t9k-sdk convert {label}` rewrites it (--strict makes this an"
                        " error)"
                    )
                else:  # not ours to explain: pass it on
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            if isinstance(doc, Mapping):
                for warning in manifest_warnings(doc):
                    report.warnings += 1
                    report.lines.append(f"{where}: warning: {warning}")
            if found or legacy:
                report.invalid_documents += 1
            if found:
                report.problems += len(found)
                report.lines.extend(
                    f"{label}: document {index}{subject}: {problem}" for subject, problem in found
                )
                report.entries.extend(_entry(label, index, s, p) for s, p in found)
    except InvalidYAMLError as exc:
        report.syntax_errors += 1
        report.lines.append(f"{label}: {exc}")
        report.entries.append(
            {"file": label, "document": None, "object": None, "path": "", "message": str(exc)}
        )


def _entry(label: str, index: int, subject: str, problem: Problem) -> dict[str, Any]:
    """One problem as data; `subject` is ` (Kind 'name')` as `_describe` writes it."""
    return {
        "file": label,
        "document": index,
        "object": subject.strip()[1:-1] or None,
        "path": problem.path,
        "message": problem.message,
    }


def _document_problems(doc: Any) -> list[tuple[str, Problem]]:
    """(subject, problem) of everything wrong with one document; a `*List` checks its items."""
    if not isinstance(doc, Mapping):
        return [
            ("", Problem("", f"expected a Kubernetes object (a mapping); got a {_yaml_type(doc)}"))
        ]
    kind = o.kind(doc)
    if kind == "List" or kind in models.LIST_KINDS:
        items = doc.get("items")
        if not isinstance(items, list):
            return [(_describe(doc), Problem("items", "expected a list of jobs"))]
        found: list[tuple[str, Problem]] = []
        for i, item in enumerate(items):
            subject = _describe(item)
            if not isinstance(item, Mapping):
                message = f"expected a job (a mapping); got a {_yaml_type(item)}"
                found.append((subject, Problem(f"items[{i}]", message)))
                continue
            for p in validate_manifest(item):
                found.append((subject, Problem(_under(f"items[{i}]", p.path), p.message)))
        return found
    return [(_describe(doc), p) for p in validate_manifest(doc)]


def _under(prefix: str, path: str) -> str:
    """`items[0]` + `spec.x` -> `items[0].spec.x`."""
    if not path:
        return prefix
    return prefix + path if path.startswith("[") else f"{prefix}.{path}"


def _describe(doc: Any) -> str:
    """` (GenericJob 'mnist')`: the kind and name of a document, as far as it has them."""
    if not isinstance(doc, Mapping):
        return ""
    kind = doc.get("kind")
    name = o.meta(doc).raw.get("name")
    parts = [str(kind) if isinstance(kind, str) and kind else "no kind"]
    if isinstance(name, str) and name:
        parts.append(repr(name))
    return f" ({' '.join(parts)})"


def _yaml_type(value: Any) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


# -- crds ----------------------------------------------------------------------------------


def _crd_files() -> dict[str, str]:
    """`<group>_<plural>.yaml` -> YAML of each CustomResourceDefinition."""
    return {
        f"{crd['spec']['group']}_{crd['spec']['names']['plural']}.yaml": codecs.dump_all_yaml([crd])
        for crd in generate_crds()
    }


_FORMATS = ("yaml", "json")


def _format_and_directory(args: argparse.Namespace) -> tuple[str, Path | None]:
    """(format, directory) of `render`/`crds`: `-o` is a format (yaml, json), as in kubectl,
    and `--out-dir` a directory. Anything else after `-o` is a usage error that says what was
    probably meant: a mistyped format must not write files into a directory of that name."""
    output: str | None = args.output
    directory: str | None = args.out_dir
    if output is not None and output not in _FORMATS:
        close = difflib.get_close_matches(output.lower(), _FORMATS, n=1, cutoff=0.5)
        hint = (
            f"did you mean -o {close[0]}?"
            if close
            else f"to write files into a directory, use --out-dir {output}"
        )
        raise UsageError(
            f"-o {output}: unknown output format; -o takes {' or '.join(_FORMATS)} (the format"
            f" on standard output); {hint}"
        )
    if output == "json" and directory is not None:
        raise UsageError("--out-dir writes YAML files; -o json applies to standard output only")
    return output or "yaml", Path(directory) if directory is not None else None


def _cmd_render(args: argparse.Namespace) -> int:
    output, directory = _format_and_directory(args)
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
            f"t9k-sdk: render failed with {_plural(len(result.errors), 'error')}{nothing}",
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
        written = _write_files(directory, plan.files)
    except OSError as exc:
        error(f"cannot write to {directory}: {exc.strerror or exc}; nothing was written")
        return EXIT_FAILED
    print(f"wrote {_plural(len(result.jobs), 'manifest')} to {directory}:", file=sys.stderr)
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


def _cmd_validate(args: argparse.Namespace) -> int:
    inputs = _sources.expand(args.files, _sources.VALIDATE)
    report = _Report()
    for item in inputs:
        assert isinstance(item, Manifest)  # VALIDATE takes no Python
        _validate_text(_sources.read(item), item.label, report, strict=args.strict)
    if args.output in ("json", "yaml"):
        payload = {
            "valid": report.ok and report.documents > 0,
            "files": len(inputs),
            "documents": report.documents,
            "invalidDocuments": report.invalid_documents,
            "problems": report.entries,
        }
        print_data(payload, args.output)
        return EXIT_OK if payload["valid"] else EXIT_FAILED
    for line in report.lines:
        print(line)
    if report.ok and report.documents == 0:
        print(f"no documents found in {', '.join(args.files)}: nothing was validated")
        return EXIT_FAILED
    print(report.summary(len(inputs)))
    return EXIT_OK if report.ok else EXIT_FAILED


def _cmd_crds(args: argparse.Namespace) -> int:
    output, directory = _format_and_directory(args)
    if directory is None and output == "json":
        print_data(list_payload(generate_crds()), "json")
        return EXIT_OK
    files = _crd_files()
    if directory is None:
        sys.stdout.write("---\n".join(files.values()))
        return EXIT_OK
    try:
        written = _write_files(directory, files)
    except OSError as exc:
        error(f"cannot write to {directory}: {exc.strerror or exc}; nothing was written")
        return EXIT_FAILED
    print(f"wrote {_plural(len(written), 'CRD')} to {directory}:", file=sys.stderr)
    for path in written:
        print(f"  {path}", file=sys.stderr)
    return EXIT_OK


def _current(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A job's manifest, or a list's, in the current schema."""
    if o.kind(doc) in models.LIST_KINDS or o.kind(doc) == "List":
        return {**doc, "items": [_current(item) for item in doc["items"]]}
    return codecs.to_manifest(codecs.from_manifest(doc))


def _converted(data: bytes) -> str:
    """The manifests of `data` in the current schema: the file with only the lines of converted
    fields changed (its comments, order and formatting kept), lists and empty documents kept."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LegacyManifestWarning)
        codecs.load_all_yaml(data)  # every problem, reported as everywhere else
        text = _yaml.decode(data)
        documents = [_current(doc) for doc in _yaml.load_documents(text) if doc is not None]
    return codecs.update_yaml(text, documents)


def _cmd_convert(args: argparse.Namespace) -> int:
    outputs: list[tuple[Manifest, str]] = []
    for item in _sources.expand(args.files, _sources.CONVERT):
        assert isinstance(item, Manifest)  # CONVERT takes no Python
        try:
            outputs.append((item, _converted(_sources.read(item))))
        except (InvalidManifestError, InvalidYAMLError) as exc:
            error(f"{item.label}: {exc}")
            return EXIT_FAILED
    if not outputs:
        error(f"no manifests found in {', '.join(args.files)}")
        return EXIT_FAILED
    for item, text in outputs:
        if args.in_place and item.path is not None:
            item.path.write_text(text, encoding="utf-8")
            print(f"rewrote {item.label}", file=sys.stderr)
        else:
            sys.stdout.write(text)
    return EXIT_OK


def _cmd_plan(args: argparse.Namespace) -> int:
    from t9k_sdk.plan import iter_plan_json, iter_plan_summary, iter_plan_yaml

    found = _sources.load_jobs(_sources.expand(args.paths, _sources.PLAN, python=args.python))
    for message in found.errors:
        error(message)
    if found.errors:
        return EXIT_FAILED
    jobs = [b.job for b in found.jobs]
    if not jobs:
        error("no jobs found in " + ", ".join(args.paths))
        return EXIT_FAILED
    # written as it is made: one pod at a time, however many replicas the jobs have
    chunks = {"json": iter_plan_json, "yaml": iter_plan_yaml}.get(args.output, iter_plan_summary)
    for chunk in chunks(jobs):
        sys.stdout.write(chunk)
    sys.stdout.flush()
    return EXIT_OK


def _cmd_completion(args: argparse.Namespace) -> int:
    sys.stdout.write(completion_script(args.root, args.shell))
    return EXIT_OK


def _cmd_install(args: argparse.Namespace) -> int:
    from t9k_sdk.install import (
        DEFAULT_IMAGE,
        DEFAULT_NAMESPACE,
        install_manifests,
        network_policy,
    )
    from t9k_sdk.install_files import (
        DEFAULT_WATCH_NAMESPACE,
        helm_chart_files,
        kustomize_files,
    )

    image = args.image or DEFAULT_IMAGE
    namespace = DEFAULT_NAMESPACE if args.namespace is None else args.namespace
    if args.kustomize is not None and args.helm_chart is not None:
        raise UsageError("--kustomize and --helm-chart write different trees: give one of them")
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
            sys.stdout.write(codecs.dump_all_yaml(objects))
            return EXIT_OK
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        written = _write_files(directory, files)
    except OSError as exc:
        error(f"cannot write to {directory}: {exc.strerror or exc}; nothing was written")
        return EXIT_FAILED
    print(f"wrote the {what} ({_plural(len(written), 'file')}) to {directory}", file=sys.stderr)
    return EXIT_OK


def _write_tree(directory: Path, files: Mapping[str, str]) -> list[Path]:
    """Write `files` (relative path -> text) below `directory`: all of them or, on an error,
    none (each is written to a temporary name beside it first, then all are renamed)."""
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{directory}: exists and is not a directory")
    staged: list[tuple[Path, Path]] = []
    try:
        for name, text in files.items():
            final = directory / name
            final.parent.mkdir(parents=True, exist_ok=True)
            temp = final.with_name(f".{final.name}.tmp")
            staged.append((temp, final))
            temp.write_text(text, encoding="utf-8")
    except OSError:
        for temp, _ in staged:
            temp.unlink(missing_ok=True)
        raise
    for temp, final in staged:
        temp.replace(final)
    return [final for _, final in staged]


def _cmd_argocd_health(args: argparse.Namespace) -> int:
    from t9k_sdk import argocd

    if args.out_dir is not None:
        if args.output is not None:
            raise UsageError(
                f"-o {args.output} and --out-dir: --out-dir writes every file (the scripts and"
                f" {argocd.PATCH_FILE}); give one or the other"
            )
        directory = Path(args.out_dir)
        try:
            written = _write_tree(directory, argocd.deploy_files())
        except OSError as exc:
            error(f"cannot write to {directory}: {exc.strerror or exc}; nothing was written")
            return EXIT_FAILED
        print(f"wrote {_plural(len(written), 'file')} to {directory}:", file=sys.stderr)
        for path in written:
            print(f"  {path}", file=sys.stderr)
        return EXIT_OK
    if args.output == "lua":
        sys.stdout.write(argocd.health_lua())
    elif args.output == "json":
        print_data(argocd.argocd_cm_patch(), "json")
    else:
        sys.stdout.write(argocd.argocd_cm_patch_yaml())
    return EXIT_OK


_ARGOCD_HEALTH_HELP = """\
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

_PLAN_HELP = """\
Show what the operator would create for each job, without a cluster: pods (with their commands,
as the operator rewrites them), services, the SSH secret, the hostfile config map and the
PodGroup. It runs the operator's own functions on the job as if it had just been created.

PATH is a YAML (or JSON) manifest file, - for standard input, a Python file defining jobs
(as for `render`: it runs as code), or a directory: its *.yaml, *.yml and *.json files.
Python runs only where you ask for it: a *.py file you name, or with --python the *.py files
below a directory and module names (`pkg.jobs`). Reviewing a pull request with
`t9k-sdk plan DIR` therefore runs none of its code.
"""

_CONVERT_HELP = """\
Read YAML manifests of T9k jobs, converting legacy forms (the pre-2025 ColossalAIJob
launcher/worker schema, `enable` for `enabled`), and write them in the current schema. Only the
lines of converted fields change: comments, key order, quoting and indentation stay as they
were, and a file already in the current schema is written back unchanged.

FILE is a YAML (or JSON) file, a directory (its *.yaml, *.yml and *.json files) or - (standard
input). A Python file is a usage error: `t9k-sdk render` writes Python jobs in the current
schema.
"""

_INSTALL_HELP = """\
Print everything needed to run the t9k-operator in a cluster, as YAML in apply order: the
namespace, the three CRDs, the service account, a least-privilege ClusterRole and its binding,
a Role and binding for the leader-election Lease, and the Deployment. Apply it with server-side
apply (the CRDs are larger than client-side apply's annotation limit):

  t9k-sdk install --image registry.example.com/t9k-operator:0.1.0 | kubectl apply --server-side -f -

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

_RENDER_HELP = """\
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

_VALIDATE_HELP = """\
Check every YAML document of every FILE against the T9k job schemas: YAML syntax and duplicate
keys, kind and apiVersion, fields and types, the cross-field rules, and unknown fields in pod
templates (as `kubectl apply --validate=strict` would). Prints one line per problem:

  FILE: document N (Kind 'name'): field.path: what is wrong

Documents are numbered from 0 within each file. FILE may be `-` (standard input) or a
directory (its *.yaml, *.yml and *.json files). A Python file is a usage error: its jobs are
checked when they are built (`t9k-sdk render jobs.py | t9k-sdk validate -`). Exit status 1 if
anything is invalid.

Legacy forms that T9k still publishes (the ColossalAIJob `launcher`/`worker` schema, `enable`
for `enabled`) are checked as `t9k-sdk apply`, `plan` and `render` convert them, with a warning
and problems named by the fields as written; --strict makes them errors, since the API server
rejects them as written.
"""

_CRDS_HELP = """\
Print the CustomResourceDefinitions of GenericJob, DeepSpeedJob and ColossalAIJob
(batch.tensorstack.dev/v1beta1), generated from the SDK's models, as multi-document YAML
(-o json: a JSON List); with --out-dir DIR write one file per CRD, DIR/<group>_<plural>.yaml. Apply them with server-side
apply, `kubectl apply --server-side -f DIR`: they are larger than the annotation that
client-side apply keeps.
"""

_COMPLETION_HELP = """\
Print a script that makes the shell complete t9k-sdk's commands, their flags, the values of
flags with fixed choices (-o, --dry-run), the job kinds (gj, dj, caij) and file names. Load it
in the current shell with `source <(t9k-sdk completion bash)`, or save it where the shell looks
for completions (see the examples). The script is generated from this version's commands:
regenerate it after an upgrade.
"""

_EPILOG = exit_status_summary()


def _output_options(parser: argparse.ArgumentParser, directory_help: str) -> None:
    parser.add_argument(
        "-o",
        "--output",
        metavar="FORMAT",
        help="format on standard output: yaml (default) or json",
    )
    parser.add_argument("--out-dir", metavar="DIR", help=directory_help)


def add_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register render, validate, crds, convert, plan, install and argocd-health on `t9k-sdk`'s
    commands."""
    fmt = argparse.RawDescriptionHelpFormatter
    render = sub.add_parser(
        "render",
        help="write the jobs defined in Python files as YAML manifests",
        description=_RENDER_HELP,
        epilog="examples:\n  t9k-sdk render jobs/ --out-dir manifests/\n"
        "  t9k-sdk render jobs/ --out-dir manifests/ --kustomization --prune\n  t9k-sdk render"
        " jobs/bert.py > bert.yaml\n  t9k-sdk render mypkg.jobs\n\n" + _EPILOG,
        formatter_class=fmt,
    )
    render.add_argument(
        "paths", nargs="+", metavar="PATH", help="a .py file, a directory or a module"
    )
    _output_options(render, "write one file per job into DIR (created if missing)")
    render.add_argument(
        "--kustomization",
        action="store_true",
        help="also write DIR/kustomization.yaml listing the job files (an existing one keeps its"
        " other keys and entries; only the jobs' entries in `resources` are rewritten)",
    )
    render.add_argument(
        "--prune",
        action="store_true",
        help="delete the job files an earlier render wrote into DIR whose job is gone (only"
        " files that start with render's header line)",
    )
    render.set_defaults(run=_cmd_render, parser=render)

    validate = sub.add_parser(
        "validate",
        help="check YAML manifests of T9k jobs; exit 1 on any problem",
        description=_VALIDATE_HELP,
        epilog="examples:\n  t9k-sdk validate manifests/*.yaml\n  kubectl get gj mnist -o yaml |"
        " t9k-sdk validate -\n\n" + _EPILOG,
        formatter_class=fmt,
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="a YAML file, a directory or -")
    validate.add_argument(
        "-o",
        "--output",
        choices=("text", "json", "yaml"),
        default="text",
        help="text (default: one line per problem), or the verdict and the problems as json or"
        " yaml (file, document, object, path, message)",
    )
    validate.add_argument(
        "--strict",
        action="store_true",
        help="legacy forms (ColossalAIJob launcher/worker, `enable`) are errors, not warnings:"
        " for manifests that kubectl, Argo CD or Flux apply as written",
    )
    validate.set_defaults(run=_cmd_validate, parser=validate)

    crds = sub.add_parser(
        "crds",
        help="print the CustomResourceDefinitions of the three job kinds",
        description=_CRDS_HELP,
        epilog="examples:\n  t9k-sdk crds | kubectl apply --server-side -f -\n"
        "  t9k-sdk crds --out-dir deploy/crds/\n\n" + _EPILOG,
        formatter_class=fmt,
    )
    _output_options(crds, "write one file per CRD into DIR")
    crds.set_defaults(run=_cmd_crds, parser=crds)

    convert = sub.add_parser(
        "convert",
        help="rewrite manifests in the current schema (legacy ColossalAIJob, `enable`)",
        description=_CONVERT_HELP,
        epilog="examples:\n  t9k-sdk convert old.yaml > new.yaml\n  t9k-sdk convert -i"
        " manifests/*.yaml\n\n" + _EPILOG,
        formatter_class=fmt,
    )
    convert.add_argument("files", nargs="+", metavar="FILE", help="a YAML file, a directory or -")
    convert.add_argument(
        "-i", "--in-place", action="store_true", help="rewrite the files instead of printing"
    )
    convert.set_defaults(run=_cmd_convert, parser=convert)

    plan = sub.add_parser(
        "plan",
        help="show the pods, services and other objects the operator would create",
        description=_PLAN_HELP,
        epilog="examples:\n  t9k-sdk plan examples/deepspeed_bert.yaml\n  t9k-sdk plan jobs/"
        " -o yaml\n\n" + _EPILOG,
        formatter_class=fmt,
    )
    plan.add_argument(
        "paths", nargs="+", metavar="PATH", help="a YAML file, -, a directory, or Python jobs"
    )
    plan.add_argument(
        "--python",
        action="store_true",
        help="also import the *.py files below a directory, and module names; they run as code",
    )
    plan.add_argument(
        "-o",
        "--output",
        choices=("summary", "yaml", "json"),
        default="summary",
        help="summary (default), or the full objects as yaml or json",
    )
    plan.set_defaults(run=_cmd_plan, parser=plan)

    install = sub.add_parser(
        "install",
        help="print the operator's install (CRDs, RBAC, Deployment) as YAML",
        description=_INSTALL_HELP,
        epilog=_EPILOG,
        formatter_class=fmt,
    )
    install.add_argument(
        "--image", default=None, help="operator image (default: t9k-operator:VERSION)"
    )
    install.add_argument(
        "--namespace", default=None, help="namespace to run in (default: t9k-system)"
    )
    install.add_argument(
        "--watch-namespace",
        default=None,
        metavar="NS",
        help="reconcile only the jobs in NS, with a Role there instead of a ClusterRole"
        " (default: all namespaces)",
    )
    install.add_argument(
        "--network-policy",
        action="store_true",
        help="also print a NetworkPolicy: only the health port is reachable, and only from"
        " namespaces labelled metrics=enabled (docs/operator/security.md)",
    )
    install.add_argument(
        "--kustomize",
        default=None,
        metavar="DIR",
        help="write a kustomize base and overlays to DIR instead of printing YAML",
    )
    install.add_argument(
        "--helm-chart",
        default=None,
        metavar="DIR",
        help="write a Helm chart to DIR instead of printing YAML",
    )
    install.set_defaults(run=_cmd_install, parser=install)

    argocd_health = sub.add_parser(
        "argocd-health",
        help="print the Argo CD health check of the job kinds (an argocd-cm patch)",
        description=_ARGOCD_HEALTH_HELP,
        epilog="examples:\n  t9k-sdk argocd-health > argocd-cm-patch.yaml\n"
        "  kubectl patch configmap argocd-cm -n argocd --patch-file argocd-cm-patch.yaml\n"
        "  t9k-sdk argocd-health -o lua > health.lua\n"
        "  t9k-sdk argocd-health --out-dir deploy/argocd/\n\n" + _EPILOG,
        formatter_class=fmt,
    )
    argocd_health.add_argument(
        "-o",
        "--output",
        choices=("yaml", "json", "lua"),
        default=None,
        help="yaml (default: the argocd-cm patch), json (the same patch), or lua (the script)",
    )
    argocd_health.add_argument(
        "--out-dir",
        metavar="DIR",
        help="write the scripts in Argo CD's resource_customizations layout and"
        " argocd-cm-patch.yaml into DIR",
    )
    argocd_health.set_defaults(run=_cmd_argocd_health, parser=argocd_health)


def add_completion(
    sub: argparse._SubParsersAction,  # type: ignore[type-arg]
    root: argparse.ArgumentParser,
) -> None:
    """Register `completion`, which describes `root` (register it last: it lists the others)."""
    fmt = argparse.RawDescriptionHelpFormatter
    completion = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description=_COMPLETION_HELP,
        epilog="examples:\n  source <(t9k-sdk completion bash)\n"
        "  t9k-sdk completion bash > ~/.local/share/bash-completion/completions/t9k-sdk\n"
        "  echo 'source <(t9k-sdk completion zsh)' >> ~/.zshrc\n"
        "  t9k-sdk completion fish > ~/.config/fish/completions/t9k-sdk.fish\n\n" + _EPILOG,
        formatter_class=fmt,
    )
    completion.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")
    completion.set_defaults(run=_cmd_completion, parser=completion, root=root)
