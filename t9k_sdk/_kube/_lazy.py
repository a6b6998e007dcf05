"""Import the official Kubernetes client without its thousand generated API and model classes.

`import kubernetes` (and any `from kubernetes.x import y`) first runs `kubernetes/__init__.py`,
which imports `kubernetes.client`, whose `__init__` imports every generated API class and model:
about 50 MiB of a process's memory, for classes t9k-sdk never uses (it sends and reads raw JSON).
`transport` and `config` need only `ApiClient`, `Configuration`, the exceptions and the
kubeconfig loaders.

So, before the first import of the client, `install()` puts three lazy packages in `sys.modules`
in place of `kubernetes`, `kubernetes.client` and `kubernetes.client.models`. They have the
installed package's directory as their path, so their submodules (`kubernetes.config`,
`kubernetes.client.api_client`, ...) import as usual, and a few names are resolved from the
submodule that defines them. The first access to any other name (`kubernetes.client.CoreV1Api`,
`kubernetes.client.models.V1Pod`, `kubernetes.__version__`) runs the package's own `__init__`
into the lazy module, so a program that also uses the full client gets all of it, at its usual
cost. Nothing is done when the client was imported already.

This module does not import the client itself: it finds the installed package with
`importlib.util.find_spec`.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from pathlib import Path
from typing import Any

__all__ = ["install"]

# Names read from `kubernetes.client` by t9k_sdk and by the client's own config loaders, and the
# submodule that defines each (the same in releases 31 to 37).
_CLIENT_NAMES = {
    "ApiClient": "api_client",
    "Configuration": "configuration",
    "ApiException": "exceptions",
    "ApiValueError": "exceptions",
    "ApiTypeError": "exceptions",
    "ApiKeyError": "exceptions",
    "ApiAttributeError": "exceptions",
    "OpenApiException": "exceptions",
}

# Names defined by the packages' `__init__` that callers read: asking for one runs it.
_DUNDERS = frozenset({"__version__", "__project__", "__all__"})

_lock = threading.RLock()


class _LazyPackage(types.ModuleType):
    """A package whose `__init__` runs only when a name it would define is asked for."""

    def __init__(self, name: str, directory: Path, names: dict[str, str]) -> None:
        super().__init__(name)
        self.__path__ = [str(directory)]
        self.__file__ = str(directory / "__init__.py")
        self.__package__ = name
        # A spec as the import system would give the package (find_spec() reads it).
        self.__spec__ = importlib.util.spec_from_file_location(
            name, self.__file__, submodule_search_locations=self.__path__
        )
        self._t9k_names = names
        self._t9k_loaded = False

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_t9k_") or (attr.startswith("__") and attr not in _DUNDERS):
            raise AttributeError(
                attr
            )  # not a name the package defines: probes of the import system
        if attr in self._t9k_names:
            submodule = importlib.import_module(f"{self.__name__}.{self._t9k_names[attr]}")
            return getattr(submodule, attr)
        full = f"{self.__name__}.{attr}"
        if importlib.util.find_spec(full) is not None:
            return importlib.import_module(full)
        with _lock:
            if not self._t9k_loaded:
                self._t9k_loaded = True
                code = compile(Path(self.__file__ or "").read_bytes(), self.__file__ or "", "exec")
                exec(code, self.__dict__)  # the package's own __init__, as `import` would run it
        if attr in self.__dict__:
            return self.__dict__[attr]
        own = self.__dict__.get("__getattr__")  # a package that is lazy itself (kubernetes >= 37)
        if callable(own):
            return own(attr)
        raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")


def install() -> None:
    """Put the lazy packages in place, unless the client is imported already or not installed."""
    with _lock:
        if "kubernetes" in sys.modules:
            return
        spec = importlib.util.find_spec("kubernetes")
        if spec is None or spec.origin is None:
            return  # not installed: the import that follows says so
        root = Path(spec.origin).parent
        client_dir, models_dir = root / "client", root / "client" / "models"
        if not (client_dir / "api_client.py").is_file() or not models_dir.is_dir():
            return  # a layout this was not written for: import it the usual way
        kubernetes = _LazyPackage("kubernetes", root, {})
        client = _LazyPackage("kubernetes.client", client_dir, _CLIENT_NAMES)
        models = _LazyPackage("kubernetes.client.models", models_dir, {})
        sys.modules.update(
            {
                "kubernetes": kubernetes,
                "kubernetes.client": client,
                "kubernetes.client.models": models,
            }
        )
        kubernetes.client = client  # type: ignore[attr-defined]
        client.models = models  # type: ignore[attr-defined]
