"""The one reader of the job inputs of `t9k-sdk`: every command that takes jobs reads them here.

An input argument is one of:

* `-`: standard input, a YAML (or JSON) stream of manifests; at most once;
* a file: `*.py` is a Python file defining jobs, anything else a YAML (or JSON) stream;
* a directory: its `*.yaml`, `*.yml` and `*.json` files (not those of its subdirectories, as
  `kubectl apply -f DIR`), and, where Python is taken, its `*.py` files at any depth
  (directories whose name starts with `.` or `_` are skipped), each sorted by path; its
  kustomization file is skipped (with a note when kustomize would build something else from
  the files);
* a module name importable from the current directory (`pkg.jobs`): Python.

Python runs as code, so no command imports a file the user did not ask for. What each command
accepts (`Accepts`):

    command                   manifests   Python
    render                    no          yes (its input is Python: that is what it runs)
    validate, convert         yes         no (a usage error naming the argument)
    plan                      yes         a named *.py file; directories' and modules only
                                          with --python
    apply, diff, delete -f    yes         only with --python

Python sources are imported and every module-level job (builders, wire models, lists and tuples
of them) is built. The same job reached twice is read once; two different jobs with the same
kind, namespace and name are an error naming both.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import itertools
import os
import re
import sys
import sysconfig
import traceback
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Literal, TypeAlias

from pydantic import BaseModel, ValidationError

from t9k_sdk import _kinds, _yaml, codecs, models
from t9k_sdk.cli._errors import UsageError, say
from t9k_sdk.cli._kustomize import is_kustomization, kustomization_differences
from t9k_sdk.errors import (
    InvalidManifestError,
    InvalidYAMLError,
    LegacyManifestWarning,
    problems_from_validation_error,
)

__all__ = [
    "APPLY",
    "COMMANDS",
    "CONVERT",
    "DELETE",
    "DIFF",
    "PLAN",
    "RENDER",
    "VALIDATE",
    "Accepts",
    "Built",
    "Jobs",
    "Manifest",
    "PythonSource",
    "expand",
    "load_jobs",
    "read",
]

if TYPE_CHECKING:
    from t9k_sdk import builders

    _Job: TypeAlias = (
        builders.GenericJob
        | builders.DeepSpeedJob
        | builders.ColossalAIJob
        | builders.TorchrunJob
        | codecs.AnyJob
    )


def _job_types(*, wire_first: bool = False) -> tuple[type[_Job], ...]:
    """The classes of the jobs a Python source may define: the builders of every registered kind
    (imported here, when a Python source is read: YAML inputs need none of them) and the wire
    models."""
    from t9k_sdk import builders

    wire: tuple[type[_Job], ...] = _kinds.MODELS
    built: tuple[type[_Job], ...] = tuple(
        getattr(builders, name) for k in _kinds.JOB_KINDS for name in k.builders
    )
    return (*wire, *built) if wire_first else (*built, *wire)


MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "<stdin>"
"""How messages name standard input."""


# -- what a command accepts --------------------------------------------------------------------


@dataclass(frozen=True)
class Accepts:
    """The inputs one command takes."""

    verb: str
    """The command, as messages name it."""
    manifests: bool = True
    """YAML (JSON) files, their directories and `-`."""
    python: Literal["yes", "no", "flag", "named"] = "yes"
    """Python files and modules: always, never, only with `--python` (they run as code), or
    `named`: a `*.py` file named on the command line, the rest only with `--python`."""
    no_python_hint: str = ""
    """For `python="no"`: what to do instead, in the usage error (`{arg}` is the argument)."""

    @property
    def file_flag(self) -> str:
        """`-f ` where the command takes its inputs with -f (apply, diff, delete)."""
        return "-f " if self.python == "flag" else ""


RENDER = Accepts("render", manifests=False)
VALIDATE = Accepts(
    "validate",
    python="no",
    no_python_hint="validate checks YAML manifests; Python jobs are checked when they are built:"
    " `t9k-sdk render {arg} | t9k-sdk validate -`",
)
CONVERT = Accepts(
    "convert",
    python="no",
    no_python_hint="convert rewrites YAML manifests; Python jobs are written in the current"
    " schema by `t9k-sdk render {arg}`",
)
PLAN = Accepts("plan", python="named")


APPLY = Accepts("apply", python="flag")
DIFF = Accepts("diff", python="flag")
DELETE = Accepts("delete", python="flag")


COMMANDS: tuple[tuple[str, Accepts], ...] = (
    ("render", RENDER),
    ("validate", VALIDATE),
    ("convert", CONVERT),
    ("plan", PLAN),
    ("apply -f", APPLY),
    ("diff -f", DIFF),
    ("delete -f", DELETE),
)
"""Every command that reads jobs, and what it accepts (for the reference page)."""

_PYTHON_FLAG_HINT = (
    "Python job files are executed as code, so {verb} runs them only when asked: add --python,"
    " or render them first (`t9k-sdk render {arg} | t9k-sdk {verb} {f}-`)"
)


# -- the inputs --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Manifest:
    """A YAML (or JSON) stream: a file, or standard input."""

    label: str
    """How messages name it: the path as the user wrote it (or as found in a directory), or
    `<stdin>`."""
    path: Path | None = None
    """The file; None for standard input."""


@dataclass(frozen=True)
class PythonSource:
    """A Python file (by path) or an importable module (by name) that defines jobs."""

    label: str
    """How messages name it: the path as the user wrote it, or the module name."""
    path: Path | None = None
    """The file; None for a module, whose name is the label."""


Input: TypeAlias = Manifest | PythonSource

_MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def _python_files(directory: Path) -> list[Path]:
    """Every `*.py` below `directory`, sorted; directories starting with `.` or `_` skipped."""
    files = [
        p
        for p in directory.rglob("*.py")
        if p.is_file()
        and not any(part.startswith((".", "_")) for part in p.relative_to(directory).parts[:-1])
    ]
    files.sort(key=lambda p: p.relative_to(directory).parts)
    return files


def _manifest_files(directory: Path) -> list[Path]:
    """The `*.yaml`, `*.yml` and `*.json` files of `directory` itself, sorted."""
    return sorted(p for p in directory.iterdir() if p.suffix in MANIFEST_SUFFIXES and p.is_file())


def expand(args: Sequence[str], accepts: Accepts, *, python: bool = False) -> list[Input]:
    """The inputs named by `args`, in order, each once.

    `python` is the `--python` flag of the commands that need it. Raises `UsageError`, naming
    the argument and what the command accepts, for one it does not take.
    """
    found: list[Input] = []
    take_python = accepts.python == "yes" or (accepts.python in ("flag", "named") and python)
    for arg in args:
        path = Path(arg)
        if arg == "-":
            if not accepts.manifests:
                raise UsageError(
                    f"-: {accepts.verb} reads Python files, directories or modules, not"
                    " standard input"
                )
            if any(isinstance(i, Manifest) and i.path is None for i in found):
                raise UsageError("standard input (-) can be given only once")
            found.append(Manifest(STDIN))
        elif path.is_dir():
            if accepts.manifests:
                files = _manifest_files(path)
                jobs = [p for p in files if not is_kustomization(p)]
                for k in (p for p in files if is_kustomization(p)):
                    _skipped_kustomization(k, jobs, accepts)
                found.extend(Manifest(str(p), p) for p in jobs)
            py_files = _python_files(path)
            if take_python:
                found.extend(PythonSource(str(p), p) for p in py_files)
            elif py_files and accepts.python in ("flag", "named"):
                say(
                    f"note: skipped {len(py_files)} Python file(s) in {arg} (pass --python to"
                    " run them as job definitions)",
                    sys.stderr,
                )
        elif path.is_file():
            if path.suffix == ".py":
                take = take_python or accepts.python == "named"
                found.append(_python(arg, accepts, take, PythonSource(arg, path)))
            elif accepts.manifests and is_kustomization(path):
                raise UsageError(
                    f"{arg}: kustomize's file, not a job manifest; give its directory"
                    f" ({path.parent}: its job files are read, the kustomization skipped), or"
                    f" what kustomize builds: `kubectl kustomize {path.parent} | t9k-sdk"
                    f" {accepts.verb} -f -`"
                )
            elif accepts.manifests:
                found.append(Manifest(arg, path))
            else:
                hint = (
                    "; to check YAML manifests use `t9k-sdk validate`"
                    if path.suffix in MANIFEST_SUFFIXES
                    else ""
                )
                raise UsageError(f"{arg}: not a Python file (*.py){hint}")
        elif path.exists():
            raise UsageError(f"{arg}: not a regular file or directory")
        elif (
            accepts.python != "no"
            and _MODULE_NAME.fullmatch(arg)
            and path.suffix not in (".py", *MANIFEST_SUFFIXES)
        ):
            if accepts.python in ("flag", "named") and not python:
                raise UsageError(
                    f"{arg}: no such file (or a Python module name); "
                    + _PYTHON_FLAG_HINT.format(verb=accepts.verb, arg=arg, f=accepts.file_flag)
                )
            found.append(PythonSource(arg))
        else:
            raise UsageError(f"{arg}: no such file or directory")
    unique: dict[Path | str, Input] = {}
    for item in found:
        key = item.path.resolve() if item.path is not None else item.label
        unique.setdefault(key, item)
    return list(unique.values())


def _skipped_kustomization(path: Path, files: Sequence[Path], accepts: Accepts) -> None:
    """Say so when skipping a directory's kustomization file leaves out what kustomize would do
    (nothing is said for one that only lists the directory's files, as render writes it)."""
    differences = kustomization_differences(path, files)
    if differences:
        flag = accepts.file_flag
        say(
            f"note: read the files of {path.parent} as they are, not as kustomize builds them"
            f" ({path.name}: {'; '.join(differences)}). To {accepts.verb} what kustomize"
            f" builds: `kubectl kustomize {path.parent} | t9k-sdk {accepts.verb} {flag}-`",
            sys.stderr,
        )


def _python(arg: str, accepts: Accepts, take: bool, source: PythonSource) -> PythonSource:
    """`source`, or the usage error of a command that does not take it."""
    if take:
        return source
    if accepts.python == "flag":
        raise UsageError(
            f"{arg}: a Python file; "
            + _PYTHON_FLAG_HINT.format(verb=accepts.verb, arg=arg, f=accepts.file_flag)
        )
    raise UsageError(f"{arg}: a Python file; " + accepts.no_python_hint.format(arg=arg))


def read(manifest: Manifest) -> bytes:
    """The bytes of a manifest input. At most `_yaml.MAX_BYTES` + 1 bytes are read: the loader
    reports a larger input as too large. Raises `UsageError` for a file that cannot be read."""
    if manifest.path is None:
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # a text stream put in place of stdin (tests, embedding)
            return sys.stdin.read(_yaml.MAX_BYTES + 1).encode("utf-8", "surrogateescape")
        return _yaml.read_limited(stream)
    arg = manifest.label
    try:
        with open(manifest.path, "rb") as file:
            return _yaml.read_limited(file)
    except FileNotFoundError:
        raise UsageError(f"{arg}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{arg}: is a directory") from None
    except OSError as exc:
        raise UsageError(f"{arg}: cannot read: {exc.strerror}") from None


# -- importing Python sources ------------------------------------------------------------------


class _ImportFailure(Exception):
    """A source could not be imported; `str()` is the message for the user."""


_counter = itertools.count()


def _import_source(source: PythonSource) -> ModuleType:
    """Import a source. Raises `UsageError` for an unknown module, `_ImportFailure` otherwise.

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
            raise UsageError(
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


def _describe_import_error(source: PythonSource, exc: BaseException) -> str:
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
        str(Path(__file__).parent.parent),  # the SDK
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
    for cls in _job_types(wire_first=wire):
        if cls.__name__ == exc.title:
            return cls
    return None


# -- Python sources: their jobs -----------------------------------------------------------------


@dataclass(frozen=True)
class _Found:
    """A job object and where it was defined."""

    obj: _Job
    origin: str
    """`<source>: <variable>`, e.g. `jobs/bert.py: job` or `jobs/all.py: jobs[2]`."""


def _jobs_in(module: ModuleType, label: str) -> Iterator[_Found]:
    """The module-level jobs (builders and wire models, also inside lists and tuples), as
    Python decides what a module exports: the names in `__all__` when the module defines it,
    otherwise every name that does not start with an underscore (`_base`, a sweep's template,
    is not a job to render)."""
    names = getattr(module, "__all__", None)
    exported = (
        [str(n) for n in names]
        if isinstance(names, list | tuple)
        else [n for n in vars(module) if not n.startswith("_")]
    )
    job_types = _job_types()
    for name in exported:
        value = getattr(module, name, None)
        if isinstance(value, job_types):
            yield _Found(value, f"{label}: {name}")
        elif isinstance(value, list | tuple):
            for i, item in enumerate(value):
                if isinstance(item, job_types):
                    yield _Found(item, f"{label}: {name}[{i}]")


# -- loading the jobs --------------------------------------------------------------------------


@dataclass(frozen=True)
class Built:
    """A job's wire model and where it came from."""

    job: codecs.AnyJob
    origin: str
    """`<file>`, `<stdin>`, or for Python `<source>: <variable>` (`jobs/all.py: jobs[2]`)."""

    @property
    def title(self) -> str:
        return f"{self.job.kind} {self.job.metadata.name!r}"

    @property
    def filename(self) -> str:
        return f"{self.job.kind.lower()}-{self.job.metadata.name}.yaml"


@dataclass
class Jobs:
    """What the inputs hold: the jobs, and the errors (each a message for the user)."""

    jobs: list[Built] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def load_jobs(inputs: Sequence[Input], *, legacy_ok: bool = False) -> Jobs:
    """Read every manifest and import every Python source; build the jobs, in order.

    A job object reached twice (imported by another file, listed twice) is read once; two
    inputs that give the same job count as one; two different jobs with the same kind,
    namespace and name are an error. `legacy_ok`: read legacy forms without a warning.
    Python sources are all imported before any of their jobs is built.
    """
    result = Jobs()
    seen: set[int] = set()
    found: list[Built | _Found] = []
    for item in inputs:
        if isinstance(item, Manifest):
            found.extend(_load_manifest(item, result.errors, legacy_ok=legacy_ok))
        else:
            found.extend(_import_jobs(item, seen, result.errors))
    loaded = [b for b in (_build(f, result.errors) for f in found) if b is not None]
    by_identity: dict[tuple[str, str | None, str | None], Built] = {}
    for built in loaded:
        job = built.job
        key = (job.kind, job.metadata.namespace, job.metadata.name)
        other = by_identity.get(key)
        if other is None:
            by_identity[key] = built
            result.jobs.append(built)
        elif other.job != job:
            result.errors.append(
                f"two different jobs are both {built.title}"
                f"{_in_namespace(job.metadata.namespace)}: {other.origin} and {built.origin};"
                " rename one of them"
            )
    return result


def _load_manifest(item: Manifest, errors: list[str], *, legacy_ok: bool) -> list[Built]:
    try:
        with warnings.catch_warnings():
            if legacy_ok:
                warnings.simplefilter("ignore", LegacyManifestWarning)
            jobs = codecs.load_all_yaml(read(item) if item.path is None else item.path)
        return [Built(j, item.label) for j in jobs]
    except (InvalidManifestError, InvalidYAMLError) as exc:
        errors.append(f"{item.label}: {exc}")
    except OSError as exc:
        errors.append(f"{item.label}: cannot read: {exc.strerror or exc}")
    return []


def _import_jobs(source: PythonSource, seen: set[int], errors: list[str]) -> list[_Found]:
    """The jobs a Python source defines, not yet built; each object once over all sources."""
    try:
        module = _import_source(source)
    except _ImportFailure as exc:
        errors.append(str(exc))
        return []
    found: list[_Found] = []
    for item in _jobs_in(module, source.label):
        if id(item.obj) not in seen:
            seen.add(id(item.obj))
            found.append(item)
    return found


def _build(item: Built | _Found, errors: list[str]) -> Built | None:
    """The wire model of a job a Python source defines (a builder is built); None if invalid."""
    if isinstance(item, Built):
        return item
    try:
        job = item.obj if isinstance(item.obj, models.K8sModel) else item.obj.build()
    except InvalidManifestError as exc:
        problems = "\n".join(f"  - {p}" for p in exc.problems)
        errors.append(f"{exc.subject} ({item.origin}) is invalid:\n{problems}")
        return None
    return Built(job, item.origin)


def _in_namespace(namespace: str | None) -> str:
    return f" in namespace {namespace!r}" if namespace else ""
