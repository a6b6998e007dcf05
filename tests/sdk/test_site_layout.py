"""The built site, as a reader sees it: no code block or table is wider than its column.

Each page of `mkdocs build` is opened in headless Chromium at a laptop's and a desktop's width;
a script measures every `pre > code` and table of the content column (its scroll width against
its box, and its right edge against the column's). A page that fails gets a screenshot in
build/site-screenshots/, named in the failure. On a phone (under 1000 px) the widest tables of
performance.md and the operator pages scroll sideways; that is material's design, not checked.

Chromium comes from Debian (tools/ensure-system-packages.sh); without it the test is skipped,
except where T9K_REQUIRE_CLUSTER=1 (`make test`, CI), where it fails.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

from tests.conftest import cluster_required

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "build" / "site-screenshots"
WIDTHS = (1024, 1280)
"""A laptop's and a desktop's window width, in CSS pixels."""

MEASURE = """
window.addEventListener('load', () => {
  const column = document.querySelector('.md-content__inner');
  const right = column.getBoundingClientRect().right;
  const longest = (el) => (el ? el.innerText : '').split('\\n')
    .reduce((a, b) => (a.length >= b.length ? a : b), '').slice(0, 100);
  const found = [];
  for (const el of column.querySelectorAll('pre > code')) {
    const over = el.scrollWidth - el.clientWidth;
    if (over > 1) found.push({what: 'code block', over, line: longest(el)});
  }
  for (const el of column.querySelectorAll('table')) {
    const wrap = el.closest('.md-typeset__scrollwrap') || el.parentElement;
    const over = Math.max(el.getBoundingClientRect().right - right,
      wrap.scrollWidth - wrap.clientWidth, el.scrollWidth - el.clientWidth);
    if (over > 1) found.push({what: 'table', over: Math.round(over), line: longest(el.rows[0])});
  }
  parent.postMessage({page: location.href, width: window.innerWidth, found}, '*');
});
"""
RUNNER = """<!doctype html><html><body><pre id="t9k-overflow"></pre><script>
const expected = %(count)d, reports = [];
window.addEventListener('message', (event) => {
  reports.push(event.data);
  if (reports.length === expected) {
    document.getElementById('t9k-overflow').textContent = JSON.stringify(reports);
  }
});
</script>
%(frames)s
</body></html>
"""
"""One page that opens every page of the site in frames of each width: one browser start for
the whole site (a start takes seconds). Each page posts what it measured to this one."""
REPORT = re.compile(r'<pre id="t9k-overflow">(.*?)</pre>', re.DOTALL)


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        message = "Chromium is not installed (Debian: apt-get install chromium)"
        if cluster_required():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return found


def _browse(chromium: str, page: Path, width: int, *extra: str) -> str:
    result = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",  # CI runs as root, where Chromium's sandbox cannot start
            "--disable-gpu",
            f"--window-size={width},900",
            "--allow-file-access-from-files",
            # No request leaves the machine: the theme's web fonts fail at once and the pages use
            # the system fonts (code wraps, so a font's width moves where lines break, not
            # whether they fit).
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--virtual-time-budget=10000",  # virtual: it ends as soon as the pages are idle
            *extra,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return result.stdout


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    out = tmp_path_factory.mktemp("site")
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or "mkdocs"
    subprocess.run(
        [mkdocs, "build", "--quiet", "--site-dir", str(out)],
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


def test_no_code_block_or_table_is_wider_than_its_column(site: Path) -> None:
    chromium = _chromium()
    pages = sorted(site.rglob("index.html"))
    assert len(pages) > 20, f"the site has only {len(pages)} pages"
    (site / "t9k-measure.js").write_text(MEASURE)
    tag = f'<script src="{(site / "t9k-measure.js").as_uri()}"></script></body>'
    for page in pages:
        page.write_text(page.read_text().replace("</body>", tag))
    frames = [
        f'<iframe src="{page.as_uri()}" width="{width}" height="900"></iframe>'
        for page in pages
        for width in WIDTHS
    ]
    runner = site / "t9k-runner.html"
    runner.write_text(RUNNER % {"count": len(frames), "frames": "\n".join(frames)})
    match = REPORT.search(_browse(chromium, runner, max(WIDTHS) + 100, "--dump-dom"))
    assert match is not None, "the runner page did not load"
    assert match.group(1), "not every page reported its measures"
    reports = json.loads(html.unescape(match.group(1)))
    assert sorted(r["width"] for r in reports) == sorted(w for _ in pages for w in WIDTHS)
    failures = []
    for report in sorted(reports, key=lambda r: (r["page"], r["width"])):
        if not report["found"]:
            continue
        page = Path(urllib.parse.urlparse(report["page"]).path)
        name = page.parent.relative_to(site).as_posix() or "index"
        shot = SCREENSHOTS / f"{name.replace('/', '-')}-{report['width']}.png"
        shot.parent.mkdir(parents=True, exist_ok=True)
        _browse(chromium, page, report["width"], f"--screenshot={shot}")
        for item in report["found"]:
            failures.append(
                f"{name} at {report['width']}px: a {item['what']} is {item['over']}px wider"
                f" than its column ({item['line']!r}); screenshot {shot}"
            )
    assert not failures, "\n".join(failures)
