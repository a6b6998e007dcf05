"""Rewrite YAML text to new values, changing only the text of what changed.

`update_documents(text, documents)` is what `update_yaml`, `t9k-sdk convert` and
`render --kustomization` write a file back with. Every line whose value did not change stays
byte for byte as it was: comments, key order, quoting, indentation, flow lists, blank lines.

It walks each document's node tree (read by `_yaml`, with all its limits) beside the new value:

* a changed scalar on one line is replaced where it stands, in its quoting where the new value
  can be written so (a comment after it on its line stays);
* a mapping keeps its keys in place; a removed key's lines are deleted (a key that was `null`
  and is now absent is kept: both mean absent); a new key is inserted before the next key the
  new value has that the text has too, or after the last one, at the mapping's indentation;
* a sequence is aligned item by item (`difflib`): unchanged items stay, changed ones are
  updated, removed ones deleted, new ones inserted at the sequence's indentation;
* anything else that changed (a flow collection, a multi-line scalar, a scalar that becomes a
  collection, a collection that becomes empty) is written again in its place by `_yaml`'s
  emitter, sequences indented as the file indents them.

A document that uses aliases is written again whole when it changed (an alias's node carries its
anchor's position, so its own cannot be found). The result is read back and compared with the
new values: were it to differ (a bug here), every changed document is written again whole
instead, so the text is always right even where its formatting could not be kept.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import yaml

from t9k_sdk import _yaml
from t9k_sdk.errors import InvalidYAMLError

__all__ = ["update_documents"]


_MERGE = "tag:yaml.org,2002:merge"


class _Rewrite(Exception):
    """The node cannot be changed in place: write it again, in its parent's context."""


