"""Line charts as SVG, with no plotting library: panels side by side, log-scaled axes, one line
per series with a marker at each point, one legend above the panels.

The output depends on the numbers only (fixed order, coordinates rounded to 0.1 px, no dates or
ids), so a chart drawn again from the same result diffs as unchanged. It brings its own white
background: the docs' light and dark themes show it the same, and so does a bare file viewer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

__all__ = ["Panel", "Series", "line_chart"]


@dataclass(frozen=True)
class Series:
    """One line: its name in the legend and its (x, y) points, in the order they are joined."""

    name: str
    points: Sequence[tuple[float, float]]


@dataclass(frozen=True)
class Panel:
    """One plot: its title above it, its axis labels and its lines."""

    title: str
    x_label: str
    y_label: str
    series: Sequence[Series]
    y_unit: str = ""
    """Appended to a point's y in its tooltip (e.g. "s")."""


# Okabe and Ito's palette, which readers with any common colour-blindness tell apart; each
# series also has a marker of its own shape, so the lines differ in greyscale too.
COLOURS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9")
MARKERS = ("circle", "square", "triangle", "diamond")
INK = "#222222"
GRID = "#e3e3e3"
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif"

PANEL_WIDTH = 470
PANEL_HEIGHT = 340
LEGEND_HEIGHT = 34
# Inside a panel: room for its title above, the y tick labels and y label on the left, the x
# tick labels and x label below.
LEFT, RIGHT, TOP, BOTTOM = 70, 34, 34, 56


def _num(v: float) -> str:
    """A coordinate, rounded to 0.1 px, without a trailing ".0"."""
    text = f"{v:.1f}"
    return text[:-2] if text.endswith(".0") else text


def tick_label(v: float) -> str:
    """10000 -> "10,000"; 0.3 -> "0.3"."""
    return f"{v:,.0f}" if v >= 1 else f"{v:g}"


