"""`t9k-sdk render --out-dir DIR`: which files to write, which kustomization, which files to prune.

Everything here reads the directory and returns a plan (`plan_out_dir`); `render` writes it.
Every job file render writes starts with `JOB_HEADER`: that marker is how a later render knows
which files it wrote, so that `--prune` deletes only those (never a file without the marker, a
symbolic link or anything in a subdirectory).

With `--kustomization`, DIR/kustomization.yaml lists the rendered files under `resources`:

* a new one is written with `KUSTOMIZATION_HEADER`, apiVersion, kind and the sorted files;
* an existing one (kustomization.yaml, kustomization.yml or Kustomization, as kustomize looks
  for them) keeps every other key (namespace, labels, patches, ...) and every entry of
  `resources` that is not a job file of ours; the entries of our job files are replaced by the
  jobs rendered now, sorted, after the others. Only those lines change: its comments, order and
  formatting stay as they were (`_yaml_update`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from t9k_sdk import _yaml, _yaml_update
from t9k_sdk.cli._errors import UsageError
from t9k_sdk.errors import InvalidYAMLError

__all__ = [
    "JOB_HEADER",
    "KUSTOMIZATION_FILES",
    "KUSTOMIZATION_HEADER",
    "OutDirPlan",
    "is_kustomization",
    "kustomization_differences",
    "plan_out_dir",
]

JOB_HEADER = (
    "# Rendered by t9k-sdk from a Python job definition: edit that and run `t9k-sdk render`"
    " again.\n"
)
"""The first line of every job file `render --out-dir` writes (the marker `--prune` looks for)."""
_JOB_MARKER = b"# Rendered by t9k-sdk "

KUSTOMIZATION_HEADER = (
    "# Written by `t9k-sdk render --kustomization`: each render rewrites `resources` (the jobs\n"
    "# it rendered, after any entries of your own); other keys you add are kept.\n"
)

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
"""The names kustomize reads a directory's kustomization from (it refuses more than one)."""

_API_VERSION = "kustomize.config.k8s.io/v1beta1"
_KIND = "Kustomization"
_MAX_KUSTOMIZATION_BYTES = 1024 * 1024


def is_kustomization(path: Path) -> bool:
    """Whether `path` is named as kustomize's own file (not a Kubernetes object)."""
    return path.name in KUSTOMIZATION_FILES


@dataclass
class OutDirPlan:
    """What `render --out-dir` will do in DIR."""

    files: dict[str, str] = field(default_factory=dict)
    """name -> text of every file to write (the jobs, then the kustomization)."""
    prune: list[Path] = field(default_factory=list)
    """Job files of an earlier render whose job is gone, to delete (`--prune`)."""
    stale: list[Path] = field(default_factory=list)
    """The same files when not pruning: left in place (the caller warns)."""
    kustomization: str | None = None
    """The kustomization file's name, when one is written."""
    kustomization_created: bool = False
    kustomization_changed: bool = True
    """False when an existing kustomization file already says exactly this."""


def _written_by_us(path: Path) -> bool:
    """A regular file (not a link) in DIR whose first line is our job marker."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open("rb") as file:
            return file.read(len(_JOB_MARKER)) == _JOB_MARKER
    except OSError:
        return False


def _ours(directory: Path) -> set[str]:
    """Names of the job files in `directory` (not below it) that an earlier render wrote."""
    if not directory.is_dir():
        return set()
    return {
        p.name
        for p in directory.iterdir()
        if p.suffix == ".yaml" and not is_kustomization(p) and _written_by_us(p)
    }


def _find_kustomization(directory: Path) -> Path | None:
    """DIR's kustomization file, if any; a `UsageError` for two of them or a link."""
    if not directory.is_dir():
        return None
    present = [
        directory / name
        for name in KUSTOMIZATION_FILES
        if (directory / name).is_symlink() or (directory / name).exists()
    ]
    # kustomization.yaml and Kustomization are one file on a case-insensitive file system
    unique: dict[tuple[int, int], Path] = {}
    for p in present:
        st = p.lstat()
        unique.setdefault((st.st_dev, st.st_ino), p)
    found = list(unique.values())
    if len(found) > 1:
        names = " and ".join(p.name for p in found)
        raise UsageError(
            f"{directory}: has both {names}; kustomize refuses a directory with more than one"
            " kustomization file: keep one"
        )
    if not found:
        return None
    path = found[0]
    if path.is_symlink():
        raise UsageError(
            f"{path}: is a symbolic link; render --kustomization updates only a regular file in"
            f" {directory} (replace the link with the file, or render into another directory)"
        )
    if not path.is_file():
        raise UsageError(f"{path}: not a regular file")
    return path


