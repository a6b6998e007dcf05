#!/usr/bin/env python3
"""`make demo`: the example jobs, run by the real operator on the local control plane.

    python tools/demo.py                     # what `make demo` runs: real training (tools/demo_real.py)
    python tools/demo.py --simulated         # this file's demo: examples/ on kwok's simulated pods
    python tools/demo.py --simulated --run-seconds 5     # simulated pods run longer
    python tools/demo.py --restart-operator  # replace the operator a previous run left running

1. render examples/*.py to YAML (.demo/manifests/) and validate them (`t9k-sdk`);
2. start the local control plane (`tools/cluster.py up`; reused when it runs, binaries built
   when missing);
3. start `t9k-operator` in the background for the namespace `t9k-demo` (log in
   .cluster/logs/operator.log, pid in .cluster/operator.pid; reused by the next run, stopped by
   `make cluster-down`);
4. apply the jobs, with kwok annotations on their pod templates so that the simulated pods end
   (kwok runs no containers), and show them live until every job that can finish has finished;
5. print a summary and how to explore what is left running.

The jobs are applied, listed, resumed and deleted with `t9k_sdk.client.Client`, as a user's
program would; the namespace and the placeholder volumes go through the same connection (the
shared API layer, `t9k_sdk._kube`). Only the standard library, PyYAML and the project are used.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TextIO

import yaml

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # run as `python tools/demo.py`
    sys.path.insert(0, str(REPO_ROOT))

from t9k_sdk import _objects as o  # noqa: E402
from t9k_sdk import codecs, models  # noqa: E402
from t9k_sdk._kube.api_error import ApiError  # noqa: E402
from t9k_sdk._kube.resources import (  # noqa: E402
    NAMESPACES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
)
from t9k_sdk._kube.transport import Transport  # noqa: E402
from t9k_sdk.client import Client, ClientError, JobNotFoundError  # noqa: E402
from t9k_sdk.reconcile.kinds import rules_for  # noqa: E402
from tools import cluster as cluster_tool  # noqa: E402

NAMESPACE: Final = "t9k-demo"
SHORT: Final = {cls.KIND: cls.SHORT_NAME for cls in models.JOB_KINDS.values()}
FINAL: Final = ("Succeeded", "Failed")
EXAMPLES: Final = REPO_ROOT / "examples"
MANIFESTS: Final = REPO_ROOT / ".demo" / "manifests"
OPERATOR_LOG: Final = cluster_tool.LOG_DIR / "operator.log"
OPERATOR_PID: Final = cluster_tool.OPERATOR_PID_FILE
FAILS_ON_PURPOSE: Final = "mnist"
"""The example whose workers the demo OOM-kills, to show restarts and a failure message."""
GPU: Final = "nvidia.com/gpu"
RUN_FOR, EXIT_CODE, REASON = "sim.t9k.dev/run-for", "sim.t9k.dev/exit-code", "sim.t9k.dev/reason"

BIN: Final = Path(sys.executable).parent
T9K_SDK: Final = str(BIN / "t9k-sdk") if (BIN / "t9k-sdk").exists() else "t9k-sdk"


# --- output ----------------------------------------------------------------------------------


class Out:
    """Headings, indented lines, and colours when writing to a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()

    def paint(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.tty else text

    def step(self, n: int, total: int, text: str) -> None:
        self.line("")
        self.line(self.paint(f"[{n}/{total}] {text}", "1"))

    def line(self, text: str = "") -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def indented(self, text: str, prefix: str = "  ") -> None:
        for line in text.rstrip().splitlines():
            self.line(prefix + line)


PHASE_COLOURS: Final = {
    "Succeeded": "32",
    "Failed": "31",
    "Running": "36",
    "Pending": "33",
    "Paused": "33",
    "Resuming": "33",
}


# --- step 1: render and validate --------------------------------------------------------------


def run_shown(out: Out, argv: Sequence[str], shown: str) -> subprocess.CompletedProcess[str]:
    out.line(f"  $ {shown}")
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO_ROOT, check=False)
    out.indented(proc.stdout + proc.stderr, "    ")
    if proc.returncode != 0:
        raise DemoError(f"`{shown}` failed (exit {proc.returncode})")
    return proc


