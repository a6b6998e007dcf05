"""A small, fast, deterministic YAML emitter for manifest-shaped data, and the YAML loader.

Why not `yaml.safe_dump`: PyYAML's pure-Python emitter dominates render time (it is an event
pipeline with a resolver per scalar), it writes anchors for shared objects unless told otherwise,
and its style choices (line folding at 80 columns, quoting) make diffs noisy. Manifests only hold
mappings, sequences, strings, ints, floats, bools and nulls, so a direct emitter is short:

* block style throughout, two-space indent, sequences flush with their key (kubectl's style);
* keys in insertion order, never sorted (the models order them: apiVersion, kind, metadata, ...);
* no anchors or aliases, no line folding;
* strings plain when that is unambiguous in YAML 1.1 *and* 1.2, a literal block (`|`) when they
  span lines, otherwise double-quoted with escapes;
* every output loads back (PyYAML, libyaml, Go yaml.v3) to exactly the input: the property tests
  in tests/sdk/test_yaml.py check it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TextIO

import yaml

from t9k_sdk.errors import InvalidYAMLError

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_TEXT",
    "MAX_VALUES",
    "Composed",
    "compose_documents",
    "dump_documents",
    "emit_at",
    "emit_flow",
    "emit_scalar",
    "iter_documents",
    "load_documents",
]

_WORD = r"[A-Za-z0-9_./\-=+@,]"
_PLAIN = re.compile(rf"(?:--?)?[A-Za-z_/]{_WORD}*(?::{_WORD}+)*(?: {_WORD}+(?::{_WORD}+)*)*")
_QUANTITY = re.compile(r"[1-9][0-9]*(?:Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)")
# YAML 1.1 (PyYAML) and 1.2 words that would not load back as strings.
_RESERVED = frozenset(
    w
    for base in ("y", "yes", "n", "no", "true", "false", "on", "off", "null")
    for w in (base, base.capitalize(), base.upper())
)
# Characters a double-quoted scalar must escape: C0/C1 controls, DEL, line separators (YAML
# folds them), surrogates, BOM and the two non-characters.
_NEEDS_ESCAPE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]"
)
# Characters that keep a string out of a literal block.
_NOT_IN_BLOCK = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def _quoted(text: str) -> str:
    out = json.dumps(text, ensure_ascii=False)
    return _NEEDS_ESCAPE.sub(_escape, out) if _NEEDS_ESCAPE.search(out) else out


def _scalar(value: Any) -> str:
    """A scalar on one line (plain or double-quoted)."""
    if isinstance(value, str):
        if value in _RESERVED:
            return f'"{value}"'
        if _PLAIN.fullmatch(value) or _QUANTITY.fullmatch(value):
            return value
        return _quoted(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        if "e" in text and "." not in text.split("e")[0]:
            mantissa, exponent = text.split("e")
            text = f"{mantissa}.0e{exponent}"
        return text
    raise TypeError(f"cannot write {type(value).__name__} {value!r} to a manifest")


def _block(text: str, indent: int) -> str | None:
    """A literal block scalar for multi-line text, or None when one cannot hold it exactly."""
    if "\n" not in text or not text.strip() or "\r" in text or _NOT_IN_BLOCK.search(text):
        return None
    lines = text.split("\n")
    body = lines[:-1] if text.endswith("\n") else lines
    if any(line and not line.strip(" \t") for line in body):  # whitespace-only lines are ambiguous
        return None
    # The block's indentation is read from its first non-empty line: one that starts with a
    # space or tab would be read as deeper indentation ("\n 0" came back as "\n0").
    if next((line for line in body if line), "")[:1] in (" ", "\t"):
        return None
    if text.endswith("\n\n"):
        chomp = "+"
    elif text.endswith("\n"):
        chomp = ""
    else:
        chomp = "-"
    if chomp == "+":
        body = text[:-1].split("\n")  # keep the extra trailing empty lines
    pad = " " * indent
    return f"|{chomp}\n" + "\n".join(f"{pad}{line}" if line else "" for line in body)


def _value(value: Any, indent: int) -> str:
    if isinstance(value, str) and "\n" in value:
        block = _block(value, indent)
        if block is not None:
            return block
    return _scalar(value)


def _emit_mapping(
    data: Mapping[Any, Any], indent: int, out: list[str], first: str | None, seq: int = 0
) -> None:
    pad = " " * indent
    for i, (key, value) in enumerate(data.items()):
        lead = first if (i == 0 and first is not None) else pad
        k = _scalar(key)
        if isinstance(value, Mapping):
            if value:
                out.append(f"{lead}{k}:\n")
                _emit_mapping(value, indent + 2, out, None, seq)
            else:
                out.append(f"{lead}{k}: {{}}\n")
        elif isinstance(value, list | tuple):
            if value:
                out.append(f"{lead}{k}:\n")
                _emit_sequence(value, indent + seq, out, seq)
            else:
                out.append(f"{lead}{k}: []\n")
        else:
            out.append(f"{lead}{k}: {_value(value, indent + 2)}\n")


def _emit_sequence(items: Iterable[Any], indent: int, out: list[str], seq: int = 0) -> None:
    pad = " " * indent
    for item in items:
        if isinstance(item, Mapping):
            if item:
                _emit_mapping(item, indent + 2, out, f"{pad}- ", seq)
            else:
                out.append(f"{pad}- {{}}\n")
        elif isinstance(item, list | tuple):
            if item:
                out.append(f"{pad}-\n")
                _emit_sequence(item, indent + 2, out, seq)
            else:
                out.append(f"{pad}- []\n")
        else:
            out.append(f"{pad}- {_value(item, indent + 2)}\n")


def _document(data: Any, seq: int = 0) -> str:
    out: list[str] = []
    if isinstance(data, Mapping):
        if data:
            _emit_mapping(data, 0, out, None, seq)
        else:
            out.append("{}\n")
    elif isinstance(data, list | tuple):
        if data:
            _emit_sequence(data, 0, out, seq)
        else:
            out.append("[]\n")
    else:
        out.append(_value(data, 2) + "\n")
    return "".join(out)


def dump_documents(documents: Iterable[Any], seq: int = 0) -> str:
    """YAML text of one or more documents, separated by `---` lines.

    `seq` indents a sequence under its key by that many spaces (0: flush with the key).
    """
    return "---\n".join(_document(d, seq) for d in documents)


def emit_at(value: Any, column: int, seq: int = 0) -> str:
    """`value` written to continue a line at `column`: where a mapping's key starts, or an item
    after its `- `. The first line is not indented, the others are indented to match; no final
    line break. (`seq` as in `dump_documents`.)"""
    if isinstance(value, Mapping | list | tuple) and not value:
        return emit_flow(value)  # {} or []
    if not isinstance(value, Mapping | list | tuple):
        return _value(value, column)
    out: list[str] = []
    if isinstance(value, Mapping):
        _emit_mapping(value, column, out, "", seq)
    else:
        _emit_sequence(value, column, out, seq)
        out[0] = out[0][column:]
    return "".join(out).removesuffix("\n")


def emit_flow(value: Any, quoted: bool = False, padded: bool = False) -> str:
    """`value` on one line in flow style (`[a, b]`, `{k: v}`), as inside `[ ... ]`: its strings
    double-quoted if `quoted`, else plain where they can be; `[ a ]` if `padded`."""
    pad = " " if padded else ""
    if isinstance(value, Mapping):
        inner = ", ".join(
            f"{emit_flow(k, quoted, padded)}: {emit_flow(v, quoted, padded)}"
            for k, v in value.items()
        )
        return f"{{{pad}{inner}{pad}}}" if inner else "{}"
    if isinstance(value, list | tuple):
        inner = ", ".join(emit_flow(v, quoted, padded) for v in value)
        return f"[{pad}{inner}{pad}]" if inner else "[]"
    text = _scalar(value)
    # a plain scalar inside brackets ends at a comma; `_scalar` quotes every other indicator
    if isinstance(value, str) and text[0] != '"' and (quoted or "," in text):
        return _quoted(value)
    return text


def emit_scalar(value: Any, style: str | None) -> str | None:
    """`value` (not a collection) on one line in a scalar `style` of YAML ('"', "'", or plain:
    None or ''), as close to that style as it can be written; None when it needs more than a
    line (a string with a line break, which `emit_at` writes as a literal block)."""
    if isinstance(value, str):
        if "\n" in value:
            return None
        if style == '"':
            return _quoted(value)
        if style == "'" and not _NEEDS_ESCAPE.search(value):
            return "'" + value.replace("'", "''") + "'"
    return _scalar(value)


# ---------------------------------------------------------------------------------------------
# Loading
#
# A manifest file comes from anywhere (a pull request, a pipe), so the loader bounds what one file
# can cost and accepts only what a Kubernetes object can hold (JSON values):
#
# * at most MAX_BYTES of input, UTF-8 (with or without a byte order mark);
# * at most MAX_DEPTH nested collections;
# * aliases are allowed (kubectl accepts them), but a file (all its documents together) may hold
#   at most MAX_VALUES values and MAX_TEXT characters of scalars with every alias counted as a
#   copy of what it refers to (a "billion laughs" file of a few hundred bytes would otherwise
#   expand to billions, and a 1 MiB string aliased 200,000 times to 200 GB), and an alias may not
#   refer to a collection that contains it. The budget is the file's, not each document's: many
#   documents each under it would add up to minutes of work;
# * mapping keys are strings, and given once; values are strings, integers, finite floats,
#   booleans, nulls, lists and mappings: no `!!set`, `!!binary`, `!!timestamp`, `!!python/...`
#   (a date such as 2024-01-01 stays the string it is in Kubernetes).
#
# The document tree is composed here from the parser's events (libyaml's parser when available),
# so the limits are checked before anything is built; PyYAML's constructor then builds the values.
# Every problem is an `InvalidYAMLError` with the line and column.
# ---------------------------------------------------------------------------------------------

MAX_BYTES = 8 * 1024 * 1024
"""Largest YAML input (a file or standard input), in bytes."""
MAX_DEPTH = 100
"""Most collections nested in one another in a document."""
MAX_VALUES = 250_000
"""Most values (scalars, lists, mappings) in one file, each alias counted as a copy."""
MAX_TEXT = 2 * MAX_BYTES
"""Most characters of scalars (keys and values) in one file, each alias counted as a copy."""

_TAG = "tag:yaml.org,2002:"
_ALLOWED_TAGS = frozenset(
    _TAG + t for t in ("str", "int", "float", "bool", "null", "seq", "map", "merge")
)
_KEY_TYPES = {"int": "an integer", "float": "a number", "bool": "a boolean", "null": "null"}
_NOT_FINITE = re.compile(r"[-+]?\.(?:inf|Inf|INF|nan|NaN|NAN)")

_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _as_the_api_server_reads(tag: str, value: str) -> str:
    """The API server's YAML reader (go-yaml, as sigs.k8s.io/yaml uses it) knows no YAML 1.1
    sexagesimal numbers (`1:40` is a string there, not 100) and reads a float too large for 64
    bits (`1.0e+400`) as a string, not infinity: so do we."""
    if ":" in value:
        return _TAG + "str"
    if tag == _TAG + "float" and not _NOT_FINITE.fullmatch(value):
        try:
            if math.isinf(float(value.replace("_", ""))):
                return _TAG + "str"
        except ValueError:
            return tag
    return tag


def _at(mark: Any) -> dict[str, int]:
    return {"line": mark.line + 1, "column": mark.column + 1} if mark is not None else {}


class _Loader(_Base):  # type: ignore[misc,valid-type]
    """libyaml's safe loader (when available), without implicit timestamps."""

    yaml_implicit_resolvers: ClassVar[dict[Any, Any]] = {
        first: [(tag, rx) for tag, rx in resolvers if tag != _TAG + "timestamp"]
        for first, resolvers in _Base.yaml_implicit_resolvers.items()
    }


