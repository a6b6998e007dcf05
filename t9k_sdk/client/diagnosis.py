"""Why a job is where it is, in words (pure): per-pod state and findings.

    diagnose(job_manifest, pods, events, now) -> [Finding(...), ...]

Findings come most severe first: errors (the job cannot go on as it is), warnings (it goes on,
but something went wrong), then information.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal, cast

from t9k_sdk import _conventions as conventions
from t9k_sdk import _objects as o
from t9k_sdk import models
from t9k_sdk._objects import condition, parse_time
from t9k_sdk.client._queue import QueueStanding, standing_words
from t9k_sdk.client._unschedulable import advice, held_back, requests, unschedulable
from t9k_sdk.client.format import human_age
from t9k_sdk.client.job_state import (
    BARRIER_PREFIX,
    STUCK_REASONS,
    JobEvent,
    phase_of,
    reported,
)
from t9k_sdk.client.logs import replica_name

__all__ = ["Finding", "PodInfo", "diagnose", "pod_info"]

NO_STATUS_AFTER = 30.0
"""Seconds after which a job that still has no status means no operator is looking at it."""

Severity = Literal["error", "warning", "info"]
_ORDER = {"error": 0, "warning": 1, "info": 2}
_ENDED = frozenset(
    {models.JobPhase.SUCCEEDED.value, models.JobPhase.FAILED.value, models.JobPhase.PAUSED.value}
)


@dataclass(frozen=True)
class Finding:
    """One thing worth knowing about a job."""

    severity: Severity
    subject: str
    """`job`, or `pod mnist-worker-0`."""
    message: str
    hint: str | None = None
    """What to do about it, when there is something to do."""

    def __str__(self) -> str:
        hint = f"\n    -> {self.hint}" if self.hint else ""
        return f"{self.severity}: {self.subject}: {self.message}{hint}"


@dataclass(frozen=True)
class PodInfo:
    """A pod of a job, as `describe` shows it."""

    name: str
    replica: str
    """`worker-0`, `launcher`."""
    phase: str
    node: str
    restarts: int
    state: str
    """`Running`, `Waiting: ImagePullBackOff`, `Terminated: Error (exit code 1)`, ..."""
    message: str
    """The waiting or termination message, or the scheduler's, if any."""
    uid: str
    created: datetime | None


def _describe_state(container: o.PodContainer) -> tuple[str, str]:
    state = container.state
    if state.running:
        return "Running", ""
    if (w := state.waiting) is not None:
        return f"Waiting: {w.reason}".rstrip(": "), w.message
    if (t := state.terminated) is not None:
        text = f"Terminated: {t.reason or 'Unknown'} (exit code {t.exit_code})"
        return text, t.message.strip()
    return "Unknown", ""


def _telling_first(container: o.PodContainer) -> tuple[int, int]:
    """Sort key: a waiting or failed container before a running one."""
    state = container.state
    terminated = state.terminated
    return (
        0 if state.waiting is not None else 1,
        0 if terminated is not None and terminated.exit_code else 1,
    )


def pod_info(pod: Mapping[str, Any]) -> PodInfo:
    """Summarise a raw pod for a table."""
    meta = o.meta(pod)
    containers = o.container_statuses(pod)
    restarts = sum(c.restart_count for c in containers)
    phase = o.phase(pod) or "Pending"
    if meta.deletion_timestamp:
        phase = "Terminating"
    state, message = "", ""
    ranked = sorted(containers, key=_telling_first)
    if ranked:
        state, message = _describe_state(ranked[0])
    waits = unschedulable(pod)
    if waits and not containers:
        state, message = "Unschedulable", waits
    elif not containers:
        state = "Scheduled" if o.node_name(pod) else "Not scheduled yet"
    return PodInfo(
        name=meta.name,
        replica=replica_name(pod),
        phase=phase,
        node=o.node_name(pod),
        restarts=restarts,
        state=state,
        message=message,
        uid=meta.uid,
        created=parse_time(meta.creation_timestamp),
    )


