"""The operator at scale, side by side with the plain-client limit and Kubeflow's training operator.

    python bench/operator.py                       # every system, shape and qps; JSON in bench/results/
    python bench/operator.py --shapes 100x8 --systems ours plain plain-go kubeflow --qps 20 0
    python bench/operator.py --quick               # a smoke test: our operator, 3 jobs x 2 replicas
    python bench/operator.py render bench/results/operator.json   # the tables of docs/performance.md

It starts its own local control plane (tools/cluster.py with kwok, in .bench-cluster/, with an
audit policy) and stops it at the end. For each client-side limit, shape and system, in a fresh
namespace of the same cluster, it creates N jobs of M replicas as fast as the API server accepts
them (16 threads) and records, per job, the time from its creation (the create call returning) to
all its pods created, to all of them Running (kwok plays the kubelet), and to the job's status
saying Running. Systems:

* `ours`: the bundled operator (`python -m t9k_operator`), GenericJobs with a master and M-1
  workers and one service port (so a service per pod, as Kubeflow makes for a PyTorchJob);
* `plain`: the limit, a minimal Python controller (`bench/operator.py plain-client`) that watches
  the same GenericJobs and creates exactly the pods and services our operator would create
  (`t9k_sdk.reconcile.desired_children`), 16 requests in flight, no status, no reads;
* `plain-go`: the same in Go with client-go (tools/gobuild/plain-client, which
  tools/ensure-bench-binaries.sh builds from the Go module proxy): the same creates, byte for
  byte (the harness renders a template job's children with a sentinel name and uid, the client
  puts each job's own in their place), in the same order, 16 in flight;
* `kubeflow`: Kubeflow's training operator (built the same way) running PyTorchJobs with a Master
  and M-1 Workers, gang scheduling off.

Every system runs at each client-side rate limit of `--qps` (default 20, 200 and 0, which means no
client-side limit) with the same `--burst` (default 30), but Kubeflow's operator, which has no flag
for its limit (controller-runtime's 20/30), only at 20/30. All have the same number of workers
(`--workers`, default 4; Kubeflow's `--controller-threads`). Each controller runs as its own user
(a client certificate minted from the cluster's CA), and kube-apiserver's audit log (Metadata level
for those users only) counts its requests by verb, resource and code; the namespace's Events are
listed at the end of each run (the minimum writes with Events counted). Its peak RSS (VmHWM) and
CPU seconds come from /proc/<pid>.
"""

from __future__ import annotations

import sys

# Run as a script, this file's directory comes first on sys.path, where this file would shadow the
# standard library's `operator` module (which argparse, collections, ... import).
if __name__ == "__main__" and sys.path and sys.path[0].rstrip("/").endswith("bench"):
    del sys.path[0]

import argparse
import base64
import concurrent.futures
import contextlib
import json
import math
import os
import platform
import queue
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BENCH_CLUSTER = REPO / ".bench-cluster"
RESULTS = REPO / "bench" / "results"
DOC = REPO / "docs" / "performance.md"
SYSTEMS = ("plain", "plain-go", "ours", "kubeflow")
NO_STATUS = ("plain", "plain-go")
"""The plain clients write no status."""
FULL_QPS = (20.0, 200.0, 0.0)
KUBEFLOW_LIMITS = (20.0, 30)
"""controller-runtime's client-side limit (qps, burst): Kubeflow's operator has no flag for it."""
FULL_SHAPES = ("100x8", "1000x4", "1x2000")
QUICK_SHAPES = ("3x2",)
USERS = {s: f"t9k-bench-{s}" for s in SYSTEMS}
CREATORS = 16
"""Threads creating the jobs, and the plain client's requests in flight."""
BENCH_NODES = 8
BENCH_NODE_PODS = "1000"
BEGIN = "<!-- operator-bench:begin (bench/operator.py render writes this part) -->"
END = "<!-- operator-bench:end -->"
KUBEFLOW_VWC = "validator.training-operator.kubeflow.org"
SENTINEL_NAME = "t9k-bench-sentinel-job"
SENTINEL_UID = "5e471e17-0000-4000-8000-5e471e175e47"
"""What the plain Go client's template job is called, in place of which it puts each job's own."""


def log(msg: str) -> None:
    print(f"[bench-operator {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- the cluster, users and the audit log ---------------------------------------------------


AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived", "ResponseStarted"],
    "rules": [
        {"level": "Metadata", "users": sorted(USERS.values())},
        {"level": "None"},
    ],
}


def cluster_env(state_dir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "T9K_CLUSTER_DIR": str(state_dir),
        "T9K_REAL_NODE": "0",  # kwok nodes only: no real node (one per machine) for the bench
        "T9K_CLUSTER_AUDIT_POLICY": str(state_dir.parent / f"{state_dir.name}-audit-policy.yaml"),
    }


@contextlib.contextmanager
def bench_cluster(state_dir: Path, keep: bool) -> Iterator[Path]:
    """Start a fresh control plane in `state_dir` (audit log on); yield its kubeconfig."""
    env = cluster_env(state_dir)
    Path(env["T9K_CLUSTER_AUDIT_POLICY"]).write_text(yaml.safe_dump(AUDIT_POLICY))
    tool = [sys.executable, str(REPO / "tools" / "cluster.py")]
    subprocess.run([*tool, "down"], env=env, check=True, stdout=subprocess.DEVNULL)
    subprocess.run([*tool, "up"], env=env, check=True, stdout=subprocess.DEVNULL)
    try:
        yield state_dir / "kubeconfig"
    finally:
        if not keep:
            subprocess.run([*tool, "down"], env=env, check=False, stdout=subprocess.DEVNULL)


def mint_kubeconfig(state_dir: Path, user: str) -> Path:
    """A kubeconfig for `user` (in system:masters), signed by the cluster's CA."""
    pki = state_dir / "pki"
    out = state_dir / "bench-users"
    out.mkdir(exist_ok=True)
    key, csr, crt = (out / f"{user}.{ext}" for ext in ("key", "csr", "crt"))

    def ssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    ssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        str(key),
        "-out",
        str(csr),
        "-subj",
        f"/O=system:masters/CN={user}",
    )
    ssl(
        "x509",
        "-req",
        "-in",
        str(csr),
        "-CA",
        str(pki / "ca.crt"),
        "-CAkey",
        str(pki / "ca.key"),
        "-CAcreateserial",
        "-out",
        str(crt),
        "-days",
        "30",
        "-extfile",
        str(pki / "client.ext"),
    )
    config = yaml.safe_load((state_dir / "kubeconfig").read_text())
    config["users"] = [
        {
            "name": user,
            "user": {
                "client-certificate-data": base64.b64encode(crt.read_bytes()).decode(),
                "client-key-data": base64.b64encode(key.read_bytes()).decode(),
            },
        }
    ]
    for ctx in config["contexts"]:
        ctx["context"]["user"] = user
    path = out / f"{user}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def audit_counts(audit_log: Path, user: str, namespace: str) -> dict[str, int]:
    """'verb resource[/subresource] code' -> count, for `user`'s requests (any namespace)."""
    counts: Counter[str] = Counter()
    with contextlib.suppress(FileNotFoundError), audit_log.open() as fh:
        for line in fh:
            if user not in line:
                continue
            ev = json.loads(line)
            if ev.get("user", {}).get("username") != user or ev.get("stage") != "ResponseComplete":
                continue
            ref = ev.get("objectRef") or {}
            ns = ref.get("namespace")
            if ns and ns != namespace:
                continue
            res = ref.get("resource", ev.get("requestURI", "?").split("?")[0])
            if ref.get("subresource"):
                res += "/" + ref["subresource"]
            code = (ev.get("responseStatus") or {}).get("code", 0)
            counts[f"{ev['verb']} {res} {code}"] += 1
    return dict(sorted(counts.items()))