def render_and_validate(out: Out) -> list[dict[str, Any]]:
    if MANIFESTS.exists():
        shutil.rmtree(MANIFESTS)
    run_shown(
        out,
        # the top-level examples only: examples/gitops/ is a repository layout of its own
        [
            T9K_SDK,
            "render",
            *(str(p.relative_to(REPO_ROOT)) for p in sorted(EXAMPLES.glob("*.py"))),
            "--out-dir",
            ".demo/manifests",
        ],
        "t9k-sdk render examples/*.py --out-dir .demo/manifests",
    )
    files = sorted(MANIFESTS.glob("*.yaml"))
    run_shown(
        out,
        [T9K_SDK, "validate", *(str(f.relative_to(REPO_ROOT)) for f in files)],
        "t9k-sdk validate .demo/manifests/*.yaml",
    )
    return [doc for f in files for doc in yaml.safe_load_all(f.read_text()) if doc]


# --- step 2: the control plane ----------------------------------------------------------------


def cluster_up(out: Out) -> None:
    argv = [sys.executable, str(REPO_ROOT / "tools" / "cluster.py"), "up"]
    out.line("  $ python tools/cluster.py up")
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out.indented(proc.stdout, "    ")
    if proc.returncode != 0:
        raise DemoError("the local control plane did not start (see the output above)")


# --- step 3: the operator ---------------------------------------------------------------------


@dataclass(frozen=True)
class OperatorProcess:
    pid: int
    health_port: int
    reused: bool


def _cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None
    return None if state in ("Z", "X") else raw.decode(errors="replace").split("\0")