def _same(old: Any, new: Any) -> bool:
    """Equal as YAML values: types too (1, 1.0, True and "1" differ), a null key as absent."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        a = {k: v for k, v in old.items() if v is not None}
        b = {k: v for k, v in new.items() if v is not None}
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(old, list) and isinstance(new, list | tuple):
        return len(old) == len(new) and all(map(_same, old, new))
    return type(old) is type(new) and old == new


def _some(mapping: Mapping[str, Any]) -> bool:
    """Whether a mapping holds a key that is not null (else its text must be `{}`)."""
    return any(v is not None for v in mapping.values())


def _key(value: Any) -> str:
    """A value as a string that tells apart what `_same` tells apart (for aligning sequences)."""
    if isinstance(value, Mapping):
        value = {k: v for k, v in value.items() if v is not None}
    return json.dumps(value, sort_keys=True, default=repr)


def _scalars(node: yaml.Node) -> Iterator[yaml.ScalarNode]:
    """The scalars of a collection, keys included, in order."""
    if isinstance(node, yaml.ScalarNode):
        yield node
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield from _scalars(key)
            yield from _scalars(value)
    else:
        for item in node.value:
            yield from _scalars(item)


def _sequence_indent(node: yaml.Node) -> int:
    """How far the first block sequence under a key is indented from its key (0 or 2, usually)."""
    pending = [node]
    while pending:
        current = pending.pop(0)
        if isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                if isinstance(value, yaml.SequenceNode) and not value.flow_style and value.value:
                    offset: int = value.start_mark.column - key.start_mark.column
                    return max(0, offset)
                pending.append(value)
        elif isinstance(current, yaml.SequenceNode):
            pending.extend(current.value)
    return 0


class _Document:
    """The edits that turn one document's text into a new value."""

    def __init__(self, text: str, newline: str, seq: int) -> None:
        self.text = text
        self.newline = newline
        self.seq = seq
        self.edits: list[tuple[int, int, str]] = []  # (start, end, replacement)

    # -- positions in the text --

    def _content_end(self, node: yaml.Node) -> int:
        """Where the node's own text ends (a block collection's end mark lies after the comments
        and blank lines that follow it)."""
        if isinstance(node, yaml.ScalarNode):
            end: int = node.end_mark.index
            if node.style in ("|", ">"):
                end = node.start_mark.index + len(
                    self.text[node.start_mark.index : end].rstrip(" \t\r\n")
                )
            return end
        if getattr(node, "flow_style", False) or not node.value:
            flow_end: int = node.end_mark.index
            return flow_end
        last = node.value[-1]
        return self._content_end(last[1] if isinstance(node, yaml.MappingNode) else last)

    def _line_start(self, index: int) -> int:
        return self.text.rfind("\n", 0, index) + 1

    def _line_end(self, index: int) -> int:
        """The start of the line after the one `index` is on."""
        at = self.text.find("\n", index)
        return len(self.text) if at < 0 else at + 1

    def _starts_line(self, index: int) -> bool:
        """Whether only indentation comes before `index` on its line."""
        return not self.text[self._line_start(index) : index].strip()

    def _dash(self, item: yaml.Node) -> int:
        """Where the `- ` of a block sequence's item is; a `_Rewrite` when it does not begin its
        line (`- - a`)."""
        at = item.start_mark.index - 1
        while at >= 0 and self.text[at] in " \t\r\n":
            at -= 1
        if at < 0 or self.text[at] != "-" or not self._starts_line(at):
            raise _Rewrite
        return at

    def _insert(self, at: int, text: str) -> None:
        """Insert whole lines at `at` (a line start, or the end of a text without a final line
        break)."""
        lead = self.newline if at == len(self.text) and not self.text.endswith("\n") else ""
        body = _lines(self.newline, text if text.endswith("\n") else text + "\n")
        self.edits.append((at, at, lead + (body.removesuffix(self.newline) if lead else body)))

    # -- the walk --

    def rewrite(self, node: yaml.Node, old: Any, new: Any) -> bool:
        """Add the edits for `node` (whose value is `old`) to hold `new`; False (and no edits)
        when the node must be written again whole, in its parent's context."""
        mark = len(self.edits)
        try:
            self.value(node, old, new)
        except _Rewrite:
            del self.edits[mark:]
            return False
        return True

    def value(self, node: yaml.Node, old: Any, new: Any) -> None:
        if _same(old, new):
            return
        if getattr(node, "flow_style", False):
            start, end = node.start_mark.index, node.end_mark.index
            quoted = next((s.style == '"' for s in _scalars(node)), False)
            padded = self.text[start + 1 : start + 2] == " "
            self.edits.append((start, end, _yaml.emit_flow(new, quoted, padded)))
        elif isinstance(node, yaml.ScalarNode):
            self.scalar(node, new)
        elif isinstance(node, yaml.MappingNode) and isinstance(new, Mapping) and _some(new):
            self.mapping(node, old, new)
        elif isinstance(node, yaml.SequenceNode) and isinstance(new, list | tuple) and new:
            self.sequence(node, old, new)
        else:
            raise _Rewrite

    def scalar(self, node: yaml.ScalarNode, new: Any) -> None:
        one_line = node.start_mark.line == node.end_mark.line and node.style not in ("|", ">")
        empty = node.value == "" and not node.style  # `key:` with nothing after it
        text = (
            None if isinstance(new, Mapping | list | tuple) else _yaml.emit_scalar(new, node.style)
        )
        if text is None or not one_line or empty:
            raise _Rewrite
        self.edits.append((node.start_mark.index, node.end_mark.index, text))

    def mapping(
        self, node: yaml.MappingNode, old: Mapping[str, Any], new: Mapping[str, Any]
    ) -> None:
        if any(key.tag == _MERGE for key, _ in node.value):
            raise _Rewrite  # the keys a `<<:` brings have no lines of their own
        entries = {key.value: (key, value) for key, value in node.value}
        for name, (key, value) in entries.items():
            if name in new:
                if not self.rewrite(value, old[name], new[name]):
                    text = _yaml.emit_at({name: new[name]}, key.start_mark.column, self.seq)
                    self.replace(key, self._content_end(value), text)
            elif old[name] is not None:
                if not self._starts_line(key.start_mark.index):
                    raise _Rewrite  # the first key of a sequence's item: its line holds the `- `
                start = self._line_start(key.start_mark.index)
                self.edits.append((start, self._line_end(self._content_end(value)), ""))
        names = list(new)
        for name in (n for n in names if n not in entries and new[n] is not None):
            later = next((n for n in names[names.index(name) + 1 :] if n in entries), None)
            before = entries[later][0] if later is not None else None
            if before is not None and self._starts_line(before.start_mark.index):
                at = self._line_start(before.start_mark.index)
            else:
                at = self._line_end(self._content_end(node.value[-1][1]))
            column = node.value[0][0].start_mark.column
            self._insert(at, " " * column + _yaml.emit_at({name: new[name]}, column, self.seq))

    def sequence(self, node: yaml.SequenceNode, old: list[Any], new: Sequence[Any]) -> None:
        items: list[yaml.Node] = node.value
        dashes = [self._dash(item) for item in items]
        column = dashes[0] - self._line_start(dashes[0])
        matcher = difflib.SequenceMatcher(
            None, [_key(v) for v in old], [_key(v) for v in new], autojunk=False
        )
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op == "equal":
                continue
            paired = min(i2 - i1, j2 - j1)
            for i, j in zip(range(i1, i1 + paired), range(j1, j1 + paired), strict=True):
                if not self.rewrite(items[i], old[i], new[j]):
                    text = _yaml.emit_at(new[j], items[i].start_mark.column, self.seq)
                    self.replace(items[i], self._content_end(items[i]), text)
            for i in range(i1 + paired, i2):
                start = self._line_start(dashes[i])
                self.edits.append((start, self._line_end(self._content_end(items[i])), ""))
            if j1 + paired < j2:
                if i1 + paired < len(items):
                    at = self._line_start(dashes[i1 + paired])
                else:
                    at = self._line_end(self._content_end(items[-1]))
                added = _yaml.emit_at(list(new[j1 + paired : j2]), column, self.seq)
                self._insert(at, " " * column + added)

    def replace(self, start: yaml.Node, end: int, text: str) -> None:
        """Write the text from `start`'s node to `end` again as `text`. A comment after `end` on
        its line stays on the first line (it was about the value that now spans lines)."""
        line_end = self.text.find("\n", end)
        rest = self.text[end : len(self.text) if line_end < 0 else line_end].rstrip("\r")
        if "\n" in text and rest.lstrip().startswith("#"):
            first, others = text.split("\n", 1)
            text, end = f"{first}{rest}\n{others}", end + len(rest)
        self.edits.append((start.start_mark.index, end, _lines(self.newline, text)))


