"""Why a job is stuck or failed, in words, from pod dicts as the API server returns them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from t9k_sdk.client.diagnosis import Finding, diagnose, pod_info
from t9k_sdk.client.job_state import JobEvent

NOW = datetime(2026, 1, 1, 12, 10, tzinfo=UTC)
BARRIER = "t9k bootstrap: worker bert-worker-1.bert: sshd did not answer within 600s"


def job(status: dict[str, Any] | None = None, created_ago: float = 600) -> dict[str, Any]:
    created = (NOW - timedelta(seconds=created_ago)).isoformat()
    return {
        "kind": "GenericJob",
        "metadata": {"name": "mnist", "creationTimestamp": created},
        "status": status if status is not None else {"phase": "Pending"},
    }


def pod(
    index: int = 0,
    *,
    phase: str = "Running",
    node: str | None = "node-1",
    containers: list[dict[str, Any]] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    limits: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {"name": "worker", "resources": {"limits": limits}} if limits else {"name": "worker"}
        ]
    }
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {
            "name": f"mnist-worker-{index}",
            "uid": f"u{index}",
            "labels": {"replica-type": "worker", "replica-index": str(index)},
        },
        "spec": spec,
        "status": {
            "phase": phase,
            "containerStatuses": containers or [],
            "conditions": conditions or [],
        },
    }


def messages(findings: list[Finding]) -> list[str]:
    return [f"{f.severity}: {f.subject}: {f.message}" for f in findings]


def test_an_unschedulable_pod_shows_the_schedulers_message_and_what_it_asks_for() -> None:
    stuck = pod(
        node=None,
        phase="Pending",
        limits={"nvidia.com/gpu": "99"},
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
            }
        ],
    )
    findings = diagnose(job(), [stuck], [], NOW)
    assert findings[0] == Finding(
        "error",
        "pod mnist-worker-0 (worker-0)",
        "cannot be scheduled: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
        "it asks for nvidia.com/gpu=99; lower the request, or wait until a node has room",
    )


def test_an_image_pull_error_is_an_error_with_advice_on_the_image() -> None:
    waiting = pod(
        containers=[
            {
                "name": "worker",
                "state": {
                    "waiting": {
                        "reason": "ImagePullBackOff",
                        "message": 'Back-off pulling image "pytorch/pytorh:2"',
                    }
                },
            }
        ],
        phase="Pending",
    )
    (finding,) = [f for f in diagnose(job(), [waiting], [], NOW) if f.severity == "error"]
    assert finding.message == (
        'container worker is waiting: ImagePullBackOff: Back-off pulling image "pytorch/pytorh:2"'
    )
    assert finding.hint is not None
    assert "image name and tag" in finding.hint


def test_a_crash_loop_gives_the_last_exit_code_restarts_and_the_logs_command() -> None:
    crashing = pod(
        containers=[
            {
                "name": "worker",
                "restartCount": 5,
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 2m40s"}},
                "lastState": {"terminated": {"exitCode": 2, "reason": "Error"}},
            }
        ]
    )
    found = messages(diagnose(job(), [crashing], [], NOW))
    assert found[:2] == [
        "error: pod mnist-worker-0 (worker-0): container worker is waiting: CrashLoopBackOff:"
        " back-off 2m40s (last exit code 2)",
        "warning: pod mnist-worker-0 (worker-0): container worker restarted 5 times, last exit"
        " code 2",
    ]
    hints = [f.hint for f in diagnose(job(), [crashing], [], NOW) if f.hint]
    assert hints == ["read its log: t9k-sdk logs genericjob mnist --type worker --index 0"]


def test_a_failed_pod_shows_its_exit_code_and_termination_message() -> None:
    failed = pod(
        phase="Failed",
        containers=[
            {
                "name": "worker",
                "state": {
                    "terminated": {
                        "exitCode": 137,
                        "reason": "OOMKilled",
                        "message": "killed at step 1200",
                    }
                },
            }
        ],
    )
    status = {
        "phase": "Failed",
        "conditions": [
            {
                "type": "Failed",
                "status": "True",
                "reason": "Failed",
                "message": "Pod[mnist-worker-0] exited with error code 137",
            }
        ],
    }
    findings = diagnose(job(status), [failed], [], NOW)
    assert messages(findings)[:2] == [
        "error: job: failed (Failed): Pod[mnist-worker-0] exited with error code 137",
        "error: pod mnist-worker-0 (worker-0): container worker exited with code 137"
        " (OOMKilled): killed at step 1200",
    ]
    assert findings[1].hint == "the container ran out of memory: raise its memory limit"


def test_an_expired_barrier_is_named_also_after_its_pod_is_gone() -> None:
    status = {
        "phase": "Running",
        "tasks": [
            {
                "type": "worker",
                "replicas": [
                    {
                        "name": "bert-worker-0",
                        "containers": [{"name": "worker", "exitCode": 124, "message": BARRIER}],
                    }
                ],
            }
        ],
    }
    findings = diagnose(job(status), [], [], NOW)
    assert messages(findings) == [
        f"error: pod bert-worker-0: the launcher's readiness barrier gave up: {BARRIER}"
    ]


def test_a_job_without_status_after_a_while_points_at_the_operator() -> None:
    (finding,) = diagnose(job({}, created_ago=90), [], [], NOW)
    assert finding.severity == "warning"
    assert finding.message == "has no status 90s after it was created: no operator has processed it"
    assert finding.hint is not None
    assert "t9k-operator is running" in finding.hint
    (fresh,) = diagnose(job({}, created_ago=3), [], [], NOW)
    assert fresh.severity == "info"
    # what the API server shows before any operator wrote the status (the CRDs' default)
    (shown,) = diagnose(job({"observedGeneration": 0}, created_ago=90), [], [], NOW)
    assert shown == finding


def test_a_paused_job_says_how_to_resume_it() -> None:
    (finding,) = diagnose(job({"phase": "Paused"}), [], [], NOW)
    assert finding.hint == "resume it: t9k-sdk resume genericjob mnist"


def test_warning_events_not_explained_otherwise_are_listed_once() -> None:
    events = [
        JobEvent(NOW, "Warning", "FailedCreate", "quota exceeded", "GenericJob/mnist"),
        JobEvent(NOW, "Warning", "FailedCreate", "quota exceeded", "GenericJob/mnist"),
        JobEvent(NOW, "Normal", "Pending", "The job is pending.", "GenericJob/mnist"),
    ]
    assert messages(diagnose(job(), [], events, NOW)) == [
        "warning: GenericJob/mnist: event FailedCreate: quota exceeded"
    ]


def test_a_healthy_running_job_says_so_and_errors_come_first() -> None:
    running = [pod(0, containers=[{"name": "worker", "state": {"running": {}}}]), pod(1)]
    assert messages(diagnose(job({"phase": "Running"}), running, [], NOW)) == [
        "info: job: 2 of 2 pods are running"
    ]
    failing = pod(
        2,
        phase="Failed",
        containers=[{"name": "worker", "state": {"terminated": {"exitCode": 1}}}],
    )
    order = [f.severity for f in diagnose(job({"phase": "Paused"}), [failing], [], NOW)]
    assert order == sorted(order, key=["error", "warning", "info"].index)


def test_pod_info_summarises_state_for_describe() -> None:
    info = pod_info(
        pod(
            containers=[
                {
                    "name": "worker",
                    "restartCount": 1,
                    "state": {"terminated": {"exitCode": 3, "reason": "Error", "message": "boom"}},
                }
            ],
            phase="Failed",
        )
    )
    assert (info.replica, info.phase, info.node, info.restarts) == (
        "worker-0",
        "Failed",
        "node-1",
        1,
    )
    assert (info.state, info.message) == ("Terminated: Error (exit code 3)", "boom")
    unscheduled = pod_info(
        pod(
            node=None,
            phase="Pending",
            conditions=[{"type": "PodScheduled", "status": "False", "message": "no room"}],
        )
    )
    assert (unscheduled.state, unscheduled.message) == ("Unschedulable", "no room")


def test_a_launcher_held_back_for_its_workers_is_explained_beside_the_workers_reason() -> None:
    waiting = (
        "The launcher mnist-worker-0 starts once every worker it needs is running; waiting for"
        " mnist-worker-1."
    )
    status = {
        "phase": "Pending",
        "conditions": [
            {
                "type": "Running",
                "status": "False",
                "reason": "WaitingForWorkers",
                "message": waiting,
            }
        ],
    }
    unschedulable = pod(
        1,
        phase="Pending",
        node=None,
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
            }
        ],
    )
    found = messages(diagnose(job(status), [unschedulable], [], NOW))
    # the worker's reason first (an error), then why the launcher does not exist yet
    assert "Insufficient nvidia.com/gpu" in found[0], found
    assert f"info: job: {waiting} The job waits as long as that takes" in found[1], found


def unscheduled(index: int, message: str, gpus: str | None = "8") -> dict[str, Any]:
    """A worker the scheduler could not place, with `message` as its PodScheduled condition's."""
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    return pod(
        index,
        node=None,
        phase="Pending",
        limits={"nvidia.com/gpu": gpus} if gpus else None,
        conditions=[{**condition, "message": message}],
    )