# --- the API, raw (no model decoding: the harness must not be the bottleneck) ---------------


class Kube:
    def __init__(self, kubeconfig: Path, pool: int = CREATORS + 8) -> None:
        from kubernetes import client, config

        cfg = client.Configuration()
        config.load_kube_config(str(kubeconfig), client_configuration=cfg)
        cfg.connection_pool_maxsize = pool
        self.api = client.ApiClient(cfg)

    def request(
        self, method: str, path: str, body: Any = None, query: Sequence[tuple[str, str]] = ()
    ) -> tuple[int, Any]:
        from kubernetes.client.exceptions import ApiException

        try:
            resp = self.api.call_api(
                path,
                method,
                query_params=list(query),
                body=body,
                header_params={"Content-Type": "application/json", "Accept": "application/json"},
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
            )
        except ApiException as err:
            return err.status, err.body
        data = resp.data
        return resp.status, json.loads(data) if data else None

    def must(
        self,
        method: str,
        path: str,
        body: Any = None,
        ok: Sequence[int] = (),
        query: Sequence[tuple[str, str]] = (),
    ) -> Any:
        status, data = self.request(method, path, body, query)
        if status >= 300 and status not in ok:
            raise RuntimeError(f"{method} {path}: HTTP {status}: {str(data)[:500]}")
        return data

    def watch(self, path: str, stop: threading.Event) -> Iterator[tuple[str, dict[str, Any]]]:
        """(type, object) of every object at `path` (the initial list as ADDED), until `stop`."""
        listed = self.must("GET", path)
        for item in listed.get("items") or ():
            yield "ADDED", item
        rv = listed["metadata"]["resourceVersion"]
        while not stop.is_set():
            resp = self.api.call_api(
                path,
                "GET",
                query_params=[("watch", "true"), ("resourceVersion", rv), ("timeoutSeconds", "5")],
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
            )
            try:
                buf = b""
                for chunk in resp.stream(65536):
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        if not line.strip():
                            continue
                        ev = json.loads(line)
                        obj = ev["object"]
                        if ev["type"] == "ERROR":
                            raise RuntimeError(f"watch {path}: {obj}")
                        rv = obj["metadata"]["resourceVersion"]
                        if ev["type"] != "BOOKMARK":
                            yield ev["type"], obj
                    if stop.is_set():
                        break
            finally:
                resp.release_conn()


def wait_until(what: str, check: Any, timeout: float, every: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)


def add_bench_nodes(kube: Kube, pods: str = BENCH_NODE_PODS) -> None:
    """kwok nodes with room for `pods` pods each (the test cluster's 4 nodes take 110 each)."""
    from tools import cluster as cluster_tool

    for i in range(BENCH_NODES):
        node = cluster_tool.FakeNode(f"kwok-bench-{i}", pods=pods)
        kube.must("POST", "/api/v1/nodes", cluster_tool._node_manifest(node), ok=(409,))

    def schedulable() -> bool:
        nodes = kube.must("GET", "/api/v1/nodes")["items"]
        bench = [n for n in nodes if n["metadata"]["name"].startswith("kwok-bench-")]
        return len(bench) == BENCH_NODES and all(
            not n["spec"].get("taints")
            and any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in (n.get("status") or {}).get("conditions") or ()
            )
            for n in bench
        )

    wait_until("the bench nodes to be Ready and untainted", schedulable, 90)


def install_kubeflow_crds(kube: Kube, crd_dir: Path) -> None:
    crd = yaml.safe_load((crd_dir / "kubeflow.org_pytorchjobs.yaml").read_text())
    crd.setdefault("metadata", {}).pop("annotations", None)
    kube.must("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd, ok=(409,))
    name = crd["metadata"]["name"]

    def established() -> bool:
        got = kube.must("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        return any(
            c["type"] == "Established" and c["status"] == "True"
            for c in (got.get("status") or {}).get("conditions") or ()
        )

    wait_until(f"CRD {name} to be Established", established, 30)


# --- the jobs ---------------------------------------------------------------------------------


def generic_job(name: str, replicas: int) -> dict[str, Any]:
    """A master and `replicas - 1` workers that sleep, as the PyTorchJob beside it."""
    from tools import kit

    def spec(role: str, count: int) -> dict[str, Any]:
        sleeper = kit.container("pytorch", ["sleep", "infinity"], image="busybox", args=[role])
        return kit.replica(role, count, containers=[sleeper])

    specs = [spec("master", 1)] + ([spec("worker", replicas - 1)] if replicas > 1 else [])
    return kit.generic_job(name, *specs, service={"ports": [{"name": "pytorch", "port": 23456}]})


def pytorch_job(name: str, replicas: int) -> dict[str, Any]:
    def spec(n: int, role: str) -> dict[str, Any]:
        return {
            "replicas": n,
            "restartPolicy": "OnFailure",
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "pytorch",
                            "image": "busybox",
                            "command": ["sleep", "infinity"],
                            "args": [role],
                        }
                    ]
                }
            },
        }

    specs = {"Master": spec(1, "master")}
    if replicas > 1:
        specs["Worker"] = spec(replicas - 1, "worker")
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {"pytorchReplicaSpecs": specs},
    }


def jobs_path(system: str, namespace: str) -> str:
    if system == "kubeflow":
        return f"/apis/kubeflow.org/v1/namespaces/{namespace}/pytorchjobs"
    from t9k_sdk import models

    return f"/apis/{models.GROUP}/{models.VERSION}/namespaces/{namespace}/genericjobs"


def status_running(system: str, job: dict[str, Any]) -> bool:
    status = job.get("status") or {}
    if system == "kubeflow":
        return any(
            c.get("type") == "Running" and c.get("status") == "True"
            for c in status.get("conditions") or ()
        )
    return status.get("phase") == "Running"


# --- measuring one run ------------------------------------------------------------------------


@dataclass
class JobTimes:
    created: float | None = None
    pods: dict[str, bool] = field(default_factory=dict)  # name -> Running
    services: set[str] = field(default_factory=set)
    first_pod: float | None = None
    all_created: float | None = None
    all_services: float | None = None
    all_running: float | None = None
    status: float | None = None


def controller_of(obj: dict[str, Any]) -> str | None:
    """The name of the object's controlling owner (its job), if any."""
    refs = obj["metadata"].get("ownerReferences") or ()
    return next((r["name"] for r in refs if r.get("controller")), None)


