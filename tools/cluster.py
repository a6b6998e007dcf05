#!/usr/bin/env python3
"""A real, throwaway Kubernetes control plane on 127.0.0.1 for tests and the demo.

    python tools/cluster.py up       # start (or reuse) the cluster, print how to use it
    python tools/cluster.py status   # show every process, its port and log; exit 1 if unhealthy
    python tools/cluster.py env      # print `export KUBECONFIG=...` (for `eval "$(...)"`)
    python tools/cluster.py restart kube-apiserver   # or etcd: stop and start one component
    python tools/cluster.py down     # stop what `up` and `make demo` started, remove .cluster/
    python tools/cluster.py real-node down|up   # stop or start the real node alone
    python tools/cluster.py import-images       # load images built since `up` into the real node
    python tools/cluster.py kueue up|down|status # Kueue, on demand (tools/kueue.py)

`up` runs etcd, kube-apiserver (TLS, client-certificate admin in system:masters, RBAC, service
accounts, as controller-runtime's envtest does), installs the CRDs from operator/deploy/crds/ and
tests/cluster/crds/ and waits until they are Established, and only then starts
kube-controller-manager (so its garbage collector discovers the custom resources at once),
kube-scheduler and kwok, which plays the kubelet of a few fake nodes (tools/kwok/stages.yaml),
and then one real node (tools/realnode.py: containerd, kubelet, CoreDNS; --no-real-node leaves
it out) with the images of tools/images.py.

Everything lives in .cluster/ at the repository root: kubeconfig, state.json (pids, ports),
logs/<component>.log, pki/ and etcd/. The binaries come from tools/ensure-binaries.sh, which
builds them from the Go module proxy into a version-keyed cache outside the repository.

Only the standard library and PyYAML are used, so the script runs before any virtualenv exists.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

if __package__:  # imported as tools.cluster (tests, tools/chaos.py)
    from . import images, procs, realnode
else:  # run as a script: tools/ is sys.path[0]
    import images  # type: ignore[no-redef]
    import procs  # type: ignore[no-redef]
    import realnode  # type: ignore[no-redef]

ProcessRecord = procs.ProcessRecord

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
STATE_DIR: Final = Path(os.environ.get("T9K_CLUSTER_DIR", REPO_ROOT / ".cluster")).resolve()
STATE_FILE: Final = STATE_DIR / "state.json"
KUBECONFIG: Final = STATE_DIR / "kubeconfig"
LOG_DIR: Final = STATE_DIR / "logs"
PKI_DIR: Final = STATE_DIR / "pki"
STAGES_FILE: Final = REPO_ROOT / "tools" / "kwok" / "stages.yaml"
ENSURE_BINARIES: Final = REPO_ROOT / "tools" / "ensure-binaries.sh"
CRD_DIRS: Final = (
    REPO_ROOT / "operator" / "deploy" / "crds",
    REPO_ROOT / "tests" / "cluster" / "crds",
)
STATE_VERSION: Final = 1
FIELD_MANAGER: Final = "t9k-cluster"
CONTEXT_NAME: Final = "t9k-local"
DIGEST_ANNOTATION: Final = "cluster.t9k.dev/manifest-sha256"
BINARIES: Final = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
AUDIT_LOG: Final = LOG_DIR / "audit.log"
AUDIT_POLICY_ENV: Final = "T9K_CLUSTER_AUDIT_POLICY"
"""An audit policy file to start kube-apiserver with (bench/operator.py); the log is AUDIT_LOG."""
OPERATOR_PID_FILE: Final = STATE_DIR / "operator.pid"
"""pid of the `t9k-operator` that `make demo` (tools/demo.py) runs against this cluster."""


@dataclass(frozen=True)
class FakeNode:
    """A kwok node and what it advertises (allocatable = capacity)."""

    name: str
    cpu: str = "32"
    memory: str = "256Gi"
    pods: str = "110"
    gpus: str = "8"


# Four identical nodes: 32 CPUs, 256 GiB and 8 GPUs each. A test that needs a pod which fits on
# no node asks for more than MAX_GPUS_PER_NODE GPUs.
FAKE_NODES: Final = tuple(FakeNode(f"kwok-node-{i}") for i in range(4))
MAX_GPUS_PER_NODE: Final = max(int(n.gpus) for n in FAKE_NODES)


# libyaml's loader when PyYAML has it: the generated CRDs are megabytes of YAML.
_YamlLoader: Final[type[yaml.SafeLoader]] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ClusterError(Exception):
    """A component failed; the message names it and the log to read."""


# --------------------------------------------------------------------------------------------
# state


@dataclass
class State:
    """What `up` wrote to .cluster/state.json."""

    bin_dir: str
    ports: dict[str, int]
    processes: list[ProcessRecord] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)
    ready: bool = False
    node: list[ProcessRecord] | None = None
    """The real node's processes (tools/realnode.py), None for a kwok-only cluster."""

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['kube-apiserver']}"

    def to_json(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "bin_dir": self.bin_dir,
            "ports": self.ports,
            "server": self.server,
            "kubeconfig": str(KUBECONFIG),
            "started_at": self.started_at,
            "ready": self.ready,
            "processes": [p.to_json() for p in self.processes],
            "node": None if self.node is None else [p.to_json() for p in self.node],
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> State:
        if data.get("version") != STATE_VERSION:
            raise ValueError(f"unknown state version {data.get('version')!r}")
        return State(
            bin_dir=str(data["bin_dir"]),
            ports={str(k): int(v) for k, v in data["ports"].items()},
            processes=[ProcessRecord.from_json(p) for p in data["processes"]],
            started_at=float(data["started_at"]),
            ready=bool(data["ready"]),
            node=(
                None
                if data.get("node") is None
                else [ProcessRecord.from_json(p) for p in data["node"]]
            ),
        )

    def save(self) -> None:
        tmp = STATE_FILE.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=2) + "\n")
        tmp.replace(STATE_FILE)