_HINTS = {
    "ErrImagePull": "check the image name and tag, and that the namespace can pull from the"
    " registry (imagePullSecrets for a private one)",
    "ImagePullBackOff": "check the image name and tag, and that the namespace can pull from the"
    " registry (imagePullSecrets for a private one)",
    "InvalidImageName": "the image reference is malformed: fix `image` in the pod template",
    "ErrImageNeverPull": "the image is not on the node and imagePullPolicy is Never: load the"
    " image onto the node, or let the kubelet pull it (imagePullPolicy IfNotPresent)",
    "CrashLoopBackOff": "the container keeps exiting; read its log with `t9k-sdk logs`",
    "CreateContainerConfigError": "a Secret or ConfigMap the pod refers to (env, envFrom,"
    " volumes) is probably missing",
    "CreateContainerError": "the container runtime could not create the container; see the"
    " message and the pod's events",
    "RunContainerError": "the command could not be started: check that it exists in the image",
}


def _pod_findings(pod: Mapping[str, Any], kind: str, job: str) -> list[Finding]:
    """A pod being deleted; else why it cannot be scheduled, each container's trouble, and
    the pod's own failure when no container explains it."""
    info = pod_info(pod)
    subject = f"pod {info.name} ({info.replica})"
    if info.phase == "Terminating":
        return [Finding("info", subject, "is being deleted")]
    out: list[Finding] = []
    waits = unschedulable(pod)
    if waits and not o.node_name(pod):
        hint = advice(waits, requests(pod), o.meta(pod).namespace)
        out.append(Finding("error", subject, f"cannot be scheduled: {waits}", hint))
    flags = f"{kind} {job} {_replica_flags(pod)}"
    for container in o.container_statuses(pod):
        out.extend(_waiting(container, subject, flags, o.meta(pod).namespace))
        out.extend(_exited(container, subject, flags))
        out.extend(_restarted(container, subject))
    pod_reason = o.status_reason(pod)
    if info.phase == "Failed" and pod_reason and not any(f.severity == "error" for f in out):
        message = o.status_message(pod)
        out.append(Finding("error", subject, f"failed: {pod_reason} {message}".strip()))
    return out


def _waiting(container: o.PodContainer, subject: str, flags: str, namespace: str) -> list[Finding]:
    """A container that waits: an error for a reason that will not pass by itself (image
    pulls, crash loops, a missing Secret, ...), information otherwise; `flags`: what
    `t9k-sdk logs` needs."""
    waiting = container.state.waiting
    if waiting is None or not waiting.raw:
        return []
    reason = waiting.reason
    message = waiting.message
    detail = f": {message}" if message else ""
    severity: Severity = "error" if reason in STUCK_REASONS else "info"
    hint = _HINTS.get(reason)
    if reason == "CreateContainerConfigError":
        hint = _missing_source(message, namespace) or hint
    if reason == "CrashLoopBackOff":
        last = container.last_state.terminated
        if last is not None and last.exit_code is not None:
            detail += f" (last exit code {last.exit_code})"
        hint = f"read its log: t9k-sdk logs {flags}"
    text = f"container {container.name} is waiting: {reason}{detail}"
    return [Finding(severity, subject, text, hint)]


_MISSING_SOURCE: Final = re.compile(r'\b(secret|configmap) "([^"]{1,253})" not found', re.I)
_MISSING_KEY: Final = re.compile(
    r"couldn't find key (\S{1,253}) in (Secret|ConfigMap) [^/\s]{1,63}/([^\s,;]{1,253})"
)


def _missing_source(message: str, namespace: str) -> str | None:
    """What to do about a Secret or ConfigMap (or a key of one) that a pod refers to and that
    does not exist, read from the kubelet's words; None when they name none."""
    where = f" in namespace {namespace}" if namespace else ""
    if found := _MISSING_KEY.search(message):
        key, kind, name = found.groups()
        return (
            f"the {kind} {name}{where} has no key {key}: add it, or fix the key in the pod"
            " template; the kubelet retries, and the container starts once it is there"
        )
    if found := _MISSING_SOURCE.search(message):
        kind = "Secret" if found.group(1).lower() == "secret" else "ConfigMap"
        return (
            f"the {kind} {found.group(2)} does not exist{where}: create it, or fix the pod"
            " template's reference to it; the kubelet retries, and the pod starts once it exists"
        )
    return None