class Recorder:
    """Watches the namespace's pods and jobs and stamps each job's milestones (monotonic)."""

    def __init__(
        self, kube: Kube, system: str, namespace: str, n: int, m: int, until_created: bool = False
    ) -> None:
        self.kube, self.system, self.namespace, self.n, self.m = kube, system, namespace, n, m
        self.until_created = until_created
        self.jobs: dict[str, JobTimes] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._pods, daemon=True),
            threading.Thread(target=self._jobs, daemon=True),
            threading.Thread(target=self._services, daemon=True),
        ]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def job(self, name: str) -> JobTimes:
        return self.jobs.setdefault(name, JobTimes())

    def _owned(self, resource: str) -> Iterator[tuple[float, JobTimes, dict[str, Any]]]:
        """(when seen, its job's times, object) for every event on a job's pods or services;
        the caller holds `self.lock` while it handles one."""
        path = f"/api/v1/namespaces/{self.namespace}/{resource}"
        for _type, obj in self.kube.watch(path, self.stop):
            now = time.monotonic()
            owner = controller_of(obj)
            if owner is None:
                continue
            with self.lock:
                yield now, self.job(owner), obj

    def _pods(self) -> None:
        for now, times, pod in self._owned("pods"):
            if times.first_pod is None:
                times.first_pod = now
            running = (pod.get("status") or {}).get("phase") == "Running"
            times.pods[pod["metadata"]["name"]] = running or times.pods.get(
                pod["metadata"]["name"], False
            )
            if times.all_created is None and len(times.pods) >= self.m:
                times.all_created = now
            full = len(times.pods) >= self.m
            if times.all_running is None and full and all(times.pods.values()):
                times.all_running = now

    def _services(self) -> None:
        for now, times, svc in self._owned("services"):
            times.services.add(svc["metadata"]["name"])
            if times.all_services is None and len(times.services) >= self.m:
                times.all_services = now

    def _jobs(self) -> None:
        path = jobs_path(self.system, self.namespace)
        for _type, job in self.kube.watch(path, self.stop):
            if self.system not in NO_STATUS and status_running(self.system, job):
                now = time.monotonic()
                with self.lock:
                    times = self.job(job["metadata"]["name"])
                    if times.status is None:
                        times.status = now

    def done(self) -> bool:
        with self.lock:
            if len(self.jobs) < self.n:
                return False
            if self.until_created:
                return all(
                    t.all_created is not None and t.all_services is not None
                    for t in self.jobs.values()
                )
            return all(  # every child exists (the plain clients write no status, so ...)
                t.all_running is not None
                and t.all_services is not None
                and (self.system in NO_STATUS or t.status is not None)
                for t in self.jobs.values()
            )

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(10)


def proc_stats(pid: int) -> dict[str, float]:
    """Peak RSS (MiB) and CPU seconds (user + system) of a live process."""
    status = Path(f"/proc/{pid}/status").read_text()
    hwm = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
    rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return {
        "peak_rss_mib": round(hwm / 1024, 1),
        "rss_mib": round(rss / 1024, 1),
        "cpu_seconds": round((int(fields[11]) + int(fields[12])) / ticks, 2),
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return int(r.status) == 200
    except (urllib.error.URLError, OSError):
        return False


@dataclass
class Settings:
    qps: float
    burst: int
    workers: int
    timeout: float
    work_dir: Path
    kubeflow_dir: Path | None
    timeline: bool = False
    plain_go: Path | None = None
    """The Go plain client's binary (tools/ensure-bench-binaries.sh --plain-client)."""
    profile: Path | None = None
    """A folder for py-spy flame graphs of our operator during each run (None: no profile)."""
    baselines: dict[str, Path] = field(default_factory=dict)
    """`--baseline LABEL=DIR`: system `ours@LABEL` runs the operator of the checkout in DIR."""
    until_created: bool = False
    """End each run once every job has all its pods and services (not Running: bench/growth.py,
    whose largest points would otherwise wait minutes for the scheduler to bind 20,000 pods)."""


def start_controller(
    system: str,
    kubeconfig: Path,
    namespace: str,
    s: Settings,
    kube: Kube,
    *,
    replicas: int | None = None,
) -> subprocess.Popen[bytes]:
    """Start `system` on `namespace` and wait until it is ready. `replicas` (the jobs' M) is
    needed by `plain-go` only, which gets the children of a template job of that shape."""
    logf = (s.work_dir / f"{namespace}.log").open("wb")
    port = free_port()
    if system == "ours" or system.startswith("ours@"):
        argv = [
            sys.executable,
            "-m",
            "t9k_operator",
            "--kubeconfig",
            str(kubeconfig),
            "--namespace",
            namespace,
            "--no-leader-elect",
            "--workers",
            str(s.workers),
            "--qps",
            str(s.qps),
            "--burst",
            str(s.burst),
            "--health-port",
            str(port),
            "--health-bind",
            "127.0.0.1",
        ]
        env = dict(os.environ)
        if system != "ours":  # another checkout's operator (and SDK), first on the path
            source = s.baselines[system.removeprefix("ours@")]
            env["PYTHONPATH"] = f"{source}{os.pathsep}{source / 'operator'}"
        ready = f"http://127.0.0.1:{port}/readyz"
    elif system == "plain":
        argv = [
            sys.executable,
            str(Path(__file__).resolve()),
            "plain-client",
            "--kubeconfig",
            str(kubeconfig),
            "--namespace",
            namespace,
            "--qps",
            str(s.qps),
            "--burst",
            str(s.burst),
            "--ready-port",
            str(port),
        ]
        env = dict(os.environ)
        ready = f"http://127.0.0.1:{port}/"
    elif system == "plain-go":
        if s.plain_go is None or replicas is None:
            raise ValueError("plain-go needs Settings.plain_go (its binary) and replicas")
        # The template job as the API server would store it (its defaults applied), not created.
        path = jobs_path(system, namespace)
        template = kube.must(
            "POST", path, generic_job(SENTINEL_NAME, replicas), query=[("dryRun", "All")]
        )
        children = s.work_dir / f"{namespace}-children.json"
        children.write_text(json.dumps(children_template(template)))
        argv = [
            str(s.plain_go),
            f"--kubeconfig={kubeconfig}",
            f"--namespace={namespace}",
            f"--children={children}",
            f"--qps={s.qps:g}",
            f"--burst={s.burst}",
            f"--inflight={CREATORS}",
            f"--ready-port={port}",
        ]
        env = dict(os.environ)
        ready = f"http://127.0.0.1:{port}/"
    else:
        assert s.kubeflow_dir is not None
        # Its webhook certificates (cert-controller) live in a Secret of "its" namespace and are
        # injected into this ValidatingWebhookConfiguration; neither may be missing at start. The
        # webhook matches no namespace: the bench measures reconciling, not admission.
        kube.must(
            "POST",
            f"/api/v1/namespaces/{namespace}/secrets",
            {"metadata": {"name": "training-operator-webhook-cert"}},
            ok=(409,),
        )
        vwc = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": KUBEFLOW_VWC},
            "webhooks": [
                {
                    "name": "validate.pytorchjob.bench.invalid",
                    "admissionReviewVersions": ["v1"],
                    "sideEffects": "None",
                    "failurePolicy": "Ignore",
                    "clientConfig": {
                        "service": {"namespace": namespace, "name": "training-operator"}
                    },
                    "namespaceSelector": {"matchLabels": {"t9k-bench/never": "true"}},
                    "rules": [
                        {
                            "apiGroups": ["kubeflow.org"],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["pytorchjobs"],
                        }
                    ],
                }
            ],
        }
        kube.must(
            "DELETE",
            f"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/{KUBEFLOW_VWC}",
            ok=(404,),
        )
        kube.must(
            "POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", vwc
        )
        probe = free_port()
        argv = [
            str(s.kubeflow_dir / "training-operator"),
            "--enable-scheme=pytorchjob",
            f"--namespace={namespace}",
            f"--controller-threads={s.workers}",
            f"--metrics-bind-address=127.0.0.1:{port}",
            f"--health-probe-bind-address=127.0.0.1:{probe}",
            f"--webhook-server-port={free_port()}",
            "--leader-elect=false",
        ]
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "MY_POD_NAMESPACE": namespace}
        ready = f"http://127.0.0.1:{probe}/readyz"
    proc = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, env=env, cwd=REPO)
    mounted = system != "kubeflow"

    def is_ready() -> bool:
        nonlocal mounted
        if proc.poll() is not None:
            raise RuntimeError(f"{system} exited with {proc.returncode}; see {logf.name}")
        if not mounted:
            mounted = mount_webhook_certs(kube, namespace)
        return http_ok(ready)

    wait_until(f"{system} to be ready (log: {logf.name})", is_ready, 120, 0.2)
    return proc


