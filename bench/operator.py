"""The operator at scale, side by side with the plain-client limit and Kubeflow's training operator.

    python bench/operator.py                       # every system and shape; JSON in bench/results/
    python bench/operator.py --shapes 100x8 --systems ours plain kubeflow
    python bench/operator.py --quick               # a smoke test: our operator, 3 jobs x 2 replicas
    python bench/operator.py render bench/results/operator.json   # the tables of docs/performance.md

It starts its own local control plane (tools/cluster.py with kwok, in .bench-cluster/, with an
audit policy) and stops it at the end. For each system and shape, in a fresh namespace of the same
cluster, it creates N jobs of M replicas as fast as the API server accepts them (16 threads) and
records, per job, the time from its creation (the create call returning) to all its pods created,
to all of them Running (kwok plays the kubelet), and to the job's status saying Running. Systems:

* `ours`: the bundled operator (`python -m t9k_operator`), GenericJobs with a master and M-1
  workers and one service port (so a service per pod, as Kubeflow makes for a PyTorchJob);
* `plain`: the limit, a minimal Python controller (`bench/operator.py plain-client`) that watches
  the same GenericJobs and creates exactly the pods and services our operator would create
  (`t9k_sdk.reconcile.desired_children`), 16 requests in flight, no status, no reads;
* `kubeflow`: Kubeflow's training operator (tools/ensure-bench-binaries.sh builds it from the Go
  module proxy) running PyTorchJobs with a Master and M-1 Workers, gang scheduling off.

All three use the same client-side rate limit (`--qps`/`--burst`, default 20/30: what
controller-runtime gives Kubeflow's operator, which has no flag for it) and the same number of
workers (`--workers`, default 4; Kubeflow's `--controller-threads`). Each controller runs as its
own user (a client certificate minted from the cluster's CA), and kube-apiserver's audit log
(Metadata level for those users only) counts its requests by verb, resource and code. Its peak
RSS (VmHWM) and CPU seconds come from /proc/<pid>.
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
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BENCH_CLUSTER = REPO / ".bench-cluster"
RESULTS = REPO / "bench" / "results"
DOC = REPO / "docs" / "performance.md"
SYSTEMS = ("plain", "ours", "kubeflow")
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

    def must(self, method: str, path: str, body: Any = None, ok: Sequence[int] = ()) -> Any:
        status, data = self.request(method, path, body)
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

    def __init__(self, kube: Kube, system: str, namespace: str, n: int, m: int) -> None:
        self.kube, self.system, self.namespace, self.n, self.m = kube, system, namespace, n, m
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
            if self.system != "plain" and status_running(self.system, job):
                now = time.monotonic()
                with self.lock:
                    times = self.job(job["metadata"]["name"])
                    if times.status is None:
                        times.status = now

    def done(self) -> bool:
        with self.lock:
            if len(self.jobs) < self.n:
                return False
            return all(  # every child exists (the plain client writes no status, so ...)
                t.all_running is not None
                and t.all_services is not None
                and (self.system == "plain" or t.status is not None)
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


def start_controller(
    system: str, kubeconfig: Path, namespace: str, s: Settings, kube: Kube
) -> subprocess.Popen[bytes]:
    logf = (s.work_dir / f"{namespace}.log").open("wb")
    port = free_port()
    if system == "ours":
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
    """Free the cluster for the next run (kwok deletes pods at once; the namespace controller
    the rest)."""
    kube.must("DELETE", f"/api/v1/namespaces/{namespace}", ok=(404,))
    with contextlib.suppress(TimeoutError):
        wait_until(
            f"namespace {namespace} to be deleted",
            lambda: kube.request("GET", f"/api/v1/namespaces/{namespace}")[0] == 404,
            300,
            1.0,
        )


def run_one(
    system: str, n: int, m: int, kube: Kube, state_dir: Path, s: Settings
) -> dict[str, Any]:
    namespace = f"bench-{system}-{n}x{m}"
    log(f"{system} {n}x{m}: namespace {namespace}")
    kube.must("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    user = USERS[system]
    kubeconfig = mint_kubeconfig(state_dir, user)
    rec = Recorder(kube, system, namespace, n, m)
    rec.start()
    proc = start_controller(system, kubeconfig, namespace, s, kube)
    # Every controller's start-up lists and watches take tokens from its bucket; wait until the
    # bucket is full again, so each system starts the run with the same burst.
    time.sleep(s.burst / s.qps)
    cpu0 = proc_stats(proc.pid)["cpu_seconds"]
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
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        rec.close()
    time.sleep(2.5)  # the audit backend flushes every second
    requests = audit_counts(state_dir / "logs" / "audit.log", user, namespace)

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
        "timed_out": timed_out,
        "seconds_to_submit_jobs": round(t_submitted, 3),
        "seconds_total": round(t_end, 3),
        "jobs_complete": sum(1 for j in jobs.values() if j.all_running is not None),
        "create_to_all_pods_created": percentiles(lat("all_created")),
        "create_to_all_children_created": percentiles(children),
        "create_to_all_running": percentiles(lat("all_running")),
        "create_to_status_running": percentiles(lat("status")) if system != "plain" else None,
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
        "minimum_writes_per_job": 2 * m + (0 if system == "plain" else 1),
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


# --- the plain client: the limit --------------------------------------------------------------


def plain_client(args: argparse.Namespace) -> int:
    """Watch GenericJobs; create each one's pods and services (desired_children), nothing else."""
    import http.server

    from t9k_operator.ratelimit import TokenBucket
    from t9k_sdk import codecs
    from t9k_sdk.reconcile import desired_children

    kube = Kube(Path(args.kubeconfig), pool=CREATORS)
    bucket = TokenBucket(args.qps, args.burst)
    ns = args.namespace
    pool = concurrent.futures.ThreadPoolExecutor(CREATORS)
    jobs: queue.Queue[dict[str, Any]] = queue.Queue()

    def create(path: str, body: dict[str, Any]) -> None:
        bucket.take()
        status, data = kube.request("POST", path, body)
        if status >= 300 and status != 409:
            print(f"create {path} failed: HTTP {status}: {str(data)[:300]}", flush=True)

    def dispatch() -> None:
        while True:
            job = jobs.get()
            children = desired_children(codecs.from_manifest(job))
            for pod in children.pods:  # in the operator's order: the pods, then the services
                pool.submit(create, f"/api/v1/namespaces/{ns}/pods", dict(pod))
            for svc in children.services:
                pool.submit(create, f"/api/v1/namespaces/{ns}/services", dict(svc))

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


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}x"


