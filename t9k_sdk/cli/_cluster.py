"""What the cluster commands of `t9k-sdk` do: apply, diff, get, describe, wait, logs, pause,
resume, scale, delete (their arguments and help are in `t9k_sdk.cli._commands`).

    t9k-sdk apply -f jobs/bert.py --python      t9k-sdk wait dj bert --timeout 2h
    t9k-sdk get                                 t9k-sdk logs dj bert -f
    t9k-sdk get gj mnist -o yaml                t9k-sdk describe dj bert

`t9k_sdk.cli._commands` imports this module when one of them runs. They do their work through
`t9k_sdk.client.Client`, which is imported only when a command connects (it needs the
Kubernetes client, an extra). Their inputs (`-f`) are read by
`t9k_sdk.cli._sources`; their errors and exit codes follow `t9k_sdk.cli._errors`.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from t9k_sdk import _objects as o
from t9k_sdk import codecs, models
from t9k_sdk._extras import install_hint
from t9k_sdk.cli import _sources
from t9k_sdk.cli._errors import (
    EXIT_DIFF,
    EXIT_DIFF_ERROR,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_TIMEOUT,
    UsageError,
    error,
    print_data,
    say,
)
from t9k_sdk.cli._format import (
    PHASE_STYLES,
    Cell,
    Painter,
    colour_wanted,
    for_terminal,
    job_row,
    parse_duration,
    render_table,
    table_headers,
    visible,
)
from t9k_sdk.client.diagnosis import Finding, PodInfo
from t9k_sdk.client.errors import ClientError, UnknownKindError, WaitError, WaitTimeoutError
from t9k_sdk.client.format import human_age
from t9k_sdk.client.kinds import JobKind, resolve_kind
from t9k_sdk.client.logs import LogLine
from t9k_sdk.client.status import (
    TERMINAL_PHASES,
    JobEvent,
    Progress,
    WaitTarget,
    parse_time,
    replica_counts,
    restarts,
)
from t9k_sdk.codecs import AnyJob
from t9k_sdk.reconcile.kinds import rules_for

if TYPE_CHECKING:
    from t9k_sdk.client.client import Client, Description

__all__ = ["spec_summary"]


def _ref(job: AnyJob | JobKind, name: str | None = None) -> str:
    """`genericjob/mnist`, as kubectl names objects."""
    if isinstance(job, JobKind):
        return f"{job.label}/{name}"
    return f"{job.kind.lower()}/{job.metadata.name}"


def _ago(when: datetime | None, now: datetime) -> str:
    return human_age((now - when).total_seconds()) if when else "<unknown>"


# -- connecting --------------------------------------------------------------------------------


def _connect(args: argparse.Namespace) -> Client:
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


def _split_kind_name(args: Sequence[str]) -> list[str]:
    """The positional arguments with one `KIND/NAME` split into KIND and NAME (as kubectl)."""
    if len(args) == 1 and "/" in args[0]:
        kind, _, name = args[0].partition("/")
        return [kind, name]
    return list(args)


def _kind_and_name(args: Sequence[str], what: str) -> tuple[JobKind, str]:
    """KIND NAME or KIND/NAME."""
    args = _split_kind_name(args)
    if len(args) != 2 or not args[1]:
        raise UsageError(f"{what} needs KIND and NAME (e.g. `gj mnist` or `gj/mnist`)")
    return _kind(args[0]), args[1]


def _kind(text: str) -> JobKind:
    try:
        return resolve_kind(text)
    except UnknownKindError as exc:
        raise UsageError(str(exc)) from None


# -- apply -------------------------------------------------------------------------------------


_FILE_READERS = {"apply": _sources.APPLY, "diff": _sources.DIFF, "delete": _sources.DELETE}


def _load(args: argparse.Namespace, verb: str) -> list[_sources.Built] | None:
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


def _cmd_apply(args: argparse.Namespace) -> int:
    jobs = _load(args, "apply")
    if jobs is None:
        return EXIT_FAILED
    if args.dry_run == "client":
        # Read and validated by the SDK (as the API server's schema would); nothing is sent.
        if args.output is not None:
            _print_applied([_in_namespace(item.job, args.namespace) for item in jobs], args.output)
            return EXIT_OK
        for item in jobs:
            say(f"{_ref(item.job)} valid (client dry run: not sent to the cluster)")
        return EXIT_OK
    failed = 0
    stored: list[AnyJob] = []
    with _connect(args) as client:
        for item in jobs:
            try:
                applied = client.apply_report(
                    item.job, args.namespace, dry_run=args.dry_run == "server"
                )
            except ClientError as exc:
                failed += 1
                error(f"{_ref(item.job)} ({item.origin}): {exc}")
                continue
            if args.output is None:
                say(str(applied))
            stored.append(applied.job)
    if args.output is not None and stored:
        _print_applied(stored, args.output)
    return EXIT_FAILED if failed else EXIT_OK


def _in_namespace(job: AnyJob, namespace: str | None) -> AnyJob:
    """The job with -n's namespace where it names none (as apply would send it)."""
    if namespace is None or job.metadata.namespace:
        return job
    return job.replace(metadata=job.metadata.replace(namespace=namespace))


