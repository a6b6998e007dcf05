"""Kubernetes resource quantities (`500m`, `8`, `64Gi`, `1e3`) as exact decimals, and back (pure).

    parse_quantity("64Gi") -> Decimal(68719476736); parse_quantity("2.5x") -> None
    format_quantity(Decimal(68719476736)) -> "64Gi"; format_quantity(Decimal("0.5")) -> "500m"

Only what the API server accepts parses; anything else (a typo, a number too long to be a
quantity) is None, so a caller reading a hostile object never raises or spends more than the
string's bounded length.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Final

__all__ = ["format_quantity", "parse_quantity"]

_BINARY: Final = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL: Final = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_QUANTITY: Final = re.compile(
    r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]{1,3})?"
)
_MAX_LENGTH: Final = 64
"""Longer than any quantity the API server stores in canonical form."""


def parse_quantity(text: object) -> Decimal | None:
    """The quantity's exact value, or None when `text` is not a quantity."""
    if isinstance(text, bool):
        return None
    if isinstance(text, int):
        return Decimal(text)
    if not isinstance(text, str) or len(text) > _MAX_LENGTH:
        return None
    match = _QUANTITY.fullmatch(text.strip())
    if match is None:
        return None
    number, suffix = match.group(1), match.group(2) or ""
    try:
        value = Decimal(number)
    except InvalidOperation:  # pragma: no cover - the pattern admits only numbers
        return None
    if suffix in _BINARY:
        return value * _BINARY[suffix]
    if suffix in _DECIMAL:
        return value * _DECIMAL[suffix]
    return value.scaleb(int(suffix[1:]))


def format_quantity(value: Decimal) -> str:
    """`value` as the API server would write it: whole numbers plainly (or in Ki, Mi, ... when
    they are whole multiples of 1024 of at least 1Ki), fractions in milli-units."""
    if value != value.to_integral_value():
        milli = (value * 1000).to_integral_value()
        return f"{milli}m"
    whole = int(value)
    for suffix, size in reversed(_BINARY.items()):
        if whole and abs(whole) >= size and whole % size == 0:
            return f"{whole // size}{suffix}"
    return str(whole)
