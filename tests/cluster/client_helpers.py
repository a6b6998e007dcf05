"""Fixtures and helpers of the `t9k_sdk.client` cluster tests (tests/cluster/test_client_*.py).

* `operator_fixture` (name `operator`): a real `t9k-operator` process for the test's namespace
  (`--namespace` and its Lease there), so it never meets another test's or another run's jobs;
  its log is printed at teardown (pytest shows it when the test failed).
* `client_fixture` (name `client`): a `Client` for the test cluster, in the test's namespace.
* `generic_job(...)`: a GenericJob manifest whose pods kwok runs (`sim.t9k.dev/*`).
* `FakeKubelet` and `log_node_fixture` (name `log_node`): see `FakeKubelet`.

Test modules import the fixtures under their function names, so the test parameters (`client`,
`operator`) do not shadow an import.
"""

from __future__ import annotations

import datetime as dt
import http.server
import ssl
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from kubernetes import client as k8s

from t9k_sdk import models
from t9k_sdk.client import Client
from tools.kit import EXIT_CODE, RUN_FOR, Operator, launch_operators, wait_for


@pytest.fixture(name="operator")
def operator_fixture(kubeconfig: Path, namespace: str, tmp_path: Path) -> Iterator[Operator]:
    """One `t9k-operator` watching this test's namespace (log printed at teardown)."""
    with launch_operators(kubeconfig, namespace, tmp_path) as start:
        op = start()
        op.wait_ready("leader")
        yield op


@pytest.fixture(name="client")
def client_fixture(kubeconfig: Path, namespace: str) -> Iterator[Client]:
    with Client(kubeconfig=kubeconfig, namespace=namespace) as c:
        yield c


def generic_job(
    name: str,
    *,
    replicas: int = 2,
    annotations: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    image: str = "example.invalid/t9k:sim",
    node_name: str | None = None,
    restart: dict[str, Any] | None = None,
    success_rules: list[dict[str, list[int]]] | None = None,
    clean_up: str | None = None,
) -> dict[str, Any]:
    """A GenericJob for kwok: `annotations` go on the pods (e.g. {RUN_FOR: "1s"})."""
    container: dict[str, Any] = {"name": "worker", "image": image, "command": ["train"]}
    if limits:
        container["resources"] = {"limits": limits}
    pod_spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [container]}
    if node_name:
        pod_spec["nodeName"] = node_name
    template: dict[str, Any] = {"spec": pod_spec}
    if annotations:
        template["metadata"] = {"annotations": annotations}
    replica: dict[str, Any] = {"type": "worker", "replicas": replicas, "template": template}
    if restart:
        replica["restartPolicy"] = restart
    spec: dict[str, Any] = {"replicaSpecs": [replica]}
    if success_rules is not None:
        spec["successRules"] = success_rules
    if clean_up:
        spec["cleanUpPolicy"] = clean_up
    return {
        "apiVersion": models.API_VERSION,
        "kind": "GenericJob",
        "metadata": {"name": name},
        "spec": spec,
    }


SUCCEEDS = {RUN_FOR: "1s"}
FAILS = {RUN_FOR: "1s", EXIT_CODE: "3"}


# -- a kubelet stand-in for container logs -------------------------------------------------------


@dataclass
class LogRequest:
    namespace: str
    pod: str
    container: str
    query: dict[str, str]


LogScript = Callable[[LogRequest], tuple[list[str], bool]]
"""(lines to send, whether to keep the stream open afterwards, as for a running container)."""


@dataclass
class FakeKubelet:
    """Answers `GET /containerLogs/NS/POD/CONTAINER` over TLS, as a kubelet does.

    Why: kwok runs no containers and serves no kubelet API, so the API server cannot fetch a
    log from a kwok node (it answers 500: it cannot dial the node's kubelet port). A real
    kubelet needs a container runtime, root and cgroups, which a test cannot have here. This
    stand-in is what the API server dials for the pods of one extra node (`log_node`): the API
    server's own log endpoint (authentication, follow, tailLines, container, streaming) is
    exercised for real, and the lines come from `script`, which the test sets.
    """

    script: LogScript = field(default=lambda req: ([], False))
    requests: list[LogRequest] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    port: int = 0
    _server: http.server.ThreadingHTTPServer | None = None

    def start(self, workdir: Path) -> FakeKubelet:
        cert, key = _self_signed(workdir)
        kubelet = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                parts = [unquote(p) for p in url.path.split("/") if p]
                if len(parts) != 4 or parts[0] != "containerLogs":
                    self.send_error(404)
                    return
                query = {k: v[-1] for k, v in parse_qs(url.query).items()}
                request = LogRequest(parts[1], parts[2], parts[3], query)
                kubelet.requests.append(request)
                lines, hold = kubelet.script(request)
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for line in lines:
                        data = (line + "\n").encode()
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                        self.wfile.flush()
                    if hold and query.get("follow") == "true":
                        kubelet.release.wait(30)
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    pass  # the API server hung up: the client stopped reading

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        server.socket = context.wrap_socket(server.socket, server_side=True)
        self.port = int(server.server_address[1])
        self._server = server
        threading.Thread(target=server.serve_forever, name="fake-kubelet", daemon=True).start()
        return self

    def stop(self) -> None:
        self.release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def _self_signed(workdir: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake-kubelet")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = workdir / "kubelet.crt", workdir / "kubelet.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@dataclass(frozen=True)
class LogNode:
    name: str
    kubelet: FakeKubelet


@pytest.fixture(name="log_node", scope="module")
def log_node_fixture(
    api_client: k8s.ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LogNode]:
    """An extra node whose kubelet endpoint is a `FakeKubelet` (kwok still runs its pods).

    Pods reach it only through `spec.nodeName`: its NoSchedule taint keeps the scheduler away,
    so no other test's pods land there. It is deleted at the end of the module.
    """
    core = k8s.CoreV1Api(api_client)
    kubelet = FakeKubelet().start(tmp_path_factory.mktemp("kubelet"))
    name = f"t9k-log-node-{uuid.uuid4().hex[:6]}"
    core.create_node(
        k8s.V1Node(
            # `type: kwok`: kwok manages only the nodes with that label (not the real node)
            metadata=k8s.V1ObjectMeta(
                name=name, labels={"t9k.dev/test-node": "logs", "type": "kwok"}
            ),
            spec=k8s.V1NodeSpec(taints=[k8s.V1Taint(key="t9k.dev/log-test", effect="NoSchedule")]),
        )
    )
    # Both address types: kwok's node-initialize stage (tools/kwok/stages.yaml) rewrites the
    # addresses of a node that lacks one of them (to nothing, for a node it did not create).
    # The API server dials the first of Hostname, ..., InternalIP: both are 127.0.0.1.
    status = {
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": "127.0.0.1"},
                {"type": "Hostname", "address": "127.0.0.1"},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet.port}},
        }
    }
    try:
        core.patch_node_status(name, status)

        def ready() -> bool:
            node = core.read_node(name)
            conditions = {c.type: c.status for c in node.status.conditions or ()}
            endpoint = node.status.daemon_endpoints.kubelet_endpoint.port
            addresses = {a.type for a in node.status.addresses or ()}
            return (
                conditions.get("Ready") == "True"
                and endpoint == kubelet.port
                and addresses == {"InternalIP", "Hostname"}
            )

        wait_for(ready, bool, f"node {name} to be Ready (kwok) with its kubelet endpoint", 30, 0.1)
        yield LogNode(name, kubelet)
    finally:
        kubelet.stop()
        core.delete_node(name)
