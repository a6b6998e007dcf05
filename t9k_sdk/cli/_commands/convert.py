"""`t9k-sdk convert`: rewrite manifests in the current schema (legacy ColossalAIJob, `enable`)."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Mapping
from typing import Any

from t9k_sdk.cli._declare import Subcommands, command
from t9k_sdk.cli._errors import EXIT_FAILED, EXIT_OK, error

__all__ = ["add", "run"]

_HELP = """\
Read YAML manifests of T9k jobs, converting legacy forms (the pre-2025 ColossalAIJob
launcher/worker schema, `enable` for `enabled`), and write them in the current schema. Only the
lines of converted fields change: comments, key order, quoting and indentation stay as they
were, and a file already in the current schema is written back unchanged.

FILE is a YAML (or JSON) file, a directory (its *.yaml, *.yml and *.json files) or - (standard
input). A Python file is a usage error: `t9k-sdk render` writes Python jobs in the current
schema.
"""


def add(sub: Subcommands) -> None:
    parser = command(
        sub,
        "convert",
        help="rewrite manifests in the current schema (legacy ColossalAIJob, `enable`)",
        description=_HELP,
        examples="  t9k-sdk convert old.yaml > new.yaml\n  t9k-sdk convert -i manifests/*.yaml",
        run=run,
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="a YAML file, a directory or -")
    parser.add_argument(
        "-i", "--in-place", action="store_true", help="rewrite the files instead of printing"
    )


def run(args: argparse.Namespace) -> int:
    from t9k_sdk.cli import _sources
    from t9k_sdk.errors import InvalidManifestError, InvalidYAMLError

    outputs: list[tuple[_sources.Manifest, str]] = []
    for item in _sources.expand(args.files, _sources.CONVERT):
        assert isinstance(item, _sources.Manifest)  # CONVERT takes no Python
        try:
            outputs.append((item, _converted(_sources.read(item))))
        except (InvalidManifestError, InvalidYAMLError) as exc:
            error(f"{item.label}: {exc}")
            return EXIT_FAILED
    if not outputs:
        error(f"no manifests found in {', '.join(args.files)}")
        return EXIT_FAILED
    for item, text in outputs:
        if args.in_place and item.path is not None:
            item.path.write_text(text, encoding="utf-8")
            print(f"rewrote {item.label}", file=sys.stderr)
        else:
            sys.stdout.write(text)
    return EXIT_OK


def _converted(data: bytes) -> str:
    """The manifests of `data` in the current schema: the file with only the lines of converted
    fields changed (its comments, order and formatting kept), lists and empty documents kept."""
    from t9k_sdk import _yaml, codecs
    from t9k_sdk.errors import LegacyManifestWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LegacyManifestWarning)
        codecs.load_all_yaml(data)  # every problem, reported as everywhere else
        text = _yaml.decode(data)
        documents = [_current(doc) for doc in _yaml.load_documents(text) if doc is not None]
    return codecs.update_yaml(text, documents)


def _current(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A job's manifest, or a list's, in the current schema."""
    from t9k_sdk import _objects as o
    from t9k_sdk import codecs, models

    if o.kind(doc) in models.LIST_KINDS or o.kind(doc) == "List":
        return {**doc, "items": [_current(item) for item in doc["items"]]}
    return codecs.to_manifest(codecs.from_manifest(doc))
