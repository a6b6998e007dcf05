"""The `t9k-sdk` command: render Python job definitions to YAML, validate manifests, print CRDs.

    t9k-sdk render jobs/ --out-dir manifests/  # one YAML file per job
    t9k-sdk render pkg.jobs > jobs.yaml      # or one multi-document stream on stdout
    t9k-sdk validate manifests/*.yaml        # exit 1 on any problem
    t9k-sdk crds --out-dir deploy/crds/      # the CustomResourceDefinitions

Exit status: 0 success; 1 invalid jobs or manifests, or nothing found; 2 usage errors.

The `_cmd_*` functions only read arguments and print; the work is done by functions that return
data (`_find_sources`, `_load_jobs`, `_write_files`, `_validate_text`, `_crd_files`).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import itertools
import json
import os
import re
import sys
import sysconfig
import traceback
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TypeAlias

from pydantic import BaseModel, ValidationError

from t9k_sdk import __version__, _yaml, builders, codecs, models
from t9k_sdk._completion import SHELLS, completion_script
from t9k_sdk.crds import generate_crds
from t9k_sdk.errors import (
    InvalidManifestError,
    InvalidYAMLError,
    LegacyManifestWarning,
    Problem,
    problems_from_validation_error,
)
from t9k_sdk.validation import validate_manifest

__all__ = ["main"]

_OK, _INVALID, _USAGE = 0, 1, 2

_Job: TypeAlias = (
    builders.GenericJob
    | builders.DeepSpeedJob
    | builders.ColossalAIJob
    | models.GenericJob
    | models.DeepSpeedJob
    | models.ColossalAIJob
    | builders.TorchrunJob
)
_JOB_TYPES = (
    builders.GenericJob,
    builders.DeepSpeedJob,
    builders.ColossalAIJob,
    models.GenericJob,
    models.DeepSpeedJob,
    models.ColossalAIJob,
    builders.TorchrunJob,
)


class _UsageError(Exception):
    """The command line asks for something impossible (exit 2)."""


# -- render: find the sources ---------------------------------------------------------------


@dataclass(frozen=True)
class _Source:
    """A Python file (by path) or an importable module (by name) that defines jobs."""

    label: str
    """How messages name it: the path as the user wrote it, or the module name."""
    path: Path | None = None
    """The file; None for a module, whose name is the label."""


_MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def _find_sources(args: Sequence[str]) -> list[_Source]:
    """The files and modules named by `render`'s arguments, in order, each once.

    A directory stands for every `*.py` below it (sorted; directories whose name starts with `.`
    or `_` are skipped; it may have none). Raises `_UsageError` for an argument that is none of file, directory
    or module name.
    """
    sources: list[_Source] = []
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            files = [
                p
                for p in path.rglob("*.py")
                if p.is_file()
                and not any(part.startswith((".", "_")) for part in p.relative_to(path).parts[:-1])
            ]
            files.sort(key=lambda p: p.relative_to(path).parts)
            sources.extend(_Source(str(p), path=p) for p in files)
        elif path.is_file():
            if path.suffix != ".py":
                hint = (
                    "; to check YAML manifests use `t9k-sdk validate`"
                    if path.suffix in (".yaml", ".yml", ".json")
                    else ""
                )
                raise _UsageError(f"{arg}: not a Python file (*.py){hint}")
            sources.append(_Source(arg, path=path))
        elif path.exists():
            raise _UsageError(f"{arg}: not a regular file or directory")
        elif _MODULE_NAME.fullmatch(arg) and not arg.endswith(".py"):
            sources.append(_Source(arg))
        else:
            raise _UsageError(f"{arg}: no such file or directory")
    unique: dict[Path | str, _Source] = {}
    for source in sources:
        key = source.path.resolve() if source.path is not None else source.label
        unique.setdefault(key, source)
    return list(unique.values())


# -- render: import them --------------------------------------------------------------------


class _ImportFailure(Exception):
    """A source could not be imported; `str()` is the message for the user."""


_counter = itertools.count()


def _import_source(source: _Source) -> ModuleType:
    """Import a source. Raises `_UsageError` for an unknown module, `_ImportFailure` otherwise.

    What the module prints goes to stderr: stdout carries the YAML.
    """
    try:
        with contextlib.redirect_stdout(sys.stderr):
            if source.path is not None:
                return _import_file(source.path)
            return _import_module(source.label)
    except ModuleNotFoundError as exc:
        wanted = source.label
        if (
            source.path is None
            and exc.name is not None
            and (wanted == exc.name or wanted.startswith(exc.name + "."))
        ):
            raise _UsageError(
                f"{wanted}: no such file, directory or Python module"
                f" (module {exc.name!r} not found; is it on PYTHONPATH?)"
            ) from None
        raise _ImportFailure(_describe_import_error(source, exc)) from None
    except (Exception, SystemExit) as exc:
        raise _ImportFailure(_describe_import_error(source, exc)) from None


def _import_file(path: Path) -> ModuleType:
    """Import a file under a unique module name, with its directory on `sys.path` meanwhile."""
    stem = re.sub(r"\W", "_", path.stem)
    name = f"_t9k_render_{next(_counter)}_{stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - only for non-.py files
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    directory = str(path.resolve().parent)
    sys.modules[name] = module  # classes defined in the file resolve their module through it
    sys.path.insert(0, directory)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    finally:
        if directory in sys.path:
            sys.path.remove(directory)
    return module


def _import_module(name: str) -> ModuleType:
    """Import a module by name, with the current directory on `sys.path` (as `python -m` does)."""
    cwd = os.getcwd()
    sys.path.insert(0, cwd)
    try:
        return importlib.import_module(name)
    finally:
        if cwd in sys.path:
            sys.path.remove(cwd)


def _describe_import_error(source: _Source, exc: BaseException) -> str:
    """The failure as a user reads it: where in their code, then what went wrong."""
    lines = [f"cannot import {source.label}:"]
    tb = traceback.TracebackException.from_exception(exc)
    frames = [f for f in tb.stack if not _is_machinery(f.filename)]
    frames = [f for f in frames if not _is_library(f.filename)] or frames
    if frames and not isinstance(exc, SyntaxError):
        for frame in traceback.StackSummary.from_list(frames).format():
            lines.extend("  " + line for line in frame.rstrip("\n").split("\n"))
    if isinstance(exc, ValidationError):
        lines.append(f"  {exc.title} is invalid:")
        lines.extend(f"    - {p}" for p in problems_from_validation_error(exc, _model_for(exc)))
    elif isinstance(exc, InvalidManifestError):
        lines.append(f"  {exc.subject} is invalid:")
        lines.extend(f"    - {p}" for p in exc.problems)
    else:
        for chunk in tb.format_exception_only():
            lines.extend("  " + line for line in chunk.rstrip("\n").split("\n"))
    return "\n".join(lines)


def _is_machinery(filename: str) -> bool:
    """Frames of the import system and of this module, which mean nothing to the user."""
    return filename.startswith("<frozen ") or filename == __file__


_LIBRARIES = tuple(
    os.path.join(Path(p).resolve(), "")
    for p in {
        str(Path(__file__).parent),
        *(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")),
    }
)


def _is_library(filename: str) -> bool:
    """Frames of the SDK, the standard library and installed packages: not the user's code."""
    return str(Path(filename).resolve()).startswith(_LIBRARIES)