def read_state() -> State | None:
    """The state of the cluster in .cluster/, or None if there is none (or it is unreadable)."""
    try:
        return State.from_json(json.loads(STATE_FILE.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None


# --------------------------------------------------------------------------------------------
# processes


_proc_stat = procs.proc_stat


def process_alive(record: ProcessRecord) -> bool:
    """True if the recorded process still runs (not a zombie, not a reused pid)."""
    return record.alive()


def _session_members(sid: int) -> list[int]:
    """Pids of live processes in session `sid` (every component runs in a session of its own)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        stat = _proc_stat(int(entry.name))
        if stat is not None and stat[2] == sid and stat[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


def _signal_session(record: ProcessRecord, sig: signal.Signals) -> bool:
    """Send `sig` to the component's process group; True if something of it was still running."""
    if process_alive(record):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(record.pid, sig)
        return True
    found = False
    for pid in _session_members(record.pid):  # the leader is gone but children may linger
        found = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    return found


def stop_processes(records: Sequence[ProcessRecord], grace: float = 10.0) -> None:
    """Stop the clients of the API server, then the API server, then etcd.

    An API server whose etcd is already gone does not finish its graceful shutdown, so the
    storage goes last.
    """
    tiers = (("etcd",), ("kube-apiserver",))
    last = {name for tier in tiers for name in tier}
    _stop_together([r for r in records if r.name not in last], grace)
    for tier in reversed(tiers):
        _stop_together([r for r in records if r.name in tier], grace)
    _await_reaped(records)


def _stop_together(records: Sequence[ProcessRecord], grace: float) -> None:
    """SIGTERM the components, then SIGKILL what is left after `grace` seconds."""
    if not records:
        return
    for record in reversed(records):
        _signal_session(record, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not any(process_alive(r) or _session_members(r.pid) for r in records):
            return
        _reap_children(records)
        time.sleep(0.05)
    for record in records:
        if _signal_session(record, signal.SIGKILL):
            print(
                f"[cluster] {record.name} still running {grace:.0f}s after SIGTERM; killed",
                file=sys.stderr,
            )
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not any(process_alive(r) or _session_members(r.pid) for r in records):
            break
        time.sleep(0.1)
    left = [r.name for r in records if process_alive(r) or _session_members(r.pid)]
    if left:
        raise ClusterError(f"processes survived SIGKILL: {', '.join(left)}")


def _reap_children(records: Sequence[ProcessRecord]) -> None:
    """Reap the components that this very process started (after a failed `up`)."""
    for record in records:
        with contextlib.suppress(ChildProcessError):  # not our child: init reaps it
            os.waitpid(record.pid, os.WNOHANG)


def _await_reaped(records: Sequence[ProcessRecord], timeout: float = 5.0) -> None:
    """Give init a moment to reap the exited components, so no <defunct> entry lingers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap_children(records)
        if not any((stat := _proc_stat(r.pid)) and stat[3] == r.start_ticks for r in records):
            return
        time.sleep(0.05)


free_ports = procs.free_ports


# --------------------------------------------------------------------------------------------
# HTTP


def _client_context() -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(PKI_DIR / "ca.crt"))
    ctx.load_cert_chain(str(PKI_DIR / "admin.crt"), str(PKI_DIR / "admin.key"))
    return ctx


def _unverified_context() -> ssl.SSLContext:
    # kube-controller-manager and kube-scheduler serve /healthz with a self-signed certificate.
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


http_get = procs.http_get


class Api:
    """A minimal client for the admin user, enough to install CRDs and create nodes."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.ctx = _client_context()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = 10.0,
        accept: str = "application/json",
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Accept", accept)
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self.ctx) as resp:
                status, raw = int(resp.status), resp.read()
        except urllib.error.HTTPError as err:
            status, raw = err.code, err.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")

    def ready(self) -> bool:
        return http_get(self.server + "/readyz", self.ctx)[0] == 200


# --------------------------------------------------------------------------------------------
# PKI and kubeconfig


def _openssl(*args: str) -> None:
    proc = subprocess.run(
        ["openssl", *args], cwd=PKI_DIR, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise ClusterError(f"openssl {' '.join(args[:2])} failed:\n{proc.stderr.strip()}")


def make_pki() -> None:
    """A throwaway CA, the apiserver's serving cert, the admin client cert, the SA key pair."""
    if shutil.which("openssl") is None:
        raise ClusterError("the openssl command is needed to make the cluster's certificates")
    PKI_DIR.mkdir(parents=True, exist_ok=True)
    days = "3650"
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
        "-days", days, "-subj", "/CN=t9k-local-test-ca",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
    )  # fmt: skip
    (PKI_DIR / "server.ext").write_text(
        f"subjectAltName=IP:127.0.0.1,IP:{realnode.API_SERVICE_IP},DNS:localhost,"
        "DNS:kubernetes,DNS:kubernetes.default,"
        "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n"
        "extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
    )
    (PKI_DIR / "client.ext").write_text(
        "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
    )
    for name, subject, ext in (
        ("apiserver", "/CN=kube-apiserver", "server.ext"),
        ("admin", "/O=system:masters/CN=t9k-test-admin", "client.ext"),
    ):
        _openssl(
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
            "-out", f"{name}.csr", "-subj", subject,
        )  # fmt: skip
        _openssl(
            "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{name}.crt", "-days", days, "-extfile", ext,
        )  # fmt: skip
    _openssl("genrsa", "-out", "sa.key", "2048")
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub")
    for key in PKI_DIR.glob("*.key"):
        key.chmod(0o600)


def write_kubeconfig(server: str) -> None:
    def b64(name: str) -> str:
        return base64.b64encode((PKI_DIR / name).read_bytes()).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CONTEXT_NAME,
                "cluster": {"server": server, "certificate-authority-data": b64("ca.crt")},
            }
        ],
        "users": [
            {
                "name": "admin",
                "user": {
                    "client-certificate-data": b64("admin.crt"),
                    "client-key-data": b64("admin.key"),
                },
            }
        ],
        "contexts": [
            {
                "name": CONTEXT_NAME,
                "context": {"cluster": CONTEXT_NAME, "user": "admin", "namespace": "default"},
            }
        ],
        "current-context": CONTEXT_NAME,
        "preferences": {},
    }
    KUBECONFIG.write_text(yaml.safe_dump(config, sort_keys=False))
    KUBECONFIG.chmod(0o600)