@pytest.mark.parametrize(
    ("message", "hint"),
    [
        (
            '0/4 nodes are available: persistentvolumeclaim "data" not found. preemption: 0/4'
            " nodes are available: 4 Preemption is not helpful for scheduling.",
            "its volume's PersistentVolumeClaim data does not exist in namespace team-a: create"
            " it, or fix claimName in the pod template; the pod waits until then",
        ),
        (
            '0/4 nodes are available: persistentvolumeclaim "data" is being deleted.',
            "its PersistentVolumeClaim data is being deleted: create it again",
        ),
        (
            "0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
            "its PersistentVolumeClaim is not bound to a volume: check the claim's StorageClass"
            " and events (kubectl describe pvc -n team-a)",
        ),
        (
            "0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector,"
            " 3 Insufficient nvidia.com/gpu.",
            "it asks for nvidia.com/gpu=8; lower the request, or wait until a node has room",
        ),
        (
            "0/4 nodes are available: 4 node(s) had untolerated taint {gpu: a100}.",
            "the nodes have taints it does not tolerate ({gpu: a100}): add a toleration to the"
            " pod template (kubectl describe nodes shows their taints), or use other nodes",
        ),
        (  # Kubernetes 1.34's words, beside nodes the selector rules out
            "0/9 nodes are available: 5 node(s) had untolerated taint(s), 4 node(s) didn't"
            " match Pod's node affinity/selector.",
            "no node both matches its nodeSelector or node affinity and has only taints it"
            " tolerates: check both against the nodes (kubectl describe nodes shows their labels"
            " and taints), and add a toleration or fix the selector",
        ),
        (
            "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector.",
            "no node matches its nodeSelector or node affinity: check them against the nodes'"
            " labels (kubectl get nodes --show-labels)",
        ),
    ],
    ids=[
        "claim-missing",
        "claim-deleted",
        "claim-unbound",
        "room",
        "taint",
        "taint-1.34",
        "selector",
    ],
)
def test_the_advice_for_an_unschedulable_pod_follows_the_schedulers_reason(
    message: str, hint: str
) -> None:
    """A pod held back by a missing volume claim is not told to lower its request."""
    stuck = unscheduled(0, message)
    stuck["metadata"]["namespace"] = "team-a"
    (finding,) = [f for f in diagnose(job(), [stuck], [], NOW) if f.severity == "error"]
    assert finding.message == f"cannot be scheduled: {message}"
    assert finding.hint == hint