_ENVELOPE = frozenset({"api_version", "apiVersion", "kind", "metadata", "spec", "status"})


def _model_for(exc: ValidationError) -> type[BaseModel] | None:
    """The class that failed, for "did you mean" hints: a builder unless the wire envelope failed."""
    first = exc.errors()[0]["loc"][:1] if exc.errors() else ()
    wire = bool(first) and first[0] in _ENVELOPE
    for cls in (*_JOB_TYPES[3:], *_JOB_TYPES[:3]) if wire else _JOB_TYPES:
        if cls.__name__ == exc.title:
            return cls
    return None


# -- render: collect and build the jobs ------------------------------------------------------


@dataclass(frozen=True)
class _Found:
    """A job object and where it was defined."""

    obj: _Job
    origin: str
    """`<source>: <variable>`, e.g. `jobs/bert.py: job` or `jobs/all.py: jobs[2]`."""


def _jobs_in(module: ModuleType, label: str) -> Iterator[_Found]:
    """The module-level jobs (builders and wire models, also inside lists and tuples)."""
    for name, value in list(vars(module).items()):
        if isinstance(value, _JOB_TYPES):
            yield _Found(value, f"{label}: {name}")
        elif isinstance(value, list | tuple):
            for i, item in enumerate(value):
                if isinstance(item, _JOB_TYPES):
                    yield _Found(item, f"{label}: {name}[{i}]")