def _print_applied(jobs: Sequence[AnyJob], output: str) -> None:
    """`apply -o`: the jobs as the API server stored them (or would, with a dry run)."""
    if output == "name":
        for job in jobs:
            say(_ref(job))
        return
    _print_objects(jobs, output, single=len(jobs) == 1)


# -- diff --------------------------------------------------------------------------------------


def _diff_text(ref: str, live: dict[str, Any] | None, merged: dict[str, Any]) -> str:
    """A unified diff of the YAML of the live object and of the object after applying."""
    import difflib

    before = codecs.dump_all_yaml([live]).splitlines(keepends=True) if live is not None else []
    after = codecs.dump_all_yaml([merged]).splitlines(keepends=True)
    return "".join(
        difflib.unified_diff(
            before,
            after,
            fromfile=f"live/{ref}" if live is not None else "/dev/null",
            tofile=f"merged/{ref}",
        )
    )


def _cmd_diff(args: argparse.Namespace) -> int:
    jobs = _load(args, "diff")
    if jobs is None:
        return EXIT_DIFF_ERROR
    differs = failed = False
    with _connect(args) as client:
        for item in jobs:
            try:
                live, merged = client.diff(
                    item.job, args.namespace, field_manager=args.field_manager
                )
            except ClientError as exc:
                failed = True
                error(f"{_ref(item.job)} ({item.origin}): {exc}")
                continue
            if live != merged:
                differs = True
                sys.stdout.write(for_terminal(_diff_text(_ref(item.job), live, merged)))
    if failed:
        return EXIT_DIFF_ERROR
    return EXIT_DIFF if differs else EXIT_OK


# -- get ---------------------------------------------------------------------------------------


def _manifest(job: AnyJob) -> dict[str, Any]:
    data = codecs.to_manifest(job)
    data.get("metadata", {}).pop("managedFields", None)
    return data


def _print_objects(jobs: Sequence[AnyJob], output: str, single: bool) -> None:
    if single:
        payload: Any = _manifest(jobs[0])
    else:
        payload = {
            "apiVersion": "v1",
            "kind": "List",
            "items": [_manifest(j) for j in jobs],
            "metadata": {"resourceVersion": ""},
        }
    print_data(payload, output)


def _cmd_get(args: argparse.Namespace) -> int:
    positional = _split_kind_name(args.args)
    if len(positional) > 2:
        raise UsageError("get takes at most KIND and NAME")
    kind = _kind(positional[0]) if positional else None
    name = positional[1] if len(positional) == 2 else None
    if args.all_namespaces and name:
        raise UsageError("a NAME cannot be combined with -A (--all-namespaces)")
    if args.selector is not None and name:
        raise UsageError("a NAME cannot be combined with -l (--selector)")
    if args.selector is not None and args.watch:
        raise UsageError("-l (--selector) cannot be combined with -w (--watch)")
    paint = Painter(colour_wanted(sys.stdout))
    wide = args.output == "wide"
    with _connect(args) as client:
        if args.watch:
            return _watch(client, args, kind, name, paint)
        if name is not None:
            assert kind is not None
            jobs = [client.get(kind, name)]
        else:
            jobs = client.list(
                kind, all_namespaces=args.all_namespaces, label_selector=args.selector
            )
        if args.output in ("yaml", "json"):
            _print_objects(jobs, args.output, single=name is not None)
            return EXIT_OK
        if args.output == "name":
            for job in jobs:
                say(_ref(job))
            return EXIT_OK
        if not jobs:
            where = "any namespace" if args.all_namespaces else f"namespace {client.namespace!r}"
            what = f"{kind.kind}s" if kind else "jobs"
            matching = f" matching {args.selector!r}" if args.selector is not None else ""
            say(f"No {what}{matching} found in {where}.", sys.stderr)
            return EXIT_OK
        now = time.time()
        rows = [job_row(j, now, namespace=args.all_namespaces, wide=wide) for j in jobs]
        say(render_table(table_headers(namespace=args.all_namespaces, wide=wide), rows, paint))
    return EXIT_OK


