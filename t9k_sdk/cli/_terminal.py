"""What may reach a terminal (pure): the one place the CLI's output is made safe to print.

for_terminal("evil\\x1b]0;title\\x07") shows "evil\\\\x1b]0;title\\\\x07"
"""

from __future__ import annotations

import re
import secrets

__all__ = ["NONCE", "for_terminal", "visible"]

# -- what reaches the terminal -----------------------------------------------------------------
#
# Names, messages, Events, termination messages and logs are written by whoever can write to the
# cluster. Printed as they are, ESC sequences in them would move the cursor, rewrite the window
# title (OSC 0), set the clipboard (OSC 52) or hide text: the bug class of kubectl's
# CVE-2021-25743. Every line the CLI prints for people therefore goes through `for_terminal`,
# which shows each control character as an escape (`\x1b`, `\x9b`, `\u202e`). The CLI's own
# colours are the one exception: the Painter marks them with a random per-process nonce that
# nothing outside this process can know, and `for_terminal` turns only those marks into colour.

_INVISIBLE = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
"""C0 controls but tab and newline, DEL, C1 controls (CSI is U+009B), and the characters that
reorder or break the text shown (bidirectional marks, overrides and isolates, line separators)."""
_LINE_BREAKS = re.compile(r"[\t\n]")
NONCE = secrets.token_hex(8)
_MARK = re.compile(f"\x00{NONCE}:([0-9;]*)\x00")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str, *, one_line: bool = False) -> str:
    """`text` with every control character shown as an escape (`\\x1b`); with `one_line`, tabs
    and newlines too (a table cell)."""
    out = _INVISIBLE.sub(_escape, text)
    return _LINE_BREAKS.sub(_escape, out) if one_line else out


def for_terminal(text: str) -> str:
    """`text` as it may be printed: the Painter's colours, and nothing else, as escapes."""
    if "\x00" not in text:
        return visible(text)
    parts = _MARK.split(text)  # data, codes, data, codes, ..., data
    return "".join(visible(part) if i % 2 == 0 else f"\033[{part}m" for i, part in enumerate(parts))
