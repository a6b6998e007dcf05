"""Print a pip constraints file pinning every runtime dependency at its declared lower bound.

`make deps-lowest` installs the project with `-c` this file, so the oldest versions
pyproject.toml admits are the ones tested: `name>=X` becomes `name==X`, exact pins (`==`) stay,
and a requirement without a lower bound is an error (it would claim support it never tests).

    python tools/lower_bounds.py [pyproject.toml] > constraints.txt
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(.*)$")


def lower_bounds(pyproject: Path) -> dict[str, str]:
    project = tomllib.loads(pyproject.read_text())["project"]
    requirements = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        requirements.extend(extra)
    pins: dict[str, str] = {}
    for requirement in requirements:
        match = _REQUIREMENT.match(requirement.split(";")[0])
        if match is None:
            raise SystemExit(f"pyproject.toml: cannot read the requirement {requirement!r}")
        name, specifiers = match.group(1).lower(), match.group(2)
        bound = re.search(r"(?:>=|==)\s*([0-9][^,\s]*)", specifiers)
        if bound is None:
            raise SystemExit(
                f"pyproject.toml: {requirement!r} has no lower bound (>= or ==);"
                " declare the oldest version that is tested"
            )
        version = bound.group(1)
        if pins.get(name, version) != version:
            raise SystemExit(
                f"pyproject.toml: {name} has two lower bounds ({pins[name]} and {version})"
            )
        pins[name] = version
    return pins


def main(argv: list[str]) -> None:
    pyproject = Path(argv[0]) if argv else Path(__file__).resolve().parents[1] / "pyproject.toml"
    for name, version in sorted(lower_bounds(pyproject).items()):
        print(f"{name}=={version}")


if __name__ == "__main__":
    main(sys.argv[1:])
