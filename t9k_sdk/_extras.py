"""Where t9k-sdk comes from, and how to install an extra, for messages and docs alike.

t9k-sdk is not published on a package index: it is installed from the repository (or a checkout
of it) or from a wheel built with `python -m build`. Every "install the X extra" message says so
through `install_hint`, and pyproject.toml's [project.urls] name the same repository.
"""

from __future__ import annotations

import importlib.util

__all__ = ["REPOSITORY_URL", "install_hint", "missing_modules"]

REPOSITORY_URL = "https://github.com/t9k/t9k-sdk"
"""The source repository (also in pyproject.toml's [project.urls]; a test keeps them equal)."""


def install_hint(extra: str) -> str:
    """The ways to add an extra, in one line per way."""
    return (
        f'pip install "t9k-sdk[{extra}] @ git+{REPOSITORY_URL}"\n'
        f'  (or, in a checkout of the repository: pip install ".[{extra}]";'
        f' from a built wheel: pip install "./t9k_sdk-<version>-py3-none-any.whl[{extra}]")'
    )


def missing_modules(*modules: str) -> list[str]:
    """Those of `modules` that cannot be imported here (not installed)."""
    return [m for m in modules if not _importable(m)]


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
