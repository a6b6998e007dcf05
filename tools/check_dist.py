"""Check a built sdist and wheel (`make dist-check`): what an installed t9k-sdk needs is there.

    python tools/check_dist.py dist/

The wheel must hold both packages with their `py.typed` markers and the vendored Kubernetes
schema, and metadata naming the project URLs with a README whose links work on a package page;
the sdist must hold what building the wheel needs (`python -m build` builds the wheel from it).
Exit status 1 with one line per problem.
"""

from __future__ import annotations

import re
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

WHEEL_FILES = (
    "t9k_sdk/__init__.py",
    "t9k_sdk/py.typed",
    "t9k_sdk/_schemas/core_v1.json",
    "t9k_sdk/argocd/health.lua",
    "t9k_sdk/client/client.py",
    "t9k_sdk/pulumi/__init__.py",
    "t9k_operator/__init__.py",
    "t9k_operator/__main__.py",
    "t9k_operator/py.typed",
)
SDIST_FILES = (
    "pyproject.toml",
    "README.md",
    "CHANGELOG.md",
    "t9k_sdk/py.typed",
    "t9k_sdk/_schemas/core_v1.json",
    "t9k_sdk/argocd/health.lua",
    "operator/t9k_operator/py.typed",
)
PROJECT_URLS = ("Homepage", "Documentation", "Source", "Issues", "Changelog")
ENTRY_POINTS = ("t9k-sdk = t9k_sdk.cli:main", "t9k-operator = t9k_operator.cli:main")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def check_wheel(wheel: Path) -> list[str]:
    problems: list[str] = []
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        problems += [f"{wheel.name}: {f} is missing" for f in WHEEL_FILES if f not in names]
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(f"{dist_info}/METADATA").decode())
        entry_points = archive.read(f"{dist_info}/entry_points.txt").decode()
    urls = {
        u.split(",")[0].strip(): u.split(",", 1)[1].strip()
        for u in metadata.get_all("Project-URL") or []
    }
    problems += [f"{wheel.name}: no Project-URL {k}" for k in PROJECT_URLS if k not in urls]
    problems += [
        f"{wheel.name}: no console script {e!r}" for e in ENTRY_POINTS if e not in entry_points
    ]
    if metadata.get("Description-Content-Type") != "text/markdown":
        problems.append(f"{wheel.name}: the README is not the long description (text/markdown)")
    description = metadata.get_payload() or ""
    relative = [
        link for link in _LINK.findall(description) if not link.startswith(("https://", "#"))
    ]
    if relative:
        problems.append(
            f"{wheel.name}: the long description (README.md) has links that only work inside the"
            f" repository: {', '.join(relative)}"
        )
    return problems


def check_sdist(sdist: Path) -> list[str]:
    with tarfile.open(sdist) as archive:
        root = archive.getnames()[0].split("/")[0]
        names = {n.removeprefix(root + "/") for n in archive.getnames()}
    return [f"{sdist.name}: {f} is missing" for f in SDIST_FILES if f not in names]


def main(argv: list[str]) -> int:
    directory = Path(argv[0] if argv else "dist")
    wheels = sorted(directory.glob("t9k_sdk-*.whl"))
    sdists = sorted(directory.glob("t9k_sdk-*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        print(f"{directory}: expected one wheel and one sdist, found {wheels + sdists}")
        return 1
    problems = check_wheel(wheels[0]) + check_sdist(sdists[0])
    for problem in problems:
        print(problem)
    if not problems:
        print(f"{wheels[0].name} and {sdists[0].name}: complete")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
