"""What the components share about their `args` dicts."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any


def unknown_keys_error(
    component: str, resource_name: str, given: Mapping[str, Any], known: list[str]
) -> TypeError | None:
    """The error for keys of `given` not in `known` (with a did-you-mean), or None."""
    unknown = [key for key in given if key not in known]
    if not unknown:
        return None
    parts = []
    for key in unknown:
        close = difflib.get_close_matches(str(key), known, n=1) or [
            k for k in known if k.startswith(str(key)) or str(key).startswith(k)
        ]
        parts.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return TypeError(
        f"{component} {resource_name!r}: unknown argument{'s' if len(parts) > 1 else ''}"
        f" {', '.join(parts)}; known arguments: {', '.join(known)}"
    )