def render(result: dict[str, Any]) -> str:
    env = result["environment"]
    lines = [
        BEGIN,
        "",
        f"Measured {env['date']} on {env['machine']}; {env['python']}, kube-apiserver"
        f" {env['kubernetes']}, kwok {env['kwok']}, Kubeflow training operator"
        f" {env['training_operator']} built with {env['go']}. Every controller at"
        f" `--qps {result['settings']['qps']:g} --burst {result['settings']['burst']}` and"
        f" {result['settings']['workers']} workers. Command: `{result['command']}`.",
        "",
    ]
    by_shape: dict[str, dict[str, dict[str, Any]]] = {}
    for r in result["runs"]:
        by_shape.setdefault(f"{r['jobs']}x{r['replicas']}", {})[r["system"]] = r
    for shape, runs in by_shape.items():
        n, m = shape.split("x")
        lines += [
            f"#### {int(n):,} job{'s' if n != '1' else ''} x {int(m):,} replicas",
            "",
            "| | plain client (the limit) | t9k operator | Kubeflow training operator |",
            "| --- | ---: | ---: | ---: |",
        ]
        order = [runs.get(s) for s in SYSTEMS]

        def row(label: str, get: Any, unit: str = "", order: list[Any] = order) -> str:
            cells = [fmt(get(r), unit) if r else "not run" for r in order]
            return f"| {label} | " + " | ".join(cells) + " |"

        for key, label in (
            ("create_to_all_pods_created", "creation → all pods created"),
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
                "API writes per job: all / without Events (minimum)",
                lambda r: f"{r['api_writes_per_job']:g} / {r['api_writes_per_job_without_events']:g}"
                f" ({r['minimum_writes_per_job']})",
            ),
            row(
                "API requests per job by verb",
                lambda r: ", ".join(
                    f"{v} {c:g}" for v, c in r["api_requests_per_job_by_verb"].items()
                ),
            ),
            row("peak RSS", lambda r: r["controller"]["peak_rss_mib"], " MiB"),
            row("CPU seconds during the run", lambda r: r["controller"]["cpu_seconds_during_run"]),
            row("jobs complete / timed out", lambda r: f"{r['jobs_complete']} / {r['timed_out']}"),
            "",
        ]
        ours, plain, kf = (runs.get(s) for s in ("ours", "plain", "kubeflow"))
        if ours:

            def p99(r: dict[str, Any] | None, k: str) -> float | None:
                return (r.get(k) or {}).get("p99") if r else None

            lines += [
                "The t9k operator as a ratio (lower is better):",
                "",
                "| | to the plain client | to Kubeflow's operator |",
                "| --- | ---: | ---: |",
            ]
            for k, label in (
                ("create_to_all_pods_created", "p99 creation → all pods created"),
                ("create_to_all_children_created", "p99 creation → all pods and services created"),
                ("create_to_all_running", "p99 creation → all pods Running"),
            ):
                lines.append(
                    f"| {label} | {ratio(p99(ours, k), p99(plain, k))}"
                    f" | {ratio(p99(ours, k), p99(kf, k))} |"
                )
            lines.append(
                f"| p99 creation → status Running | - |"
                f" {ratio(p99(ours, 'create_to_status_running'), p99(kf, 'create_to_status_running'))} |"
            )
            lines.append(
                f"| API writes per job without Events | {ratio(ours['api_writes_per_job_without_events'], plain['api_writes_per_job_without_events'] if plain else None)}"
                f" | {ratio(ours['api_writes_per_job_without_events'], kf['api_writes_per_job_without_events'] if kf else None)} |"
            )
            lines.append(
                f"| peak RSS | - | {ratio(ours['controller']['peak_rss_mib'], kf['controller']['peak_rss_mib'] if kf else None)} |"
            )
            lines.append("")
    lines.append(END)
    return "\n".join(lines)


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
        results = [json.loads(f.read_text()) for f in a.json]
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
    p.add_argument("--systems", nargs="+", choices=SYSTEMS, help="(default: all three)")
    p.add_argument("--quick", action="store_true", help="3 jobs x 2 replicas, our operator only")
    p.add_argument("--qps", type=float, default=20.0)
    p.add_argument("--burst", type=int, default=30)
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
    a = p.parse_args(argv)
    shapes = a.shapes or (QUICK_SHAPES if a.quick else FULL_SHAPES)
    systems = a.systems or (("ours",) if a.quick else SYSTEMS)
    out = a.json or RESULTS / ("operator-quick.json" if a.quick else "operator.json")
    parsed = [tuple(int(x) for x in sh.lower().split("x")) for sh in shapes]
    kubeflow_dir = None
    if "kubeflow" in systems:
        built = subprocess.run(
            [str(REPO / "tools" / "ensure-bench-binaries.sh")],
            check=True,
            stdout=subprocess.PIPE,
            text=True,
        )
        kubeflow_dir = Path(built.stdout.strip().splitlines()[-1])
    subprocess.run(
        [str(REPO / "tools" / "ensure-binaries.sh")], check=True, stdout=subprocess.DEVNULL
    )
    work = a.cluster_dir.parent / f"{a.cluster_dir.name}-logs"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    s = Settings(a.qps, a.burst, a.workers, a.timeout, work, kubeflow_dir, a.timeline)
    command = (
        "make bench-operator"
        if not (a.shapes or a.systems or a.quick)
        else ("python bench/operator.py " + " ".join(argv))
    )
    result: dict[str, Any] = {
        "command": command,
        "settings": {"qps": a.qps, "burst": a.burst, "workers": a.workers},
        "runs": [],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    with bench_cluster(a.cluster_dir.resolve(), a.keep_cluster) as kubeconfig:
        kube = Kube(kubeconfig)
        add_bench_nodes(kube)
        if kubeflow_dir is not None:
            install_kubeflow_crds(kube, kubeflow_dir / "crds")
        result["environment"] = environment(kube, s)
        todo = [(n, m, system) for n, m in parsed for system in systems]
        for k, (n, m, system) in enumerate(todo):
            result["runs"].append(run_one(system, n, m, kube, a.cluster_dir.resolve(), s))
            out.write_text(json.dumps(result, indent=2) + "\n")  # what is done so far
            if k + 1 < len(todo):  # the last one goes with the cluster
                delete_namespace(kube, f"bench-{system}-{n}x{m}")
    log(f"wrote {out}; controller logs in {work}")
    if a.doc:
        write_doc(result)
    print(render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
