"""What `help()`, `inspect.signature` and editors show for a builder: its arguments as a type
checker reads them (`list[str] | None`, no `Annotated[...]`), each with its one line of doc."""

from __future__ import annotations

import inspect
import textwrap
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, ForwardRef, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic._internal._model_construction import ModelMetaclass

__all__ = ["Argument", "PieceMeta", "ReadAs", "arguments", "document", "type_text"]

_WIDTH = 100
"""Lines of the generated `Args:` section wrap here, like the code."""


@dataclass(frozen=True)
class ReadAs:
    """`Annotated` metadata of an argument whose run-time annotation differs from what type
    checkers read (in the `if TYPE_CHECKING:` branch): the type to show, and whether type
    checkers require the argument although it has a default at run time."""

    annotation: Any
    required: bool = False


@dataclass(frozen=True)
class Argument:
    """One keyword argument of a builder, as its signature and docstring show it."""

    name: str
    type: str
    """As a type checker reads it, e.g. `list[str] | None`."""
    default: Any
    """`inspect.Parameter.empty` for a required argument."""
    doc: str
    """The field's attribute docstring on one line."""


class _Shown(str):
    """An annotation in a generated signature: shown as written, without quotes."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


def type_text(annotation: Any) -> str:
    """An annotation as a reader writes it: `list[PVC | EmptyDir | SecretVolume] | None`,
    `models.core_v1.EnvVar`; `Annotated[...]` is dropped (or replaced by its `ReadAs`)."""
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, ForwardRef):
        return annotation.__forward_arg__
    if annotation is None or annotation is type(None):
        return "None"
    if annotation is Any:
        return "Any"
    origin = get_origin(annotation)
    if origin is Annotated:
        shown = next((m for m in annotation.__metadata__ if isinstance(m, ReadAs)), None)
        return type_text(shown.annotation if shown else get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        members = list(dict.fromkeys(type_text(a) for a in get_args(annotation)))
        if "None" in members:  # `X | None`, as it is written
            members = [m for m in members if m != "None"] + ["None"]
        return " | ".join(members)
    if origin is Literal:
        return "Literal[" + ", ".join(repr(a) for a in get_args(annotation)) + "]"
    if origin is not None:
        args = ", ".join(type_text(a) for a in get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    if isinstance(annotation, type):
        module = annotation.__module__
        if module.startswith("t9k_sdk.models.core_v1"):
            return f"models.core_v1.{annotation.__name__}"
        if module.startswith("t9k_sdk.models"):
            return f"models.{annotation.__name__}"
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def arguments(cls: type[BaseModel]) -> list[Argument]:
    """The keyword arguments of a builder: `name` and the other required ones first, then the
    class's own, then the inherited ones (each group in the order pydantic collects them)."""
    own = set(inspect.get_annotations(cls))
    found: list[tuple[tuple[bool, bool, bool], Argument]] = []
    for name, info in cls.model_fields.items():
        # pydantic keeps the metadata of a field's outer `Annotated` in `info.metadata`
        read_as = next((m for m in info.metadata if isinstance(m, ReadAs)), None)
        required = info.is_required() or bool(read_as and read_as.required)
        text = type_text(read_as.annotation if read_as else info.annotation)
        default = inspect.Parameter.empty if required else info.get_default()
        doc = " ".join((info.description or "").split())
        order = (not required, not required or name != "name", name not in own)
        found.append((order, Argument(name, text, default, doc)))
    return [argument for _, argument in sorted(found, key=lambda f: f[0])]


def _args_section(args: list[Argument]) -> Iterator[str]:
    yield "Args:"
    for a in args:
        head = f"    {a.name} ({a.type}):"
        yield from textwrap.wrap(
            a.doc,
            _WIDTH,
            initial_indent=f"{head} ",  # never broken: the type stays on one line
            subsequent_indent="        ",
            break_on_hyphens=False,
            break_long_words=False,
        ) or [head]


def document(cls: type[BaseModel], written: str | None) -> None:
    """Give `cls` the signature and the docstring (`written`, then `Args:`) of its arguments."""
    args = arguments(cls)
    cls.__signature__ = inspect.Signature(
        [
            inspect.Parameter(
                a.name, inspect.Parameter.KEYWORD_ONLY, default=a.default, annotation=_Shown(a.type)
            )
            for a in args
        ],
        return_annotation=inspect.Signature.empty,
    )
    parts = [inspect.cleandoc(written)] if written else []
    parts.append("\n".join(_args_section(args)))
    cls.__doc__ = "\n\n".join(parts)


class PieceMeta(ModelMetaclass):
    """pydantic's metaclass, with `dir(cls)` (what `help()` lists) limited to the members the
    SDK's classes define: `build`, `to_yaml`, `replace`, ..., not `BaseModel`'s internals."""

    def __dir__(cls) -> list[str]:
        shared = set(BaseModel.__mro__)
        names = []
        for name in super().__dir__():
            if name.startswith("_") or name == "model_config":
                continue
            home = next((c for c in cls.__mro__ if name in c.__dict__), None)
            if home is not None and home not in shared:
                names.append(name)
        return names