@dataclass(frozen=True)
class _Built:
    """A job's wire model and where it came from."""

    job: codecs.AnyJob
    origin: str

    @property
    def title(self) -> str:
        return f"{self.job.kind} {self.job.metadata.name!r}"

    @property
    def filename(self) -> str:
        return f"{self.job.kind.lower()}-{self.job.metadata.name}.yaml"


@dataclass
class _Rendered:
    """What `render` found: the built jobs, and the errors (each a message for the user)."""

    jobs: list[_Built] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _load_jobs(sources: Sequence[_Source]) -> _Rendered:
    """Import every source, collect its jobs in definition order, and build them.

    A job object reached twice (imported by another file, listed twice) is rendered once; two
    objects that build the same manifest count as one; two different jobs with the same kind,
    namespace and name are an error.
    """
    result = _Rendered()
    seen: set[int] = set()
    found: list[_Found] = []
    for source in sources:
        try:
            module = _import_source(source)
        except _ImportFailure as exc:
            result.errors.append(str(exc))
            continue
        for item in _jobs_in(module, source.label):
            if id(item.obj) not in seen:
                seen.add(id(item.obj))
                found.append(item)
    by_identity: dict[tuple[str, str | None, str | None], _Built] = {}
    for item in found:
        try:
            job = item.obj if isinstance(item.obj, models.K8sModel) else item.obj.build()
        except InvalidManifestError as exc:
            problems = "\n".join(f"  - {p}" for p in exc.problems)
            result.errors.append(f"{exc.subject} ({item.origin}) is invalid:\n{problems}")
            continue
        built = _Built(job, item.origin)
        key = (job.kind, job.metadata.namespace, job.metadata.name)
        other = by_identity.get(key)
        if other is None:
            by_identity[key] = built
            result.jobs.append(built)
        elif other.job != job:
            result.errors.append(
                f"two different jobs are both {built.title}"
                f"{_in_namespace(job.metadata.namespace)}: {other.origin} and {item.origin};"
                " rename one of them"
            )
    return result


def _in_namespace(namespace: str | None) -> str:
    return f" in namespace {namespace!r}" if namespace else ""


def _file_collisions(jobs: Sequence[_Built]) -> list[str]:
    """Errors for jobs that would be written to the same file (same kind and name)."""
    first: dict[str, _Built] = {}
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
        raise _UsageError(f"{directory}: exists and is not a directory")
    directory.mkdir(parents=True, exist_ok=True)
    staged: list[tuple[Path, Path]] = []
    try:
        for name, text in files.items():
            temp = directory / f".{name}.tmp"
            staged.append((temp, directory / name))
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

    @property
    def ok(self) -> bool:
        return self.problems == 0 and self.syntax_errors == 0

    def summary(self, files: int) -> str:
        if self.ok:
            return f"{_plural(self.documents, 'document')} valid"
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


