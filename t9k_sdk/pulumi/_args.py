"""What the components share about their `args` dicts."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import pulumi

from t9k_sdk.pulumi._outputs import output_of, substitute, tokens_in

__all__ = ["InvalidOutputArgumentError", "checked_input", "describe", "unknown_keys_error"]

T = TypeVar("T")


class InvalidOutputArgumentError(pulumi.RunError):
    """A component's argument given as a `pulumi.Output` (or a `deferred` value) resolved, at
    `up`, to a value the argument does not take.

    The message is the one the ValueError of a plain string with that value has when the
    component is created, e.g. "T9kOperator 't9k': namespace 'ML' is not a valid namespace
    name: ...". A `pulumi.RunError` (and no ValueError, which Pulumi would wrap in its own with
    the resource's inputs), so `up` fails with the message and no Python stack trace."""


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


def checked_input(
    subject: str, argument: str, value: object, check: Callable[[str], T]
) -> T | pulumi.Output[T] | None:
    """A string argument (`pulumi.Input[str]`) of a component, passed through `check`.

    A plain string is checked now: `check`'s ValueError, prefixed with `subject` (the
    component and its name). An Output, an awaitable, or a string holding `deferred`
    placeholders is checked when its value is known: the same message, as
    `InvalidOutputArgumentError`, which fails the resources that use it. None stays None;
    anything else is a TypeError naming the argument.
    """
    if value is None:
        return None
    if isinstance(value, str):
        tokens = tokens_in(value)
        if not tokens:
            try:
                return check(value)
            except ValueError as err:
                raise ValueError(f"{subject}: {err}") from None

        def text(values: list[Any]) -> Any:
            # A value that is not a string is passed on for `resolved` to report.
            odd = [v for v in values if not isinstance(v, str)]
            if odd or tokens == [value]:
                return (odd or values)[0]
            return substitute(value, dict(zip(tokens, values, strict=True)))

        output: pulumi.Output[Any] = pulumi.Output.all(*map(output_of, tokens)).apply(text)
    elif isinstance(value, pulumi.Output) or inspect.isawaitable(value):
        output = pulumi.Output.from_input(value)
    else:
        raise TypeError(
            f"{subject}: {argument} must be a string or a pulumi.Output; got {describe(value)}"
        )

    def resolved(known: object) -> T:
        if not isinstance(known, str):
            raise InvalidOutputArgumentError(
                f"{subject}: {argument} must resolve to a string; got"
                f" {type(known).__name__} {known!r}"
            )
        try:
            return check(known)
        except ValueError as err:
            raise InvalidOutputArgumentError(f"{subject}: {err}") from None

    return output.apply(resolved)


def describe(value: object) -> str:
    """The type of `value`, for an error message ("nothing" for None)."""
    if value is None:
        return "nothing"
    cls = type(value)
    return f"{cls.__module__}.{cls.__qualname__}"
