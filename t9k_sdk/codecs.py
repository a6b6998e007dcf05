"""One serializer and one parser: wire models <-> manifest dicts <-> YAML.

to_wire(model)             -> dict   (the only `model_dump` in the code base)
to_manifest(job)           -> dict   (a job, or a builder: `.build()` first)
from_manifest(dict)        -> job    (dispatch on `kind`; errors name every bad field)
dump_all_yaml(objects)     -> str    (multi-document, deterministic, diff-stable)
load_all_yaml(text | file) -> [job]  (list kinds are expanded into their items)
update_yaml(text, objects) -> str    (the text with only the changed values rewritten)
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TextIO, TypeAlias

from pydantic import ValidationError

from t9k_sdk import _kinds, _yaml, _yaml_update, models
from t9k_sdk import _objects as o
from t9k_sdk._kinds import AnyJob
from t9k_sdk.errors import InvalidManifestError, Problem, problems_from_validation_error
from t9k_sdk.models import K8sModel

__all__ = [
    "AnyJob",
    "Buildable",
    "Manifest",
    "dump_all_yaml",
    "from_manifest",
    "load_all_yaml",
    "to_manifest",
    "to_wire",
    "update_yaml",
]

Manifest: TypeAlias = dict[str, Any]
"""A manifest: a camelCase dict as `kubectl` and the API server see it."""

_TOP_KEYS = ("apiVersion", "kind", "metadata", "spec", "status")


class Buildable(Protocol):
    """Anything with a `build()` that returns a wire model: the builders."""

    def build(self) -> AnyJob:
        """The wire model."""
        ...


def to_wire(obj: K8sModel) -> dict[str, Any]:
    """The wire form (camelCase keys, absent fields left out) of any model or model fragment."""
    return obj.model_dump(mode="json", exclude_none=True)


def to_manifest(job: AnyJob | Buildable) -> Manifest:
    """The manifest of a job: a wire model, or a builder (which is built first)."""
    model = job if isinstance(job, K8sModel) else job.build()
    return to_wire(model)


def _ordered(data: Mapping[str, Any]) -> dict[str, Any]:
    head = {k: data[k] for k in _TOP_KEYS if k in data}
    return {**head, **{k: v for k, v in data.items() if k not in head}}


def _subject(data: Mapping[str, Any]) -> str:
    kind = data.get("kind") or "manifest"
    name = o.meta(data).raw.get("name")
    return f"{kind} {name!r}" if name else str(kind)


def from_manifest(data: Mapping[str, Any]) -> AnyJob:
    """Parse and validate a job manifest; the class is chosen by its `kind`.

    Raises `InvalidManifestError` listing every field at fault, with wire paths
    (`spec.replicaSpecs[0].replicas`), the offending values and what is allowed.
    """
    if not isinstance(data, Mapping):
        raise InvalidManifestError(
            "manifest", [Problem("", f"expected a mapping, got {type(data).__name__}")]
        )
    subject = _subject(data)
    kind = data.get("kind")
    cls = _model_of(kind)
    if cls is None:
        problem = _kind_problem(kind)
        guess = _case_insensitive_kind(kind)
        if guess is None:
            raise InvalidManifestError(subject, [problem])
        # Report the rest of the manifest too, validated as the kind it was meant to be.
        try:
            _kinds.by_kind(guess).model.model_validate({**data, "kind": guess})
        except ValidationError as exc:
            rest = problems_from_validation_error(exc, _kinds.by_kind(guess).model)
            raise InvalidManifestError(subject, [problem, *rest]) from None
        raise InvalidManifestError(subject, [problem])
    api_version = data.get("apiVersion")
    if api_version != models.API_VERSION:
        raise InvalidManifestError(
            subject,
            [
                Problem(
                    "apiVersion",
                    f"must be {models.API_VERSION!r} for kind {kind!r}; got {api_version!r}",
                )
            ],
        )
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise InvalidManifestError(subject, problems_from_validation_error(exc, cls)) from None


def _model_of(kind: object) -> type[AnyJob] | None:
    """The wire model class of a registered `kind` (exactly as written); None for any other."""
    if not isinstance(kind, str) or kind not in _kinds.KIND_NAMES:
        return None
    return _kinds.by_kind(kind).model


def _kind_problem(kind: object) -> Problem:
    names = _kinds.KIND_NAMES
    known = [*names, *(k.list_kind for k in _kinds.JOB_KINDS)]
    if kind is None:
        return Problem("kind", f"required field is missing; expected one of {', '.join(names)}")
    hint = ""
    if isinstance(kind, str):
        lowered = {k.lower(): k for k in known}
        if kind.lower() in lowered:
            hint = f" (kinds are case-sensitive: did you mean {lowered[kind.lower()]!r}?)"
        else:
            close = difflib.get_close_matches(kind, known, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
    return Problem(
        "kind",
        f"{kind!r} is not a T9k job kind; expected one of {', '.join(names)}{hint}",
    )


def _case_insensitive_kind(kind: object) -> str | None:
    if not isinstance(kind, str):
        return None
    return next((k for k in _kinds.KIND_NAMES if k.lower() == kind.lower()), None)


def _items(doc: Mapping[str, Any], index: int) -> list[Mapping[str, Any]]:
    kind = o.kind(doc)
    if kind in models.LIST_KINDS or kind == "List":
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise InvalidManifestError(
                f"document {index}", [Problem("items", "expected a list of jobs")]
            )
        return items
    return [doc]


def load_all_yaml(source: str | bytes | TextIO | Path) -> list[AnyJob]:
    """Every job in a YAML stream, validated. Empty documents are skipped; `*List` kinds expand.

    `source` is YAML text or bytes, an open file, or a `Path`. Input that is not YAML a
    Kubernetes object can hold (bad syntax or encoding, too large or deep, aliases expanding too
    far, keys that are not strings, `!!set`, ...) raises `InvalidYAMLError` with the line and
    column. On the first invalid document raises `InvalidManifestError` whose subject names the
    document index (0-based) and the job.
    """
    jobs: list[AnyJob] = []
    for index, doc in enumerate(_yaml.load_documents(source)):
        if doc is None:
            continue
        if not isinstance(doc, Mapping):
            raise InvalidManifestError(
                f"document {index}", [Problem("", f"expected a mapping, got {type(doc).__name__}")]
            )
        for item in _items(doc, index):
            try:
                jobs.append(from_manifest(item))
            except InvalidManifestError as exc:
                raise InvalidManifestError(
                    f"document {index} ({exc.subject})", exc.problems
                ) from None
    return jobs


def dump_all_yaml(objects: Iterable[K8sModel | Buildable | Mapping[str, Any]]) -> str:
    """Multi-document YAML of models, builders or manifest dicts, in the order given.

    Deterministic and diff-friendly: apiVersion, kind, metadata, spec, status first, then the
    rest in model order; no anchors; multi-line strings as literal blocks; no line folding.
    """
    return _yaml.dump_documents([_document(obj) for obj in objects])


def _document(obj: K8sModel | Buildable | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(obj, K8sModel):
        return to_wire(obj)
    if isinstance(obj, Mapping):
        return _ordered(obj)
    return to_wire(obj.build())


def update_yaml(text: str, objects: Sequence[K8sModel | Buildable | Mapping[str, Any]]) -> str:
    """`text`, the YAML a job was read from, with its documents changed to `objects`: one each,
    in order (empty documents aside). Only the lines of values that changed are written:
    comments, key order, quoting, indentation and every untouched line stay as they were.

        text = path.read_text()
        job = models.DeepSpeedJob.from_yaml(text).edit({"spec.worker.replicas": 4})
        path.write_text(update_yaml(text, [job]))

    New keys go where the object has them relative to the keys the text has, removed keys'
    lines are deleted, and a changed part that cannot be written in place (a document that
    uses aliases, a value that becomes a list) is written as `dump_all_yaml` writes it. Raises
    `InvalidYAMLError` for text `load_all_yaml` refuses, and `ValueError` when the number of
    objects is not the number of documents.
    """
    return _yaml_update.update_documents(text, [_document(obj) for obj in objects])