def _failed_mounts(pods: Sequence[Mapping[str, Any]], events: Sequence[JobEvent]) -> list[Finding]:
    """A pod on a node that cannot start because a volume cannot be mounted (a missing
    Secret, ConfigMap or claim): the kubelet says so only in an Event."""
    out: list[Finding] = []
    for pod in pods:
        info = pod_info(pod)
        if info.phase != "Pending" or not o.node_name(pod):
            continue
        last = next(
            (
                e
                for e in reversed(events)
                if e.type == "Warning"
                and e.reason == "FailedMount"
                and e.object == f"Pod/{info.name}"
            ),
            None,
        )
        if last is None:
            continue
        hint = _missing_source(last.message, o.meta(pod).namespace) or (
            "check the pod's volumes: `kubectl describe pod` shows the kubelet's events"
        )
        subject = f"pod {info.name} ({info.replica})"
        out.append(Finding("error", subject, f"cannot start: {last.message}", hint))
    return out


def _exited(container: o.PodContainer, subject: str, flags: str) -> list[Finding]:
    """A container that ended: the launcher's readiness barrier gave up, or a non-zero exit."""
    terminated = container.state.terminated
    code = terminated.exit_code if terminated is not None else None
    message = terminated.message.strip() if terminated is not None else ""
    if message.startswith(BARRIER_PREFIX):
        return [
            Finding(
                "error",
                subject,
                f"the launcher's readiness barrier gave up: {message}",
                "every worker must be Running with sshd answering on its DNS name; check the"
                " workers' state and logs, and that the image has sshd (spec.ssh.sshdPath)",
            )
        ]
    if terminated is None or code in (None, 0):
        return []
    reason = terminated.reason or "Error"
    text = f"container {container.name} exited with code {code} ({reason})"
    if message:
        text += f": {message}"
    hint = (
        "the container ran out of memory: raise its memory limit"
        if reason == "OOMKilled"
        else f"read its log: t9k-sdk logs {flags}"
    )
    return [Finding("error", subject, text, hint)]


def _restarted(container: o.PodContainer, subject: str) -> list[Finding]:
    """A container the kubelet restarted, with its last exit code."""
    restarts = container.restart_count
    if not restarts:
        return []
    last = container.last_state.terminated
    detail = f", last exit code {last.exit_code}" if last is not None and last.raw else ""
    text = f"container {container.name} restarted {_times(restarts)}{detail}"
    return [Finding("warning", subject, text)]


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _replica_flags(pod: Mapping[str, Any]) -> str:
    labels = o.meta(pod).labels
    rtype = labels.get(conventions.REPLICA_TYPE)
    index = labels.get(conventions.REPLICA_INDEX)
    flags = f"--type {rtype}" if rtype else ""
    return f"{flags} --index {index}" if index not in (None, "") else flags


def diagnose(
    job: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    events: Sequence[JobEvent],
    now: datetime,
    queue: QueueStanding | None = None,
) -> list[Finding]:
    """Findings about a job (its manifest with status), its live pods and their events.

    One function per situation the job can be in, in the order their findings are collected
    (the sort below is stable): no status yet, failed / succeeded / paused, waiting for its
    workers, replicas restarted by the operator, pods placed while others find no room (no
    gang scheduling), each live pod, pods gone with a barrier's
    message, blocked, warning events not explained yet, and otherwise how far it has got.
    `queue`: where a job that waits for Kueue stands in its LocalQueue, when it was read.
    """
    meta = o.meta(job)
    kind = str(job.get("kind", "job"))
    name = meta.name
    short = kind.lower()
    phase = phase_of(job)
    created = parse_time(meta.creation_timestamp)
    age = (now - created).total_seconds() if created else 0.0
    running = condition(job, models.JobConditionType.RUNNING.value)

    out: list[Finding] = []
    if not reported(job):
        out.append(_unreported(age))
    out.extend(_by_phase(job, phase, short, name))
    out.extend(_waiting_for_workers(running, phase))
    out.extend(_kueue(job, running, phase, queue))
    out.extend(_operator_restarts(job))
    out.extend(_held_back(job, pods, phase, short, name))
    for pod in sorted(pods, key=lambda p: o.meta(p).name):
        out.extend(_pod_findings(pod, short, name))
    out.extend(_failed_mounts(pods, events))
    out.extend(_gone_pods(job, pods))
    out.extend(_blocked(running, out))
    out.extend(_warning_events(events, out))
    out.extend(_on_its_way(phase, pods, out))
    return sorted(out, key=lambda f: _ORDER[f.severity])


