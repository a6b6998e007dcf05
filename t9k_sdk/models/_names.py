"""Kubernetes name syntax, as the API server checks it (k8s.io/apimachinery/pkg/util/validation).

Every check is a full match: Python's `$` also matches before a trailing newline, Go's does not,
so `re.match(r"^[a-z]+$", "abc\\n")` accepts what the API server rejects.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = [
    "DNS_LABEL_PATTERN",
    "GENERATED_SUFFIX",
    "LABEL_VALUE_PATTERN",
    "MAX_GENERATE_NAME",
    "generate_name_problem",
    "is_dns_label",
    "is_label_value",
    "label_problems",
    "namespace_problem",
]

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_GENERATE_NAME = re.compile(r"[a-z0-9][-a-z0-9]*")

DNS_LABEL_PATTERN = f"^{_DNS_LABEL.pattern}$"
"""`is_dns_label`'s expression for a JSON schema (with `maxLength: 63`)."""
LABEL_VALUE_PATTERN = f"^{_LABEL_VALUE.pattern}$"
"""A label value's expression for a JSON schema (with `maxLength: 63`; empty matches)."""


def is_label_value(value: str) -> bool:
    """A label value: at most 63 characters of letters, digits, '-', '_' and '.', starting and
    ending with a letter or digit (or empty)."""
    return len(value) <= 63 and _LABEL_VALUE.fullmatch(value) is not None


MAX_GENERATE_NAME = 58
"""The server keeps at most 58 characters of generateName and appends 5 random ones."""
GENERATED_SUFFIX = 5
MAX_ANNOTATIONS_BYTES = 256 * 1024


def is_dns_label(value: str) -> bool:
    """A DNS-1123 label: at most 63 characters of a-z, 0-9 and '-', alphanumeric at both ends."""
    return len(value) <= 63 and _DNS_LABEL.fullmatch(value) is not None


def namespace_problem(value: str) -> str | None:
    if is_dns_label(value):
        return None
    return (
        "must be a lowercase DNS label (at most 63 characters of a-z, 0-9 and '-', starting and"
        f" ending with a letter or digit); got {value!r}"
    )


def generate_name_problem(value: str) -> str | None:
    """generateName prefixes a name that must be a DNS label (the job name rule)."""
    if _GENERATE_NAME.fullmatch(value):
        return None
    return (
        "must be the start of a lowercase DNS label (a-z, 0-9 and '-', starting with a letter or"
        f" digit): the server appends 5 random characters to make the name; got {value!r}"
    )


def _qualified_name_problem(key: str) -> str | None:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return (
            "a key's prefix (before '/') must be a lowercase DNS subdomain of at most 253"
            " characters"
        )
    if not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        return (
            "a key's name (after any '/') must be 1 to 63 characters of A-Z, a-z, 0-9, '-', '_'"
            " and '.', starting and ending with a letter or digit"
        )
    return None


def label_problems(
    labels: Mapping[str, str] | None, annotations: Mapping[str, str] | None
) -> list[tuple[str, str]]:
    """(field, message) of every label and annotation the API server rejects."""
    problems: list[tuple[str, str]] = []
    for key, value in (labels or {}).items():
        why = _qualified_name_problem(key)
        if why is not None:
            problems.append(("labels", f"{why}; got key {key!r}"))
        elif not is_label_value(value):
            problems.append(
                (
                    "labels",
                    "a label value must be empty or at most 63 characters of A-Z, a-z, 0-9, '-',"
                    f" '_' and '.', starting and ending with a letter or digit; got {key}:"
                    f" {value!r}",
                )
            )
    for key in annotations or {}:
        why = _qualified_name_problem(key.lower())
        if why is not None:
            problems.append(("annotations", f"{why}; got key {key!r}"))
    size = sum(len(k.encode()) + len(v.encode()) for k, v in (annotations or {}).items())
    if size > MAX_ANNOTATIONS_BYTES:
        problems.append(
            ("annotations", f"annotations may hold at most 256 KiB in total; got {size} bytes")
        )
    return problems