def _validate_text(text: bytes, label: str, report: _Report) -> None:
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
                if issubclass(w.category, LegacyManifestWarning):
                    # the SDK reads it, but the API server rejects it: an error for a pre-merge check
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
                else:  # not ours to explain: pass it on
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
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
    kind = doc.get("kind")
    if isinstance(kind, str) and (kind == "List" or kind in models.LIST_KINDS):
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
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
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


def _read(arg: str) -> tuple[str, bytes]:
    """(label, bytes) of a file argument; `-` is standard input. At most `_yaml.MAX_BYTES` + 1
    bytes are read: the loader reports a larger input as too large."""
    if arg == "-":
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # a text stream put in place of stdin (tests, embedding)
            return "<stdin>", sys.stdin.read(_yaml.MAX_BYTES + 1).encode("utf-8", "surrogateescape")
        return "<stdin>", _yaml.read_limited(stream)
    try:
        with open(arg, "rb") as file:
            return arg, _yaml.read_limited(file)
    except FileNotFoundError:
        raise _UsageError(f"{arg}: no such file") from None
    except IsADirectoryError:
        raise _UsageError(f"{arg}: is a directory") from None
    except OSError as exc:
        raise _UsageError(f"{arg}: cannot read: {exc.strerror}") from None


def _manifest_files(args: Sequence[str]) -> list[str]:
    """`validate`'s file arguments, each directory replaced by its *.yaml and *.yml files."""
    files: list[str] = []
    for arg in args:
        path = Path(arg)
        if arg != "-" and path.is_dir():
            found = sorted(
                p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()
            )
            files.extend(str(p) for p in found)
        else:
            files.append(arg)
    return files


# -- crds ----------------------------------------------------------------------------------


def _crd_files() -> dict[str, str]:
    """`<group>_<plural>.yaml` -> YAML of each CustomResourceDefinition."""
    return {
        f"{crd['spec']['group']}_{crd['spec']['names']['plural']}.yaml": codecs.dump_all_yaml([crd])
        for crd in generate_crds()
    }


# -- commands ------------------------------------------------------------------------------


def _error(message: str) -> None:
    print(f"t9k-sdk: error: {message}", file=sys.stderr)


def _print_data(payload: Any, output: str) -> None:
    """`payload` (JSON-ready data) on stdout as `json` or `yaml`."""
    if output == "json":
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
    else:
        sys.stdout.write(codecs.dump_all_yaml([payload]))


def _list_payload(objects: Sequence[Mapping[str, Any]]) -> Any:
    """One object as itself, several as a `List` (as `kubectl ... -o json` prints them)."""
    if len(objects) == 1:
        return objects[0]
    return {"apiVersion": "v1", "kind": "List", "items": list(objects)}


_FORMATS = ("yaml", "json")


def _format_and_directory(args: argparse.Namespace) -> tuple[str, Path | None]:
    """(format, directory) of `render`/`crds`: `-o` is a format (yaml, json), `--out-dir` a
    directory. `-o DIR` is the older spelling of `--out-dir DIR`: it still works, with a
    warning, for a value that is not a format."""
    output: str | None = args.output
    directory: str | None = args.out_dir
    if output is not None and output not in _FORMATS:
        if directory is not None:
            raise _UsageError(
                f"-o {output}: -o is the output format ({', '.join(_FORMATS)}); the directory"
                " is given with --out-dir"
            )
        print(
            f"t9k-sdk: warning: `-o {output}` as a directory is deprecated: -o is the output"
            f" format ({', '.join(_FORMATS)}), as in kubectl; use `--out-dir {output}`",
            file=sys.stderr,
        )
        return "yaml", Path(output)
    if output == "json" and directory is not None:
        raise _UsageError("--out-dir writes YAML files; -o json applies to standard output only")
    return output or "yaml", Path(directory) if directory is not None else None


