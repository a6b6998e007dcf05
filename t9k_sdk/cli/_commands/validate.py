"""`t9k-sdk validate`: check YAML manifests of T9k jobs; exit 1 on any problem.

The work is done by `_validate_text`, which adds what it finds to a `_Report`; `run` prints it.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from t9k_sdk.cli._declare import Subcommands, command
from t9k_sdk.cli._errors import EXIT_FAILED, EXIT_OK, print_data
from t9k_sdk.cli._output import plural

if TYPE_CHECKING:
    from t9k_sdk.errors import Problem

__all__ = ["add", "run"]

_HELP = """\
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


def add(sub: Subcommands) -> None:
    parser = command(
        sub,
        "validate",
        help="check YAML manifests of T9k jobs; exit 1 on any problem",
        description=_HELP,
        examples="  t9k-sdk validate manifests/*.yaml\n"
        "  kubectl get gj mnist -o yaml | t9k-sdk validate -",
        run=run,
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="a YAML file, a directory or -")
    parser.add_argument(
        "-o",
        "--output",
        choices=("text", "json", "yaml"),
        default="text",
        help="text (default: one line per problem), or the verdict and the problems as json or"
        " yaml (file, document, object, path, message)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="legacy forms (ColossalAIJob launcher/worker, `enable`) are errors, not warnings:"
        " for manifests that kubectl, Argo CD or Flux apply as written",
    )


def run(args: argparse.Namespace) -> int:
    from t9k_sdk.cli import _sources

    inputs = _sources.expand(args.files, _sources.VALIDATE)
    report = _Report()
    for item in inputs:
        assert isinstance(item, _sources.Manifest)  # VALIDATE takes no Python
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


class _Report:
    """The outcome of validating YAML streams: one line per problem, and the counts."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        # the problems as data (`validate -o json|yaml`): file, document, object, path, message
        self.entries: list[dict[str, Any]] = []
        self.documents = 0
        self.invalid_documents = 0
        self.problems = 0
        self.syntax_errors = 0
        # valid, but probably not meant (`validation.manifest_warnings`): shown, exit status 0
        self.warnings = 0

    @property
    def ok(self) -> bool:
        return self.problems == 0 and self.syntax_errors == 0

    def summary(self, files: int) -> str:
        if self.ok:
            warned = f" ({plural(self.warnings, 'warning')})" if self.warnings else ""
            return f"{plural(self.documents, 'document')} valid{warned}"
        parts = []
        if self.problems:
            parts.append(
                f"{plural(self.problems, 'problem')} in {self.invalid_documents} of"
                f" {plural(self.documents, 'document')}"
            )
        if self.syntax_errors:
            parts.append(f"{plural(self.syntax_errors, 'file')} with invalid YAML")
        return f"{'; '.join(parts)} ({plural(files, 'file')} checked)"


def _validate_text(text: bytes, label: str, report: _Report, *, strict: bool = False) -> None:
    """Validate every document of one YAML stream, adding its problems to `report`.

    Documents are numbered from 0 in the order of the stream (empty ones count, as in
    `load_all_yaml`). Input that is not valid YAML (see `t9k_sdk._yaml`) ends the stream: it is
    reported with its line and column.
    """
    from t9k_sdk import _yaml
    from t9k_sdk.errors import InvalidYAMLError, LegacyManifestWarning, Problem
    from t9k_sdk.validation import manifest_warnings

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
    from t9k_sdk import _objects as o
    from t9k_sdk import models
    from t9k_sdk.errors import Problem
    from t9k_sdk.validation import validate_manifest

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
    from t9k_sdk import _objects as o

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
