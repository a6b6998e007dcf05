"""Why a job is where it is, in words (pure): per-pod state and findings.

    diagnose(job_manifest, pods, events, now) -> [Finding(...), ...]

Findings come most severe first: errors (the job cannot go on as it is), warnings (it goes on,
but something went wrong), then information.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from t9k_sdk import models
from t9k_sdk.client.format import human_age
from t9k_sdk.client.logs import replica_name
from t9k_sdk.client.status import (
    BARRIER_PREFIX,
    STUCK_REASONS,
    JobEvent,
    condition,
    parse_time,
    phase_of,
)

__all__ = ["Finding", "PodInfo", "diagnose", "pod_info"]

NO_STATUS_AFTER = 30.0
"""Seconds after which a job that still has no status means no operator is looking at it."""

Severity = Literal["error", "warning", "info"]
_ORDER = {"error": 0, "warning": 1, "info": 2}


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


def _containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((pod.get("status") or {}).get("containerStatuses") or ())


def _unschedulable(pod: Mapping[str, Any]) -> str | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return str(c.get("message") or c.get("reason") or "not scheduled")
    return None


def _describe_state(status: Mapping[str, Any]) -> tuple[str, str]:
    state = status.get("state") or {}
    if "running" in state:
        return "Running", ""
    if "waiting" in state:
        w = state["waiting"] or {}
        return f"Waiting: {w.get('reason', '')}".rstrip(": "), str(w.get("message") or "")
    if "terminated" in state:
        t = state["terminated"] or {}
        text = f"Terminated: {t.get('reason') or 'Unknown'} (exit code {t.get('exitCode')})"
        return text, str(t.get("message") or "").strip()
    return "Unknown", ""


def pod_info(pod: Mapping[str, Any]) -> PodInfo:
    """Summarise a raw pod for a table."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    containers = _containers(pod)
    restarts = sum(int(c.get("restartCount") or 0) for c in containers)
    phase = str(status.get("phase") or "Pending")
    if meta.get("deletionTimestamp"):
        phase = "Terminating"
    state, message = "", ""
    # The most telling container: a waiting or failed one before a running one.
    ranked = sorted(
        containers,
        key=lambda c: (
            0 if "waiting" in (c.get("state") or {}) else 1,
            0 if ((c.get("state") or {}).get("terminated") or {}).get("exitCode") else 1,
        ),
    )
    if ranked:
        state, message = _describe_state(ranked[0])
    unschedulable = _unschedulable(pod)
    if unschedulable and not containers:
        state, message = "Unschedulable", unschedulable
    elif not containers:
        state = "Scheduled" if spec.get("nodeName") else "Not scheduled yet"
    return PodInfo(
        name=str(meta.get("name", "")),
        replica=replica_name(pod),
        phase=phase,
        node=str(spec.get("nodeName") or ""),
        restarts=restarts,
        state=state,
        message=message,
        uid=str(meta.get("uid", "")),
        created=parse_time(meta.get("creationTimestamp")),
    )


def _requests(pod: Mapping[str, Any]) -> str:
    """`nvidia.com/gpu=99, cpu=4`: what the pod's containers ask for in all."""
    totals: dict[str, list[str]] = {}
    for c in (pod.get("spec") or {}).get("containers") or ():
        resources = c.get("resources") or {}
        asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for key, value in asked.items():
            totals.setdefault(str(key), []).append(str(value))
    return ", ".join(f"{k}={'+'.join(v)}" for k, v in sorted(totals.items()))


_HINTS = {
    "ErrImagePull": "check the image name and tag, and that the namespace can pull from the"
    " registry (imagePullSecrets for a private one)",
    "ImagePullBackOff": "check the image name and tag, and that the namespace can pull from the"
    " registry (imagePullSecrets for a private one)",
    "InvalidImageName": "the image reference is malformed: fix `image` in the pod template",
    "CrashLoopBackOff": "the container keeps exiting; read its log with `t9k-sdk logs`",
    "CreateContainerConfigError": "a Secret or ConfigMap the pod refers to (env, envFrom,"
    " volumes) is probably missing",
    "CreateContainerError": "the container runtime could not create the container; see the"
    " message and the pod's events",
    "RunContainerError": "the command could not be started: check that it exists in the image",
}