def _watch(
    client: Client, args: argparse.Namespace, kind: JobKind | None, name: str | None, paint: Painter
) -> int:
    """`get -w`: the current state, then a line per change. A named job: until it finishes."""
    wide = args.output == "wide"
    headers = table_headers(namespace=args.all_namespaces, wide=wide)
    # Rows are printed as changes arrive, so the columns get generous fixed widths.
    widths = [max(len(h), _WATCH_WIDTHS.get(h, 8)) for h in headers]
    header_shown = False
    timeout = parse_duration(args.watch_timeout) if args.watch_timeout else None
    seen = False
    for change, job in client.watch(
        kind, name, all_namespaces=args.all_namespaces, timeout=timeout
    ):
        seen = True
        if args.output == "json":
            say(json.dumps(_manifest(job)))
        elif args.output == "yaml":
            sys.stdout.write("---\n" + codecs.dump_all_yaml([_manifest(job)]))
            sys.stdout.flush()
        elif args.output == "name":
            say(_ref(job))
        else:
            row = job_row(job, time.time(), namespace=args.all_namespaces, wide=wide)
            if change == "DELETED":
                row[headers.index("PHASE")] = ("<deleted>", None)
            if not header_shown:
                say(_pad(headers, widths))
                header_shown = True
            say(_pad_row(row, widths, paint))
        phase = job.status.phase.value if job.status and job.status.phase else None
        if name is not None and (phase in TERMINAL_PHASES or change == "DELETED"):
            return EXIT_OK
    if name is not None and not seen:
        assert kind is not None
        client.get(kind, name)  # raises JobNotFoundError
    return EXIT_OK


_WATCH_WIDTHS = {"NAMESPACE": 16, "NAME": 20, "KIND": 13, "PHASE": 9, "REASON": 14}


def _pad(headers: Sequence[str], widths: Sequence[int]) -> str:
    return "   ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()


def _pad_row(row: Sequence[Cell], widths: Sequence[int], paint: Painter) -> str:
    out = []
    for i, cell in enumerate(row):
        text, style = (cell, None) if isinstance(cell, str) else cell
        text = visible(text, one_line=True)
        pad = "" if i == len(row) - 1 else " " * max(0, widths[i] - len(text))
        out.append(paint(text, style) + pad)
    return "   ".join(out).rstrip()


# -- describe ----------------------------------------------------------------------------------


def _resources(container: dict[str, Any]) -> str:
    res = container.get("resources") or {}
    asked = {**(res.get("limits") or {}), **(res.get("requests") or {})}
    return ", ".join(f"{k}={v}" for k, v in sorted(asked.items()))