def test_pods_placed_while_the_others_find_no_room_are_named_first_with_what_they_hold() -> None:
    """The deadlock of two gangs placed piecemeal: each has workers on nodes and a launcher
    that fits nowhere; the job-level finding comes first and says how to free the GPUs."""
    full = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    placed = [pod(i, limits={"nvidia.com/gpu": "8"}) for i in (1, 2)]
    findings = diagnose(job({"phase": "Running"}), [*placed, unscheduled(0, full)], [], NOW)
    first = findings[0]
    assert (first.severity, first.subject) == ("error", "job")
    assert first.message.startswith(
        "2 of its pods are placed and hold nvidia.com/gpu=16, while 1 finds no room"
        " (nvidia.com/gpu): nothing places the job's pods all or none"
    )
    assert first.hint is not None
    assert first.hint.startswith("free what it holds: t9k-sdk pause genericjob mnist")
    assert "resume it when 3 pods fit at once" in first.hint
    # the pod's own finding follows, with the scheduler's words
    assert findings[1].subject == "pod mnist-worker-0 (worker-0)"


@pytest.mark.parametrize(
    ("case", "spec", "status", "pods"),
    [
        # every pod waits: nothing is held
        ("none placed", {}, {"phase": "Pending"}, "waiting"),
        # the placed pods ask for none of what is short
        ("holds no gpu", {}, {"phase": "Running"}, "cpu-only"),
        # T9k's scheduler places the pods all or none
        ("gang scheduler", {"scheduler": {"t9kScheduler": {"queue": "q"}}}, {}, "split"),
        # a paused job's pods are on their way out
        ("paused", {}, {"phase": "Paused"}, "split"),
        # the waiting pod is held back by its claim, not by room
        ("claim", {}, {"phase": "Running"}, "claim"),
    ],
)
def test_no_held_back_finding_when_nothing_is_held_for_pods_that_find_no_room(
    case: str, spec: dict[str, Any], status: dict[str, Any], pods: str
) -> None:
    full = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    claim = 'persistentvolumeclaim "data" not found'
    observed = {
        "waiting": [unscheduled(0, full), unscheduled(1, full)],
        "cpu-only": [pod(1, limits={"cpu": "2"}), unscheduled(0, full)],
        "split": [pod(1, limits={"nvidia.com/gpu": "8"}), unscheduled(0, full)],
        "claim": [pod(1, limits={"nvidia.com/gpu": "8"}), unscheduled(0, claim)],
    }[pods]
    manifest = {**job(status or {"phase": "Running"}), "spec": spec}
    found = [f for f in diagnose(manifest, observed, [], NOW) if f.subject == "job"]
    assert not [f for f in found if "are placed and hold" in f.message], (case, found)