# --------------------------------------------------------------------------------------------
# binaries


def binary_dir(build: bool) -> Path:
    """The version-keyed binary cache; built with tools/ensure-binaries.sh if missing and `build`."""
    override = os.environ.get("T9K_BIN_DIR")
    if override:
        bin_dir = Path(override)
    else:
        proc = subprocess.run(
            ["bash", str(ENSURE_BINARIES), "--print-dir"],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise ClusterError(f"tools/ensure-binaries.sh --print-dir failed:\n{proc.stderr}")
        bin_dir = Path(proc.stdout.strip())
    missing = [b for b in BINARIES if not os.access(bin_dir / b, os.X_OK)]
    if missing and build and not override:
        print(
            f"[cluster] building {', '.join(missing)} (tools/ensure-binaries.sh)", file=sys.stderr
        )
        built = subprocess.run(["bash", str(ENSURE_BINARIES)], stdout=sys.stderr, check=False)
        if built.returncode != 0:
            raise ClusterError("tools/ensure-binaries.sh failed (its output is above)")
        missing = [b for b in BINARIES if not os.access(bin_dir / b, os.X_OK)]
    if missing:
        raise ClusterError(
            f"missing binaries in {bin_dir}: {', '.join(missing)}; run `make binaries`"
            " (a cold build from the Go module proxy takes several minutes)"
        )
    return bin_dir


# --------------------------------------------------------------------------------------------
# CRDs


@dataclass(frozen=True)
class CrdDoc:
    name: str
    source: Path
    body: dict[str, Any]


def crd_files() -> list[Path]:
    """Every CRD manifest `up` installs, in a stable order."""
    return [p for d in CRD_DIRS if d.is_dir() for p in sorted(d.glob("*.yaml"))]


def load_crds() -> list[CrdDoc]:
    docs = []
    for path in crd_files():
        try:
            loaded = [d for d in yaml.load_all(path.read_text(), Loader=_YamlLoader) if d]
        except yaml.YAMLError as err:
            raise ClusterError(f"{path.relative_to(REPO_ROOT)} is not valid YAML: {err}") from err
        for doc in loaded:
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                kind = doc.get("kind") if isinstance(doc, dict) else type(doc).__name__
                raise ClusterError(
                    f"{path.relative_to(REPO_ROOT)}: expected only CustomResourceDefinitions,"
                    f" found {kind}"
                )
            docs.append(CrdDoc(str(doc["metadata"]["name"]), path, doc))
    return docs


def _applied_digests(api: Api, base: str) -> dict[str, str]:
    """CRD name -> the manifest digest we stamped on it, from a metadata-only list (cheap even
    for CRDs of hundreds of kilobytes)."""
    status, body = api.request(
        "GET", base, accept="application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
    )
    if status != 200 or not isinstance(body, dict):
        return {}
    digests = {}
    for item in body.get("items") or []:
        annotations = (item.get("metadata") or {}).get("annotations") or {}
        if DIGEST_ANNOTATION in annotations:
            digests[item["metadata"]["name"]] = annotations[DIGEST_ANNOTATION]
    return digests


def install_crds(api: Api, timeout: float = 30.0) -> tuple[list[str], list[str], list[str]]:
    """Server-side apply every CRD that is missing or changed, and wait until it is Established.

    Each applied CRD carries the sha256 of its manifest in an annotation, so a second `up` skips
    the (for big schemas, seconds long) apply of CRDs that did not change.
    Returns the names of (all CRDs, those that did not exist before, those applied now).
    """
    docs = load_crds()
    base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    on_server = _applied_digests(api, base)
    created = []
    rejected = []
    applied = []
    for doc in docs:
        digest = hashlib.sha256(json.dumps(doc.body, sort_keys=True).encode()).hexdigest()
        if on_server.get(doc.name) == digest:
            continue
        body = json.loads(json.dumps(doc.body))
        metadata = body.setdefault("metadata", {})
        metadata["annotations"] = {**(metadata.get("annotations") or {}), DIGEST_ANNOTATION: digest}
        status, response = api.request(
            "PATCH",
            f"{base}/{doc.name}?fieldManager={FIELD_MANAGER}&force=true",
            body,
            content_type="application/apply-patch+yaml",
            timeout=60,
        )
        applied.append(doc.name)
        if status not in (200, 201):
            message = response.get("message") if isinstance(response, dict) else response
            rejected.append(
                f"the API server rejected CRD {doc.name} from"
                f" {doc.source.relative_to(REPO_ROOT)} (HTTP {status}): {message}"
            )
        elif status == 201:
            created.append(doc.name)
    if rejected:
        raise ClusterError("\n".join(rejected))

    def established(name: str) -> bool:
        status, body = api.request("GET", f"{base}/{name}")
        if status != 200 or not isinstance(body, dict):
            return False
        return _condition_true(body, "Established")

    pending = applied
    deadline = time.monotonic() + timeout
    while pending:
        pending = [n for n in pending if not established(n)]
        if pending and time.monotonic() > deadline:
            raise ClusterError(
                f"CRDs not Established after {timeout:.0f}s: {', '.join(pending)}"
                f" (read {LOG_DIR / 'kube-apiserver.log'})"
            )
        if pending:
            time.sleep(0.2)
    return [d.name for d in docs], created, applied


# --------------------------------------------------------------------------------------------
# components


def _spawn(state: State, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
    state.processes.append(procs.spawn(name, argv, LOG_DIR, env=env, cwd=STATE_DIR))
    state.save()


def _log_tail(name: str, lines: int = 25) -> str:
    try:
        text = (LOG_DIR / f"{name}.log").read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join("    " + line for line in text[-lines:])


def _wait(
    state: State, name: str, check: Callable[[], bool], timeout: float, what: str = "ready"
) -> None:
    """Poll `check` until it holds; fail early, naming the log, if the component died."""
    record = next((r for r in state.processes if r.name == name), None)
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return
        if record is not None and not process_alive(record):
            raise ClusterError(
                f"{name} exited during start-up; read {LOG_DIR / (name + '.log')}:\n"
                + _log_tail(name)
            )
        if time.monotonic() > deadline:
            raise ClusterError(
                f"{name} not {what} after {timeout:.0f}s; read {LOG_DIR / (name + '.log')}:\n"
                + _log_tail(name)
            )
        time.sleep(0.2)


def _node_manifest(node: FakeNode) -> dict[str, Any]:
    resources = {"cpu": node.cpu, "memory": node.memory, "pods": node.pods}
    resources["nvidia.com/gpu"] = node.gpus
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node.name,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
            "labels": {
                "kubernetes.io/hostname": node.name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
            },
        },
        "status": {"allocatable": resources, "capacity": resources},
    }