def _cmd_render(args: argparse.Namespace) -> int:
    output, directory = _format_and_directory(args)
    sources = _find_sources(args.paths)
    result = _load_jobs(sources)
    if directory is not None:
        result.errors.extend(_file_collisions(result.jobs))
    for message in result.errors:
        _error(message)
    if result.errors:
        nothing = "; nothing was written" if directory is not None else ""
        print(
            f"t9k-sdk: render failed with {_plural(len(result.errors), 'error')}{nothing}",
            file=sys.stderr,
        )
        return _INVALID
    if not result.jobs:
        where = ", ".join(args.paths)
        _error(
            f"no jobs found in {where}. Define them at module level, e.g."
            " `job = GenericJob(...)` (builders from t9k_sdk, wire models from t9k_sdk.models,"
            " or lists of them)"
        )
        return _INVALID
    if directory is None:
        if output == "json":
            _print_data(_list_payload([codecs.to_manifest(b.job) for b in result.jobs]), "json")
        else:
            sys.stdout.write(codecs.dump_all_yaml(b.job for b in result.jobs))
        return _OK
    files = {b.filename: codecs.dump_all_yaml([b.job]) for b in result.jobs}
    try:
        written = _write_files(directory, files)
    except OSError as exc:
        _error(f"cannot write to {directory}: {exc.strerror or exc}; nothing was written")
        return _INVALID
    print(f"wrote {_plural(len(written), 'manifest')} to {directory}:", file=sys.stderr)
    for built, path in zip(result.jobs, written, strict=True):
        print(f"  {path}  ({built.title} from {built.origin})", file=sys.stderr)
    return _OK


def _cmd_validate(args: argparse.Namespace) -> int:
    files = _manifest_files(args.files)
    if files.count("-") > 1:
        raise _UsageError("standard input (-) can be given only once")
    inputs = [_read(arg) for arg in files]
    report = _Report()
    for label, data in inputs:
        _validate_text(data, label, report)
    if args.output in ("json", "yaml"):
        payload = {
            "valid": report.ok and report.documents > 0,
            "files": len(inputs),
            "documents": report.documents,
            "invalidDocuments": report.invalid_documents,
            "problems": report.entries,
        }
        _print_data(payload, args.output)
        return _OK if payload["valid"] else _INVALID
    for line in report.lines:
        print(line)
    if report.ok and report.documents == 0:
        print(f"no documents found in {', '.join(args.files)}: nothing was validated")
        return _INVALID
    print(report.summary(len(inputs)))
    return _OK if report.ok else _INVALID


def _cmd_crds(args: argparse.Namespace) -> int:
    output, directory = _format_and_directory(args)
    if directory is None and output == "json":
        _print_data(_list_payload(generate_crds()), "json")
        return _OK
    files = _crd_files()
    if directory is None:
        sys.stdout.write("---\n".join(files.values()))
        return _OK
    try:
        written = _write_files(directory, files)
    except OSError as exc:
        _error(f"cannot write to {directory}: {exc.strerror or exc}; nothing was written")
        return _INVALID
    print(f"wrote {_plural(len(written), 'CRD')} to {directory}:", file=sys.stderr)
    for path in written:
        print(f"  {path}", file=sys.stderr)
    return _OK


def _jobs_from(paths: Sequence[str]) -> tuple[list[codecs.AnyJob], list[str]]:
    """Jobs from YAML files (or `-`) and Python files, directories or modules."""
    jobs: list[codecs.AnyJob] = []
    errors: list[str] = []
    python: list[str] = []
    for arg in paths:
        if arg == "-" or arg.endswith((".yaml", ".yml")):
            label, data = _read(arg)
            try:
                jobs.extend(codecs.load_all_yaml(data))
            except InvalidManifestError as exc:
                errors.append(f"{label}: {exc}")
            except InvalidYAMLError as exc:
                errors.append(f"{label}: {exc}")
        else:
            python.append(arg)
    if python:
        result = _load_jobs(_find_sources(python))
        errors.extend(result.errors)
        jobs.extend(b.job for b in result.jobs)
    return jobs, errors


