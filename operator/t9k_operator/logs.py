"""Structured logging: one line per record, as `key=value` text or JSON.

    log.info("created", extra=fields(job="GenericJob/ns/demo", object="Pod/demo-worker-0"))

text:  2025-01-02T03:04:05.678Z INFO  controller: created job=GenericJob/ns/demo object=Pod/demo-worker-0
json:  {"time": "...", "level": "info", "logger": "controller", "msg": "created", "job": ..., ...}
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

__all__ = ["FIELDS", "fields", "setup"]

FIELDS = "t9k_fields"
"""The LogRecord attribute that carries the structured fields."""


def fields(**values: Any) -> dict[str, Any]:
    """`extra=` for a log call: the values become fields of the line."""
    return {FIELDS: {k: v for k, v in values.items() if v is not None}}


def _stamp(record: logging.LogRecord) -> str:
    moment = datetime.fromtimestamp(record.created, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _logger_name(record: logging.LogRecord) -> str:
    return record.name.removeprefix("t9k_operator.")


def _text_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if text == "" or any(c in text for c in ' "=\n\t'):
        return json.dumps(text)
    return text


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        parts = [
            _stamp(record),
            f"{record.levelname:<5}",
            f"{_logger_name(record)}:",
            record.getMessage(),
        ]
        for key, value in (getattr(record, FIELDS, None) or {}).items():
            parts.append(f"{key}={_text_value(value)}")
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": _stamp(record),
            "level": record.levelname.lower(),
            "logger": _logger_name(record),
            "msg": record.getMessage(),
        }
        data.update(getattr(record, FIELDS, None) or {})
        if record.exc_info:
            data["error"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str)


def setup(
    level: str = "info", fmt: Literal["text", "json"] = "text", stream: TextIO | None = None
) -> None:
    """Configure the root logger: one handler on stderr, the chosen format and level."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # The HTTP client logs every request body at DEBUG; keep it out unless asked explicitly.
    for noisy in ("kubernetes", "urllib3"):
        logging.getLogger(noisy).setLevel(max(logging.INFO, root.level))
