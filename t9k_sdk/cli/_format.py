"""Text for people (pure): durations, tables, colour; the command line's alone. What may reach
a terminal is `_terminal`'s (re-exported here for the commands).

parse_duration("1h30m") -> 5400.0
render_table(["NAME", "PHASE"], [["mnist", ("Running", "blue")]], Painter(True))
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TextIO

from t9k_sdk._duration import parse_duration
from t9k_sdk.cli._terminal import NONCE, for_terminal, visible
from t9k_sdk.client.format import human_age
from t9k_sdk.client.job_state import parse_time, replica_counts, restarts
from t9k_sdk.codecs import AnyJob

__all__ = [
    "PHASE_STYLES",
    "Cell",
    "Painter",
    "colour_wanted",
    "for_terminal",
    "job_row",
    "parse_duration",
    "render_table",
    "visible",
]

# -- colour ----------------------------------------------------------------------------------

_CODES = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
}

PHASE_STYLES = {
    "Pending": "yellow",
    "Running": "blue",
    "Paused": "magenta",
    "Resuming": "yellow",
    "Succeeded": "green",
    "Failed": "red",
    "Unknown": "dim",
}


def colour_wanted(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    if os.environ.get("NO_COLOR", "") != "" or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Painter:
    """Marks text for colour when enabled (`for_terminal` makes the marks ANSI colours);
    returns it unchanged otherwise. The text itself is shown with `visible`."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, style: str | None) -> str:
        text = visible(text, one_line=True)
        if not self.enabled or not style or not text:
            return text
        codes = ";".join(_CODES[s] for s in style.split() if s in _CODES)
        if not codes:
            return text
        return f"\x00{NONCE}:{codes}\x00{text}\x00{NONCE}:0\x00"


Cell = str | tuple[str, str | None]
"""A table cell: text, or (text, style) for a coloured cell."""


def render_table(headers: Sequence[str], rows: Sequence[Sequence[Cell]], paint: Painter) -> str:
    """Columns left-aligned, three spaces apart, like `kubectl get`; one line per row.

    Widths are measured on the plain text, so colour never shifts the columns. Trailing spaces
    are stripped. An empty `rows` gives just the header.
    """
    plain = [
        [visible(c if isinstance(c, str) else c[0], one_line=True) for c in row] for row in rows
    ]
    widths = [len(h) for h in headers]
    for row in plain:
        for i, text in enumerate(row):
            widths[i] = max(widths[i], len(text))
    lines = ["   ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for cells_in, texts in zip(rows, plain, strict=True):
        cells = []
        for i, (cell, text) in enumerate(zip(cells_in, texts, strict=True)):
            style = None if isinstance(cell, str) else cell[1]
            pad = "" if i == len(cells_in) - 1 else " " * (widths[i] - len(text))
            cells.append((paint(text, style) if style else text) + pad)
        lines.append("   ".join(cells).rstrip())
    return "\n".join(lines)


def job_row(job: AnyJob, now_seconds: float, *, namespace: bool, wide: bool) -> list[Cell]:
    """One `get` row: [NAMESPACE] NAME KIND PHASE REPLICAS RESTARTS AGE [REASON MESSAGE]."""
    phase = job.status.phase.value if job.status and job.status.phase else ""
    running, total = replica_counts(job)
    created = parse_time(job.metadata.creation_timestamp)
    age = human_age(now_seconds - created.timestamp()) if created else "<unknown>"
    row: list[Cell] = [job.metadata.name or ""]
    if namespace:
        row.insert(0, job.metadata.namespace or "")
    row += [
        job.kind,
        (phase or "<none>", PHASE_STYLES.get(phase)),
        f"{running}/{total}",
        str(restarts(job)),
        age,
    ]
    if wide:
        reason, message = _headline(job)
        row += [reason, message]
    return row


def _headline(job: AnyJob) -> tuple[str, str]:
    """The condition that says most about the job now: Failed if it failed, else Running."""
    conditions = {c.type.value: c for c in (job.status.conditions or ())} if job.status else {}
    for type_ in ("Failed", "Running"):
        c = conditions.get(type_)
        if c is None:
            continue
        if type_ == "Failed" and c.status.value != "True":
            continue
        return c.reason or "", c.message or ""
    return "", ""


def table_headers(*, namespace: bool, wide: bool) -> list[str]:
    headers = ["NAME", "KIND", "PHASE", "REPLICAS", "RESTARTS", "AGE"]
    if namespace:
        headers.insert(0, "NAMESPACE")
    if wide:
        headers += ["REASON", "MESSAGE"]
    return headers
