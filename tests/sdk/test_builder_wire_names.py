"""The builders write their jobs as the typed wire models, never as hand-spelled camelCase dicts:
a misspelled field (`claimNmae`, `image_pul_policy`) is then a mypy error, not a key that the
closed models refuse only when a user builds that job, or that a passthrough model keeps."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import t9k_sdk.builders

BUILDERS = Path(t9k_sdk.builders.__file__).parent
CAMEL = re.compile(r"[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*")
"""A wire field name (`claimName`); a wire path (`spec.runPolicy`) names a field in errors."""


def hand_spelled_wire_names(source: str) -> list[str]:
    """`line: name` of each camelCase string used as a key: in a dict display, a subscript,
    `.get()`/`.pop()`/`.setdefault()`, or as a keyword argument (`spec.update(cleanUpPolicy=)`).

    `_argument_synonyms` is left out: it names what a user may write instead of an argument
    (`replicaSpecs=` for `replicas=`), to suggest the argument in the error."""
    found: list[tuple[int, str]] = []
    tree = ast.parse(source)
    synonyms = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and node.target.id == "_argument_synonyms"
    }

    def check(node: ast.expr | None) -> None:
        is_string = isinstance(node, ast.Constant) and isinstance(node.value, str)
        if is_string and CAMEL.fullmatch(node.value):
            found.append((node.lineno, node.value))

    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and id(node) not in synonyms:
            for key in node.keys:
                check(key)
        elif isinstance(node, ast.Subscript):
            check(node.slice)
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr in {
                "get",
                "pop",
                "setdefault",
            }:
                check(node.args[0] if node.args else None)
            found += [(k.lineno, k.arg) for k in node.keywords if k.arg and CAMEL.fullmatch(k.arg)]
    return [f"{line}: {name}" for line, name in sorted(found)]


def test_the_builders_spell_no_wire_name_by_hand() -> None:
    found = {
        path.name: names
        for path in sorted(BUILDERS.glob("*.py"))
        if (names := hand_spelled_wire_names(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_scan_finds_the_dicts_the_builders_used_to_write() -> None:
    """What the builders wrote before they built the models: each way of spelling a key."""
    old = """
src = {"claimName": self.claim}
src["readOnly"] = True
mounts = list(c.get("volumeMounts") or [])
spec.update(cleanUpPolicy=self.clean_up_policy)
paths = {"spec.runPolicy.backoffLimit": "backoff_limit", "image": "image"}
_argument_synonyms: ClassVar[dict[str, str]] = {"replicaSpecs": "replicas"}
"""
    assert hand_spelled_wire_names(old) == [
        "2: claimName",
        "3: readOnly",
        "4: volumeMounts",
        "5: cleanUpPolicy",
    ]