def _cmd_convert(args: argparse.Namespace) -> int:
    outputs: list[tuple[str, str]] = []
    for arg in args.files:
        label, data = _read(arg)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LegacyManifestWarning)
                jobs = codecs.load_all_yaml(data)
        except InvalidManifestError as exc:
            _error(f"{label}: {exc}")
            return _INVALID
        except InvalidYAMLError as exc:
            _error(f"{label}: {exc}")
            return _INVALID
        outputs.append((arg, codecs.dump_all_yaml(jobs)))
    for arg, text in outputs:
        if args.in_place and arg != "-":
            Path(arg).write_text(text, encoding="utf-8")
            print(f"rewrote {arg}", file=sys.stderr)
        else:
            sys.stdout.write(text)
    return _OK


def _cmd_plan(args: argparse.Namespace) -> int:
    from t9k_sdk.plan import plan_objects, plan_summary, plan_yaml

    jobs, errors = _jobs_from(args.paths)
    for message in errors:
        _error(message)
    if errors:
        return _INVALID
    if not jobs:
        _error("no jobs found in " + ", ".join(args.paths))
        return _INVALID
    if args.output == "json":
        _print_data(_list_payload([o for job in jobs for o in plan_objects(job)]), "json")
    else:
        sys.stdout.write(plan_yaml(jobs) if args.output == "yaml" else plan_summary(jobs))
    return _OK


def _cmd_completion(args: argparse.Namespace) -> int:
    sys.stdout.write(completion_script(args.root, args.shell))
    return _OK


def _cmd_install(args: argparse.Namespace) -> int:
    from t9k_sdk.install import DEFAULT_IMAGE, DEFAULT_NAMESPACE, install_manifests

    try:
        objects = install_manifests(
            image=args.image or DEFAULT_IMAGE,
            namespace=DEFAULT_NAMESPACE if args.namespace is None else args.namespace,
            watch_namespace=args.watch_namespace,
        )
    except ValueError as exc:
        raise _UsageError(str(exc)) from None
    sys.stdout.write(codecs.dump_all_yaml(objects))
    return _OK


_PLAN_HELP = """\
Show what the operator would create for each job, without a cluster: pods (with their commands,
as the operator rewrites them), services, the SSH secret, the hostfile config map and the
PodGroup. It runs the operator's own functions on the job as if it had just been created.

PATH is a YAML manifest (.yaml, .yml, or - for standard input), or a Python file, directory or
module defining jobs (as for `render`).
"""

_INSTALL_HELP = """\
Print everything needed to run the t9k-operator in a cluster, as YAML in apply order: the
namespace, the three CRDs, the service account, a least-privilege ClusterRole and its binding,
a Role and binding for the leader-election Lease, and the Deployment. Apply it with server-side
apply (the CRDs are larger than client-side apply's annotation limit):

  t9k-sdk install --image registry.example.com/t9k-operator:0.1.0 | kubectl apply --server-side -f -

With --watch-namespace NS the operator reconciles only the jobs in NS, and its permissions are
a Role and RoleBinding in NS instead of the ClusterRole (NS must exist first).
"""

_RENDER_HELP = """\
Import Python files or modules that define T9k jobs and write their manifests as YAML.

Every module-level job is rendered, in definition order: builders (t9k_sdk.GenericJob,
TorchrunJob, DeepSpeedJob, ColossalAIJob), wire models (t9k_sdk.models.*), and lists or tuples
of them.
PATH is a .py file, a directory (every *.py below it, sorted; directories starting with `.` or
`_` are skipped) or a module name importable from the current directory (pkg.jobs).

Without --out-dir the jobs go to stdout as one multi-document YAML stream (-o json: one JSON
object, or a List of several). With --out-dir DIR each job is written to DIR/<kind>-<name>.yaml
(e.g. deepspeedjob-bert.yaml); files are written only if every job is valid.

-o is an output format, as everywhere in t9k-sdk and kubectl. The older `-o DIR` still works
as --out-dir DIR, with a warning.

Two different jobs with the same kind, namespace and name (a sweep that kept one name) are an
error naming both; the same job reached twice, or two that render identically, is written once.
"""

