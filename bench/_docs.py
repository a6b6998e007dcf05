"""Write a block that a benchmark generates into a docs page, between the block's own markers."""

from __future__ import annotations

from pathlib import Path


def write_block(doc: Path, block: str, begin: str, end: str) -> None:
    """Replace what lies between `begin` and `end` (both included) in `doc` with `block`, which
    starts with `begin` and ends with `end`; where the page has no such markers yet, append it."""
    text = doc.read_text(encoding="utf-8")
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    doc.write_text(text, encoding="utf-8")
