"""Durations as people type them, one grammar for the CLI (`--timeout 1.5h`) and the Pulumi
components (`timeout="1.5h"`): Go's units (`ms`, `s`, `m`, `h`, combined as in `1h30m`, decimals
as in `1.5h`) plus `d` for days; a bare number is seconds."""

from __future__ import annotations

import re

__all__ = ["parse_duration"]

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h|d)")
_NUMBER = re.compile(r"\d+(\.\d*)?|\.\d+")
_MAX_TEXT = 64  # no duration anyone types is longer; the parse stays bounded


def parse_duration(text: str) -> float:
    """Seconds in `90`, `90s`, `10m`, `1h30m`, `1.5h`, `500ms`, `2d`.

    Raises ValueError with an example of what is accepted.
    """
    value = text.strip().lower()
    if len(value) <= _MAX_TEXT and _NUMBER.fullmatch(value):
        return float(value)
    total = 0.0
    pos = 0
    if len(value) <= _MAX_TEXT:
        for match in _PART.finditer(value):
            if match.start() != pos:
                break
            total += float(match.group(1)) * _UNITS[match.group(2)]
            pos = match.end()
    if not value or pos != len(value):
        raise ValueError(
            f"invalid duration {text[:_MAX_TEXT]!r}: use a number with a unit (ms, s, m, h, d),"
            " e.g. 30s, 10m, 1h30m, 1.5h; a bare number is seconds"
        )
    return total
