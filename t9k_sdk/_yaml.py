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
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

import yaml

__all__ = ["dump_documents", "load_documents"]

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
    if body and body[0][:1] in (" ", "\t"):
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


def _emit_mapping(data: Mapping[Any, Any], indent: int, out: list[str], first: str | None) -> None:
    pad = " " * indent
    for i, (key, value) in enumerate(data.items()):
        lead = first if (i == 0 and first is not None) else pad
        k = _scalar(key)
        if isinstance(value, Mapping):
            if value:
                out.append(f"{lead}{k}:\n")
                _emit_mapping(value, indent + 2, out, None)
            else:
                out.append(f"{lead}{k}: {{}}\n")
        elif isinstance(value, list | tuple):
            if value:
                out.append(f"{lead}{k}:\n")
                _emit_sequence(value, indent, out)
            else:
                out.append(f"{lead}{k}: []\n")
        else:
            out.append(f"{lead}{k}: {_value(value, indent + 2)}\n")


def _emit_sequence(items: Iterable[Any], indent: int, out: list[str]) -> None:
    pad = " " * indent
    for item in items:
        if isinstance(item, Mapping):
            if item:
                _emit_mapping(item, indent + 2, out, f"{pad}- ")
            else:
                out.append(f"{pad}- {{}}\n")
        elif isinstance(item, list | tuple):
            if item:
                out.append(f"{pad}-\n")
                _emit_sequence(item, indent + 2, out)
            else:
                out.append(f"{pad}- []\n")
        else:
            out.append(f"{pad}- {_value(item, indent + 2)}\n")


def _document(data: Any) -> str:
    out: list[str] = []
    if isinstance(data, Mapping):
        if data:
            _emit_mapping(data, 0, out, None)
        else:
            out.append("{}\n")
    elif isinstance(data, list | tuple):
        if data:
            _emit_sequence(data, 0, out)
        else:
            out.append("[]\n")
    else:
        out.append(_value(data, 2) + "\n")
    return "".join(out)


def dump_documents(documents: Iterable[Any]) -> str:
    """YAML text of one or more documents, separated by `---` lines."""
    return "---\n".join(_document(d) for d in documents)


_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):  # type: ignore[misc,valid-type]
    """libyaml's safe loader (when available) that rejects duplicate keys, as kubectl does."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r} (first at line {seen[key].start_mark.line + 1})",
                    key_node.start_mark,
                )
            seen[key] = key_node
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


def load_documents(stream: str | bytes | TextIO) -> list[Any]:
    """Every document of a YAML stream. Duplicate keys are an error (not "last one wins")."""
    return list(yaml.load_all(stream, Loader=_Loader))
