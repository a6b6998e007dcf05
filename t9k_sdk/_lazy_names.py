"""A package's public names imported on first use (PEP 562's module `__getattr__`).

    __getattr__, __dir__ = lazy_names(__name__, globals(), {"GenericJob": "t9k_sdk.builders"})

The package's `__init__` then imports nothing until a name is asked for, and keeps each name it
imported. It lists the same names under `if TYPE_CHECKING:` imports, for type checkers and
editors; `__getattr__` is defined only outside type checking, so that a misspelt name is still
an error under `mypy --strict` (a module `__getattr__` would make every name `Any`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, namespace: dict[str, Any], homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, whose `namespace` (its `globals()`) gets each
    name of `homes` (name -> the module it is imported from) on first use. A name whose home is
    `package.name` is that submodule."""

    def getattr_(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(home)
        value = module if home == f"{package}.{name}" else getattr(module, name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *homes})

    return getattr_, dir_