def _condition_true(obj: dict[str, Any], type_: str) -> bool:
    """Whether `obj` has the condition `type_` with status True (the script stays free of
    t9k_sdk, whose `_objects.condition` does this for the rest of the code)."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == type_ and c.get("status") == "True" for c in conditions)


def _nodes_schedulable(api: Api) -> bool:
    """All fake nodes Ready and without the not-ready taint (so the scheduler will use them)."""
    status, body = api.request("GET", "/api/v1/nodes?labelSelector=type%3Dkwok")
    if status != 200 or not isinstance(body, dict):
        return False
    ready = set()
    for item in body.get("items", []):
        taints = (item.get("spec") or {}).get("taints") or []
        if _condition_true(item, "Ready") and not any(
            t.get("key", "").startswith("node.kubernetes.io/") for t in taints
        ):
            ready.add(item["metadata"]["name"])
    return ready >= {n.name for n in FAKE_NODES}


def _component_env() -> dict[str, str]:
    home = STATE_DIR / "home"  # a clean HOME: kwok must not read ~/.kwok/kwok.yaml
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home)}
    env.pop("KUBECONFIG", None)
    return env


def _common_flags() -> list[str]:
    """Flags shared by kube-controller-manager and kube-scheduler."""
    kc = str(KUBECONFIG)
    return [
        f"--kubeconfig={kc}",
        f"--authentication-kubeconfig={kc}",
        f"--authorization-kubeconfig={kc}",
        "--bind-address=127.0.0.1",
        "--leader-elect=false",
        "--v=1",
    ]


def _kcm_argv(state: State) -> list[str]:
    return [
        str(Path(state.bin_dir) / "kube-controller-manager"),
        *_common_flags(),
        f"--secure-port={state.ports['kube-controller-manager']}",
        "--use-service-account-credentials=false",
        f"--service-account-private-key-file={PKI_DIR / 'sa.key'}",
        f"--root-ca-file={PKI_DIR / 'ca.crt'}",
        "--kube-api-qps=100",
        "--kube-api-burst=200",
    ]


def _audit_flags() -> list[str]:
    """kube-apiserver's audit flags when $T9K_CLUSTER_AUDIT_POLICY names a policy file."""
    policy = os.environ.get(AUDIT_POLICY_ENV, "").strip()
    if not policy:
        return []
    if not Path(policy).is_file():
        raise ClusterError(f"${AUDIT_POLICY_ENV} names {policy}, which is not a file")
    return [
        f"--audit-policy-file={Path(policy).resolve()}",
        f"--audit-log-path={AUDIT_LOG}",
        "--audit-log-format=json",
        "--audit-log-maxsize=0",
        "--audit-log-mode=batch",
        "--audit-log-batch-max-wait=1s",
    ]