def _read_kustomization(path: Path) -> tuple[str, dict[str, Any]]:
    """The text of an existing kustomization file and its mapping; a `UsageError` naming what is
    wrong."""
    try:
        with path.open("rb") as file:
            data = file.read(_MAX_KUSTOMIZATION_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > _MAX_KUSTOMIZATION_BYTES:
        raise UsageError(f"{path}: larger than 1 MiB; not a kustomization render can update")
    try:
        text = _yaml.decode(data)
        docs = [d for d in _yaml.load_documents(text) if d is not None]
    except InvalidYAMLError as exc:
        raise UsageError(f"{path}: not valid YAML: {exc}; fix or remove it") from None
    if not docs:
        return text, {}
    if len(docs) > 1:
        raise UsageError(f"{path}: holds {len(docs)} YAML documents; a kustomization is one")
    doc = docs[0]
    if not isinstance(doc, dict):
        raise UsageError(
            f"{path}: expected a mapping (apiVersion, kind, resources, ...); got a"
            f" {type(doc).__name__}"
        )
    kind = doc.get("kind", _KIND)
    if kind != _KIND:
        raise UsageError(
            f"{path}: kind is {kind!r}; render --kustomization updates only a kind"
            f" {_KIND!r} (a Component cannot list the jobs for Argo CD or Flux to apply)"
        )
    resources = doc.get("resources", [])
    if resources is None:
        resources = []
    if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
        raise UsageError(f"{path}: resources: expected a list of file names or paths")
    doc["resources"] = resources
    return text, doc


def plan_out_dir(
    directory: Path,
    jobs: Mapping[str, str],
    *,
    kustomization: bool,
    prune: bool,
) -> OutDirPlan:
    """What writing the job files `jobs` (name -> YAML) into `directory` involves.

    Raises `UsageError` for a directory or kustomization render must not touch; nothing is
    written or deleted here.
    """
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{directory}: exists and is not a directory")
    for name in jobs:
        target = directory / name
        if target.is_symlink() or (target.exists() and not target.is_file()):
            raise UsageError(
                f"{target}: is a symbolic link or not a regular file; render writes only"
                " regular files (remove it, or render into another directory)"
            )
    plan = OutDirPlan(files={name: JOB_HEADER + text for name, text in jobs.items()})
    ours = _ours(directory)
    gone = sorted(ours - set(jobs))
    if prune:
        plan.prune = [directory / n for n in gone]
    else:
        plan.stale = [directory / n for n in gone]
    if kustomization:
        path = _find_kustomization(directory)
        name = path.name if path is not None else KUSTOMIZATION_FILES[0]
        plan.kustomization = name
        plan.kustomization_created = path is None
        text = _kustomization_text(
            _read_kustomization(path) if path is not None else ("", {}), jobs, ours
        )
        plan.files[name] = text
        plan.kustomization_changed = path is None or path.read_bytes() != text.encode("utf-8")
    return plan


def _kustomization_text(
    read: tuple[str, dict[str, Any]], jobs: Mapping[str, str], ours: set[str]
) -> str:
    """The kustomization `read` (its text and mapping; empty for a new one) with `resources` =
    the user's own entries, then our jobs, sorted."""
    text, doc = read
    mine = set(jobs) | ours
    own = [
        r for r in doc.get("resources", []) if r not in mine and r.removeprefix("./") not in mine
    ]
    out: dict[str, Any] = {"apiVersion": doc.get("apiVersion", _API_VERSION), "kind": _KIND}
    for key, value in doc.items():
        if key in ("apiVersion", "kind"):
            continue
        out[key] = value
    out["resources"] = own + sorted(jobs)  # in the user's place, or last
    if doc:
        return _yaml_update.update_documents(text, [out])
    if text.strip():  # only comments: keep them
        return text.rstrip("\n") + "\n" + _yaml.dump_documents([out])
    return KUSTOMIZATION_HEADER + _yaml.dump_documents([out])


_TRANSFORMS = frozenset({"apiVersion", "kind", "resources"})


def kustomization_differences(path: Path, files: Sequence[Path]) -> list[str]:
    """How what kustomize builds from `path` differs from reading `files` (the directory's
    other manifest files) as they are: the keys that transform them (namespace, labels,
    patches, ...), files it does not list, entries that are not among them. Empty when the
    kustomization only lists exactly those files (as `render --kustomization` writes it)."""
    try:
        _, doc = _read_kustomization(path)
    except UsageError as exc:
        return [str(exc)]
    found: list[str] = []
    extras = [k for k in doc if k not in _TRANSFORMS]
    if extras:
        found.append(f"it also sets {', '.join(extras)}")
    listed = {r.removeprefix("./") for r in doc["resources"]}
    names = {f.name for f in files}
    unlisted = sorted(names - listed)
    if unlisted:
        found.append(f"it does not list {', '.join(unlisted)}")
    others = sorted(listed - names)
    if others:
        found.append(f"it also builds {', '.join(others)}")
    return found