def test_the_held_back_advice_names_a_kueue_queue_as_the_way_out() -> None:
    full = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    placed = [pod(i, limits={"nvidia.com/gpu": "8"}) for i in (1, 2)]
    first = diagnose(job({"phase": "Running"}), [*placed, unscheduled(0, full)], [], NOW)[0]
    assert first.hint is not None
    assert "label the job kueue.x-k8s.io/queue-name=<LocalQueue>" in first.hint


def queued_job(reason: str, message: str) -> dict[str, Any]:
    running = {"type": "Running", "status": "False", "reason": reason, "message": message}
    manifest = job({"phase": "Pending", "conditions": [running]})
    manifest["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-a"}
    return manifest


@pytest.mark.parametrize(
    ("reason", "severity", "hint"),
    [
        ("Queued", "info", "it runs when Kueue admits it"),
        ("Evicted", "info", "the eviction spent no restart"),
        ("Inadmissible", "error", "check the LocalQueue's name"),
        ("QueueUnavailable", "error", "install Kueue, or remove the label"),
    ],
)
def test_a_job_kueue_has_not_admitted_says_why_first(reason: str, severity: str, hint: str) -> None:
    findings = diagnose(queued_job(reason, "Kueue's words"), [], [], NOW)
    first = findings[0]
    assert (first.severity, first.subject) == (severity, "job")
    assert first.message == (f"not admitted by Kueue ({reason}, LocalQueue team-a): Kueue's words")
    assert first.hint is not None
    assert hint in first.hint


def waiting_pod(reason: str, message: str) -> dict[str, Any]:
    state = {"waiting": {"reason": reason, "message": message}}
    manifest = pod(containers=[{"name": "worker", "state": state}], phase="Pending")
    manifest["metadata"]["namespace"] = "team-a"
    return manifest


@pytest.mark.parametrize(
    ("reason", "message", "hint"),
    [
        (
            "ErrImageNeverPull",
            'Container image "t9k-test/absent:1" is not present with pull policy of Never',
            "the image is not on the node and imagePullPolicy is Never",
        ),
        (
            "CreateContainerConfigError",
            'secret "wandb" not found',
            "the Secret wandb does not exist in namespace team-a: create it",
        ),
        (
            "CreateContainerConfigError",
            'configmap "settings" not found',
            "the ConfigMap settings does not exist in namespace team-a",
        ),
        (
            "CreateContainerConfigError",
            "couldn't find key api-key in Secret team-a/wandb",
            "the Secret wandb in namespace team-a has no key api-key",
        ),
    ],
)
def test_a_container_that_cannot_start_names_what_is_missing(
    reason: str, message: str, hint: str
) -> None:
    first = diagnose(job(), [waiting_pod(reason, message)], [], NOW)[0]
    assert (first.severity, first.message) == (
        "error",
        f"container worker is waiting: {reason}: {message}",
    )
    assert first.hint is not None
    assert hint in first.hint


def test_a_volume_that_cannot_be_mounted_is_the_verdict_with_the_missing_secret_named() -> None:
    starting = waiting_pod("ContainerCreating", "")
    said = 'MountVolume.SetUp failed for volume "creds" : secret "ssh-keys" not found'
    events = [
        JobEvent(NOW, "Normal", "Scheduled", "assigned", "Pod/mnist-worker-0"),
        JobEvent(NOW, "Warning", "FailedMount", said, "Pod/mnist-worker-0"),
    ]
    found = diagnose(job(), [starting], events, NOW)
    assert (found[0].severity, found[0].message) == ("error", f"cannot start: {said}")
    assert found[0].hint is not None
    assert "the Secret ssh-keys does not exist in namespace team-a" in found[0].hint
    assert not [f for f in found if "event FailedMount" in f.message], "said once"


def test_a_failed_mount_of_a_pod_that_runs_since_is_history_not_a_verdict() -> None:
    said = 'MountVolume.SetUp failed for volume "creds" : secret "ssh-keys" not found'
    events = [JobEvent(NOW, "Warning", "FailedMount", said, "Pod/mnist-worker-0")]
    found = diagnose(job({"phase": "Running"}), [pod()], events, NOW)
    assert not [f for f in found if f.severity == "error"]