def _pod_findings(pod: Mapping[str, Any], kind: str, job: str) -> list[Finding]:
    info = pod_info(pod)
    subject = f"pod {info.name} ({info.replica})"
    out: list[Finding] = []
    if info.phase == "Terminating":
        return [Finding("info", subject, "is being deleted")]
    unschedulable = _unschedulable(pod)
    if unschedulable and not (pod.get("spec") or {}).get("nodeName"):
        asked = _requests(pod)
        advice = (
            f"it asks for {asked}; lower the request, or wait until a node has room"
            if asked
            else "check its node selector, affinity and tolerations against the nodes"
        )
        out.append(Finding("error", subject, f"cannot be scheduled: {unschedulable}", advice))
    for status in _containers(pod):
        name = status.get("name")
        state = status.get("state") or {}
        waiting = state.get("waiting")
        if waiting:
            reason = str(waiting.get("reason") or "")
            message = str(waiting.get("message") or "")
            detail = f": {message}" if message else ""
            severity: Severity = "error" if reason in STUCK_REASONS else "info"
            hint = _HINTS.get(reason)
            if reason == "CrashLoopBackOff":
                last = (status.get("lastState") or {}).get("terminated") or {}
                code = last.get("exitCode")
                if code is not None:
                    detail += f" (last exit code {code})"
                hint = f"read its log: t9k-sdk logs {kind} {job} {_replica_flags(pod)}"
            out.append(
                Finding(severity, subject, f"container {name} is waiting: {reason}{detail}", hint)
            )
        terminated = state.get("terminated") or {}
        code = terminated.get("exitCode")
        message = str(terminated.get("message") or "").strip()
        if message.startswith(BARRIER_PREFIX):
            out.append(
                Finding(
                    "error",
                    subject,
                    f"the launcher's readiness barrier gave up: {message}",
                    "every worker must be Running with sshd answering on its DNS name; check the"
                    " workers' state and logs, and that the image has sshd (spec.ssh.sshdPath)",
                )
            )
        elif code not in (None, 0):
            reason = terminated.get("reason") or "Error"
            text = f"container {name} exited with code {code} ({reason})"
            if message:
                text += f": {message}"
            hint = (
                "the container ran out of memory: raise its memory limit"
                if reason == "OOMKilled"
                else f"read its log: t9k-sdk logs {kind} {job} {_replica_flags(pod)}"
            )
            out.append(Finding("error", subject, text, hint))
        restarts = int(status.get("restartCount") or 0)
        if restarts:
            last = (status.get("lastState") or {}).get("terminated") or {}
            detail = f", last exit code {last.get('exitCode')}" if last else ""
            out.append(
                Finding(
                    "warning", subject, f"container {name} restarted {_times(restarts)}{detail}"
                )
            )
    pod_reason = (pod.get("status") or {}).get("reason")
    if info.phase == "Failed" and pod_reason and not any(f.severity == "error" for f in out):
        message = (pod.get("status") or {}).get("message") or ""
        out.append(Finding("error", subject, f"failed: {pod_reason} {message}".strip()))
    return out


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def _replica_flags(pod: Mapping[str, Any]) -> str:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    rtype = labels.get("replica-type")
    index = labels.get("replica-index")
    flags = f"--type {rtype}" if rtype else ""
    return f"{flags} --index {index}" if index not in (None, "") else flags


def diagnose(
    job: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    events: Sequence[JobEvent],
    now: datetime,
) -> list[Finding]:
    """Findings about a job (its manifest with status), its live pods and their events."""
    meta = job.get("metadata") or {}
    kind = str(job.get("kind", "job"))
    name = str(meta.get("name", ""))
    short = kind.lower()
    out: list[Finding] = []
    status = job.get("status") or {}
    phase = phase_of(job)
    created = parse_time(meta.get("creationTimestamp"))
    age = (now - created).total_seconds() if created else 0.0

    if not status:
        if age > NO_STATUS_AFTER:
            out.append(
                Finding(
                    "warning",
                    "job",
                    f"has no status {human_age(age)} after it was created: no operator has"
                    " processed it",
                    "check that t9k-operator is running and watches this namespace"
                    " (its log says which namespaces it watches)",
                )
            )
        else:
            out.append(
                Finding("info", "job", "was just created; the operator has not reported yet")
            )
    failed = condition(job, models.JobConditionType.FAILED.value)
    if phase == models.JobPhase.FAILED.value or (failed and failed.get("status") == "True"):
        reason = str((failed or {}).get("reason") or "Failed")
        message = str((failed or {}).get("message") or "the job failed")
        hint = (
            "fix the spec, then delete the job and apply it again"
            if reason == "InvalidSpec"
            else None
        )
        out.append(Finding("error", "job", f"failed ({reason}): {message}", hint))
    elif phase == models.JobPhase.SUCCEEDED.value:
        out.append(Finding("info", "job", "finished successfully"))
    elif phase == models.JobPhase.PAUSED.value:
        out.append(
            Finding(
                "info",
                "job",
                "is paused: its pods are deleted until it is resumed",
                f"resume it: t9k-sdk resume {short} {name}",
            )
        )
    running = condition(job, models.JobConditionType.RUNNING.value)
    for task in status.get("tasks") or ():
        count = int(task.get("restartCount") or 0)
        if count:
            out.append(
                Finding(
                    "warning",
                    "job",
                    f"the operator restarted {task.get('type')} replicas {_times(count)}",
                )
            )
    for pod in sorted(pods, key=lambda p: str((p.get("metadata") or {}).get("name", ""))):
        out.extend(_pod_findings(pod, short, name))
    # What the job's status remembers of pods that are gone (cleaned up, restarted).
    live = {str((p.get("metadata") or {}).get("name", "")) for p in pods}
    for task in status.get("tasks") or ():
        for replica in task.get("replicas") or ():
            if replica.get("name") in live:
                continue
            for c in replica.get("containers") or ():
                message = str(c.get("message") or "").strip()
                if message.startswith(BARRIER_PREFIX):
                    out.append(
                        Finding(
                            "error",
                            f"pod {replica.get('name')}",
                            f"the launcher's readiness barrier gave up: {message}",
                        )
                    )
    if (
        running is not None
        and running.get("status") == "False"
        and running.get("reason") in STUCK_REASONS
        and not any(f.severity == "error" for f in out)
    ):
        out.append(Finding("error", "job", f"{running.get('reason')}: {running.get('message')}"))
    explained = {f.message for f in out}
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
    if not any(f.severity in ("error", "warning") for f in out) and phase in (
        models.JobPhase.RUNNING.value,
        None,
        models.JobPhase.PENDING.value,
    ):
        running_pods = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")
        if phase == models.JobPhase.RUNNING.value:
            out.append(Finding("info", "job", f"{running_pods} of {len(pods)} pods are running"))
        elif pods:
            out.append(
                Finding(
                    "info",
                    "job",
                    f"{running_pods} of {len(pods)} pods are running; the others are starting",
                )
            )
    return sorted(out, key=lambda f: _ORDER[f.severity])