def _unreported(age: float) -> Finding:
    """No operator has written a status yet: just created, or no operator looks at the job."""
    if age > NO_STATUS_AFTER:
        return Finding(
            "warning",
            "job",
            f"has no status {human_age(age)} after it was created: no operator has" " processed it",
            "check that t9k-operator is running and watches this namespace"
            " (its log says which namespaces it watches)",
        )
    return Finding("info", "job", "was just created; the operator has not reported yet")


def _by_phase(job: Mapping[str, Any], phase: str | None, short: str, name: str) -> list[Finding]:
    """A failed job (its reason and message), a succeeded one, a paused one (how to resume)."""
    failed = condition(job, models.JobConditionType.FAILED.value)
    if phase == models.JobPhase.FAILED.value or (failed and failed.get("status") == "True"):
        reason = str((failed or {}).get("reason") or "Failed")
        message = str((failed or {}).get("message") or "the job failed")
        hint = (
            "fix the spec, then delete the job and apply it again"
            if reason == "InvalidSpec"
            else None
        )
        return [Finding("error", "job", f"failed ({reason}): {message}", hint)]
    if phase == models.JobPhase.SUCCEEDED.value:
        return [Finding("info", "job", "finished successfully")]
    if phase == models.JobPhase.PAUSED.value:
        return [
            Finding(
                "info",
                "job",
                "is paused: its pods are deleted until it is resumed",
                f"resume it: t9k-sdk resume {short} {name}",
            )
        ]
    return []


def _waiting_for_workers(running: Mapping[str, Any] | None, phase: str | None) -> list[Finding]:
    """An unfinished job whose launcher waits for its workers (which nothing times out)."""
    if (
        running is not None
        and running.get("status") == "False"
        and running.get("reason") == "WaitingForWorkers"
        and phase not in (models.JobPhase.FAILED.value, models.JobPhase.SUCCEEDED.value)
    ):
        return [
            Finding(
                "info",
                "job",
                f"{running.get('message')} The job waits as long as that takes: nothing fails"
                " it meanwhile",
                "the workers' own findings below say why they do not run yet",
            )
        ]
    return []


_KUEUE_HINTS: Final = {
    conventions.KUEUE_QUEUED: (
        "info",
        "it runs when Kueue admits it; `kubectl get workloads` and the ClusterQueue's status"
        " show the quota it waits for",
    ),
    conventions.KUEUE_EVICTED: (
        "info",
        "nothing to do: Kueue admits it again when there is room (the eviction spent no"
        " restart)",
    ),
    conventions.KUEUE_INADMISSIBLE: (
        "error",
        "check the LocalQueue's name and its ClusterQueue, or ask for less than the quota",
    ),
    conventions.KUEUE_QUEUE_UNAVAILABLE: (
        "error",
        f"install Kueue, or remove the label {conventions.KUEUE_QUEUE_LABEL} to run it without"
        " a queue",
    ),
}


def _kueue(
    job: Mapping[str, Any],
    running: Mapping[str, Any] | None,
    phase: str | None,
    queue: QueueStanding | None,
) -> list[Finding]:
    """A job that names a Kueue LocalQueue and is not admitted: Kueue's reason, from the
    job's Running condition (where the operator puts it), and where it stands in the queue."""
    labels = o.meta(job).labels or {}
    if conventions.KUEUE_QUEUE_LABEL not in labels or phase in _ENDED or running is None:
        return []
    reason = str(running.get("reason") or "")
    if running.get("status") != "False" or reason not in _KUEUE_HINTS:
        return []
    severity, hint = _KUEUE_HINTS[reason]
    name = labels[conventions.KUEUE_QUEUE_LABEL]
    message = f"not admitted by Kueue ({reason}, LocalQueue {name}): {running.get('message')}"
    if queue is not None and reason in (conventions.KUEUE_QUEUED, conventions.KUEUE_INADMISSIBLE):
        words = standing_words(queue)
        message = f"{message.rstrip('.')}. {words[:1].upper()}{words[1:]}" if words else message
    return [Finding(cast(Severity, severity), "job", message, hint)]


