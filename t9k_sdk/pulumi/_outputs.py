"""Pulumi Outputs where a string is wanted: `deferred` placeholders and their resolution.

A builder's fields are typed `str`, so an Output goes in as a placeholder (`deferred`) that the
components swap for the Output's value when Pulumi knows it. The components' own string
arguments are typed `pulumi.Input[str]` and go through `t9k_sdk.pulumi._args.checked_input`.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator, Mapping
from typing import Any

import pulumi

from t9k_sdk.builders._common import register_argument_hook

__all__ = ["deferred", "output_of", "placeholders", "substitute", "tokens_in", "with_outputs"]

_PLACEHOLDER = re.compile(r"t9k-output-[0-9a-f]{12}")
# Placeholder -> the Output it stands for, for the lifetime of the Pulumi program's process.
_DEFERRED: dict[str, pulumi.Output[Any]] = {}


def deferred(value: pulumi.Input[str]) -> str:
    """A string that stands for a Pulumi Input (an Output of another resource, say) in a job.

    Builders take a `pulumi.Output` as it is once this package is imported, but their
    arguments are typed `str`: `deferred` returns a `str` (for mypy), and lets any string field,
    or part of one in an f-string, come from an Output: the image of a `docker.Image` built in
    the same stack, an env value, the name, namespace or labels. The job components replace
    each placeholder with the Output's value once it is known and validate the whole manifest
    then (an invalid value fails `up` with `InvalidJobOutputError`); while it is unknown
    (`preview`) the spec shows as unknown.

        image = docker.Image("trainer", ...).repo_digest
        job = t9k_sdk.GenericJob(name="mnist", replicas=[Replica(type="worker",
                                 image=deferred(image), ...)])
        t9k_sdk.pulumi.GenericJob("mnist", {"job": job})

    The components' own arguments (`T9kOperator`'s `image`, a job component's `namespace`, ...)
    take an Output directly; a `deferred` value, or an f-string holding one, works there too.

    The placeholder (`t9k-output-` and 12 hex digits) is a valid name, label value and image,
    so the builder still checks everything else at once; it is also what `t9k_sdk.to_manifest`
    and `t9k-sdk render` show, since only the Pulumi components resolve it. A plain `str` is
    returned as it is.
    """
    if isinstance(value, str):
        return value
    while True:
        token = f"t9k-output-{secrets.token_hex(6)}"
        if token not in _DEFERRED:
            break
    _DEFERRED[token] = pulumi.Output.from_input(value)
    return token


def _output_argument(value: object) -> str | None:
    """Builders given a Pulumi Output take it as if it came through `deferred`."""
    return deferred(value) if isinstance(value, pulumi.Output) else None


register_argument_hook(_output_argument)


def tokens_in(text: str) -> list[str]:
    """The `deferred` placeholders in `text`, each once, in order."""
    return list(dict.fromkeys(t for t in _PLACEHOLDER.findall(text) if t in _DEFERRED))


def output_of(token: str) -> pulumi.Output[Any]:
    """The Output that the placeholder `token` stands for."""
    return _DEFERRED[token]


def _strings(node: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string of a manifest (keys too) with its field path."""
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, Mapping):
        for key, value in node.items():
            sub = f"{path}.{key}" if path else str(key)
            yield from _strings(key, sub)
            yield from _strings(value, sub)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _strings(item, f"{path}[{index}]")


def placeholders(node: Any) -> Iterator[tuple[str, str]]:
    """(field path, placeholder) of every `deferred` placeholder in `node`."""
    for path, text in _strings(node):
        for token in tokens_in(text):
            yield path, token


def substitute(node: Any, values: Mapping[str, str]) -> Any:
    """`node` with each placeholder in `values` replaced by its value (keys too)."""
    if isinstance(node, str):
        return _PLACEHOLDER.sub(lambda m: values.get(m.group(), m.group()), node)
    if isinstance(node, Mapping):
        return {substitute(k, values): substitute(v, values) for k, v in node.items()}
    if isinstance(node, list):
        return [substitute(item, values) for item in node]
    return node


def with_outputs(node: Any) -> Any:
    """`node` (dicts, lists, strings) with every string value that holds placeholders replaced
    by an Output of the string with their values, for a resource's inputs: the rest of the
    resource stays known in a preview. The Outputs must resolve to strings."""
    if isinstance(node, str):
        tokens = tokens_in(node)
        if not tokens:
            return node
        if tokens == [node]:
            return output_of(node)
        return pulumi.Output.all(*map(output_of, tokens)).apply(
            lambda values: substitute(node, dict(zip(tokens, values, strict=True)))
        )
    if isinstance(node, Mapping):
        return {key: with_outputs(value) for key, value in node.items()}
    if isinstance(node, list):
        return [with_outputs(item) for item in node]
    return node
