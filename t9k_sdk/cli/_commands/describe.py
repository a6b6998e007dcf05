"""`t9k-sdk describe`: show a job in detail: spec, status, pods, events and a diagnosis."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from t9k_sdk.cli._declare import KINDS_HELP, Subcommands, command
from t9k_sdk.cli._errors import EXIT_OK, print_data, say

if TYPE_CHECKING:
    from datetime import datetime

    from t9k_sdk.cli._format import Cell, Painter
    from t9k_sdk.client.client import Description
    from t9k_sdk.client.diagnosis import Finding, PodInfo
    from t9k_sdk.client.job_state import JobEvent
    from t9k_sdk.codecs import AnyJob

__all__ = ["add", "run", "spec_summary"]


def add(sub: Subcommands) -> None:
    parser = command(
        sub,
        "describe",
        help="show a job in detail: spec, status, pods, events and a diagnosis",
        description="Show one job: a summary of its spec, its phase and conditions, each pod's"
        " state\n"
        "(node, restarts, container state with waiting reasons and exit codes), the events of\n"
        "the job and its pods, and a diagnosis: why pods are pending (the scheduler's message),\n"
        "image pull errors, crash loops, failures with exit codes and termination messages,\n"
        "restarts, an expired launcher barrier, or no operator looking at the job.\n\n"
        + KINDS_HELP,
        examples="  t9k-sdk describe gj mnist\n  t9k-sdk describe dj/bert -n team-a\n"
        "  t9k-sdk describe gj mnist -o json",
        run=run,
        cluster=True,
    )
    parser.add_argument("args", nargs="+", metavar="KIND NAME")
    parser.add_argument(
        "-o",
        "--output",
        choices=("text", "json", "yaml"),
        default="text",
        help="text (default), or the job, pods, events and findings as json or yaml",
    )


def run(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from t9k_sdk.cli import _cluster
    from t9k_sdk.cli._format import PHASE_STYLES, render_table
    from t9k_sdk.client.job_state import parse_time, replica_counts, restarts

    kind, name = _cluster.kind_and_name(args.args, "describe")
    paint = _cluster.painter(sys.stdout)
    with _cluster.connect(args) as client:
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


def spec_summary(job: AnyJob) -> list[str]:
    """A few lines on what the job runs: replicas, images, resources, policies, run mode."""
    from t9k_sdk import _objects as o
    from t9k_sdk import models
    from t9k_sdk.client.format import human_age
    from t9k_sdk.reconcile.kinds import rules_for

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
    scheduler = job.spec.scheduler.t9k_scheduler if job.spec.scheduler else None
    if scheduler is not None:
        lines.append(f"scheduler: t9k-scheduler, queue {scheduler.queue}")
    return lines


def _resources(container: dict[str, Any]) -> str:
    res = container.get("resources") or {}
    asked = {**(res.get("limits") or {}), **(res.get("requests") or {})}
    return ", ".join(f"{k}={v}" for k, v in sorted(asked.items()))


def _ago(when: datetime | None, now: datetime) -> str:
    from t9k_sdk.client.format import human_age

    return human_age((now - when).total_seconds()) if when else "<unknown>"


def _plain(value: Any) -> Any:
    """Dataclasses, datetimes and containers as JSON-ready data (times in ISO 8601)."""
    import dataclasses
    from datetime import datetime

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _description_data(d: Description) -> dict[str, Any]:
    """What `describe -o json|yaml` prints: the job, its pods, events and findings."""
    from t9k_sdk.cli import _cluster

    return {
        "job": _cluster.manifest(d.job),
        "pods": _plain(d.pods),
        "events": _plain(d.events),
        "findings": _plain(d.findings),
    }


def _indent(text: str) -> list[str]:
    return [f"  {line}" for line in text.split("\n")]


def _pod_table(pods: Sequence[PodInfo], paint: Painter) -> str:
    from t9k_sdk.cli._format import PHASE_STYLES, render_table

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
    from t9k_sdk.cli._format import render_table

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
