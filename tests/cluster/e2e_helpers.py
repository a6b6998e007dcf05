"""Driving jobs end to end: one real operator per test module, kwok finishing the pods.

    def test_x(jobs: Jobs) -> None:
        jobs.create(generic_job("a", replica("worker", 2, annotations=finish(code=1))))
        status = jobs.wait_phase("a", "Failed")

* `E2E` (fixture `e2e`, one per test module): a namespace of its own, one `t9k-operator` watching
  it (started with `launch_operators`, the same launcher as the `start_operator` fixture) and a
  `PodHistory` that watches the namespace's pods, so a test can tell a recreated pod (same name,
  new uid) from the original even when the original lived for a second only.
* `Jobs` (fixture `jobs`, per test): creates jobs, waits for phases, conditions, pods and Events
  with deadlines; on teardown deletes the test's jobs and prints the operator's log lines written
  during the test (pytest shows them when the test failed).
* Status helpers (`condition`, `replicas_of`, `restart_counts`) and `stays`. The manifest
  builders (`generic_job`, `replica`, `finish`, ...) are the kit's (tools/kit).

Tests run sequentially but are written so their jobs run in parallel: a test creates all its
jobs first and then waits for each.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from t9k_sdk import models
from tools.kit import OWNER_LABEL, Operator, finish, job_events, request, wait_for
from tools.realnode import NODE_LABEL as REAL_NODE_LABEL

POD_LOG_DIR = Path(__file__).resolve().parents[2] / "build" / "test-logs"
"""Where `show_pod_logs` keeps the followed logs of real-node containers (git-ignored)."""

FINAL_PHASES = ("Succeeded", "Failed")
TIMEOUT = 30.0


# --- status helpers --------------------------------------------------------------------------


def condition(status: Mapping[str, Any], type_: str) -> dict[str, Any]:
    """The condition `type_` of a job status ({} when absent)."""
    for c in status.get("conditions") or ():
        if c.get("type") == type_:
            return dict(c)
    return {}


def replicas_of(status: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """pod name -> its `status.tasks[].replicas[]` entry."""
    return {r["name"]: r for t in status.get("tasks") or () for r in t.get("replicas") or ()}


def restart_counts(status: Mapping[str, Any]) -> dict[str, int]:
    return {t["type"]: int(t.get("restartCount") or 0) for t in status.get("tasks") or ()}


# --- pod history -----------------------------------------------------------------------------


class PodHistory:
    """Every pod uid seen in a namespace, per pod name, in order (a watch in a thread).

    It also keeps the log of every container that runs on the real node, per pod uid, from the
    moment the container starts (a follow stream in a thread): the operator deletes a failed pod
    to recreate it, and with it the only copy of the log that says why it failed.
    """

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self._core = client.CoreV1Api(api)
        self._namespace = namespace
        self._uids: dict[str, list[str]] = defaultdict(list)
        self._logs: dict[tuple[str, str], _FollowedLog] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="pod-history", daemon=True)
        self._thread.start()

    def _record(self, pod: Any) -> None:
        with self._lock:
            uids = self._uids[pod.metadata.name]
            if pod.metadata.uid not in uids:
                uids.append(pod.metadata.uid)
        if (pod.spec.node_selector or {}).get(REAL_NODE_LABEL[0]) == REAL_NODE_LABEL[1]:
            self._follow(pod)

    def _follow(self, pod: Any) -> None:
        for status in pod.status.container_statuses or ():
            if status.state is None or (status.state.running or status.state.terminated) is None:
                continue
            key = (pod.metadata.uid, status.name)
            with self._lock:
                if key in self._logs:
                    continue
                followed = self._logs[key] = _FollowedLog(pod.metadata.name, status.name)
            threading.Thread(
                target=followed.run,
                args=(self._core, self._namespace),
                name=f"log-{pod.metadata.name}",
                daemon=True,
            ).start()

    def logs_since(self, mark: int) -> list[tuple[str, str]]:
        """("pod/container (uid)", log) of the real-node containers followed after the first
        `mark` (a `followed()` count), in the order they started."""
        with self._lock:
            followed = list(self._logs.items())[mark:]
        return [
            (f"{log.pod}/{log.container} (uid {uid})", log.text()) for (uid, _), log in followed
        ]

    def followed(self) -> int:
        """How many containers' logs have been followed so far."""
        with self._lock:
            return len(self._logs)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                listed = self._core.list_namespaced_pod(self._namespace)
                for pod in listed.items:
                    self._record(pod)
                version = listed.metadata.resource_version
                while not self._stop.is_set():
                    w = watch.Watch()
                    try:
                        for event in w.stream(
                            self._core.list_namespaced_pod,
                            self._namespace,
                            resource_version=version,
                            timeout_seconds=2,
                        ):
                            obj = event["object"]
                            if event["type"] == "ERROR":
                                raise ApiException(status=getattr(obj, "code", 500))
                            self._record(obj)
                            version = obj.metadata.resource_version
                    except ApiException as err:
                        if err.status == 410:  # expired: list again
                            break
                        raise
        except BaseException as err:  # surfaced by uids()
            self._error = err

    def uids(self, name: str) -> list[str]:
        """Uids of the pods named `name`, oldest first."""
        if self._error is not None:
            raise AssertionError(f"the pod watch failed: {self._error!r}")
        with self._lock:
            return list(self._uids.get(name, ()))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)