class _PyLoader(yaml.SafeLoader):
    """PyYAML's pure-Python safe loader with the same resolvers: used only to find where a
    document nests too deep when libyaml gave up first (see `_nesting_error`)."""

    yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers


class _Budget:
    """What the documents of one file have used of MAX_VALUES and MAX_TEXT so far."""

    def __init__(self) -> None:
        self.values = 0
        self.text = 0

    def check(self, size: tuple[int, int], mark: Any) -> None:
        """Raise if the documents so far plus `size` (values, characters) exceed the budget."""
        values, text = self.values + size[0], self.text + size[1]
        if values > MAX_VALUES:
            raise InvalidYAMLError(
                f"the file holds more than {MAX_VALUES:,} values (all documents together,"
                f" aliases counted as copies): at least {values:,}",
                **_at(mark),
            )
        if text > MAX_TEXT:
            raise InvalidYAMLError(
                f"the file holds more than {MAX_TEXT // (1024 * 1024)} MiB of text once its"
                f" aliases are expanded (all documents together): at least {text:,} characters",
                **_at(mark),
            )

    def spend(self, size: tuple[int, int]) -> None:
        self.values += size[0]
        self.text += size[1]


class _Composer:
    """Builds the node tree of one document from parser events, checking the limits."""

    def __init__(self, loader: _Loader | _PyLoader, budget: _Budget) -> None:
        self.loader = loader
        self.budget = budget
        self.anchors: dict[str, yaml.Node] = {}
        # id(node) -> (values, characters of scalars), aliases expanded
        self.sizes: dict[int, tuple[int, int]] = {}
        self.open: set[int] = set()  # collections being composed (an alias to one is a cycle)
        self.aliased = False  # whether the document uses an alias
        self.end = 0  # where the document ends in the text (its `...`, the next `---` or the end)

    def document(self) -> yaml.Node:
        self.loader.get_event()  # DocumentStartEvent
        node, size = self.node(1)
        self.budget.check(size, node.start_mark)
        self.budget.spend(size)
        self.end = self.loader.get_event().start_mark.index  # DocumentEndEvent
        return node

    def tag(self, event: Any, kind: type[yaml.Node], value: str | None) -> str:
        tag: str | None = event.tag
        if tag is None or tag == "!":
            implicit = getattr(event, "implicit", True)
            resolved: str = self.loader.resolve(kind, value, implicit)
            if value is not None and resolved in (_TAG + "int", _TAG + "float"):
                return _as_the_api_server_reads(resolved, value)
            return resolved
        if tag not in _ALLOWED_TAGS:
            short = "!!" + tag.removeprefix(_TAG) if tag.startswith(_TAG) else tag
            raise InvalidYAMLError(
                f"tag {short} is not allowed: a Kubernetes object holds only strings, numbers,"
                " booleans, nulls, lists and mappings",
                **_at(event.start_mark),
            )
        return tag

    def node(self, depth: int) -> tuple[yaml.Node, tuple[int, int]]:
        event: Any = self.loader.get_event()
        start: Any = event.start_mark
        if isinstance(event, yaml.AliasEvent):
            self.aliased = True
            target = self.anchors.get(event.anchor or "")
            if target is None:
                raise InvalidYAMLError(
                    f"alias *{event.anchor} refers to no anchor (&{event.anchor} must come first)",
                    **_at(event.start_mark),
                )
            if id(target) in self.open:
                raise InvalidYAMLError(
                    f"alias *{event.anchor} refers to a collection that contains it (a cycle)",
                    **_at(event.start_mark),
                )
            return target, self.sizes[id(target)]
        if depth > MAX_DEPTH:
            raise InvalidYAMLError(
                f"collections nested more than {MAX_DEPTH} deep", **_at(event.start_mark)
            )
        node: yaml.Node
        if isinstance(event, yaml.ScalarEvent):
            tag = self.tag(event, yaml.ScalarNode, event.value)
            if tag == _TAG + "float" and _NOT_FINITE.fullmatch(event.value):
                raise InvalidYAMLError(
                    f"{event.value} is not a number JSON can hold; quote it for a string",
                    **_at(event.start_mark),
                )
            if tag == _TAG + "int" and len(event.value) > 40:
                raise InvalidYAMLError(
                    f"integer of {len(event.value)} digits; Kubernetes integers are 64-bit",
                    **_at(event.start_mark),
                )
            end: Any = event.end_mark
            node = yaml.ScalarNode(tag, event.value, start, end, event.style)
            size = (1, len(event.value))
        elif isinstance(event, yaml.SequenceStartEvent):
            node = yaml.SequenceNode(
                self.tag(event, yaml.SequenceNode, None),
                [],
                start,
                None,
                flow_style=event.flow_style,
            )
            size = self.collection(node, event.anchor, depth)
        elif isinstance(event, yaml.MappingStartEvent):
            node = yaml.MappingNode(
                self.tag(event, yaml.MappingNode, None),
                [],
                start,
                None,
                flow_style=event.flow_style,
            )
            size = self.collection(node, event.anchor, depth)
        else:  # pragma: no cover - the parser emits nothing else here
            raise InvalidYAMLError(f"unexpected {type(event).__name__}", **_at(event.start_mark))
        if event.anchor is not None:
            self.anchors[event.anchor] = node
        self.sizes[id(node)] = size
        return node, size

    def collection(self, node: yaml.Node, anchor: str | None, depth: int) -> tuple[int, int]:
        if anchor is not None:
            self.anchors[anchor] = node
        self.open.add(id(node))
        values, text = 1, 0
        is_map = isinstance(node, yaml.MappingNode)
        end = yaml.MappingEndEvent if is_map else yaml.SequenceEndEvent
        seen: dict[str, yaml.Node] = {}
        while not self.loader.check_event(end):
            at = self.loader.peek_event().start_mark  # of an alias itself, not of its anchor
            child, (n, t) = self.node(depth + 1)
            if is_map:
                self.key(child, seen)
                at = self.loader.peek_event().start_mark
                value, (m, u) = self.node(depth + 1)
                node.value.append((child, value))
                n, t = n + m, t + u
            else:
                node.value.append(child)
            values, text = values + n, text + t
            self.budget.check((values, text), at)
        node.end_mark = self.loader.get_event().end_mark
        self.open.discard(id(node))
        return values, text

    def key(self, key: yaml.Node, seen: dict[str, yaml.Node]) -> None:
        if isinstance(key, yaml.ScalarNode) and key.tag == _TAG + "merge":
            return
        if not isinstance(key, yaml.ScalarNode) or key.tag != _TAG + "str":
            if isinstance(key, yaml.ScalarNode):
                what = f"{_KEY_TYPES.get(key.tag.removeprefix(_TAG), key.tag)} ({key.value})"
                fix = f"; quote it: '\"{key.value}\": ...'"
            else:
                what = "a list" if isinstance(key, yaml.SequenceNode) else "a mapping"
                fix = ""
            raise InvalidYAMLError(
                f"mapping keys must be strings; got {what}{fix}", **_at(key.start_mark)
            )
        first = seen.setdefault(key.value, key)
        if first is not key:
            raise InvalidYAMLError(
                f"duplicate key {key.value!r} (first at line {first.start_mark.line + 1});"
                " the first value would be silently lost",
                **_at(key.start_mark),
            )