def _lines(newline: str, text: str) -> str:
    return text.replace("\n", newline) if newline != "\n" else text


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    out: list[str] = []
    at = 0
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1])):
        out.append(text[at:start])
        out.append(replacement)
        at = max(at, end)
    out.append(text[at:])
    return "".join(out)


def _reads_back(text: str, documents: Sequence[Any]) -> bool:
    try:
        found = [d.value for d in _yaml.compose_documents(text) if d.value is not None]
    except InvalidYAMLError:
        return False
    return len(found) == len(documents) and all(map(_same, found, documents))


def update_documents(text: str, documents: Sequence[Any]) -> str:
    """`text` (YAML) with its documents that are not empty changed to `documents`, in order.

    Raises `InvalidYAMLError` for text the loader refuses (with the same limits), and
    `ValueError` when the number of documents differs.
    """
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text.removeprefix(bom)
    found = [d for d in _yaml.compose_documents(body) if d.value is not None]
    if len(found) != len(documents):
        raise ValueError(
            f"the YAML text holds {len(found)} documents that are not empty; got"
            f" {len(documents)} to write in their place"
        )
    newline = "\r\n" if "\r\n" in body else "\n"
    edits: list[tuple[int, int, str]] = []
    whole: list[tuple[int, int, str]] = []  # each changed document written again whole
    for doc, new in zip(found, documents, strict=True):
        if _same(doc.value, new):
            continue
        seq = _sequence_indent(doc.node)
        start = doc.node.start_mark.index
        lead = "" if doc.node.start_mark.column == 0 else "\n"
        whole.append((start, doc.end, _lines(newline, lead + _yaml.dump_documents([new], seq))))
        document = _Document(body, newline, seq)
        if doc.aliased or not document.rewrite(doc.node, doc.value, new):
            edits.append(whole[-1])
        else:
            edits.extend(document.edits)
    out = _apply(body, edits)
    if edits and not _reads_back(out, documents):
        out = _apply(body, whole)
    return bom + out