def spec_summary(job: AnyJob) -> list[str]:
    """A few lines on what the job runs: replicas, images, resources, policies, run mode."""
    lines: list[str] = []
    rules = rules_for(job)
    for group in rules.groups():
        containers = o.spec(group.template).get("containers") or [{}]
        main = containers[0]
        image = main.get("image", "?")
        resources = _resources(main)
        policy = f"restart {group.policy.value}"
        if group.limit:
            policy += f" (up to {group.limit} times{' per job' if rules.budget == 'job' else ''})"
        extra = f", {resources}" if resources else ""
        lines.append(f"{group.type}: {group.count} x {image}{extra}; {policy}")
    spec = job.spec
    if isinstance(job, models.GenericJob):
        assert isinstance(spec, models.GenericJobSpec)
        for label, rules_list in (("success", spec.success_rules), ("failure", spec.failure_rules)):
            if rules_list:
                text = " or ".join(
                    " and ".join(f"{t}[{','.join(str(i) for i in idx)}]" for t, idx in r.items())
                    for r in rules_list
                )
                lines.append(f"{label} when: {text}")
        if spec.clean_up_policy:
            lines.append(f"clean-up policy: {spec.clean_up_policy.value}")
    if isinstance(job, models.DeepSpeedJob):
        elastic = job.spec.elastic
        if elastic is not None and elastic.enabled:
            lines.append(
                f"elastic: {elastic.min_replicas}..{elastic.max_replicas} workers, expected"
                f" {elastic.expected_replicas or job.spec.worker.replicas or 1}"
            )
        run_policy = job.spec.run_policy
        if run_policy is not None:
            parts = []
            if run_policy.backoff_limit is not None:
                parts.append(f"backoff limit {run_policy.backoff_limit}")
            if run_policy.active_deadline_seconds:
                parts.append(f"deadline {human_age(run_policy.active_deadline_seconds)}")
            if run_policy.clean_up_policy:
                parts.append(f"clean-up policy {run_policy.clean_up_policy.value}")
            if parts:
                lines.append("run policy: " + ", ".join(parts))
    if isinstance(job, models.ColossalAIJob):
        lines.append(f"script: {' '.join(job.spec.torch_config.script)}")
    mode = rules.run_mode()
    if mode.pause is not None and mode.pause.enabled:
        lines.append("run mode: paused (spec.runMode.pause.enabled)")
    if mode.debug is not None and mode.debug.enabled:
        lines.append("run mode: debug (pods start without the training command)")
    scheduler = rules.scheduler()
    if scheduler is not None:
        lines.append(f"scheduler: t9k-scheduler, queue {scheduler.queue}")
    return lines


def _cmd_describe(args: argparse.Namespace) -> int:
    kind, name = _kind_and_name(args.args, "describe")
    paint = Painter(colour_wanted(sys.stdout))
    with _connect(args) as client:
        d = client.describe(kind, name)
    if args.output in ("json", "yaml"):
        print_data(_description_data(d), args.output)
        return EXIT_OK
    now = datetime.now(UTC)
    job = d.job
    phase = job.status.phase.value if job.status and job.status.phase else "<none>"
    running, total = replica_counts(job)
    created = parse_time(job.metadata.creation_timestamp)
    out: list[str] = [
        f"Name:        {job.metadata.name}",
        f"Namespace:   {job.metadata.namespace}",
        f"Kind:        {job.kind}",
        f"Created:     {created.isoformat() if created else '<unknown>'} ({_ago(created, now)} ago)",
        f"Phase:       {paint(phase, PHASE_STYLES.get(phase))}",
        f"Replicas:    {running}/{total} running, {restarts(job)} restarts",
        "Spec:",
        *(f"  {line}" for line in spec_summary(job)),
        "Conditions:",
    ]
    conditions = job.status.conditions or [] if job.status else []
    if conditions:
        rows: list[list[Cell]] = [
            [
                c.type.value,
                c.status.value,
                c.reason or "",
                _ago(parse_time(c.last_transition_time), now),
                c.message or "",
            ]
            for c in conditions
        ]
        out += _indent(render_table(["TYPE", "STATUS", "REASON", "AGE", "MESSAGE"], rows, paint))
    else:
        out.append("  <none: the operator has not reported on the job>")
    out.append("Pods:")
    if d.pods:
        out += _indent(_pod_table(d.pods, paint))
    else:
        out.append("  <none>")
    out.append("Events:")
    if d.events:
        out += _indent(_event_table(d.events[-20:], now, paint))
    else:
        out.append("  <none>")
    out.append("Diagnosis:")
    out += [f"  {line}" for f in d.findings for line in _finding_lines(f, paint)]
    say("\n".join(out))
    return EXIT_OK