def running_operator() -> OperatorProcess | None:
    """The operator a previous run left, if it still runs against this cluster."""
    try:
        pid = int(OPERATOR_PID.read_text().strip())
    except (OSError, ValueError):
        return None
    argv = _cmdline(pid)
    if not argv or str(cluster_tool.KUBECONFIG) not in argv or "--health-port" not in argv:
        return None
    return OperatorProcess(pid, int(argv[argv.index("--health-port") + 1]), reused=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _readyz(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
            return r.status, r.read().decode().strip()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode().strip()
    except OSError as err:
        return 0, str(err)


def stop_operator() -> None:
    cluster_tool.stop_demo_operator()
    OPERATOR_PID.unlink(missing_ok=True)


def start_operator(out: Out, restart: bool) -> OperatorProcess:
    op = running_operator()
    if op is not None and restart:
        out.line(f"  stopping the operator of a previous run (pid {op.pid})")
        stop_operator()
        op = None
    if op is None:
        port = _free_port()
        argv = [
            sys.executable,
            "-m",
            "t9k_operator",
            "--kubeconfig",
            str(cluster_tool.KUBECONFIG),
            "--namespace",
            NAMESPACE,
            "--lease-namespace",
            NAMESPACE,
            "--health-port",
            str(port),
            "--health-bind",
            "127.0.0.1",
        ]
        OPERATOR_LOG.parent.mkdir(parents=True, exist_ok=True)
        with OPERATOR_LOG.open("ab") as log:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=REPO_ROOT,
                start_new_session=True,  # outlives `make demo`; `make cluster-down` stops it
            )
        OPERATOR_PID.write_text(f"{proc.pid}\n")
        op = OperatorProcess(proc.pid, port, reused=False)
    deadline = time.monotonic() + 90  # a loaded 2-core machine starts Python slowly
    while True:
        code, text = _readyz(op.health_port)
        if code == 200 and text.startswith("leader"):
            break
        if _cmdline(op.pid) is None or time.monotonic() > deadline:
            stop_operator()
            tail = "\n".join(OPERATOR_LOG.read_text(errors="replace").splitlines()[-15:])
            raise DemoError(f"the operator did not become ready ({code} {text}):\n{tail}")
        time.sleep(0.1)
    what = "reusing the operator of a previous run" if op.reused else "started t9k-operator"
    out.line(f"  {what}: pid {op.pid}, namespace {NAMESPACE}, /readyz says {text!r}")
    out.line(f"  log: {rel(OPERATOR_LOG)}   pid file: {rel(OPERATOR_PID)}")
    return op


# --- step 4: the jobs -------------------------------------------------------------------------


@dataclass
class DemoJob:
    manifest: dict[str, Any]
    awaited: bool = True
    """False for jobs that cannot finish here (debug mode, waiting for T9k Scheduler)."""
    note: str = ""
    resume: bool = False
    """Created paused: the demo resumes it once it is Paused."""
    resumed: bool = False
    total: int = 0
    """Replicas (pods) the job runs."""
    gpus: int = 0
    """GPUs its pods request from the default scheduler (all replicas at once)."""

    @property
    def kind(self) -> str:
        return o.kind(self.manifest)

    @property
    def name(self) -> str:
        return o.meta(self.manifest).name


def sim(seconds: int, code: int = 0, reason: str | None = None) -> dict[str, str]:
    out = {RUN_FOR: f"{seconds}s", EXIT_CODE: str(code)}
    if reason:
        out[REASON] = reason
    return out


def _templates(manifest: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(replica type, pod template) of every replica spec."""
    spec = manifest["spec"]
    if manifest["kind"] == "DeepSpeedJob":
        yield "worker", spec["worker"].setdefault("template", {})
        return
    for replica in spec.get("replicaSpecs") or ():
        yield str(replica["type"]), replica.setdefault("template", {})


def prepare(manifest: Mapping[str, Any], seconds: int) -> DemoJob:
    """The job as the demo applies it: kwok annotations on the pod templates that must end."""
    job = DemoJob(copy.deepcopy(dict(manifest)))
    m = job.manifest
    m["metadata"] = {**m["metadata"], "namespace": NAMESPACE}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = codecs.from_manifest(m)
        rules = rules_for(model)
    spec = model.spec
    slots = rules.slots()
    job.total = len(slots)
    for slot in slots:
        pod_spec = rules.pod(slot, "immediate")["spec"]
        if pod_spec.get("schedulerName"):
            continue  # T9k Scheduler's pods are never bound here
        for c in pod_spec.get("containers") or ():
            resources = c.get("resources") or {}
            asked = (resources.get("requests") or {}).get(
                GPU, (resources.get("limits") or {}).get(GPU)
            )
            job.gpus += int(asked or 0)
    run_mode = spec.run_mode
    scheduler = spec.scheduler.t9k_scheduler if spec.scheduler else None
    if run_mode and run_mode.debug_enabled:
        job.awaited = False
        job.note = "debug mode: its pods run until you delete the job"
        return job
    if scheduler:
        job.awaited = False
        job.note = (
            f"gang-scheduled by T9k Scheduler (queue {scheduler.queue}), which does not"
            " run here: its pods stay Pending"
        )
        return job
    failing = job.name == FAILS_ON_PURPOSE
    notes = []
    for replica_type, template in _templates(m):
        if job.kind == "ColossalAIJob" and replica_type != "launcher":
            continue  # workers serve sshd until the launcher is done
        annotations = sim(seconds, 137, "OOMKilled") if failing else sim(seconds)
        meta = template.setdefault("metadata", {})
        meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
    if failing:
        notes.append(f"fails on purpose: every worker is OOM-killed (exit 137) after {seconds}s")
    if job.kind == "ColossalAIJob":
        notes.append("the launcher decides; the workers serve sshd until it is done")
    if run_mode and run_mode.pause_enabled:
        job.resume = True
        notes.append("created paused: the demo resumes it")
    job.note = "; ".join(notes)
    return job


def volume_claims(jobs: Sequence[DemoJob]) -> list[str]:
    claims = set()
    for job in jobs:
        for _type, template in _templates(job.manifest):
            for volume in o.spec(template).get("volumes") or ():
                claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
                if claim:
                    claims.add(str(claim))
    return sorted(claims)


class DemoCluster:
    """The demo's cluster: its jobs through `t9k_sdk.client.Client`; the namespace and the
    placeholder volumes (not jobs: the client does not do them) through the same connection."""

    def __init__(self, kube: Client) -> None:
        self.kube = kube
        self.raw = Transport(kube.api_client)

    def _create(self, path: str, body: Mapping[str, Any]) -> None:
        try:
            self.raw.request("POST", path, body=dict(body), what=f"create {path}")
        except ApiError as err:
            if not err.already_exists:
                raise

    def ensure_namespace(self) -> None:
        self._create(NAMESPACES.path(), {"metadata": {"name": NAMESPACE}})

    def ensure_claim(self, claim: str) -> None:
        """A PVC bound to a placeholder volume (nothing mounts it: kwok runs no containers)."""
        pv_name = f"{NAMESPACE}-{claim}"
        volume = {
            "metadata": {"name": pv_name, "labels": {"app.kubernetes.io/part-of": "t9k-demo"}},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "hostPath": {"path": f"/tmp/t9k-demo/{claim}"},
                "claimRef": {"namespace": NAMESPACE, "name": claim},
            },
        }
        pvc = {
            "metadata": {"name": claim},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": pv_name,
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
        self._create(PERSISTENT_VOLUMES.path(), volume)
        self._create(PERSISTENT_VOLUME_CLAIMS.path(NAMESPACE), pvc)

    def claims_bound(self, claims: Sequence[str]) -> bool:
        listed = self.raw.request("GET", PERSISTENT_VOLUME_CLAIMS.path(NAMESPACE))
        bound = {o.meta(c).name for c in o.items(listed) if o.phase(c) == "Bound"}
        return set(claims) <= bound

    def jobs(self) -> list[dict[str, Any]]:
        """The jobs in the namespace, as the API server stores them (with their status)."""
        return [codecs.to_manifest(job) for job in self.kube.list()]

    def delete_job(self, kind: str, name: str) -> None:
        """Delete a job and wait until it and its pods are gone (names are reused next)."""
        with contextlib.suppress(JobNotFoundError):
            self.kube.delete(kind, name, wait=True)
        wait_until(lambda: not self.kube.pods(kind, name), f"the pods of {name} to go", 180)

    def create_job(self, manifest: Mapping[str, Any]) -> None:
        self.kube.apply(manifest)

    def resume(self, kind: str, name: str) -> None:
        self.kube.resume(kind, name)

    def running_pods(self, job: DemoJob) -> int:
        return sum(p.phase == "Running" for p in self.kube.pods(job.kind, job.name))


def wait_until(check: Callable[[], bool], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise DemoError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.2)


def apply_jobs(
    out: Out, kube: DemoCluster, jobs: Sequence[DemoJob], seconds: int, simulated: bool = True
) -> None:
    old = kube.jobs()
    if old:
        out.line(f"  deleting the {len(old)} jobs of a previous run (and their pods)")
        for obj in old:
            kube.delete_job(o.kind(obj), o.meta(obj).name)
    claims = volume_claims(jobs)
    if claims:
        for claim in claims:
            kube.ensure_claim(claim)
        wait_until(lambda: kube.claims_bound(claims), "the PVCs to be bound", 30)
        out.line(f"  PVCs the examples mount, bound to placeholder volumes: {', '.join(claims)}")
    if simulated:
        out.line(
            f"  pods are simulated by kwok (no containers run): each runs {seconds}s and exits 0,"
            " as the sim.t9k.dev/* annotations the demo adds to the pod templates say"
        )
    else:
        out.line(
            f"  pods run real containers on the node {cluster_tool.realnode.NODE_NAME}"
            " (nodeSelector and toleration in each pod template)"
        )
    asked = sum(j.gpus for j in jobs)
    capacity = sum(int(n.gpus) for n in cluster_tool.FAKE_NODES)
    if simulated and asked > capacity:
        out.line(
            f"  the jobs ask for {asked} GPUs, the {len(cluster_tool.FAKE_NODES)} fake nodes have"
            f" {capacity}: some pods wait until others finish (the job's Running condition then"
            " says Unschedulable, with the scheduler's message)"
        )
    for job in jobs:
        kube.create_job(job.manifest)
    width = max(len(j.name) for j in jobs)
    for job in jobs:
        out.line(f"  applied {job.kind:<13} {job.name:<{width}}  {job.note}".rstrip())


# --- the live table ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    name: str
    kind: str
    phase: str
    pods: str
    restarts: int
    age: str
    message: str

    def key(self) -> tuple[str, str, int, str]:
        return self.phase, self.pods, self.restarts, self.message


CONDITION_ORDER: Final = ("Failed", "Completed", "Paused", "ReplicaFailure", "Running")


def _telling(c: Mapping[str, Any]) -> bool:
    """Whether a condition says something happened (ReplicaFailure=False says nothing)."""
    kind, status = c.get("type"), c.get("status")
    if kind in ("Running", "Paused"):
        return True
    if kind == "Initialized":
        return status == "False"  # InvalidSpec
    return status == "True" or c.get("reason") == "Debug"


def headline(job: Mapping[str, Any]) -> str:
    """The message of the job's telling condition that changed last (ties: the more telling one)."""
    conditions = [c for c in o.conditions(job) if c.get("message") and _telling(c)]
    if not conditions:
        return ""
    debug = [c for c in conditions if c.get("reason") == "Debug"]
    if debug:
        return str(debug[0]["message"])

    def rank(c: Mapping[str, Any]) -> tuple[str, int]:
        kind = str(c.get("type"))
        order = CONDITION_ORDER.index(kind) if kind in CONDITION_ORDER else len(CONDITION_ORDER)
        return str(c.get("lastTransitionTime") or ""), -order

    return str(max(conditions, key=rank)["message"])


def age(created: str, now: datetime) -> str:
    try:
        start = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return "?"
    seconds = max(0, int((now - start).total_seconds()))
    return f"{seconds}s" if seconds < 60 else f"{seconds // 60}m{seconds % 60:02d}s"


def rows(
    demo_jobs: Sequence[DemoJob], live: Sequence[Mapping[str, Any]], running: Mapping[str, int]
) -> list[Row]:
    by_name = {(o.kind(j), o.meta(j).name): j for j in live}
    now = datetime.now(UTC)
    out = []
    for job in demo_jobs:
        obj = by_name.get((job.kind, job.name)) or {}
        if job.kind == "DeepSpeedJob":
            restarts = int(o.status(obj).get("backoffCount") or 0)
        else:
            restarts = sum(t.restart_count for t in o.tasks(obj))
        out.append(
            Row(
                name=job.name,
                kind=job.kind,
                phase=o.phase(obj) or "-",
                pods=f"{running.get(job.name, 0)}/{job.total}",
                restarts=restarts,
                age=age(o.meta(obj).creation_timestamp, now),
                message=headline(obj),
            )
        )
    return out


HEADER: Final = ("JOB", "KIND", "PHASE", "PODS", "RESTARTS", "AGE", "MESSAGE")


class Table:
    """Redraws the table in place on a terminal; prints a line per change otherwise."""

    def __init__(self, out: Out) -> None:
        self.out = out
        self.drawn = 0
        self.last: dict[str, tuple[str, str, int, str]] = {}
        self.started = time.monotonic()

    def note(self, text: str) -> None:
        """A line that stays above the table."""
        if self.out.tty:
            self._clear()
        self.out.line(f"  {text}")

    def show(self, table: Sequence[Row], footer: str) -> None:
        if self.out.tty:
            self._redraw(table, footer)
            return
        elapsed = time.monotonic() - self.started
        for row in table:
            if self.last.get(row.name) != row.key():
                self.last[row.name] = row.key()
                self.out.line(
                    f"  {elapsed:5.1f}s {row.name} ({row.kind}): {row.phase}, pods {row.pods},"
                    f" restarts {row.restarts}" + (f": {row.message}" if row.message else "")
                )

    def _clear(self) -> None:
        if self.drawn:
            self.out.stream.write(f"\033[{self.drawn}F\033[J")
            self.drawn = 0

    def _redraw(self, table: Sequence[Row], footer: str) -> None:
        cells = [HEADER] + [
            (r.name, r.kind, r.phase, r.pods, str(r.restarts), r.age, r.message) for r in table
        ]
        widths = [max(len(c[i]) for c in cells) for i in range(len(HEADER) - 1)]
        columns = shutil.get_terminal_size((120, 24)).columns
        lines = []
        for n, cell in enumerate(cells):
            fixed = "  ".join(f"{c:<{w}}" for c, w in zip(cell[:-1], widths, strict=True))
            text = _fit(f"  {fixed}  {cell[-1]}", columns - 1)  # a wrapped line breaks redraws
            if n == 0:
                text = self.out.paint(text, "1")
            else:
                colour = PHASE_COLOURS.get(cell[2])
                if colour:
                    at = 2 + sum(w + 2 for w in widths[:2])  # where the phase column starts
                    if text[at : at + len(cell[2])] == cell[2]:
                        painted = self.out.paint(cell[2], colour)
                        text = text[:at] + painted + text[at + len(cell[2]) :]
            lines.append(text)
        lines.append(self.out.paint(_fit(f"  {footer}", columns - 1), "2"))
        self._clear()
        self.out.stream.write("\n".join(lines) + "\n")
        self.out.stream.flush()
        self.drawn = len(lines)


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def watch(out: Out, kube: DemoCluster, jobs: Sequence[DemoJob], timeout: float) -> list[Row]:
    table = Table(out)
    awaited = [j for j in jobs if j.awaited]
    started = time.monotonic()
    while True:
        live = kube.jobs()
        current = rows(jobs, live, {j.name: kube.running_pods(j) for j in jobs})
        phases = {r.name: r.phase for r in current}
        for job in jobs:
            if job.resume and not job.resumed and phases.get(job.name) == "Paused":
                obj = next((j for j in live if o.meta(j).name == job.name), {})
                paused = o.condition(obj, "Paused")
                if paused is not None and paused.get("status") == "True":
                    kube.resume(job.kind, job.name)
                    job.resumed = True
                    table.note(
                        f"{job.name} is Paused: resuming it (spec.runMode.pause.enabled=false;"
                        f" `t9k-sdk resume {SHORT[job.kind]} {job.name}` does the same)"
                    )
        done = [j for j in awaited if phases.get(j.name) in FINAL]
        elapsed = time.monotonic() - started
        table.show(
            current,
            f"{len(done)} of {len(awaited)} jobs finished ({elapsed:.0f}s);"
            " Ctrl-C stops watching and leaves everything running",
        )
        if len(done) == len(awaited):
            return current
        if elapsed > timeout:
            stuck = ", ".join(j.name for j in awaited if j not in done)
            raise DemoError(
                f"{stuck} did not finish within {timeout:.0f}s; read {rel(OPERATOR_LOG)}"
            )
        time.sleep(0.5)


# --- step 5: summary --------------------------------------------------------------------------


def summary(out: Out, jobs: Sequence[DemoJob], final: Sequence[Row]) -> None:
    by_name = {r.name: r for r in final}
    width = max(len(j.name) for j in jobs)
    for job in jobs:
        row = by_name[job.name]
        phase = out.paint(f"{row.phase:<9}", PHASE_COLOURS.get(row.phase, "0"))
        if job.awaited:
            what = row.message
            if row.restarts:
                what += f" ({row.restarts} restart{'s' if row.restarts > 1 else ''})"
        else:
            what = f"{job.note}"
        out.line(f"  {phase}  {job.kind:<13} {job.name:<{width}}  {what}")


def explore(out: Out) -> None:
    kubeconfig = cluster_tool.KUBECONFIG
    out.line("  The cluster and the operator keep running. Explore:")
    lines = [
        f"export KUBECONFIG={kubeconfig}",
        f"kubectl -n {NAMESPACE} get {','.join(c.PLURAL for c in models.JOB_KINDS.values())}",
        f"kubectl -n {NAMESPACE} get pods,services,configmaps,secrets,pvc",
        f"kubectl -n {NAMESPACE} get events --sort-by=.lastTimestamp",
        f"{rel(BIN / 't9k-sdk')} get -n {NAMESPACE} -o wide",
        f"{rel(BIN / 't9k-sdk')} describe gj {FAILS_ON_PURPOSE} -n {NAMESPACE}"
        "   # conditions, pods, events, diagnosis",
        f"{rel(BIN / 't9k-sdk')} get dj bert -n {NAMESPACE} -o yaml",
        f"tail -f {rel(OPERATOR_LOG)}",
        "make cluster-down        # stops the operator and the cluster, removes .cluster/",
    ]
    for line in lines:
        out.line(f"    {line}")


# --- main -------------------------------------------------------------------------------------


class DemoError(Exception):
    """A step failed; the message says which and where to look."""


def rel(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--simulated",
        action="store_true",
        help="the examples of examples/ on kwok's simulated pods (fast; no real node needed)",
    )
    parser.add_argument(
        "--run-seconds", type=int, default=3, help="how long each simulated pod runs (default 3)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="give up watching after this many seconds (default 120 simulated, 600 real)",
    )
    parser.add_argument(
        "--restart-operator",
        action="store_true",
        help="stop the operator a previous run left running and start a new one",
    )
    args = parser.parse_args(argv)
    out = Out(sys.stdout)
    if not args.simulated:
        from tools import demo_real

        try:
            return demo_real.main(out, args.restart_operator, args.timeout or 600)
        except KeyboardInterrupt:
            out.line("\n  stopped; the jobs keep running")
            return 130
        except (DemoError, ClientError, ApiError, cluster_tool.images.ImageError) as err:
            out.line(out.paint(f"demo: {err}", "31"))
            return 1
    args.timeout = args.timeout or 120
    t0 = time.monotonic()
    steps = 5
    try:
        out.step(1, steps, "Render the examples to YAML and validate them")
        manifests = render_and_validate(out)
        out.step(2, steps, "Start the local control plane (or reuse it)")
        cluster_up(out)
        client = Client(kubeconfig=cluster_tool.KUBECONFIG, namespace=NAMESPACE)
        kube = DemoCluster(client)
        out.step(3, steps, "Start the operator (or reuse it)")
        kube.ensure_namespace()  # the operator's Lease lives there
        start_operator(out, args.restart_operator)
        out.step(4, steps, f"Apply the example jobs to namespace {NAMESPACE} and watch them")
        jobs = [prepare(m, args.run_seconds) for m in manifests]
        apply_jobs(out, kube, jobs, args.run_seconds)
        applied = time.monotonic()
        out.line()
        try:
            final = watch(out, kube, jobs, args.timeout)
        except KeyboardInterrupt:
            out.line("\n  stopped watching; the jobs keep running")
            explore(out)
            return 130
        took = time.monotonic() - applied
        out.step(5, steps, f"Summary: every job that can finish did, {took:.1f}s after applying")
        summary(out, jobs, final)
        out.line()
        explore(out)
        out.line()
        out.line(f"  make demo took {time.monotonic() - t0:.1f}s")
        client.close()
    except DemoError as err:
        out.line(out.paint(f"demo: {err}", "31"))
        return 1
    except (ClientError, ApiError) as err:
        out.line(out.paint(f"demo: {err}", "31"))
        return 1
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
