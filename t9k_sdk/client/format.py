"""Text for people that the client's own messages use (pure): ages.

human_age(5400) -> "90m"

The command line's tables, colours and duration parsing are in `t9k_sdk.cli._format`.
"""

from __future__ import annotations

__all__ = ["human_age"]


def human_age(seconds: float) -> str:
    """An age as `kubectl get` shows it: 45s, 3m20s, 42m, 5h10m, 20h, 3d4h, 120d, 3y20d."""
    s = max(0, int(seconds))
    if s < 120:
        return f"{s}s"
    m, h, d = s // 60, s // 3600, s // 86400
    if m < 10:
        rest = s % 60
        return f"{m}m{rest}s" if rest else f"{m}m"
    if h < 3:
        return f"{m}m"
    if h < 8:
        rest = m % 60
        return f"{h}h{rest}m" if rest else f"{h}h"
    if h < 48:
        return f"{h}h"
    if d < 8:
        rest = h % 24
        return f"{d}d{rest}h" if rest else f"{d}d"
    if d < 365 * 2:
        return f"{d}d"
    years, days = d // 365, d % 365
    return f"{years}y{days}d" if days else f"{years}y"