def decode(data: bytes) -> str:
    """UTF-8 text of `data` (a leading byte order mark dropped), or an `InvalidYAMLError` that
    gives the line, column and byte offset of the first byte that is not UTF-8."""
    if len(data) > MAX_BYTES:
        raise InvalidYAMLError(f"larger than {MAX_BYTES // (1024 * 1024)} MiB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        offset = exc.start
        before = data[:offset]
        line = before.count(b"\n") + 1
        column = len(before) - (before.rfind(b"\n") + 1) + 1
        raise InvalidYAMLError(
            f"not UTF-8 text: byte 0x{data[offset]:02x} at byte offset {offset}", line, column
        ) from None


def read_limited(stream: Any) -> bytes:
    """At most MAX_BYTES + 1 bytes of a binary stream (so an over-large input is not read whole)."""
    data: bytes = stream.read(MAX_BYTES + 1)
    return data


def load_documents(stream: str | bytes | TextIO | Path) -> list[Any]:
    """Every document of a YAML stream (text, bytes, an open file or a `Path`), within the limits
    above; else an `InvalidYAMLError`."""
    if isinstance(stream, Path):
        with stream.open("rb") as file:
            return list(iter_documents(read_limited(file)))
    return list(iter_documents(stream))


def iter_documents(stream: str | bytes | TextIO) -> Iterable[Any]:
    """The documents of a YAML stream one by one: a problem in a later document is raised after
    the earlier ones were yielded."""
    if not isinstance(stream, str | bytes):
        stream = stream.read(MAX_BYTES + 1)
    if isinstance(stream, bytes):
        text = decode(stream)
    else:
        if len(stream) > MAX_BYTES:
            raise InvalidYAMLError(f"larger than {MAX_BYTES // (1024 * 1024)} MiB")
        text = stream.removeprefix("\ufeff")
    return (document.value for document in _composed(text))


@dataclass(frozen=True)
class Composed:
    """A document as the loader read it, for rewriting its text (see `t9k_sdk._yaml_update`)."""

    node: yaml.Node
    """Its node tree; the marks' indexes are positions in the text."""
    value: Any
    """What it loads to."""
    aliased: bool
    """Whether it uses an alias (whose node is the one of its anchor, marks included)."""
    end: int
    """Where it ends in the text: its `...`, the next `---` or the end of the text."""


def compose_documents(text: str) -> list[Composed]:
    """Every document of YAML text (without a byte order mark), read and limited as by
    `load_documents`."""
    if len(text) > MAX_BYTES:
        raise InvalidYAMLError(f"larger than {MAX_BYTES // (1024 * 1024)} MiB")
    return list(_composed(text))


def _composed(text: str) -> Iterator[Composed]:
    loader = _Loader(text)
    budget = _Budget()
    try:
        loader.get_event()  # StreamStartEvent
        while not loader.check_event(yaml.StreamEndEvent):
            composer = _Composer(loader, budget)
            node = composer.document()
            try:
                value = loader.construct_document(node)
            except (ValueError, TypeError, yaml.YAMLError) as exc:
                mark = getattr(exc, "problem_mark", None) or node.start_mark
                raise InvalidYAMLError(f"cannot read a value: {exc}", **_at(mark)) from None
            yield Composed(node, value, composer.aliased, composer.end)
    except InvalidYAMLError:
        raise
    except yaml.MarkedYAMLError as exc:
        if "nesting depth" in str(exc.problem) and not isinstance(loader, yaml.SafeLoader):
            raise _nesting_error(text) from None
        what = ", ".join(str(p) for p in (exc.context, exc.problem) if p)
        raise InvalidYAMLError(what, **_at(exc.problem_mark)) from None
    except yaml.YAMLError as exc:
        raise InvalidYAMLError(str(exc)) from None
    finally:
        loader.dispose()


def _nesting_error(text: str) -> InvalidYAMLError:
    """The error for `text` that libyaml (0.2.6 and later, in PyYAML 6.0.4 wheels) refused for
    nesting deeper than its own limit of 1000.

    Its scanner reads ahead of the parser, so it can stop before our composer sees a collection
    nested more than MAX_DEPTH deep, and its message names its limit and position, not ours.
    The pure-Python parser (no such limit) composes the stream again, only for such hostile
    input, and reports the first problem at its true position: the collection at depth
    MAX_DEPTH + 1, or whatever comes first.
    """
    loader: Any = _PyLoader(text)
    try:
        loader.get_event()  # StreamStartEvent
        while not loader.check_event(yaml.StreamEndEvent):
            _Composer(loader, _Budget()).document()
    except InvalidYAMLError as exc:
        return exc
    except yaml.MarkedYAMLError as exc:
        what = ", ".join(str(p) for p in (exc.context, exc.problem) if p)
        return InvalidYAMLError(what, **_at(exc.problem_mark))
    finally:
        loader.dispose()
    return InvalidYAMLError(f"collections nested more than {MAX_DEPTH} deep")