def _healthz(url: str) -> Callable[[], bool]:
    ctx = _unverified_context()
    return lambda: http_get(url, ctx)[0] == 200


def restart_controller_manager(state: State) -> None:
    """Restart kube-controller-manager, e.g. so its garbage collector discovers new CRDs now."""
    name = "kube-controller-manager"
    old = [r for r in state.processes if r.name == name]
    stop_processes(old)
    state.processes = [r for r in state.processes if r.name != name]
    _spawn(state, name, _kcm_argv(state), _component_env())
    _wait(state, name, _healthz(f"https://127.0.0.1:{state.ports[name]}/healthz"), 30)


def _etcd_argv(state: State) -> list[str]:
    etcd_url = f"http://127.0.0.1:{state.ports['etcd']}"
    peer_url = f"http://127.0.0.1:{state.ports['etcd-peer']}"
    return [
        str(Path(state.bin_dir) / "etcd"),
        "--name=t9k",
        f"--data-dir={STATE_DIR / 'etcd'}",
        f"--listen-client-urls={etcd_url}",
        f"--advertise-client-urls={etcd_url}",
        f"--listen-peer-urls={peer_url}",
        f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=t9k={peer_url}",
        "--unsafe-no-fsync=true",
        "--auto-compaction-retention=1",
        "--quota-backend-bytes=2147483648",
        "--log-level=warn",
    ]


def _apiserver_argv(state: State) -> list[str]:
    etcd_url = f"http://127.0.0.1:{state.ports['etcd']}"
    api_port = state.ports["kube-apiserver"]
    return [
        str(Path(state.bin_dir) / "kube-apiserver"),
        f"--etcd-servers={etcd_url}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={api_port}",
        f"--cert-dir={PKI_DIR}",
        f"--tls-cert-file={PKI_DIR / 'apiserver.crt'}",
        f"--tls-private-key-file={PKI_DIR / 'apiserver.key'}",
        f"--client-ca-file={PKI_DIR / 'ca.crt'}",
        f"--service-account-issuer=https://127.0.0.1:{api_port}",
        f"--service-account-key-file={PKI_DIR / 'sa.pub'}",
        f"--service-account-signing-key-file={PKI_DIR / 'sa.key'}",
        # its first address, 10.0.0.1, is the `kubernetes` Service (realnode.API_SERVICE_IP)
        "--service-cluster-ip-range=10.0.0.0/24",
        "--authorization-mode=RBAC",
        "--disable-admission-plugins=ServiceAccount",
        # a namespace's annotations may place its pods (scheduler.alpha.kubernetes.io/
        # node-selector, .../defaultTolerations): how the in-cluster operator tests put an
        # unmodified install on the real node. Namespaces without them are untouched.
        "--enable-admission-plugins=PodNodeSelector,PodTolerationRestriction",
        "--endpoint-reconciler-type=none",  # endpoints may not be 127.0.0.1
        "--allow-privileged=true",
        # logs/exec/port-forward to the real node's kubelet (tools/realnode.py): at its node IP,
        # with the admin certificate, which that kubelet requires (kwok's nodes serve nothing)
        "--kubelet-preferred-address-types=InternalIP,Hostname",
        f"--kubelet-client-certificate={PKI_DIR / 'admin.crt'}",
        f"--kubelet-client-key={PKI_DIR / 'admin.key'}",
        "--profiling=false",
        "--v=1",
        *_audit_flags(),
    ]


