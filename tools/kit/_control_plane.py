"""The running local control plane (tools/cluster.py) and polling helpers against it."""

from __future__ import annotations

import contextlib
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from t9k_sdk._kube.transport import send
from tools import cluster as cluster_tool

T = TypeVar("T")

TERMINAL_PHASES = ("Succeeded", "Failed")


@dataclass(frozen=True)
class ControlPlane:
    """The running local control plane (the tests' `cluster` fixture)."""

    kubeconfig: Path
    server: str
    started_by_session: bool
    node_names: tuple[str, ...] = tuple(n.name for n in cluster_tool.FAKE_NODES)
    max_gpus_per_node: int = cluster_tool.MAX_GPUS_PER_NODE

    @classmethod
    def running(cls, *, started_by_session: bool = False) -> ControlPlane:
        """The control plane `tools/cluster.py up` started (its state in .cluster/)."""
        state = cluster_tool.read_state()
        if state is None:
            raise RuntimeError(
                f"no local control plane runs (no state in {cluster_tool.STATE_DIR}):"
                " start it with `make cluster-up` or `python tools/cluster.py up`"
            )
        return cls(cluster_tool.KUBECONFIG, state.server, started_by_session)


def wait_for(
    fetch: Callable[[], T],
    done: Callable[[T], bool],
    what: str,
    timeout: float = 20.0,
    interval: float = 0.2,
) -> T:
    """Poll `fetch()` until `done(value)`; fail with the last value after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout:.0f}s waiting for {what}; last: {value}"
            )
        time.sleep(interval)


def read_pod(core_v1: client.CoreV1Api, namespace: str, name: str) -> Any:
    return core_v1.read_namespaced_pod(name, namespace)


def wait_phase(
    core_v1: client.CoreV1Api,
    namespace: str,
    name: str,
    phases: tuple[str, ...],
    timeout: float = 20.0,
) -> Any:
    """Wait until the pod is in one of `phases`; return it."""
    return wait_for(
        lambda: read_pod(core_v1, namespace, name),
        lambda p: p.status.phase in phases,
        f"pod {namespace}/{name} to be {' or '.join(phases)}",
        timeout,
    )


def pod_gone(core_v1: client.CoreV1Api, namespace: str, name: str) -> bool:
    try:
        core_v1.read_namespaced_pod(name, namespace)
    except ApiException as err:
        if err.status == 404:
            return True
        raise
    return False


def service_account_kubeconfig(
    core_v1: client.CoreV1Api, kubeconfig: Path, namespace: str, path: Path
) -> Path:
    """Write to `path` a kubeconfig for the `t9k-operator` service account of `namespace` (a
    one-hour token) on the cluster of `kubeconfig`, and return `path`."""
    token = core_v1.create_namespaced_service_account_token(
        "t9k-operator",
        namespace,
        client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
        ),
    ).status.token
    config = yaml.safe_load(kubeconfig.read_text())
    sa_config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": config["clusters"][0]["cluster"]}],
        "users": [{"name": "operator", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "local", "user": "operator"}}],
        "current-context": "sa",
    }
    path.write_text(yaml.safe_dump(sa_config))
    return path


def request(api_client: client.ApiClient, method: str, path: str, **kwargs: Any) -> bytes:
    """`t9k_sdk._kube.transport.send` with the answer read and the connection given back: a connection
    returned to the pool with its body unread fails the next request on it (ResponseNotReady)."""
    response = send(api_client, method, path, **kwargs)
    try:
        return response.data
    finally:
        response.release_conn()


@contextlib.contextmanager
def fresh_namespace(core_v1: client.CoreV1Api, label: str) -> Iterator[str]:
    """A new namespace for `label` (a test's name), deleted afterwards."""
    slug = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")[:40].strip("-")
    name = f"t-{slug}-{uuid.uuid4().hex[:6]}"
    core_v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    # The namespace controller deletes what is left in it; nothing waits for that.
    core_v1.delete_namespace(name, propagation_policy="Background")