def log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks for a log axis holding data from `lo` to `hi` (both > 0): the first at or below `lo`,
    the last at or above `hi` (they are the axis's ends). Within one decade: 1, 2, 5 x 10^k; up
    to four: 1 and 3 (about half a decade apart); beyond: the decades alone."""
    if lo == hi:
        lo, hi = lo / 2, hi * 2
    decades = math.log10(hi / lo)
    steps = (1, 2, 5) if decades <= 1 else (1, 3) if decades <= 4 else (1,)
    low, high = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    # float("3e-2") is the double nearest 0.03, where 3 * 10**-2 would be 0.030000000000000002
    candidates = [float(f"{s}e{e}") for e in range(low, high + 1) for s in steps]
    below = max(c for c in candidates if c <= lo)
    above = min(c for c in candidates if c >= hi)
    return [c for c in candidates if below <= c <= above]


class _LogAxis:
    """Maps a value to a pixel between `start` and `end` on a log scale from `ticks[0]` to
    `ticks[-1]`."""

    def __init__(self, ticks: list[float], start: float, end: float) -> None:
        self.ticks = ticks
        self.start, self.end = start, end
        self.lo, self.hi = math.log10(ticks[0]), math.log10(ticks[-1])

    def __call__(self, v: float) -> float:
        return self.start + (math.log10(v) - self.lo) / (self.hi - self.lo) * (
            self.end - self.start
        )


def _marker(shape: str, x: float, y: float, colour: str, tip: str) -> str:
    title = f"<title>{escape(tip)}</title>"
    style = f'fill="{colour}" stroke="#ffffff" stroke-width="1"'
    if shape == "circle":
        return f'<circle cx="{_num(x)}" cy="{_num(y)}" r="4.5" {style}>{title}</circle>'
    if shape == "square":
        return (
            f'<rect x="{_num(x - 4)}" y="{_num(y - 4)}" width="8" height="8" {style}>'
            f"{title}</rect>"
        )
    if shape == "triangle":
        d = f"M{_num(x)},{_num(y - 5.5)} L{_num(x + 5)},{_num(y + 3.5)} L{_num(x - 5)},{_num(y + 3.5)} Z"
    else:
        d = f"M{_num(x)},{_num(y - 5.5)} L{_num(x + 5)},{_num(y)} L{_num(x)},{_num(y + 5.5)} L{_num(x - 5)},{_num(y)} Z"
    return f'<path d="{d}" {style}>{title}</path>'


def _text(x: float, y: float, text: str, anchor: str = "middle", extra: str = "") -> str:
    return f'<text x="{_num(x)}" y="{_num(y)}" text-anchor="{anchor}"{extra}>{escape(text)}</text>'


def _panel(panel: Panel, left: float, top: float, style: dict[str, tuple[str, str]]) -> list[str]:
    xs = [x for s in panel.series for x, _ in s.points]
    ys = [y for s in panel.series for _, y in s.points]
    if not xs:
        raise ValueError(f"panel {panel.title!r}: no points to draw")
    for s in panel.series:
        for x, y in s.points:
            if x <= 0 or y <= 0:
                raise ValueError(
                    f"panel {panel.title!r}, series {s.name!r}: point ({x:g}, {y:g}); the axes"
                    " are logarithmic, so x and y must be > 0"
                )
    x0, x1 = left + LEFT, left + PANEL_WIDTH - RIGHT
    y0, y1 = top + PANEL_HEIGHT - BOTTOM, top + TOP  # y grows downwards in SVG
    fx = _LogAxis(log_ticks(min(xs), max(xs)), x0, x1)
    fy = _LogAxis(log_ticks(min(ys), max(ys)), y0, y1)
    out = [f'<g class="panel" data-title={quoteattr(panel.title)}>']
    out.append(
        _text((x0 + x1) / 2, top + 20, panel.title, extra=' font-weight="600" font-size="14"')
    )
    for t in fx.ticks:
        x = fx(t)
        out.append(
            f'<line x1="{_num(x)}" y1="{_num(y1)}" x2="{_num(x)}" y2="{_num(y0)}" stroke="{GRID}"/>'
        )
        out.append(_text(x, y0 + 18, tick_label(t), extra=' class="tick x"'))
    for t in fy.ticks:
        y = fy(t)
        out.append(
            f'<line x1="{_num(x0)}" y1="{_num(y)}" x2="{_num(x1)}" y2="{_num(y)}" stroke="{GRID}"/>'
        )
        out.append(_text(x0 - 8, y + 4, tick_label(t), anchor="end", extra=' class="tick y"'))
    out.append(
        f'<rect x="{_num(x0)}" y="{_num(y1)}" width="{_num(x1 - x0)}" height="{_num(y0 - y1)}"'
        f' fill="none" stroke="{INK}"/>'
    )
    out.append(_text((x0 + x1) / 2, y0 + 42, panel.x_label, extra=' class="label x"'))
    ymid = (y0 + y1) / 2
    out.append(
        _text(
            left + 18,
            ymid,
            panel.y_label,
            extra=f' class="label y" transform="rotate(-90 {_num(left + 18)} {_num(ymid)})"',
        )
    )
    for s in panel.series:
        colour, shape = style[s.name]
        pts = [(fx(x), fy(y)) for x, y in s.points]
        out.append(
            f'<polyline class="series" data-series={quoteattr(s.name)} fill="none"'
            f' stroke="{colour}" stroke-width="2" stroke-linejoin="round" points="'
            + " ".join(f"{_num(x)},{_num(y)}" for x, y in pts)
            + '"/>'
        )
        out.append(f'<g class="markers" data-series={quoteattr(s.name)}>')
        for (x, y), (px, py) in zip(s.points, pts, strict=True):
            tip = f"{s.name}: {tick_label(x)}, {y:.3g}{' ' + panel.y_unit if panel.y_unit else ''}"
            out.append(_marker(shape, px, py, colour, tip))
        out.append("</g>")
    out.append("</g>")
    return out


def line_chart(panels: Sequence[Panel], title: str, description: str = "") -> str:
    """The SVG document (text) of `panels` side by side, under one legend of every series name
    (a name keeps its colour and marker in every panel). `title` and `description` are what a
    screen reader announces."""
    if not panels:
        raise ValueError("line_chart: no panels to draw")
    names = list(dict.fromkeys(s.name for p in panels for s in p.series))
    style = {
        name: (COLOURS[i % len(COLOURS)], MARKERS[i % len(MARKERS)]) for i, name in enumerate(names)
    }
    width = PANEL_WIDTH * len(panels)
    height = LEGEND_HEIGHT + PANEL_HEIGHT
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}"'
        f' viewBox="0 0 {width} {height}" role="img" font-family={quoteattr(FONT)}'
        f' font-size="12" fill="{INK}">',
        f"<title>{escape(title)}</title>",
    ]
    if description:
        out.append(f"<desc>{escape(description)}</desc>")
    out.append(f'<rect width="{width}" height="{height}" fill="#ffffff"/>')
    # The legend: a short line with its marker, then the name; names are laid out at an
    # estimated 7 px a character, so the row is the same wherever it is drawn.
    entries = [(name, 38 + 7 * len(name)) for name in names]
    x = (width - sum(w for _, w in entries)) / 2
    out.append('<g class="legend">')
    for name, w in entries:
        colour, shape = style[name]
        out.append(
            f'<line x1="{_num(x)}" y1="20" x2="{_num(x + 24)}" y2="20" stroke="{colour}"'
            ' stroke-width="2"/>'
        )
        out.append(_marker(shape, x + 12, 20, colour, name))
        out.append(_text(x + 30, 24, name, anchor="start"))
        x += w
    out.append("</g>")
    for i, panel in enumerate(panels):
        out += _panel(panel, PANEL_WIDTH * i, LEGEND_HEIGHT, style)
    out.append("</svg>")
    return "\n".join(out) + "\n"