def _operator_restarts(job: Mapping[str, Any]) -> list[Finding]:
    """Replicas the operator restarted, per replica type."""
    return [
        Finding(
            "warning",
            "job",
            f"the operator restarted {task.type} replicas {_times(task.restart_count)}",
        )
        for task in o.tasks(job)
        if task.restart_count
    ]


def _held_back(
    job: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    phase: str | None,
    short: str,
    name: str,
) -> list[Finding]:
    """Some pods are placed and hold resources while the others find no room, and no gang
    scheduler (`spec.scheduler`) places the job's pods all or none: the job cannot start and
    keeps what it holds, and two such jobs wait on each other forever."""
    if phase in _ENDED or o.mapping(job.get("spec")).get("scheduler"):
        return []
    if conventions.KUEUE_QUEUE_LABEL in (o.meta(job).labels or {}):
        return []  # Kueue admits it whole
    found = held_back(pods)
    if found is None:
        return []
    total = found.placed + found.waiting
    return [
        Finding(
            "error",
            "job",
            f"{found.placed} of its pods are placed and hold {found.held}, while"
            f" {found.waiting} {'finds' if found.waiting == 1 else 'find'} no room"
            f" ({', '.join(found.short)}): nothing places the"
            " job's pods all or none, so the placed ones keep what they hold while the others"
            " wait; ranks that need each other hold it idle, and two jobs like this can wait"
            " on each other forever",
            f"free what it holds: t9k-sdk pause {short} {name}, and resume it when {total} pods"
            " fit at once; or lower the replicas or the requests; where the cluster runs Kueue,"
            f" label the job {conventions.KUEUE_QUEUE_LABEL}=<LocalQueue> so that it is"
            " admitted all or none",
        )
    ]


def _gone_pods(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """What the job's status remembers of pods that are gone (cleaned up, restarted): a
    readiness barrier that gave up."""
    out: list[Finding] = []
    live = {o.meta(p).name for p in pods}
    for replica in o.replicas(job):
        if replica.name in live:
            continue
        for c in replica.containers:
            message = c.message.strip()
            if message.startswith(BARRIER_PREFIX):
                out.append(
                    Finding(
                        "error",
                        f"pod {replica.name}",
                        f"the launcher's readiness barrier gave up: {message}",
                    )
                )
    return out


def _blocked(running: Mapping[str, Any] | None, found: Sequence[Finding]) -> list[Finding]:
    """The operator says the job cannot run (a stuck reason) and no finding has said why."""
    if (
        running is not None
        and running.get("status") == "False"
        and running.get("reason") in STUCK_REASONS
        and not any(f.severity == "error" for f in found)
    ):
        return [Finding("error", "job", f"{running.get('reason')}: {running.get('message')}")]
    return []


def _warning_events(events: Sequence[JobEvent], found: Sequence[Finding]) -> list[Finding]:
    """The latest warning events (five at most, each once) that no finding explains yet."""
    out: list[Finding] = []
    explained = {f.message for f in found}
    seen: set[tuple[str, str]] = set()
    for event in reversed(events):
        if event.type != "Warning" or (event.reason, event.message) in seen:
            continue
        seen.add((event.reason, event.message))
        if any(event.message and (event.message in m or m in event.message) for m in explained):
            continue
        out.append(Finding("warning", event.object, f"event {event.reason}: {event.message}"))
        if len(seen) >= 5:
            break
    return out


def _on_its_way(
    phase: str | None, pods: Sequence[Mapping[str, Any]], found: Sequence[Finding]
) -> list[Finding]:
    """A pending or running job with nothing wrong: how many of its pods run."""
    if any(f.severity in ("error", "warning") for f in found) or phase not in (
        models.JobPhase.RUNNING.value,
        None,
        models.JobPhase.PENDING.value,
    ):
        return []
    running_pods = sum(1 for p in pods if o.phase(p) == "Running")
    if phase == models.JobPhase.RUNNING.value:
        return [Finding("info", "job", f"{running_pods} of {len(pods)} pods are running")]
    if pods:
        return [
            Finding(
                "info",
                "job",
                f"{running_pods} of {len(pods)} pods are running; the others are starting",
            )
        ]
    return []