class _FollowedLog:
    """One container's log, read as `kubectl logs -f` reads it, kept up to LOG_KEEP bytes (the
    tail)."""

    LOG_KEEP = 256 * 1024

    def __init__(self, pod: str, container: str) -> None:
        self.pod = pod
        self.container = container
        self._data = bytearray()
        self._lock = threading.Lock()

    def run(self, core: client.CoreV1Api, namespace: str) -> None:
        try:
            resp = core.read_namespaced_pod_log(
                self.pod,
                namespace,
                container=self.container,
                follow=True,
                timestamps=True,
                _preload_content=False,
            )
            for chunk in resp.stream(4096):
                with self._lock:
                    self._data += chunk
                    del self._data[: max(0, len(self._data) - self.LOG_KEEP)]
        except Exception as err:  # the pod went first: say so where the log would be
            with self._lock:
                self._data += f"\n[the log stream ended: {err!r}]\n".encode()

    def text(self) -> str:
        with self._lock:
            return self._data.decode(errors="replace")


# --- the driver ------------------------------------------------------------------------------


@dataclass
class E2E:
    """What a test module shares: its namespace, its operator and the pod history."""

    namespace: str
    operator: Operator
    pods: PodHistory


@dataclass
class Jobs:
    """One test's view of the jobs it creates (fixture `jobs`)."""

    custom: client.CustomObjectsApi
    core_v1: client.CoreV1Api
    env: E2E
    created: list[tuple[str, str]] = field(default_factory=list)
    log_offset: int = 0
    pod_log_mark: int = 0

    def __post_init__(self) -> None:
        self.log_offset = self.env.operator.log_path.stat().st_size
        self.pod_log_mark = self.env.pods.followed()

    @property
    def namespace(self) -> str:
        return self.env.namespace

    @property
    def history(self) -> PodHistory:
        return self.env.pods

    # -- jobs ---------------------------------------------------------------------------------

    def create(self, *manifests: dict[str, Any]) -> None:
        for manifest in manifests:
            kind = manifest["kind"]
            self.custom.create_namespaced_custom_object(
                models.GROUP,
                models.VERSION,
                self.namespace,
                models.JOB_KINDS[kind].PLURAL,
                manifest,
            )
            self.created.append((kind, manifest["metadata"]["name"]))

    def kind_of(self, name: str) -> str:
        return next((k for k, n in self.created if n == name), "GenericJob")

    def read(self, name: str) -> dict[str, Any]:
        plural = models.JOB_KINDS[self.kind_of(name)].PLURAL
        return dict(
            self.custom.get_namespaced_custom_object(
                models.GROUP, models.VERSION, self.namespace, plural, name
            )
        )

    def status(self, name: str) -> dict[str, Any]:
        return dict(self.read(name).get("status") or {})

    def patch(self, name: str, body: dict[str, Any]) -> None:
        """Merge-patch the job (e.g. {"spec": {"runMode": {"pause": {"enabled": True}}}})."""
        plural = models.JOB_KINDS[self.kind_of(name)].PLURAL
        request(
            self.custom.api_client,
            "PATCH",
            f"/apis/{models.API_VERSION}/namespaces/{self.namespace}/{plural}/{name}",
            headers={
                "Content-Type": "application/merge-patch+json",
                "Accept": "application/json",
            },
            body=body,
        )

    def delete(self, name: str) -> None:
        plural = models.JOB_KINDS[self.kind_of(name)].PLURAL
        self.custom.delete_namespaced_custom_object(
            models.GROUP,
            models.VERSION,
            self.namespace,
            plural,
            name,
            propagation_policy="Background",
        )

    def wait_status(
        self,
        name: str,
        done: Callable[[dict[str, Any]], bool],
        what: str,
        timeout: float = TIMEOUT,
    ) -> dict[str, Any]:
        return wait_for(
            lambda: self.status(name),
            done,
            f"{self.kind_of(name)} {name}: {what}",
            timeout,
        )

    def wait_phase(self, name: str, phase: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        return self.wait_status(name, lambda s: s.get("phase") == phase, f"phase {phase}", timeout)

    def wait_final(self, name: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        return self.wait_status(
            name, lambda s: s.get("phase") in FINAL_PHASES, "a final phase", timeout
        )

    # -- pods ---------------------------------------------------------------------------------

    def pods(self, job: str) -> dict[str, Any]:
        """name -> pod, of the pods labelled as the job's."""
        listed = self.core_v1.list_namespaced_pod(
            self.namespace, label_selector=f"{OWNER_LABEL}={job}"
        )
        return {p.metadata.name: p for p in listed.items}

    def pod(self, name: str) -> Any:
        return self.core_v1.read_namespaced_pod(name, self.namespace)

    def wait_pods(
        self,
        job: str,
        done: Callable[[dict[str, Any]], bool],
        what: str,
        timeout: float = TIMEOUT,
    ) -> dict[str, Any]:
        return wait_for(lambda: self.pods(job), done, f"pods of {job}: {what}", timeout)

    def wait_running(self, job: str, names: set[str], timeout: float = TIMEOUT) -> dict[str, Any]:
        """Wait until exactly the pods `names` exist and are Running; return them."""
        return self.wait_pods(
            job,
            lambda ps: set(ps) == names and all(p.status.phase == "Running" for p in ps.values()),
            f"exactly {sorted(names)} running",
            timeout,
        )

    def end_pod(self, name: str, code: int = 0, after: str = "0s") -> None:
        """Make a running pod finish (kwok counts from the patch)."""
        self.core_v1.patch_namespaced_pod(
            name, self.namespace, {"metadata": {"annotations": finish(code, after)}}
        )

    # -- events -------------------------------------------------------------------------------

    def events(self, name: str) -> list[tuple[str, str, str]]:
        """(type, reason, message) of the job's Events, oldest first."""
        events = job_events(self.core_v1, self.namespace, name, self.kind_of(name))
        # The operator names its Events `<job>.<time_ns in hex>`: the name orders them.
        events.sort(key=lambda e: (len(e.metadata.name), e.metadata.name))
        return [(e.type, e.reason, e.message) for e in events]

    def event_count(self, name: str, reason: str) -> int:
        """How often an Event was recorded (a repeat within minutes bumps `count`)."""
        events = job_events(self.core_v1, self.namespace, name, self.kind_of(name))
        return sum(e.count or 1 for e in events if e.reason == reason)

    def named_in(self, name: str, reason: str) -> list[str]:
        """The pods the job's Events of `reason` name, as "Created pod: a, b" (similar Events
        are recorded as one, with a count and a combined message) or one Event each."""
        names = []
        for _type, event_reason, message in self.events(name):
            if event_reason == reason:
                names += message.partition(": ")[2].split(", ")
        return sorted(names)

    def reasons(self, name: str) -> list[str]:
        return [reason for _type, reason, _message in self.events(name)]

    def wait_event(self, name: str, reason: str, timeout: float = TIMEOUT) -> tuple[str, str, str]:
        found = wait_for(
            lambda: [e for e in self.events(name) if e[1] == reason],
            bool,
            f"an Event {reason} on {name}",
            timeout,
        )
        return found[0]

    # -- teardown -----------------------------------------------------------------------------

    def close(self) -> None:
        for kind, name in self.created:
            with contextlib.suppress(ApiException):
                self.custom.delete_namespaced_custom_object(
                    models.GROUP,
                    models.VERSION,
                    self.namespace,
                    models.JOB_KINDS[kind].PLURAL,
                    name,
                    propagation_policy="Background",
                )
        with self.env.operator.log_path.open("rb") as fh:
            fh.seek(self.log_offset)
            text = fh.read().decode(errors="replace")
        print(f"===== operator log during the test ({self.env.operator.log_path}) =====")
        print(text)
        show_pod_logs(self.namespace, self.env.pods.logs_since(self.pod_log_mark))


def stays(fetch: Callable[[], Any], seconds: float, interval: float = 0.25) -> list[Any]:
    """Sample `fetch()` for `seconds` (to show that something does NOT change); all samples."""
    samples = [fetch()]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(interval)
        samples.append(fetch())
    return samples


def show_pod_logs(namespace: str, logs: list[tuple[str, str]]) -> None:
    """Print the followed logs (pytest shows them for a failed test) and keep them in
    build/test-logs/NAMESPACE/, where they outlive pytest's output and its pruned tmp dirs."""
    kept = POD_LOG_DIR / namespace
    for container, log in logs:
        print(f"===== log of {container}, followed while it ran =====")
        print(log)
        kept.mkdir(parents=True, exist_ok=True)
        (kept / (re.sub(r"[^A-Za-z0-9_.-]+", "_", container).strip("_") + ".log")).write_text(log)
    if logs:
        print(f"(these logs are kept in {kept})")


@contextlib.contextmanager
def pod_history(api: client.ApiClient, namespace: str) -> Iterator[PodHistory]:
    history = PodHistory(api, namespace)
    try:
        yield history
    finally:
        history.close()
