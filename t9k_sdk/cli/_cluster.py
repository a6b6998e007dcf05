"""What the cluster commands of `t9k-sdk` share when they run: the connection to the cluster,
the jobs of `-f`, KIND and NAME, how a job is named and printed.

    t9k-sdk apply -f jobs/bert.py --python      t9k-sdk wait dj bert --timeout 2h
    t9k-sdk get gj mnist -o yaml                t9k-sdk logs dj bert -f

Each command (`t9k_sdk.cli._commands`) imports this module when it runs, and calls it as
`_cluster.connect(args)`, ...: a test can stand in for the cluster here. The commands work
through `t9k_sdk.client.Client`, which is imported only when a command connects (it needs the
Kubernetes client, an extra). Their inputs (`-f`) are read by `t9k_sdk.cli._sources`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from t9k_sdk import codecs
from t9k_sdk._extras import install_hint
from t9k_sdk.cli import _sources
from t9k_sdk.cli._errors import UsageError, error, print_data
from t9k_sdk.cli._format import Painter, colour_wanted
from t9k_sdk.client.errors import ClientError, UnknownKindError
from t9k_sdk.client.kinds import JobKind, resolve_kind
from t9k_sdk.codecs import AnyJob

if TYPE_CHECKING:
    from t9k_sdk.client.client import Client

__all__ = [
    "connect",
    "kind",
    "kind_and_name",
    "load",
    "manifest",
    "painter",
    "print_objects",
    "ref",
    "split_kind_name",
]


def connect(args: argparse.Namespace) -> Client:
    """A client for the cluster of --kubeconfig, --context and -n."""
    try:
        from t9k_sdk.client.client import Client
    except ModuleNotFoundError as exc:
        raise ClientError(
            f"the cluster commands need the Kubernetes client ({exc.name} is not installed):\n"
            f"  {install_hint('client')}"
        ) from None
    return Client(
        kubeconfig=getattr(args, "kubeconfig", None),
        context=getattr(args, "context", None),
        namespace=getattr(args, "namespace", None),
    )


def painter(stream: TextIO) -> Painter:
    """Colours for `stream`, if it wants them (a terminal, no NO_COLOR)."""
    return Painter(colour_wanted(stream))


def ref(job: AnyJob | JobKind, name: str | None = None) -> str:
    """`genericjob/mnist`, as kubectl names objects."""
    if isinstance(job, JobKind):
        return f"{job.label}/{name}"
    return f"{job.kind.lower()}/{job.metadata.name}"


def split_kind_name(args: Sequence[str]) -> list[str]:
    """The positional arguments with one `KIND/NAME` split into KIND and NAME (as kubectl)."""
    if len(args) == 1 and "/" in args[0]:
        kind_text, _, name = args[0].partition("/")
        return [kind_text, name]
    return list(args)


def kind_and_name(args: Sequence[str], what: str) -> tuple[JobKind, str]:
    """KIND NAME or KIND/NAME."""
    args = split_kind_name(args)
    if len(args) != 2 or not args[1]:
        raise UsageError(f"{what} needs KIND and NAME (e.g. `gj mnist` or `gj/mnist`)")
    return kind(args[0]), args[1]


def kind(text: str) -> JobKind:
    """The kind of KIND; a usage error that lists the kinds when it is none of them."""
    try:
        return resolve_kind(text)
    except UnknownKindError as exc:
        raise UsageError(str(exc)) from None


_FILE_READERS = {"apply": _sources.APPLY, "diff": _sources.DIFF, "delete": _sources.DELETE}


def load(args: argparse.Namespace, verb: str) -> list[_sources.Built] | None:
    """The jobs of `args.filename`; None (after saying why) when any input is invalid."""
    found = _sources.load_jobs(
        _sources.expand(args.filename, _FILE_READERS[verb], python=args.python)
    )
    for message in found.errors:
        error(message)
    if found.errors:
        done = {"apply": "applied", "delete": "deleted", "diff": "compared"}[verb]
        error(f"nothing was {done} ({len(found.errors)} invalid input(s))")
        return None
    if not found.jobs:
        error(f"no jobs found in {', '.join(args.filename)}")
        return None
    return found.jobs


def manifest(job: AnyJob) -> dict[str, Any]:
    """The job as a manifest, without its managedFields."""
    data = codecs.to_manifest(job)
    data.get("metadata", {}).pop("managedFields", None)
    return data


def print_objects(jobs: Sequence[AnyJob], output: str, single: bool) -> None:
    """The jobs as yaml or json: one object if `single`, else a List (as kubectl)."""
    if single:
        payload: Any = manifest(jobs[0])
    else:
        payload = {
            "apiVersion": "v1",
            "kind": "List",
            "items": [manifest(j) for j in jobs],
            "metadata": {"resourceVersion": ""},
        }
    print_data(payload, output)
