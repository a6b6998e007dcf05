"""bench/_svg.py draws what it is given: one line per series in each panel through every point,
larger values further right and higher up, the axis labels, and the same bytes every time."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from bench import _svg

NS = {"svg": "http://www.w3.org/2000/svg"}


def chart() -> str:
    size = _svg.Panel(
        "Against job size",
        "replicas in the job (M)",
        "seconds, p99",
        [
            _svg.Series("ours", [(100, 0.6), (1000, 5.5), (10000, 56.0)]),
            _svg.Series("limit", [(100, 0.3), (1000, 2.9), (10000, 28.0)]),
        ],
        y_unit="s",
    )
    count = _svg.Panel(
        "Against job count",
        "jobs (N)",
        "seconds, p99",
        [
            _svg.Series("ours", [(10, 0.2), (50, 1.1), (250, 5.6), (1000, 22.0)]),
            _svg.Series("limit", [(10, 0.1), (50, 0.6), (250, 2.9)]),
        ],
    )
    return _svg.line_chart([size, count], "Growth", "p99 against size and count")


def polylines(panel: ET.Element) -> dict[str, list[tuple[float, float]]]:
    lines = {}
    for line in panel.findall("svg:polyline", NS):
        pairs = [p.split(",") for p in line.attrib["points"].split()]
        lines[line.attrib["data-series"]] = [(float(x), float(y)) for x, y in pairs]
    return lines


def test_each_panel_has_a_line_per_series_through_every_point() -> None:
    root = ET.fromstring(chart().encode())
    panels = root.findall("svg:g[@class='panel']", NS)
    assert [p.attrib["data-title"] for p in panels] == ["Against job size", "Against job count"]
    size, count = (polylines(p) for p in panels)
    assert {k: len(v) for k, v in size.items()} == {"ours": 3, "limit": 3}
    assert {k: len(v) for k, v in count.items()} == {"ours": 4, "limit": 3}
    for line in (*size.values(), *count.values()):
        xs = [x for x, _ in line]
        assert xs == sorted(xs)
        assert len(set(xs)) == len(xs)
    # Larger y: higher up (SVG's y grows downwards); the slower line lies above the faster.
    assert size["ours"][0][1] > size["ours"][-1][1]
    assert all(o[1] < lim[1] for o, lim in zip(size["ours"], size["limit"], strict=True))
    # A marker with its value at each point.
    markers = panels[0].find("svg:g[@data-series='ours']", NS)
    assert markers is not None
    tips = [el.findtext("svg:title", namespaces=NS) for el in markers]
    assert tips == ["ours: 100, 0.6 s", "ours: 1,000, 5.5 s", "ours: 10,000, 56 s"]


def test_the_axes_and_the_legend_are_labelled() -> None:
    root = ET.fromstring(chart().encode())
    texts = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    for label in ("replicas in the job (M)", "jobs (N)", "seconds, p99", "ours", "limit"):
        assert label in texts
    assert {"100", "1,000", "10,000"} <= set(texts)  # the x ticks of the size panel
    assert root.findtext("svg:title", namespaces=NS) == "Growth"
    # Its own white background, for the docs' light and dark themes alike.
    assert root.find("svg:rect", NS).attrib["fill"] == "#ffffff"  # type: ignore[union-attr]


def test_the_same_numbers_give_the_same_bytes() -> None:
    assert chart() == chart()


@pytest.mark.parametrize(
    ("lo", "hi", "ticks"),
    [
        (100, 10000, [100, 300, 1000, 3000, 10000]),
        (20, 50, [20, 50]),
        (0.07, 0.4, [0.05, 0.1, 0.2, 0.5]),
        (3, 3, [1, 2, 5, 10]),
    ],
)
def test_log_ticks_reach_past_the_data(lo: float, hi: float, ticks: list[float]) -> None:
    assert _svg.log_ticks(lo, hi) == ticks


def test_a_value_a_log_axis_cannot_show_is_refused() -> None:
    panel = _svg.Panel("size", "x", "y", [_svg.Series("ours", [(1, 0.0)])])
    with pytest.raises(ValueError, match=r"panel 'size', series 'ours': point \(1, 0\)"):
        _svg.line_chart([panel], "t")