def mount_webhook_certs(kube: Kube, namespace: str) -> bool:
    """Do what the kubelet's secret volume does in Kubeflow's Deployment: copy the certificates
    that its cert-controller wrote into the Secret to the directory the webhook server reads
    (fixed in the training operator: /tmp/k8s-webhook-server/serving-certs). True once done."""
    secret = kube.must(
        "GET", f"/api/v1/namespaces/{namespace}/secrets/training-operator-webhook-cert"
    )
    data = secret.get("data") or {}
    if not all(k in data for k in ("ca.crt", "tls.crt", "tls.key")):
        return False
    cert_dir = Path("/tmp/k8s-webhook-server/serving-certs")
    cert_dir.mkdir(parents=True, exist_ok=True)
    for key in ("ca.crt", "tls.crt", "tls.key"):
        (cert_dir / key).write_bytes(base64.b64decode(data[key]))
    return True


def percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p90": None, "p99": None, "max": None}
    v = sorted(values)

    def pct(p: float) -> float:  # nearest rank
        return round(v[min(len(v), max(1, math.ceil(p / 100 * len(v)))) - 1], 3)

    return {"p50": pct(50), "p90": pct(90), "p99": pct(99), "max": round(v[-1], 3)}


def delete_namespace(kube: Kube, namespace: str) -> None:
    """Free the cluster for the next run: the pods at once, in one request and without grace
    (20,000 pods would take the namespace controller minutes), the rest by the namespace
    controller."""
    kube.must("DELETE", f"/api/v1/namespaces/{namespace}/pods", query=[("gracePeriodSeconds", "0")])
    kube.must("DELETE", f"/api/v1/namespaces/{namespace}", ok=(404,))
    with contextlib.suppress(TimeoutError):
        wait_until(
            f"namespace {namespace} to be deleted",
            lambda: kube.request("GET", f"/api/v1/namespaces/{namespace}")[0] == 404,
            300,
            1.0,
        )


def start_profiler(
    pid: int, system: str, n: int, m: int, s: Settings
) -> subprocess.Popen[bytes] | None:
    """py-spy sampling our operator's threads (`--profile DIR`): a flame graph per run."""
    if s.profile is None or system != "ours":
        return None
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if spy is None:
        raise SystemExit("--profile needs py-spy: make bench-operator installs the bench group")
    s.profile.mkdir(parents=True, exist_ok=True)
    out = s.profile / f"{system}-{n}x{m}-qps{s.qps:g}.svg"
    # --gil: only the thread holding the interpreter is sampled, so the graph is where the CPU
    # time of the one interpreter goes (threads waiting on sockets would otherwise dominate).
    argv = [spy, "record", "--pid", str(pid), "--rate", "100", "--gil", "--nonblocking"]
    argv += ["-o", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)  # py-spy attaches before the first job is created
    return proc