def compact_etcd(state: State) -> int:
    """Compact etcd's history up to its current revision (fault injection: after this, a watch
    from an older resourceVersion that the API server's cache no longer holds gets 410 Gone).
    Returns the revision."""
    url = f"http://127.0.0.1:{state.ports['etcd']}/v3/kv"
    request = urllib.request.Request(
        f"{url}/range", data=json.dumps({"key": "YQ=="}).encode(), method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as r:
        revision = int(json.load(r)["header"]["revision"])
    body = json.dumps({"revision": str(revision), "physical": True}).encode()
    request = urllib.request.Request(f"{url}/compaction", data=body, method="POST")
    with urllib.request.urlopen(request, timeout=30) as r:
        r.read()
    return revision


RESTARTABLE: Final = ("etcd", "kube-apiserver", "kube-controller-manager")


def restart_component(
    state: State, name: str, *, kill: bool = False, down_for: float = 0.0
) -> None:
    """Stop one component (SIGTERM, or SIGKILL with `kill`), wait `down_for` seconds, start it
    again with the same flags and wait until it is healthy (fault injection: tools/chaos.py)."""
    if name not in RESTARTABLE:
        raise ClusterError(f"cannot restart {name}: only {', '.join(RESTARTABLE)}")
    old = [r for r in state.processes if r.name == name]
    if kill:
        for record in old:
            _signal_session(record, signal.SIGKILL)
        _await_reaped(old)
    else:
        stop_processes(old)
    state.processes = [r for r in state.processes if r.name != name]
    state.save()
    time.sleep(down_for)
    env = _component_env()
    if name == "etcd":
        _spawn(state, name, _etcd_argv(state), env)
        url = f"http://127.0.0.1:{state.ports['etcd']}/health"
        _wait(state, name, lambda: '"health":"true"' in http_get(url)[1], 20)
    elif name == "kube-apiserver":
        _spawn(state, name, _apiserver_argv(state), env)
        _wait(state, name, Api(state.server).ready, 60)
    else:
        restart_controller_manager(state)


def _start(state: State) -> list[str]:
    """Start every component in order; returns how long each step took, for the summary."""
    steps: list[str] = []
    mark = time.monotonic()

    def step(what: str) -> None:
        nonlocal mark
        now = time.monotonic()
        steps.append(f"{what} {now - mark:.1f}s")
        mark = now

    bin_dir = Path(state.bin_dir)
    ports = state.ports
    kc = str(KUBECONFIG)
    env = _component_env()

    etcd_url = f"http://127.0.0.1:{ports['etcd']}"
    _spawn(state, "etcd", _etcd_argv(state), env)
    _wait(state, "etcd", lambda: '"health":"true"' in http_get(etcd_url + "/health")[1], 20)
    step("etcd")

    _spawn(state, "kube-apiserver", _apiserver_argv(state), env)
    api = Api(state.server)
    write_kubeconfig(state.server)
    _wait(state, "kube-apiserver", api.ready, 60)
    step("kube-apiserver")

    # Before kube-controller-manager: its garbage collector only discovers resources present when
    # it starts (later ones after a 30 s resync), so owner references to custom resources would
    # be ignored for a while.
    install_crds(api)
    step("CRDs")

    common = _common_flags()
    _spawn(state, "kube-controller-manager", _kcm_argv(state), env)
    _spawn(
        state,
        "kube-scheduler",
        [
            str(bin_dir / "kube-scheduler"),
            *common,
            f"--secure-port={ports['kube-scheduler']}",
        ],
        env,
    )
    _spawn(
        state,
        "kwok",
        [
            str(bin_dir / "kwok"),
            f"--kubeconfig={kc}",
            f"--config={STAGES_FILE}",
            # the fake nodes only: the real node (tools/realnode.py) has a kubelet of its own
            "--manage-nodes-with-label-selector=type=kwok",
            "--node-ip=127.0.0.1",
            "--cidr=10.244.0.0/16",
            "--node-lease-duration-seconds=40",
            f"--server-address=127.0.0.1:{ports['kwok']}",
        ],
        env,
    )
    for name in ("kube-controller-manager", "kube-scheduler"):
        _wait(state, name, _healthz(f"https://127.0.0.1:{ports[name]}/healthz"), 30)
    kwok_url = f"http://127.0.0.1:{ports['kwok']}/healthz"
    _wait(state, "kwok", lambda: http_get(kwok_url)[0] == 200, 30)
    step("controllers+kwok")

    for node in FAKE_NODES:
        status, body = api.request("POST", "/api/v1/nodes", _node_manifest(node))
        if status not in (201, 409):
            raise ClusterError(f"creating node {node.name} failed (HTTP {status}): {body}")
    # kwok marks them Ready, then the node-lifecycle controller lifts the not-ready taint.
    _wait(
        state,
        "kwok",
        lambda: _nodes_schedulable(api),
        40,
        "making the fake nodes Ready (then kube-controller-manager lifts their not-ready taint)",
    )
    step("nodes")
    return steps


# --------------------------------------------------------------------------------------------
# commands


@contextlib.contextmanager
def _lock() -> Iterator[None]:
    """Serialise up/down of the same state directory (e.g. two pytest sessions)."""
    digest = hashlib.sha256(str(STATE_DIR).encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"t9k-cluster-{digest}.lock"
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def healthy(state: State | None = None) -> bool:
    """True if a cluster from `up` runs: every process alive and the API server ready."""
    state = state or read_state()
    if state is None or not state.ready or not state.processes:
        return False
    if not all(process_alive(p) for p in [*state.processes, *(state.node or [])]):
        return False
    try:
        return Api(state.server).ready()
    except (OSError, ssl.SSLError):
        return False


def _remove_state(keep_logs: bool = False) -> None:
    if not STATE_DIR.exists():
        return
    if not keep_logs:
        shutil.rmtree(STATE_DIR)
        return
    for child in STATE_DIR.iterdir():
        if child != LOG_DIR:
            if child.is_dir():
                shutil.rmtree(child)
            else:
                child.unlink()


def stop_demo_operator(grace: float = 10.0) -> None:
    """Stop the operator tools/demo.py started for this cluster (OPERATOR_PID_FILE), if it runs."""
    try:
        pid = int(OPERATOR_PID_FILE.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return
    if str(KUBECONFIG).encode() not in cmdline:
        return  # that pid belongs to another process now

    def running() -> bool:
        stat = _proc_stat(pid)
        return stat is not None and stat[0] not in ("Z", "X")

    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while running() and time.monotonic() < deadline:
            time.sleep(0.05)
        if not running():
            return


def _teardown() -> list[str]:
    """Stop everything of a stale cluster; returns what the real node left on the host."""
    stop_demo_operator()
    state = read_state()
    left: list[str] = []
    if state is not None:
        left = _stop_real_node(state)
        stop_processes(state.processes)
    return left


# --------------------------------------------------------------------------------------------
# the real node (tools/realnode.py) and its images (tools/images.py)

NODE_DIR: Final = STATE_DIR / "node"
REAL_NODE_ENV: Final = "T9K_REAL_NODE"
"""`0` starts kwok-only clusters (as --no-real-node does)."""


def real_node_wanted(flag: bool | None = None) -> bool:
    if flag is not None:
        return flag
    return os.environ.get(REAL_NODE_ENV, "1") != "0"


def _say(msg: str) -> None:
    print(f"[cluster] {msg}", file=sys.stderr, flush=True)


def _node_images() -> tuple[str, list[str]]:
    """The pause image (built here if missing: seconds) and every built image's archive."""
    images.build(["pause"], say=_say)
    built = [str(images.IMAGES[n].archive) for n in images.ORDER if images.IMAGES[n].built()]
    return images.IMAGES["pause"].ref, built


def _node_bin_dir() -> Path:
    script = REPO_ROOT / "tools" / "ensure-node-binaries.sh"
    proc = subprocess.run(["bash", str(script), "--print-dir"], capture_output=True, text=True)
    bin_dir = Path(proc.stdout.strip())
    if not all(os.access(bin_dir / b, os.X_OK) for b in ("kubelet", "coredns")):
        _say("building kubelet and CoreDNS (tools/ensure-node-binaries.sh)")
        built = subprocess.run(["bash", str(script)], stdout=sys.stderr, check=False)
        if built.returncode != 0:
            raise ClusterError("tools/ensure-node-binaries.sh failed (its output is above)")
    return bin_dir


def _start_real_node(state: State) -> None:
    node: list[ProcessRecord] = []
    state.node = node
    state.save()

    def record(proc: ProcessRecord) -> None:
        node.append(proc)
        state.save()

    try:
        realnode.up(
            Api(state.server),
            NODE_DIR,
            KUBECONFIG,
            PKI_DIR,
            _node_bin_dir(),
            _node_images,
            lambda msg: _say(f"real node: {msg}"),
            record,
            api_port=state.ports["kube-apiserver"],
            also_allowed=images.IMAGES["operator"].also_named,
        )
    except realnode.NodeRefused as err:  # nothing started: nothing to undo
        state.node = None
        state.save()
        raise ClusterError(str(err)) from err
    except BaseException as err:
        # a failure or an interrupt half-way: stop what the record holds and the node's tree
        for line in _stop_real_node(state):
            _say(f"left on the host: {line}")
        if isinstance(err, realnode.NodeError):
            raise ClusterError(str(err)) from err
        raise


def _stop_real_node(state: State) -> list[str]:
    if state.node is None and not realnode.owned_by(NODE_DIR):
        return []
    api: Api | None = Api(state.server)
    try:
        if api is None or not api.ready():
            api = None
    except (OSError, ssl.SSLError):
        api = None
    left = realnode.down(api, NODE_DIR, state.node or [], lambda msg: _say(msg))
    state.node = None
    if STATE_FILE.exists():
        state.save()
    return left


def import_images() -> None:
    """Load every built image into the running real node's containerd (a no-op for those
    already there): after `python tools/images.py build`, without restarting the cluster."""
    state = read_state()
    if state is None or not state.node:
        raise ClusterError("no real node runs; start it with `make cluster-up`")
    built = [str(images.IMAGES[n].archive) for n in images.ORDER if images.IMAGES[n].built()]
    realnode.load_images(realnode.Paths(NODE_DIR), built, _say)


def up(build: bool = True, quiet: bool = False, real_node: bool | None = None) -> State:
    """Start the cluster, or reuse the running one (then only the CRDs are re-applied, and the
    real node is started, or given the images built since, where it is wanted)."""
    want_node = real_node_wanted(real_node)
    with _lock():
        state = read_state()
        if state is not None and healthy(state):
            if want_node and state.node is None:
                _start_real_node(state)
            elif state.node:
                import_images()
            names, created, applied = install_crds(Api(state.server))
            if created:
                # Otherwise the garbage collector would ignore owner references to the new kinds
                # until its next discovery resync (30 s).
                print(
                    f"[cluster] new CRDs {', '.join(created)}: restarting kube-controller-manager",
                    file=sys.stderr,
                )
                restart_controller_manager(state)
                state.save()
            if not quiet:
                changed = f", applied {', '.join(applied)}" if applied else ""
                print(f"[cluster] already running ({len(names)} CRDs{changed})")
                _print_usage(state)
            return state
        if state is not None or STATE_FILE.exists():
            print("[cluster] found a stale cluster in .cluster/; cleaning it up", file=sys.stderr)
            for line in _teardown():
                _say(f"left on the host by the stale real node: {line}")
        _remove_state()
        if want_node and (problems := realnode.preflight([NODE_DIR, realnode.cache_dir()])):
            raise ClusterError("the real node cannot start:\n  " + "\n  ".join(problems))

        t0 = time.monotonic()
        bin_dir = binary_dir(build)
        t_bin = time.monotonic() - t0
        LOG_DIR.mkdir(parents=True)
        names = ["etcd", "etcd-peer", "kube-apiserver", "kube-controller-manager"]
        state = State(str(bin_dir), free_ports([*names, "kube-scheduler", "kwok"]))
        state.save()
        try:
            make_pki()
            steps = _start(state)
            if want_node:
                mark = time.monotonic()
                _start_real_node(state)
                steps.append(f"real node {time.monotonic() - mark:.1f}s")
        except BaseException:
            # Leave nothing running; keep the logs the error message points to.
            _stop_real_node(state)
            stop_processes(state.processes)
            _remove_state(keep_logs=True)
            raise
        state.ready = True
        state.save()
        if not quiet:
            elapsed = time.monotonic() - t0 - t_bin
            crds = len(load_crds())
            print(
                f"[cluster] ready in {elapsed:.1f}s ({', '.join(steps)}):"
                f" {len(FAKE_NODES)} kwok nodes,"
                f"{' 1 real node,' if state.node else ''} {crds} CRDs"
            )
            _print_usage(state)
        return state


def down(quiet: bool = False) -> None:
    """Stop every process `up` started and remove .cluster/ (no-op when nothing runs)."""
    with _lock():
        stop_demo_operator()  # first: it releases its Lease through the API server
        state = read_state()
        left: list[str] = []
        if state is not None:
            left = _stop_real_node(state)  # while the API server can still delete its pods
            stop_processes(state.processes)
        _remove_state()
        if left:
            raise ClusterError(
                "the real node did not leave the host as it found it:\n  " + "\n  ".join(left)
            )
        if not quiet:
            print("[cluster] stopped" if state is not None else "[cluster] nothing to stop")


def _print_usage(state: State) -> None:
    print(
        f"  export KUBECONFIG={KUBECONFIG}\n"
        f"  kubectl get nodes          # API server {state.server}\n"
        f"  logs: {LOG_DIR}/<component>.log\n"
        "  stop: make cluster-down    (or python tools/cluster.py down)"
    )


def status() -> int:
    state = read_state()
    if state is None:
        print("[cluster] not running (no .cluster/state.json)")
        return 1
    for record in [*state.processes, *(state.node or [])]:
        alive = "running" if process_alive(record) else "DEAD"
        port = state.ports.get(record.name, "-")
        print(f"  {record.name:<24} pid {record.pid:<8} {alive:<8} port {port:<6} {record.log}")
    ok = healthy(state)
    print(
        f"[cluster] {'healthy' if ok else 'NOT healthy'}: {state.server}  KUBECONFIG={KUBECONFIG}"
    )
    return 0 if ok else 1


def _kueue(action: str) -> int:
    if __package__:
        from . import kueue
    else:
        import kueue  # type: ignore[no-redef]
    return kueue.main([action])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up", help="start the cluster (or reuse the running one)")
    p_up.add_argument(
        "--no-real-node",
        action="store_true",
        help=f"kwok nodes only: no containerd, kubelet or CoreDNS (also {REAL_NODE_ENV}=0)",
    )
    p_up.add_argument(
        "--no-build",
        action="store_true",
        help="fail instead of building missing binaries with tools/ensure-binaries.sh",
    )
    sub.add_parser("down", help="stop every process and remove .cluster/")
    sub.add_parser("status", help="show the processes; exit 1 unless healthy")
    sub.add_parser("env", help="print `export KUBECONFIG=...`")
    sub.add_parser("import-images", help="load newly built images into the real node")
    p_node = sub.add_parser(
        "real-node", help="stop or start the real node alone (the control plane keeps running)"
    )
    p_node.add_argument("action", choices=("up", "down"))
    p_kueue = sub.add_parser("kueue", help="start, stop or check Kueue (tools/kueue.py)")
    p_kueue.add_argument("action", choices=("up", "down", "status"))
    p_restart = sub.add_parser("restart", help="restart one component (fault injection)")
    p_restart.add_argument("component", choices=RESTARTABLE)
    p_restart.add_argument("--kill", action="store_true", help="SIGKILL instead of SIGTERM")
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            up(build=not args.no_build, real_node=False if args.no_real_node else None)
        elif args.command == "down":
            down()
        elif args.command == "status":
            return status()
        elif args.command == "env":
            if read_state() is None:
                print("[cluster] not running; run `make cluster-up` first", file=sys.stderr)
                return 1
            print(f"export KUBECONFIG={KUBECONFIG}")
        elif args.command == "import-images":
            import_images()
        elif args.command == "kueue":
            return _kueue(args.action)
        elif args.command == "real-node":
            state = read_state()
            if state is None or not healthy(state):
                print("[cluster] not running; run `make cluster-up` first", file=sys.stderr)
                return 1
            with _lock():
                if args.action == "down":
                    left = _stop_real_node(state)
                    if left:
                        raise ClusterError(
                            "the real node did not leave the host as it found it:\n  "
                            + "\n  ".join(left)
                        )
                elif state.node is None:
                    _start_real_node(state)
                else:
                    _say("the real node already runs")
        elif args.command == "restart":
            state = read_state()
            if state is None or not healthy(state):
                print("[cluster] not running; run `make cluster-up` first", file=sys.stderr)
                return 1
            with _lock():
                restart_component(state, args.component, kill=args.kill)
    except ClusterError as err:
        print(f"[cluster] error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `up | head -1`: the command itself did its work
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
