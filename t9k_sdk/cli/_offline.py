"""What the offline commands of `t9k-sdk` do: render, validate, crds, convert, plan, install,
argocd-health (their arguments and help are in `t9k_sdk.cli._commands`).

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
from t9k_sdk.cli._errors import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    error,
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

__all__: list[str] = []


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