def stop_profiler(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None:
        return
    proc.send_signal(signal.SIGINT)  # py-spy writes the flame graph on SIGINT
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return
    if proc.returncode not in (0, -signal.SIGINT):
        log(f"py-spy exited {proc.returncode}: {err.decode(errors='replace')[-300:]}")


def qps_name(qps: float) -> str:
    """`--qps` in a namespace's name: q20, q0.5 -> q0-5."""
    return f"q{qps:g}".replace(".", "-")


def job_events(kube: Kube, namespace: str, kind: str) -> dict[str, dict[str, int]]:
    """job name -> {"type reason": Event objects} of the Events recorded on the namespace's jobs of
    `kind` (all pages of the namespace's Events)."""
    out: dict[str, Counter[str]] = {}
    token = ""
    while True:
        query = [("limit", "500")] + ([("continue", token)] if token else [])
        page = kube.must("GET", f"/api/v1/namespaces/{namespace}/events", query=query)
        for ev in page.get("items") or ():
            about = ev.get("involvedObject") or {}
            if about.get("kind") == kind:
                key = f"{ev.get('type')} {ev.get('reason')}"
                out.setdefault(about.get("name", "?"), Counter())[key] += 1
        token = (page.get("metadata") or {}).get("continue") or ""
        if not token:
            return {job: dict(sorted(c.items())) for job, c in sorted(out.items())}


def minimum_writes(system: str, m: int, n: int, events: dict[str, dict[str, int]]) -> float:
    """The fewest writes per job that give each job its M pods, M services, a status (but for the
    plain clients) and the Events recorded on it, if a burst of Events of one type and reason
    were one Event with a count (as client-go's correlator makes of them)."""
    status = 0 if system in NO_STATUS else 1
    return 2 * m + status + sum(len(kinds) for kinds in events.values()) / n


def run_one(
    system: str, n: int, m: int, kube: Kube, state_dir: Path, s: Settings
) -> dict[str, Any]:
    """Run `system` on N jobs of M replicas at `s`'s limits, in a namespace of its own (the
    result's "namespace", which the caller deletes)."""
    namespace = f"bench-{system.replace('@', '-')}-{n}x{m}-{qps_name(s.qps)}"
    log(f"{system} {n}x{m} at --qps {s.qps:g}: namespace {namespace}")
    kube.must("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    user = USERS[system.split("@")[0]]
    kubeconfig = mint_kubeconfig(state_dir, user)
    rec = Recorder(kube, system, namespace, n, m, s.until_created)
    rec.start()
    proc = start_controller(system, kubeconfig, namespace, s, kube, replicas=m)
    # Every controller's start-up lists and watches take tokens from its bucket; wait until the
    # bucket is full again, so each system starts the run with the same burst.
    time.sleep(s.burst / s.qps if s.qps else 0.0)
    cpu0 = proc_stats(proc.pid)["cpu_seconds"]
    profiler = start_profiler(proc.pid, system, n, m, s)
    path = jobs_path(system, namespace)
    make = pytorch_job if system == "kubeflow" else generic_job
    errors: list[str] = []

    def create(i: int) -> None:
        name = f"job-{i:04d}"
        status, data = kube.request("POST", path, make(name, m))
        now = time.monotonic()
        if status >= 300:
            errors.append(f"{name}: HTTP {status}: {str(data)[:200]}")
            return
        with rec.lock:
            rec.job(name).created = now

    t0 = time.monotonic()
    t0_unix = time.time()
    with concurrent.futures.ThreadPoolExecutor(CREATORS) as pool:
        list(pool.map(create, range(n)))
    t_submitted = time.monotonic() - t0
    if errors:
        raise RuntimeError(f"{len(errors)} job creates failed, e.g. {errors[0]}")
    timed_out = False
    peak: dict[str, float] = proc_stats(proc.pid)
    try:
        deadline = time.monotonic() + s.timeout
        while not rec.done():
            if proc.poll() is not None:
                raise RuntimeError(f"{system} exited with {proc.returncode}")
            if time.monotonic() > deadline:
                timed_out = True
                log(f"{system} {n}x{m}: timed out after {s.timeout:.0f}s")
                break
            time.sleep(0.2)
        t_end = time.monotonic() - t0
        time.sleep(1.0)  # let the last status writes and events land
        peak = proc_stats(proc.pid)
    finally:
        stop_profiler(profiler)
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        rec.close()
    time.sleep(2.5)  # the audit backend flushes every second
    requests = audit_counts(state_dir / "logs" / "audit.log", user, namespace)
    on_jobs = job_events(kube, namespace, "PyTorchJob" if system == "kubeflow" else "GenericJob")

    with rec.lock:
        jobs = {k: v for k, v in rec.jobs.items() if v.created is not None}

    def lat(attr: str) -> list[float]:
        return [getattr(j, attr) - j.created for j in jobs.values() if getattr(j, attr) is not None]

    children = [
        max(j.all_created, j.all_services) - j.created
        for j in jobs.values()
        if j.all_created is not None and j.all_services is not None and j.created is not None
    ]

    created_last = max((j.all_created for j in jobs.values() if j.all_created), default=None)
    running_last = max((j.all_running for j in jobs.values() if j.all_running), default=None)
    first = min(j.created for j in jobs.values() if j.created is not None)
    by_verb: Counter[str] = Counter()
    for key, count in requests.items():
        by_verb[key.split()[0]] += count
    writes = sum(
        c for k, c in requests.items() if k.split()[0] in ("create", "update", "patch", "delete")
    )
    events = sum(c for k, c in requests.items() if k.split()[1] == "events")
    result: dict[str, Any] = {
        "system": system,
        "jobs": n,
        "replicas": m,
        "qps": s.qps,
        "burst": s.burst,
        "namespace": namespace,
        "timed_out": timed_out,
        "seconds_to_submit_jobs": round(t_submitted, 3),
        "seconds_total": round(t_end, 3),
        "jobs_complete": sum(1 for j in jobs.values() if j.all_running is not None),
        "create_to_all_pods_created": percentiles(lat("all_created")),
        "create_to_all_children_created": percentiles(children),
        "create_to_all_running": percentiles(lat("all_running")),
        "create_to_status_running": (
            percentiles(lat("status")) if system not in NO_STATUS else None
        ),
        "jobs_per_second_all_pods_created": (
            round(n / (created_last - first), 4)
            if created_last and len(lat("all_created")) == n
            else None
        ),
        "jobs_per_second_all_running": (
            round(n / (running_last - first), 4)
            if running_last and len(lat("all_running")) == n
            else None
        ),
        "api_requests": requests,
        "api_requests_per_job_by_verb": {v: round(c / n, 2) for v, c in sorted(by_verb.items())},
        "api_writes_per_job": round(writes / n, 2),
        "api_writes_per_job_without_events": round((writes - events) / n, 2),
        "minimum_writes_per_job": 2 * m + (0 if system in NO_STATUS else 1),
        "minimum_writes_per_job_with_events": round(minimum_writes(system, m, n, on_jobs), 2),
        "job_events": {
            "objects_by_type_reason": dict(
                sorted(sum(map(Counter, on_jobs.values()), Counter()).items())
            ),
            "distinct_type_reasons_per_job": round(sum(map(len, on_jobs.values())) / n, 2),
        },
        "controller": {**peak, "cpu_seconds_during_run": round(peak["cpu_seconds"] - cpu0, 2)},
    }
    if s.timeline:

        def at(t: float | None) -> float | None:
            return None if t is None else round(t - t0, 3)

        result["timeline"] = {
            "first_create_unix": round(t0_unix, 3),
            "columns": [
                "created",
                "first_pod",
                "all_pods",
                "all_services",
                "all_running",
                "status_running",
            ],
            "jobs": {
                name: [
                    at(j.created),
                    at(j.first_pod),
                    at(j.all_created),
                    at(j.all_services),
                    at(j.all_running),
                    at(j.status),
                ]
                for name, j in sorted(jobs.items())
            },
        }
    log(
        f"{system} {n}x{m}: p99 create->pods {result['create_to_all_pods_created']['p99']}s,"
        f" ->running {result['create_to_all_running']['p99']}s, writes/job {result['api_writes_per_job']},"
        f" peak RSS {peak['peak_rss_mib']} MiB, CPU {result['controller']['cpu_seconds_during_run']}s"
    )
    return result


# --- the plain clients: the limit -------------------------------------------------------------


def creates(job: dict[str, Any]) -> list[dict[str, Any]]:
    """{path, body} of each child the plain clients create for `job` (desired_children), in the
    operator's order: the pods, then the services."""
    from t9k_sdk import codecs
    from t9k_sdk.reconcile import desired_children

    ns = job["metadata"]["namespace"]
    children = desired_children(codecs.from_manifest(job))
    return [
        {"path": f"/api/v1/namespaces/{ns}/{resource}", "body": dict(obj)}
        for resource, objs in (("pods", children.pods), ("services", children.services))
        for obj in objs
    ]


def fill_children(template: dict[str, Any], name: str, uid: str) -> list[dict[str, Any]]:
    """What the Go plain client sends for the job `name`/`uid`: each child of `template` (a
    `children_template`) with the name and uid put in place of the sentinels, in the JSON text."""

    def text(value: str) -> str:  # as it goes between the quotes of a JSON string
        return json.dumps(value)[1:-1]

    out = []
    for child in template["children"]:
        body = json.dumps(child["body"])
        body = body.replace(text(template["name"]), text(name))
        body = body.replace(text(template["uid"]), text(uid))
        out.append({"path": child["path"], "body": json.loads(body)})
    return out


def children_template(job: dict[str, Any]) -> dict[str, Any]:
    """The Go plain client's `--children`: the creates of `job` (a job as the API server returns
    it) renamed to the sentinel name and uid. Raises ValueError unless every child carries both
    sentinels and putting another job's name and uid in their place gives exactly that job's
    creates (so a sentinel can occur nowhere else)."""

    def named(name: str, uid: str) -> dict[str, Any]:
        return {**job, "metadata": {**job["metadata"], "name": name, "uid": uid}}

    template: dict[str, Any] = {
        "name": SENTINEL_NAME,
        "uid": SENTINEL_UID,
        "children": creates(named(SENTINEL_NAME, SENTINEL_UID)),
    }
    for child in template["children"]:
        body = json.dumps(child["body"])
        if SENTINEL_NAME not in body or SENTINEL_UID not in body:
            raise ValueError(f"a child of the template job lacks a sentinel: {body[:300]}")
    probe = ("job-0042", "0b5e7ed0-1234-4321-8765-0123456789ab")
    if fill_children(template, *probe) != creates(named(*probe)):
        raise ValueError(
            f"the children of {job['metadata']['name']!r} do not depend on its name and uid only"
            f" through the sentinels {SENTINEL_NAME!r} and {SENTINEL_UID!r}"
        )
    return template


def plain_client(args: argparse.Namespace) -> int:
    """Watch GenericJobs; create each one's pods and services (desired_children), nothing else."""
    import http.server

    from t9k_operator.ratelimit import TokenBucket

    kube = Kube(Path(args.kubeconfig), pool=CREATORS)
    bucket = TokenBucket(args.qps, args.burst) if args.qps else None  # 0: no client-side limit
    ns = args.namespace
    pool = concurrent.futures.ThreadPoolExecutor(CREATORS)
    jobs: queue.Queue[dict[str, Any]] = queue.Queue()

    def create(path: str, body: dict[str, Any]) -> None:
        if bucket:
            bucket.take()
        status, data = kube.request("POST", path, body)
        if status >= 300 and status != 409:
            print(f"create {path} failed: HTTP {status}: {str(data)[:300]}", flush=True)

    def dispatch() -> None:
        while True:
            job = jobs.get()
            for child in creates(job):
                pool.submit(create, child["path"], child["body"])

    class Ready(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok\n")

        def log_message(self, *_: Any) -> None:
            pass

    threading.Thread(target=dispatch, daemon=True).start()
    stop = threading.Event()
    path = jobs_path("plain", ns)
    server = http.server.HTTPServer(("127.0.0.1", args.ready_port), Ready)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    seen: set[str] = set()
    for type_, job in kube.watch(path, stop):
        uid = job["metadata"]["uid"]
        if type_ == "ADDED" and uid not in seen:
            seen.add(uid)
            jobs.put(job)
    return 0


# --- the docs tables --------------------------------------------------------------------------


def fmt(v: Any, unit: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if isinstance(v, float):
        if v < 1:
            return f"{v:.3g}{unit}"
        return f"{v:,.2f}{unit}" if v < 100 else f"{v:,.0f}{unit}"
    return f"{v:,}{unit}"


def short(v: float | None) -> str:
    """A count per job as short as it goes: 8, 10.5, 4,001."""
    return "-" if v is None else f"{v:,g}"


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}x"


SYSTEM_LABELS = {
    "plain": "plain client, Python (the limit)",
    "plain-go": "plain client, Go (the limit)",
    "ours": "t9k operator",
    "kubeflow": "Kubeflow training operator",
}
Run = dict[str, Any]
ByLimit = dict[tuple[float, int], dict[str, dict[str, Run]]]
"""(qps, burst) -> "NxM" -> system -> run, in the order they ran."""


def with_limits(result: dict[str, Any]) -> dict[str, Any]:
    """`result` with each run's qps and burst: a result file from before several qps per run has
    one qps for all, in its settings."""
    settings = result["settings"]
    for run in result["runs"]:
        run.setdefault("qps", settings["qps"])
        run.setdefault("burst", settings["burst"])
    return result


def by_limit(result: dict[str, Any]) -> ByLimit:
    out: ByLimit = {}
    for r in with_limits(result)["runs"]:
        shapes = out.setdefault((float(r["qps"]), int(r["burst"])), {})
        shapes.setdefault(f"{r['jobs']}x{r['replicas']}", {})[r["system"]] = r
    return out


def limit_label(qps: float, burst: int) -> str:
    return "no client-side limit (`--qps 0`)" if qps == 0 else f"`--qps {qps:g} --burst {burst}`"


def shape_label(shape: str) -> str:
    n, m = shape.split("x")
    return f"{int(n):,} x {int(m):,}"


def p99(r: Run | None, key: str) -> float | None:
    return (r.get(key) or {}).get("p99") if r else None


def cpu_per_child(r: Run | None) -> float | None:
    """CPU seconds of the run per pod or service created (201 in the audit log)."""
    if not r:
        return None
    created = sum(r["api_requests"].get(f"create {res} 201", 0) for res in ("pods", "services"))
    return r["controller"]["cpu_seconds_during_run"] / created if created else None


def faster_plain(runs: dict[str, Run]) -> tuple[str, Run] | None:
    """The plain client (Python or Go) with the lower p99 creation -> all pods created."""
    timed = [(s, r) for s, r in runs.items() if s in NO_STATUS and p99(r, KEY_PODS) is not None]
    return min(timed, key=lambda sr: p99(sr[1], KEY_PODS) or 0.0, default=None)


KEY_PODS = "create_to_all_pods_created"


def verdict(value: float | None, of: float | None, within: float, note: str = "") -> str:
    """A target cell: met or not, with the ratio `value / of`."""
    if value is None or not of:
        return "-"
    r = value / of
    return f"{'**met**' if r <= within else 'not met'}: {r:.2f}x{note}"


def targets(result: dict[str, Any]) -> list[str]:
    """The table of issue 26's targets for our operator, a row per target and limit."""
    limits = by_limit(result)
    shapes = list(dict.fromkeys(shape for runs in limits.values() for shape in runs))
    lines = [
        "| Target (issue 26) | client-side limit | " + " | ".join(map(shape_label, shapes)) + " |",
        "| --- | --- |" + " --- |" * len(shapes),
    ]

    def pods(runs: dict[str, Run]) -> str:
        plain = faster_plain(runs)
        if plain is None:
            return "-"
        note = " (the Go client)" if plain[0] == "plain-go" else " (the Python client)"
        return verdict(p99(runs.get("ours"), KEY_PODS), p99(plain[1], KEY_PODS), 1.1, note)

    def cpu(runs: dict[str, Run]) -> str:
        return verdict(cpu_per_child(runs.get("ours")), cpu_per_child(runs.get("plain")), 2.0)

    def writes(runs: dict[str, Run]) -> str:
        ours = runs.get("ours")
        if not ours or "minimum_writes_per_job_with_events" not in ours:
            return "-"
        minimum = ours["minimum_writes_per_job_with_events"]
        note = f" ({ours['api_writes_per_job']:g} for {minimum:g})"
        return verdict(ours["api_writes_per_job"], minimum, 1.1, note)

    for label, cell in (
        ("p99 creation → all pods created within 1.1x of the faster plain client", pods),
        ("CPU seconds per pod or service created within 2x of the Python plain client", cpu),
        ("API writes per job within 1.1x of the minimum with Events counted", writes),
    ):
        for (qps, burst), runs in limits.items():
            cells = [cell(runs.get(shape, {})) for shape in shapes]
            lines.append(f"| {label} | {limit_label(qps, burst)} | " + " | ".join(cells) + " |")
    return lines


def render(result: dict[str, Any]) -> str:
    env = result["environment"]
    lines = [
        BEGIN,
        "",
        f"Measured {env['date']} on {env['machine']}; {env['python']}, kube-apiserver"
        f" {env['kubernetes']}, kwok {env['kwok']}, Kubeflow training operator"
        f" {env['training_operator']} and the Go plain client built with {env['go']}. Every"
        f" controller with {result['settings']['workers']} workers. Command:"
        f" `{result['command']}`.",
        "",
        *targets(result),
        "",
    ]
    for (qps, burst), shapes in by_limit(result).items():
        lines += [f"#### {limit_label(qps, burst)[0].upper()}{limit_label(qps, burst)[1:]}", ""]
        systems = [s for s in SYSTEMS if any(s in runs for runs in shapes.values())]
        for shape, runs in shapes.items():
            n, m = shape.split("x")
            lines += [
                f"##### {int(n):,} job{'s' if n != '1' else ''} x {int(m):,} replicas",
                "",
                "| | " + " | ".join(SYSTEM_LABELS[s] for s in systems) + " |",
                "| --- |" + " ---: |" * len(systems),
            ]
            order = [runs.get(s) for s in systems]

            def row(label: str, get: Any, unit: str = "", order: list[Any] = order) -> str:
                cells = [fmt(get(r), unit) if r else "not run" for r in order]
                return f"| {label} | " + " | ".join(cells) + " |"

            for key, label in (
                (KEY_PODS, "creation → all pods created"),
                ("create_to_all_children_created", "creation → all pods and services created"),
                ("create_to_all_running", "creation → all pods Running"),
                ("create_to_status_running", "creation → status Running"),
            ):
                for p in ("p50", "p90", "p99"):
                    lines.append(
                        row(f"{label}, {p}", lambda r, k=key, p=p: (r.get(k) or {}).get(p), " s")
                    )
            lines += [
                row("jobs/s, all pods created", lambda r: r["jobs_per_second_all_pods_created"]),
                row("jobs/s, all pods Running", lambda r: r["jobs_per_second_all_running"]),
                row(
                    "API writes per job: all / without Events",
                    lambda r: f"{r['api_writes_per_job']:g}"
                    f" / {r['api_writes_per_job_without_events']:g}",
                ),
                row(
                    "minimum writes per job: with Events / without",
                    lambda r: f"{short(r.get('minimum_writes_per_job_with_events'))}"
                    f" / {r['minimum_writes_per_job']}",
                ),
                row(
                    "API requests per job by verb",
                    lambda r: ", ".join(
                        f"{v} {c:g}" for v, c in r["api_requests_per_job_by_verb"].items()
                    ),
                ),
                row("peak RSS", lambda r: r["controller"]["peak_rss_mib"], " MiB"),
                row(
                    "CPU seconds during the run",
                    lambda r: r["controller"]["cpu_seconds_during_run"],
                ),
                row("CPU milliseconds per pod or service created", lambda r: _ms(cpu_per_child(r))),
                row(
                    "jobs complete / timed out",
                    lambda r: f"{r['jobs_complete']} / {r['timed_out']}",
                ),
                "",
            ]
            lines += ratios(runs)
    lines.append(END)
    return "\n".join(lines)


def ratios(runs: dict[str, Run]) -> list[str]:
    """Our operator's figures as ratios to the faster plain client's and Kubeflow's operator's
    (the columns of those that ran); the status and peak RSS only to Kubeflow's."""
    plain, kf = faster_plain(runs), runs.get("kubeflow")
    refs = [
        (label, ref, is_plain)
        for label, ref, is_plain in (
            ("to the faster plain client", plain[1] if plain else None, True),
            ("to Kubeflow's operator", kf, False),
        )
        if ref
    ]
    ours = runs.get("ours")
    if not ours or not refs:
        return []
    lines = [
        "The t9k operator as a ratio (lower is better):",
        "",
        "| | " + " | ".join(label for label, _, _ in refs) + " |",
        "| --- |" + " ---: |" * len(refs),
    ]
    for label, get, plain_too in (
        ("p99 creation → all pods created", lambda r: p99(r, KEY_PODS), True),
        (
            "p99 creation → all pods and services created",
            lambda r: p99(r, "create_to_all_children_created"),
            True,
        ),
        ("p99 creation → all pods Running", lambda r: p99(r, "create_to_all_running"), True),
        ("p99 creation → status Running", lambda r: p99(r, "create_to_status_running"), False),
        ("CPU seconds per pod or service created", cpu_per_child, True),
        ("API writes per job without Events", writes_without_events, True),
        ("peak RSS", peak_rss, False),
    ):
        cells = [
            ratio(get(ours), get(ref)) if plain_too or not is_plain else "-"
            for _, ref, is_plain in refs
        ]
        if any(c != "-" for c in cells):
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


def writes_without_events(r: Run | None) -> float | None:
    return r["api_writes_per_job_without_events"] if r else None


def peak_rss(r: Run | None) -> float | None:
    return r["controller"]["peak_rss_mib"] if r else None


def write_doc(result: dict[str, Any], doc: Path = DOC) -> None:
    from bench._docs import write_block

    write_block(doc, render(result), BEGIN, END)


def environment(kube: Kube, s: Settings) -> dict[str, Any]:
    version = kube.must("GET", "/version")
    cpu = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = Path("/proc/meminfo").read_text().split()[1]
    go = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True).stdout.strip()
    versions = {}
    for line in (REPO / "tools" / "versions.sh").read_text().splitlines():
        if "=" in line and line.split("=")[0].isupper() and not line.startswith("#"):
            versions[line.split("=")[0]] = line.split("=", 1)[1]
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{os.cpu_count()} CPUs ({cpu}), {int(mem) // 1024 // 1024} GiB,"
        f" {platform.system()} {platform.release()}, load average"
        f" {os.getloadavg()[0]:.1f} at the start",
        "python": f"CPython {platform.python_version()}",
        "kubernetes": version.get("gitVersion"),
        "kwok": versions.get("KWOK_VERSION"),
        "training_operator": versions.get("TRAINING_OPERATOR_VERSION"),
        "go": go,
    }


# --- main -------------------------------------------------------------------------------------


def ensure_bench_binaries(*args: str) -> Path:
    """Build (or find in the cache) what tools/ensure-bench-binaries.sh builds; the path it prints
    last: Kubeflow's folder, or with `--plain-client` the Go plain client's binary."""
    built = subprocess.run(
        [str(REPO / "tools" / "ensure-bench-binaries.sh"), *args],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    return Path(built.stdout.strip().splitlines()[-1])


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["render"]:
        p = argparse.ArgumentParser(prog="bench/operator.py render")
        p.add_argument(
            "json", type=Path, nargs="+", help="result files; their runs are shown together"
        )
        p.add_argument("--doc", type=Path, default=DOC)
        p.add_argument("--print", action="store_true", help="print the tables, leave the doc")
        a = p.parse_args(argv[1:])
        results = [with_limits(json.loads(f.read_text())) for f in a.json]
        merged: dict[str, Any] = results[0]
        merged["runs"] = [r for res in results for r in res["runs"]]
        merged["command"] = "`, `".join(res["command"] for res in results)
        if a.print:
            print(render(merged))
        else:
            write_doc(merged, a.doc)
            print(f"updated {a.doc}")
        return 0
    if argv[:1] == ["plain-client"]:
        p = argparse.ArgumentParser(prog="bench/operator.py plain-client")
        p.add_argument("--kubeconfig", required=True)
        p.add_argument("--namespace", required=True)
        p.add_argument("--qps", type=float, required=True)
        p.add_argument("--burst", type=int, required=True)
        p.add_argument("--ready-port", type=int, required=True)
        return plain_client(p.parse_args(argv[1:]))

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--shapes", nargs="+", help=f"NxM (default {' '.join(FULL_SHAPES)})")
    p.add_argument("--systems", nargs="+", choices=SYSTEMS, help="(default: all four)")
    p.add_argument(
        "--quick", action="store_true", help="3 jobs x 2 replicas, our operator only, --qps 20"
    )
    p.add_argument(
        "--qps",
        type=float,
        nargs="+",
        help="client-side limits to run each shape and system at; 0: no client-side limit"
        f" (default {' '.join(f'{q:g}' for q in FULL_QPS)}; Kubeflow's operator runs only at"
        f" {KUBEFLOW_LIMITS[0]:g} with --burst {KUBEFLOW_LIMITS[1]}, its fixed limits)",
    )
    p.add_argument("--burst", type=int, default=30, help="(default 30)")
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--timeout", type=float, default=900.0, help="per run (default 900 s)")
    p.add_argument("--json", type=Path, help="(default bench/results/operator[-quick].json)")
    p.add_argument("--doc", action="store_true", help="also write the tables into the docs")
    p.add_argument("--cluster-dir", type=Path, default=BENCH_CLUSTER)
    p.add_argument("--keep-cluster", action="store_true")
    p.add_argument(
        "--timeline",
        action="store_true",
        help="also record each job's milestones (seconds from the first create) in the JSON",
    )
    p.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="write a py-spy flame graph of our operator per run into DIR",
    )
    p.add_argument(
        "--until-created",
        action="store_true",
        help="end each run once every job has its pods and services, not once they run (as"
        " bench/growth.py does: binding thousands of pods is the scheduler's cost)",
    )
    p.add_argument(
        "--node-pods",
        type=int,
        default=int(BENCH_NODE_PODS),
        help=f"pods each of the {BENCH_NODES} kwok nodes holds (default %(default)s)",
    )
    p.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="also run the operator of the checkout in DIR, as system ours@LABEL (say, a git"
        " worktree of an older commit: what a change bought, side by side in one run)",
    )
    a = p.parse_args(argv)
    shapes = a.shapes or (QUICK_SHAPES if a.quick else FULL_SHAPES)
    systems = a.systems or (("ours",) if a.quick else SYSTEMS)
    baselines: dict[str, Path] = {}
    for spec in a.baseline:
        label, _, folder = spec.partition("=")
        if not label or not (Path(folder) / "operator" / "t9k_operator").is_dir():
            p.error(f"--baseline {spec!r}: give LABEL=DIR, DIR a checkout of this repository")
        baselines[label] = Path(folder).resolve()
    systems = [*systems, *(f"ours@{label}" for label in baselines)]
    qps_list = a.qps or ([KUBEFLOW_LIMITS[0]] if a.quick else list(FULL_QPS))
    if a.node_pods < 1:
        p.error(f"--node-pods: at least 1, got {a.node_pods}")
    if any(q < 0 for q in qps_list):
        p.error(f"--qps: each must be >= 0 (0: no client-side limit), got {qps_list}")
    out = a.json or RESULTS / ("operator-quick.json" if a.quick else "operator.json")
    parsed = [tuple(int(x) for x in sh.lower().split("x")) for sh in shapes]

    kubeflow_dir = ensure_bench_binaries() if "kubeflow" in systems else None
    plain_go = ensure_bench_binaries("--plain-client") if "plain-go" in systems else None
    subprocess.run(
        [str(REPO / "tools" / "ensure-binaries.sh")], check=True, stdout=subprocess.DEVNULL
    )
    work = a.cluster_dir.parent / f"{a.cluster_dir.name}-logs"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    s = Settings(
        qps_list[0],
        a.burst,
        a.workers,
        a.timeout,
        work,
        kubeflow_dir,
        a.timeline,
        plain_go,
        a.profile,
        baselines,
        until_created=a.until_created,
    )
    command = (
        "make bench-operator"
        if not (a.shapes or a.systems or a.quick or a.qps)
        else ("python bench/operator.py " + " ".join(argv))
    )
    result: dict[str, Any] = {
        "command": command,
        "settings": {"qps": qps_list, "burst": a.burst, "workers": a.workers},
        "runs": [],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    with bench_cluster(a.cluster_dir.resolve(), a.keep_cluster) as kubeconfig:
        kube = Kube(kubeconfig)
        add_bench_nodes(kube, str(a.node_pods))
        if kubeflow_dir is not None:
            install_kubeflow_crds(kube, kubeflow_dir / "crds")
        result["environment"] = environment(kube, s)
        todo = [
            (qps, n, m, system)
            for qps in qps_list
            for n, m in parsed
            for system in systems
            if system != "kubeflow" or (qps, a.burst) == KUBEFLOW_LIMITS
        ]
        if "kubeflow" in systems and (a.burst != KUBEFLOW_LIMITS[1] or len(qps_list) > 1):
            log(
                "kubeflow runs only at --qps {:g} --burst {} (it has no flag for its limits)".format(
                    *KUBEFLOW_LIMITS
                )
            )
        for k, (qps, n, m, system) in enumerate(todo):
            run = run_one(system, n, m, kube, a.cluster_dir.resolve(), replace(s, qps=qps))
            result["runs"].append(run)
            out.write_text(json.dumps(result, indent=2) + "\n")  # what is done so far
            if k + 1 < len(todo):  # the last one goes with the cluster
                delete_namespace(kube, run["namespace"])
    log(f"wrote {out}; controller logs in {work}")
    if a.doc:
        write_doc(result)
    print(render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