def _plain(value: Any) -> Any:
    """Dataclasses, datetimes and containers as JSON-ready data (times in ISO 8601)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _description_data(d: Description) -> dict[str, Any]:
    """What `describe -o json|yaml` prints: the job, its pods, events and findings."""
    return {
        "job": _manifest(d.job),
        "pods": _plain(d.pods),
        "events": _plain(d.events),
        "findings": _plain(d.findings),
    }


def _indent(text: str) -> list[str]:
    return [f"  {line}" for line in text.split("\n")]


def _pod_table(pods: Sequence[PodInfo], paint: Painter) -> str:
    rows: list[list[Cell]] = [
        [
            p.name,
            p.replica,
            (p.phase, PHASE_STYLES.get(p.phase)),
            p.node or "<none>",
            str(p.restarts),
            p.state,
            p.message,
        ]
        for p in pods
    ]
    return render_table(
        ["POD", "REPLICA", "PHASE", "NODE", "RESTARTS", "STATE", "MESSAGE"], rows, paint
    )


def _event_table(events: Sequence[JobEvent], now: datetime, paint: Painter) -> str:
    rows: list[list[Cell]] = [
        [
            _ago(e.time, now),
            (e.type, "yellow" if e.type == "Warning" else None),
            e.reason,
            e.object,
            e.message + (f" (x{e.count})" if e.count > 1 else ""),
        ]
        for e in events
    ]
    return render_table(["AGE", "TYPE", "REASON", "OBJECT", "MESSAGE"], rows, paint)


_SEVERITY_STYLES = {"error": "red", "warning": "yellow", "info": None}


def _finding_lines(finding: Finding, paint: Painter) -> list[str]:
    head = f"{paint(finding.severity, _SEVERITY_STYLES[finding.severity])}: {finding.subject}:"
    lines = [f"{head} {finding.message}"]
    if finding.hint:
        lines.append(f"  -> {finding.hint}")
    return lines


# -- wait --------------------------------------------------------------------------------------


def _wait_target(text: str) -> WaitTarget:
    """`--for`, parsed once, when the command line is read (argparse's `type`)."""
    try:
        return WaitTarget.parse(text)
    except ValueError as exc:
        message = str(exc)
        if repr(text) not in message:
            message = f"{text!r}: {message}"
        if "phase=PHASE" not in message:
            message += " (--for takes phase=PHASE or condition=TYPE[=True|False])"
        raise argparse.ArgumentTypeError(message) from None


def _cmd_wait(args: argparse.Namespace) -> int:
    kind, name = _kind_and_name(args.args, "wait")
    target: WaitTarget = args.for_
    try:
        timeout = parse_duration(args.timeout) if args.timeout.lower() != "none" else None
        timeout = timeout or None  # 0: no limit
        grace = parse_duration(args.stuck_grace)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    err = sys.stderr
    paint = Painter(colour_wanted(err))
    start = time.monotonic()
    ref = f"{kind.label}/{name}"

    def progress(step: Progress) -> None:
        elapsed = human_age(time.monotonic() - start)
        line = step.line.replace(step.phase, paint(step.phase, PHASE_STYLES.get(step.phase)), 1)
        if step.stuck is not None and not step.stuck.immediate:
            line += f" [stuck: gives up after {human_age(grace)} unless this changes]"
        say(f"[{elapsed:>5}] {ref} {line}", err)

    with _connect(args) as client:
        try:
            job = client.wait(
                kind,
                name,
                target=target,
                timeout=timeout,
                stuck_grace=grace,
                on_progress=None if args.quiet else progress,
            )
        except WaitTimeoutError as exc:
            error(f"{ref}: timed out: {exc.message}")
            return EXIT_TIMEOUT
        except WaitError as exc:
            error(f"{ref}: {exc.reason}: {exc.message}")
            ns = f" -n {exc.namespace}" if args.namespace else ""
            say(f"  see `t9k-sdk describe {kind.short_name} {name}{ns}` for details", sys.stderr)
            return EXIT_FAILED
    elapsed = human_age(time.monotonic() - start)
    say(f"{_ref(job)} {target} reached after {elapsed}")
    return EXIT_OK


# -- logs --------------------------------------------------------------------------------------

_REPLICA_COLOURS = ("cyan", "magenta", "green", "yellow", "blue")


def _cmd_logs(args: argparse.Namespace) -> int:
    kind, name = _kind_and_name(args.args, "logs")
    if args.tail is not None and args.tail < 0:
        raise UsageError(f"--tail must be >= 0; got {args.tail}")
    paint = Painter(colour_wanted(sys.stdout))
    colours: dict[str, str] = {}
    cycle = itertools.cycle(_REPLICA_COLOURS)
    with _connect(args) as client:
        lines: Iterator[LogLine] = client.logs(
            kind,
            name,
            replica_type=args.type,
            index=args.index,
            follow=args.follow,
            tail=args.tail,
            container=args.container,
            timestamps=args.timestamps,
        )
        printed = notices = 0
        try:
            for line in lines:
                if line.notice:
                    notices += 1
                    say(f"[{line.replica}] {line.text}", sys.stderr)
                    continue
                printed += 1
                colour = colours.setdefault(line.replica, next(cycle))
                prefix = paint(f"[{line.replica}]", colour)
                text = line.text if args.raw else visible(line.text)
                sys.stdout.write(f"{for_terminal(prefix)} {text}\n")
                if args.follow:
                    sys.stdout.flush()
        finally:
            close = getattr(lines, "close", None)
            if callable(close):
                close()
    if notices and not printed:
        error(f"no log of {kind.label}/{name} could be read (see the messages above)")
        return EXIT_FAILED
    return EXIT_OK


# -- pause, resume, scale, delete ----------------------------------------------------------------


def _cmd_pause(args: argparse.Namespace) -> int:
    kind, name = _kind_and_name(args.args, args.command)
    with _connect(args) as client:
        if args.command == "pause":
            job = client.pause(kind, name)
            say(
                f"{_ref(job)} paused (its pods are being deleted; resume it with"
                f" `t9k-sdk resume {kind.short_name} {name}`)"
            )
        else:
            job = client.resume(kind, name)
            say(f"{_ref(job)} resumed")
    return EXIT_OK


def _cmd_scale(args: argparse.Namespace) -> int:
    positional = _split_kind_name(args.args)
    if len(positional) == 2:
        if _kind(positional[0]).kind != "DeepSpeedJob":
            raise UsageError("only elastic DeepSpeedJobs (dj) can be scaled")
        positional = positional[1:]
    if len(positional) != 1:
        raise UsageError("scale needs the DeepSpeedJob's NAME (optionally after `dj`)")
    with _connect(args) as client:
        job = client.scale(positional[0], args.replicas)
    elastic = job.spec.elastic
    bounds = f" (elastic {elastic.min_replicas}..{elastic.max_replicas})" if elastic else ""
    say(f"{_ref(job)} scaled to {args.replicas} workers{bounds}")
    return EXIT_OK


def _cmd_delete(args: argparse.Namespace) -> int:
    positional = _split_kind_name(args.args)
    if args.filename:
        if positional or args.selector is not None:
            raise UsageError(
                "-f (--filename) cannot be combined with KIND, NAME or -l (--selector)"
            )
        return _delete_files(args)
    if args.selector is not None:
        if len(positional) > 1:
            raise UsageError(
                "-l (--selector) takes no NAME: give KIND (or nothing, for every kind)"
            )
        kind = _kind(positional[0]) if positional else None
        with _connect(args) as client:
            jobs = client.list(kind, label_selector=args.selector)
            if not jobs:
                what = f"{kind.kind}s" if kind else "jobs"
                say(
                    f"No {what} matching {args.selector!r} found in namespace"
                    f" {client.namespace!r}.",
                    sys.stderr,
                )
                return EXIT_OK
            return _delete_each(
                client, args, [(resolve_kind(j.kind), j.metadata.name or "", None) for j in jobs]
            )
    if len(positional) < 2:
        raise UsageError("delete needs KIND and NAME (e.g. `gj mnist`), -l SELECTOR, or -f FILE")
    kind = _kind(positional[0])
    with _connect(args) as client:
        return _delete_each(client, args, [(kind, name, None) for name in positional[1:]])


def _delete_files(args: argparse.Namespace) -> int:
    jobs = _load(args, "delete")
    if jobs is None:
        return EXIT_FAILED
    with _connect(args) as client:
        return _delete_each(
            client,
            args,
            [
                (resolve_kind(i.job.kind), i.job.metadata.name or "", i.job.metadata.namespace)
                for i in jobs
            ],
        )


def _delete_each(
    client: Client, args: argparse.Namespace, targets: Sequence[tuple[JobKind, str, str | None]]
) -> int:
    status = EXIT_OK
    for kind, name, namespace in targets:
        if namespace and args.namespace and namespace != args.namespace:
            error(
                f"{kind.kind} {name!r} declares namespace {namespace!r} but namespace"
                f" {args.namespace!r} was asked for; remove one of them"
            )
            status = EXIT_FAILED
            continue
        try:
            client.delete(kind, name, namespace, wait=args.wait)
        except ClientError as exc:
            if args.ignore_not_found and getattr(exc, "status", None) == 404:
                continue
            error(str(exc))
            status = EXIT_FAILED
            continue
        say(f"{kind.label}/{name} deleted")
    return status
