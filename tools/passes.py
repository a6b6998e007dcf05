"""Record every reconcile pass a run makes, and replay the record against the core as it is now.

A refactor of the pure core (`t9k_sdk.reconcile`) must not move behaviour. This tool shows that
it does not, on every input the tests, the corpus and the fault campaign feed the core:

    python -m tools.passes record DIR -- pytest tests/reconcile tests/sdk tests/operator
    python -m tools.passes record DIR -- pytest tests/cluster/test_chaos.py
    python -m tools.passes replay DIR        # after the change: every plan byte-identical

`record` runs the command with a `sitecustomize` on PYTHONPATH that wraps
`t9k_sdk.reconcile.core.reconcile` in that process and every Python process it starts (the
operators of the fault campaign included). Each distinct call is kept once (by the digest of its
inputs): the job, what was observed, the clock, the batch limits in force (tests lower them), and
the plan the core returned. `replay` runs each input through the current core, under the same
limits, and compares the plans' text (their `repr`, dict order included) byte for byte; it prints the first differences and exits
1 if there is any.
"""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_SITE = """
import os, pickle, hashlib, functools
try:
    from t9k_sdk.reconcile import core as _core
except ImportError:  # a Python without t9k-sdk (a tool's own venv): nothing to record
    _core = None

_DIR = os.environ["T9K_RECORD_PASSES"]
_inner = _core.reconcile if _core is not None else None
_limits = ("POD_CREATES_PER_PASS", "PLAN_BYTES_PER_PASS")

@functools.wraps(_inner)
def reconcile(job_manifest, observed, *, now):
    limits = {n: getattr(_core, n) for n in _limits}
    plan = _inner(job_manifest, observed, now=now)
    try:
        data = pickle.dumps((dict(job_manifest), observed, now, limits), protocol=5)
    except Exception:
        return plan
    key = hashlib.sha256(data).hexdigest()[:32]
    path = os.path.join(_DIR, key + ".pickle")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            pickle.dump((data, pickle.dumps(plan, protocol=5)), f, protocol=5)
        os.replace(tmp, path)
    return plan

if _core is not None:
    _core.reconcile = reconcile
"""


def record(directory: Path, command: list[str]) -> int:
    """Run `command` with every reconcile pass recorded into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as site:
        Path(site, "sitecustomize.py").write_text(_SITE)
        path = os.pathsep.join(p for p in (site, os.environ.get("PYTHONPATH", "")) if p)
        env = {**os.environ, "PYTHONPATH": path, "T9K_RECORD_PASSES": str(directory.resolve())}
        return subprocess.call(command, env=env)


def _records(directory: Path) -> Iterator[tuple[str, bytes, bytes]]:
    for path in sorted(directory.glob("*.pickle")):
        with path.open("rb") as f:
            data, plan = pickle.load(f)
        yield path.stem, data, plan


def replay(directory: Path, show: int = 5) -> int:
    """Run every recorded input through the current core; 0 if every plan is byte-identical."""
    from t9k_sdk.reconcile import core

    total = 0
    different: list[str] = []
    for key, data, recorded in _records(directory):
        job, observed, now, limits = pickle.loads(data)
        saved = {name: getattr(core, name) for name in limits}
        try:
            for name, value in limits.items():
                setattr(core, name, value)
            plan: Any = core.reconcile(job, observed, now=now)
        finally:
            for name, value in saved.items():
                setattr(core, name, value)
        total += 1
        # repr, not the pickle: a pickle also records which equal strings are one object
        if repr(plan) != repr(pickle.loads(recorded)):
            different.append(key)
            if len(different) <= show:
                print(f"{key}: recorded\n  {pickle.loads(recorded)!r}\nnow\n  {plan!r}\n")
    print(
        f"{total} recorded passes replayed: {total - len(different)} identical,"
        f" {len(different)} different"
    )
    return 1 if different or not total else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.passes", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run a command with every reconcile pass recorded")
    rec.add_argument("directory", type=Path)
    rec.add_argument("argv", nargs=argparse.REMAINDER, help="-- then the command")
    rep = sub.add_parser("replay", help="replay a record against the current core")
    rep.add_argument("directory", type=Path)
    args = parser.parse_args(argv)
    if args.command == "record":
        command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        if not command:
            parser.error("record: give the command to run after --")
        return record(args.directory, command)
    return replay(args.directory)


if __name__ == "__main__":
    sys.exit(main())
