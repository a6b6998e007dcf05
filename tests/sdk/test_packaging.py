"""What a user outside the repository sees of the package: its URLs, its README on a package
page, and the install commands the docs and messages give.

`make dist-check` builds the real sdist and wheel and runs the installed wheel; these checks are
the fast part that needs no build.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

from t9k_sdk._extras import REPOSITORY_URL, install_hint

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
URLS: dict[str, str] = PYPROJECT["project"].get("urls", {})
MKDOCS = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
LINK = re.compile(r"\]\(([^)\s]+)\)")

# `pip install t9k-sdk`, `pip install 't9k-sdk[client]'`...: an index install, which finds nothing.
# Except `...==VERSION`: what a release tag publishes (docs/operator/install.md, "How a release
# happens"), which says so next to it.
INDEX_INSTALL = re.compile(
    r"""pip install (?:-U |--upgrade )?['"]?t9k-sdk(?:\[[^\]]*\])?+['"]?+(?!\s*@|==VERSION\b)"""
)
USER_FACING = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "pulumi_examples").glob("*/README.md")),
    *sorted((ROOT / "t9k_sdk").rglob("*.py")),
    *sorted((ROOT / "operator" / "t9k_operator").rglob("*.py")),
]


def test_the_wheel_names_the_repository_docs_and_issue_tracker() -> None:
    assert set(URLS) >= {"Homepage", "Documentation", "Source", "Issues"}
    assert URLS["Source"] == REPOSITORY_URL
    assert URLS["Issues"] == f"{REPOSITORY_URL}/issues"
    assert all(url.startswith("https://") for url in URLS.values())


def test_the_docs_site_names_the_same_repository_and_address() -> None:
    assert MKDOCS["repo_url"] == URLS["Source"]
    assert MKDOCS["site_url"] == URLS["Documentation"]


def test_readme_links_work_on_a_package_page_and_point_at_real_pages() -> None:
    """The README is the wheel's long description: a relative link is broken there."""
    docs_site = URLS["Documentation"]
    tree = f"{URLS['Source']}/tree/main/"
    for link in LINK.findall((ROOT / "README.md").read_text()):
        assert link.startswith(("https://", "#")), f"README.md: relative link {link}"
        if link.startswith(docs_site):
            page = link.removeprefix(docs_site).strip("/")
            candidates = [ROOT / "docs" / f"{page}.md", ROOT / "docs" / page / "index.md"]
            assert any(c.is_file() for c in candidates), f"README.md: no docs page for {link}"
        elif link.startswith(tree):
            assert (ROOT / link.removeprefix(tree)).exists(), f"README.md: no path for {link}"


@pytest.mark.parametrize("path", USER_FACING, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_install_command_points_at_a_package_index(path: Path) -> None:
    found = INDEX_INSTALL.findall(path.read_text())
    assert not found, (
        f"{path.relative_to(ROOT)} tells users to {found[0]!r}, but t9k-sdk is on no index:"
        " install from the repository (@ git+...), a checkout or a wheel (t9k_sdk._extras)"
    )


def test_the_install_hint_names_every_way_to_install() -> None:
    hint = install_hint("client")
    assert f'pip install "t9k-sdk[client] @ git+{REPOSITORY_URL}"' in hint
    assert 'pip install ".[client]"' in hint
    assert ".whl[client]" in hint
