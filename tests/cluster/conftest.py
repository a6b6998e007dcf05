"""Fixtures for tests that talk to the real local control plane (tools/cluster.py).

    def test_something(core_v1: CoreV1Api, namespace: str) -> None: ...

* `cluster` (session): reuses the cluster of `make cluster-up` if it is healthy, otherwise starts
  one for the session and stops it at the end (set T9K_KEEP_CLUSTER=1 to keep it running).
* `kubeconfig` (session): path of the admin kubeconfig (also usable by subprocesses).
* `api_client` (session): a `kubernetes.client.ApiClient` for that kubeconfig.
* `core_v1` (session): `CoreV1Api` on that client.
* `namespace` (per test): a fresh namespace, deleted after the test.
* `custom` (session): `CustomObjectsApi` (the job kinds).
* `start_operator` (per test): `start(*flags)` starts a real `t9k-operator` process watching the
  test's namespace (Lease there too); each is stopped after the test and its log printed (shown
  for a failed test). See `launch_operators` in tools/kit.
* `real_node` (session): the real node of tools/realnode.py is Ready and the images of
  tools/images.py are built and imported (built here if `make test` did not build them first);
  otherwise the session fails with the reason. See tests/cluster/real_helpers.py.
* `e2e` (per module) and `jobs` (per test): one operator shared by a whole test module, in a
  namespace of its own, and a per-test driver of jobs. See tests/cluster/e2e_helpers.py.

If the cluster cannot start the tests are skipped, unless T9K_REQUIRE_CLUSTER=1 (`make test`, CI),
where it is an error. Every test in this directory is marked `cluster` by tests/conftest.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from tests.cluster.e2e_helpers import E2E, Jobs, pod_history, show_pod_logs
from tests.cluster.real_helpers import RealNode, base_image, train_image
from tools import cluster as cluster_tool
from tools.kit import ControlPlane, Operator, fresh_namespace, launch_operators

CLUSTER_SCRIPT = Path(cluster_tool.__file__)


def cluster_required() -> bool:
    """Same rule as tests/conftest.py: CI and `make test` may not skip cluster tests."""
    return os.environ.get("T9K_REQUIRE_CLUSTER", "") == "1"


def _run_tool(*args: str, timeout: float | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CLUSTER_SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="session")
def cluster() -> Iterator[ControlPlane]:
    required = cluster_required()
    reused = cluster_tool.healthy()
    # `up` on a healthy cluster only re-applies the CRDs; otherwise it starts a fresh one. Only
    # where the run must not skip does it build missing binaries (a cold build takes minutes).
    args = ["up"] if required else ["up", "--no-build"]
    try:
        proc = _run_tool(*args, timeout=None if required else 300)
        failure = None if proc.returncode == 0 else f"{proc.stdout}{proc.stderr}".strip()
    except subprocess.TimeoutExpired as err:
        failure = f"`tools/cluster.py up` timed out after {err.timeout}s"
    if failure is not None:
        message = f"the local control plane did not start (tools/cluster.py up):\n{failure}"
        if required:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    yield ControlPlane.running(started_by_session=not reused)
    if not reused and os.environ.get("T9K_KEEP_CLUSTER", "") != "1":
        proc = _run_tool("down", timeout=120)
        assert proc.returncode == 0, f"tools/cluster.py down failed:\n{proc.stdout}{proc.stderr}"


@pytest.fixture(autouse=True)
def _followed_pod_logs(request: pytest.FixtureRequest) -> Iterator[None]:
    """A real-node test with a namespace of its own: every container's log, followed while the
    test runs (a restarted or deleted pod's log is kept too), printed at teardown, so pytest
    shows it when the test failed, and kept in build/test-logs/<namespace>/."""
    if request.node.get_closest_marker("realnode") is None or "namespace" not in (
        request.fixturenames
    ):
        yield
        return
    namespace = request.getfixturevalue("namespace")
    with pod_history(request.getfixturevalue("api_client"), namespace) as history:
        yield
        show_pod_logs(namespace, history.logs_since(0))


@pytest.fixture(scope="session")
def real_node(cluster: ControlPlane, core_v1: client.CoreV1Api) -> RealNode:
    """The real node, Ready, with the base, training and operator images (of the sources as
    they are: the operator's is rebuilt, in about 20 s, when they changed) in its containerd."""
    state = cluster_tool.read_state()
    if state is None or state.node is None:
        pytest.fail(
            "the cluster runs without its real node (started with --no-real-node or"
            f" {cluster_tool.REAL_NODE_ENV}=0?): stop it with `make cluster-down` and run again",
            pytrace=False,
        )
    try:
        cluster_tool.images.build(["base", "train", "operator"])
    except cluster_tool.images.ImageError as err:
        pytest.fail(f"the real node's images could not be built: {err}", pytrace=False)
    proc = _run_tool("import-images", timeout=1200)
    if proc.returncode != 0:
        pytest.fail(f"importing the images failed:\n{proc.stdout}{proc.stderr}", pytrace=False)
    node = core_v1.read_node(cluster_tool.realnode.NODE_NAME)
    ready = [c for c in node.status.conditions or [] if c.type == "Ready"]
    if not ready or ready[0].status != "True":
        pytest.fail(f"the real node is not Ready: {ready}", pytrace=False)
    return RealNode(node.metadata.name, base_image(), train_image())


@pytest.fixture(scope="session")
def kubeconfig(cluster: ControlPlane) -> Path:
    return cluster.kubeconfig


@pytest.fixture(scope="session")
def api_client(kubeconfig: Path) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    try:
        yield api
    finally:
        api.close()


@pytest.fixture(scope="session")
def core_v1(api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


@pytest.fixture
def namespace(request: pytest.FixtureRequest, core_v1: client.CoreV1Api) -> Iterator[str]:
    with fresh_namespace(core_v1, request.node.name) as name:
        yield name


@pytest.fixture(scope="session")
def custom(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


@pytest.fixture
def start_operator(
    kubeconfig: Path, namespace: str, tmp_path: Path
) -> Iterator[Callable[..., Operator]]:
    with launch_operators(kubeconfig, namespace, tmp_path) as start:
        yield start


@pytest.fixture(scope="module")
def e2e(
    request: pytest.FixtureRequest,
    kubeconfig: Path,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[E2E]:
    """One operator for the whole module, watching a namespace of the module's own."""
    label = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    log_dir = tmp_path_factory.mktemp("operator")
    with (
        fresh_namespace(core_v1, label) as name,
        launch_operators(kubeconfig, name, log_dir) as start,
        pod_history(api_client, name) as history,
    ):
        op = start("--workers", "8")
        op.wait_ready("leader")
        yield E2E(name, op, history)


@pytest.fixture
def jobs(e2e: E2E, custom: client.CustomObjectsApi, core_v1: client.CoreV1Api) -> Iterator[Jobs]:
    driver = Jobs(custom, core_v1, e2e)
    yield driver
    driver.close()
