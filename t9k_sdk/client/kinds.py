"""The three job kinds and the names users type for them: `gj`, `genericjob`, `GenericJobs`, ...

The REST description of each kind (group, version, plural) is the shared
`t9k_sdk._kube.resources.JOB_RESOURCES`, built from `t9k_sdk.models.JOB_KINDS`; a `JobKind` adds
what users type and the wire model class.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from t9k_sdk import models
from t9k_sdk._kube.resources import Resource, job_resource
from t9k_sdk.client.errors import UnknownKindError
from t9k_sdk.codecs import AnyJob

__all__ = ["KINDS", "JobKind", "KindLike", "resolve_kind"]


@dataclass(frozen=True)
class JobKind:
    """One job kind: its REST resource and the names users type for it."""

    resource: Resource
    """Group, version, plural and kind: the REST paths of the kind."""
    short_name: str
    """`gj`, `dj` or `caij`, as `kubectl` accepts them."""
    model: type[AnyJob]
    """The wire model class (`t9k_sdk.models.GenericJob`, ...)."""

    @property
    def kind(self) -> str:
        """`GenericJob`, `DeepSpeedJob` or `ColossalAIJob`."""
        return self.resource.kind

    @property
    def plural(self) -> str:
        """The resource name in URLs: `genericjobs`, ..."""
        return self.resource.plural

    @property
    def label(self) -> str:
        """Lower-case kind: the value of the `tensorstack.dev/component` label of its pods."""
        return self.kind.lower()

    def __str__(self) -> str:
        return self.kind


KINDS: tuple[JobKind, ...] = tuple(
    JobKind(job_resource(cls.KIND), cls.SHORT_NAME, cls) for cls in models.JOB_KINDS.values()
)
"""GenericJob, DeepSpeedJob, ColossalAIJob, in that order."""

_BY_NAME: dict[str, JobKind] = {
    alias: k for k in KINDS for alias in (k.kind.lower(), k.plural, k.short_name)
}

KindLike = str | JobKind | type[AnyJob]
"""A kind as the client methods accept it: a name (any case), a `JobKind`, or a model class."""


def resolve_kind(kind: KindLike) -> JobKind:
    """The `JobKind` for `gj`, `GenericJob`, `genericjobs`, `models.GenericJob`, ...

    Raises `UnknownKindError` with the accepted names (and the closest one) otherwise.
    """
    if isinstance(kind, JobKind):
        return kind
    if isinstance(kind, type):
        for k in KINDS:
            if k.model is kind:
                return k
        raise UnknownKindError(f"{kind.__name__} is not a T9k job class")
    key = kind.strip().lower()
    found = _BY_NAME.get(key)
    if found is not None:
        return found
    accepted = ", ".join(f"{k.short_name} ({k.kind})" for k in KINDS)
    close = difflib.get_close_matches(key, list(_BY_NAME), n=1, cutoff=0.6)
    hint = ""
    if close:
        guess = _BY_NAME[close[0]]
        hint = f"; did you mean {guess.short_name!r} ({guess.kind})?"
    raise UnknownKindError(f"unknown job kind {kind!r}: expected one of {accepted}{hint}")