_VALIDATE_HELP = """\
Check every YAML document of every FILE against the T9k job schemas: YAML syntax and duplicate
keys, kind and apiVersion, fields and types, the cross-field rules, and unknown fields in pod
templates (as `kubectl apply --validate=strict` would). Prints one line per problem:

  FILE: document N (Kind 'name'): field.path: what is wrong

Documents are numbered from 0 within each file. FILE may be `-` (standard input) or a
directory (its *.yaml and *.yml files). Exit status 1 if anything is invalid.
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

_EPILOG = "exit status: 0 success, 1 invalid input or nothing found, 2 usage error"


def _output_options(parser: argparse.ArgumentParser, directory_help: str) -> None:
    parser.add_argument(
        "-o",
        "--output",
        metavar="FORMAT",
        help="format on standard output: yaml (default) or json (`-o DIR`, the older spelling"
        " of --out-dir, still works with a warning)",
    )
    parser.add_argument("--out-dir", metavar="DIR", help=directory_help)


def _parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="t9k-sdk",
        description="Render, validate and describe T9k training jobs"
        " (GenericJob, DeepSpeedJob, ColossalAIJob).",
        epilog="Run `t9k-sdk COMMAND --help` for the options of a command.\n" + _EPILOG,
        formatter_class=fmt,
    )
    parser.add_argument("--version", action="version", version=f"t9k-sdk {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    render = sub.add_parser(
        "render",
        help="write the jobs defined in Python files as YAML manifests",
        description=_RENDER_HELP,
        epilog="examples:\n  t9k-sdk render jobs/ --out-dir manifests/\n  t9k-sdk render"
        " jobs/bert.py > bert.yaml\n  t9k-sdk render mypkg.jobs\n\n" + _EPILOG,
        formatter_class=fmt,
    )
    render.add_argument(
        "paths", nargs="+", metavar="PATH", help="a .py file, a directory or a module"
    )
    _output_options(render, "write one file per job into DIR (created if missing)")
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
        description="Read YAML manifests of T9k jobs, converting legacy forms (the pre-2025"
        " ColossalAIJob launcher/worker schema, `enable` for `enabled`), and write them in the"
        " current schema, in the SDK's canonical, diff-stable YAML.",
        epilog="examples:\n  t9k-sdk convert old.yaml > new.yaml\n  t9k-sdk convert -i"
        " manifests/*.yaml\n\n" + _EPILOG,
        formatter_class=fmt,
    )
    convert.add_argument("files", nargs="+", metavar="FILE", help="a YAML file, or -")
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
    plan.add_argument("paths", nargs="+", metavar="PATH", help="a YAML file, -, or Python jobs")
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
    install.set_defaults(run=_cmd_install, parser=install)

    # The cluster verbs: apply, get, describe, wait, logs, pause, resume, scale, delete.
    from t9k_sdk.client.commands import add_commands

    add_commands(sub)

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
    completion.set_defaults(run=_cmd_completion, parser=completion, root=parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run `t9k-sdk` with `argv` (default: the process arguments); return the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, and argparse's usage errors
        return exc.code if isinstance(exc.code, int) else (_OK if exc.code is None else _USAGE)
    try:
        status: int = args.run(args)
    except _UsageError as exc:
        args.parser.print_usage(sys.stderr)
        _error(str(exc))
        return _USAGE
    except BrokenPipeError:  # `t9k-sdk render jobs/ | head`: the reader left; not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return _OK
    sys.stdout.flush()
    return status
