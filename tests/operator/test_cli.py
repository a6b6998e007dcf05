"""Flags, probes and log lines: what an admin running `t9k-operator` sees."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from t9k_operator import cli, logs, manager
from t9k_operator.health import HealthServer


def test_flag_defaults() -> None:
    options = cli.build_parser().parse_args([])
    assert (options.workers, options.qps, options.burst) == (4, 50.0, 100)
    assert options.resync_seconds == 300.0
    assert options.leader_elect is True
    assert (options.lease_name, options.lease_namespace) == ("t9k-operator", None)
    assert (options.health_port, options.health_bind) == (8081, "0.0.0.0")
    assert options.namespace is None  # all namespaces
    assert (options.list_page_size, options.watch_timeout_seconds) == (None, (300, 600))
    assert cli.build_parser().parse_args(["--no-leader-elect"]).leader_elect is False


def test_watch_timeout_and_list_page_size_flags() -> None:
    options = cli.build_parser().parse_args(
        ["--watch-timeout-seconds", "2,5", "--list-page-size", "7"]
    )
    assert (options.watch_timeout_seconds, options.list_page_size) == ((2, 5), 7)


def test_qps_zero_means_no_client_side_limit(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.build_parser().parse_args(["--qps", "0"]).qps == 0.0
    assert cli.build_parser().parse_args(["--qps", "0.5"]).qps == 0.5
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["--qps", "-1"])
    assert "must be >= 0 requests per second (0: no client-side limit), got -1" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["--workers", "0"],
        ["--qps", "-1"],
        ["--qps", "nan"],
        ["--qps", "inf"],
        ["--burst", "-1"],
        ["--log-format", "xml"],
        ["--namespace", "Team_A"],
        ["--lease-namespace", "ops.system"],
        ["--list-page-size", "0"],
        ["--watch-timeout-seconds", "5,2"],
        ["--watch-timeout-seconds", "300"],
    ],
)
def test_nonsense_flags_exit_with_usage_status(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        cli.build_parser().parse_args(argv)
    assert info.value.code == 2
    assert argv[0] in capsys.readouterr().err


def test_lease_namespace_comes_from_the_pod_then_the_service_account_then_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sa_file = tmp_path / "namespace"
    monkeypatch.setattr(cli, "SERVICE_ACCOUNT_NAMESPACE", sa_file)
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    assert cli._pod_namespace() == "default"
    sa_file.write_text("from-sa\n")
    assert cli._pod_namespace() == "from-sa"
    monkeypatch.setenv("POD_NAMESPACE", "from-env")
    assert cli._pod_namespace() == "from-env"


@pytest.fixture
def restore_process_state() -> Iterator[None]:
    """`cli.main` configures the root logger and the signal handlers: put them back."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.mark.usefixtures("restore_process_state")
def test_a_bad_kubeconfig_exits_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.yaml"
    code = cli.main(
        ["--kubeconfig", str(missing), "--health-port", "0", "--health-bind", "127.0.0.1"]
    )
    assert code == manager.EXIT_USAGE
    assert "cannot load the API server configuration" in capsys.readouterr().err


@pytest.fixture
def health() -> Iterator[tuple[HealthServer, list[tuple[bool, str]]]]:
    state = [(False, "leader: caches not synced (pods)")]
    server = HealthServer("127.0.0.1", 0, lambda: state[0])
    server.start()
    yield server, state
    server.stop()


def fetch(server: HealthServer, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_probes_say_alive_and_whether_ready(
    health: tuple[HealthServer, list[tuple[bool, str]]],
) -> None:
    server, state = health
    assert fetch(server, "/healthz") == (200, "ok\n")
    assert fetch(server, "/readyz") == (503, "leader: caches not synced (pods)\n")
    state[0] = (True, "standby: the leader is other-pod")
    assert fetch(server, "/readyz") == (200, "standby: the leader is other-pod\n")
    assert fetch(server, "/metrics")[0] == 404


def test_idle_connections_hold_no_thread_and_are_closed_at_their_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """300 idle connections used to hold 302 threads for ever. Now one thread serves them all,
    and each is closed once HEAD_DEADLINE has passed without a whole request."""
    import socket
    import threading
    import time

    from t9k_operator import health as health_module

    monkeypatch.setattr(health_module, "HEAD_DEADLINE", 0.5)
    before = threading.active_count()
    server = HealthServer("127.0.0.1", 0, lambda: (True, "ready"))
    server.start()
    idle = []
    try:
        for _ in range(300):
            idle.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
        assert threading.active_count() == before + 1  # the server's one thread
        assert fetch(server, "/healthz") == (200, "ok\n")
        time.sleep(1.5)
        # the server closed them: reading gives end of file, not a hang
        assert all(s.recv(1) == b"" for s in idle)
    finally:
        for s in idle:
            s.close()
        server.stop()
    assert threading.active_count() == before


def log_line(fmt: str) -> str:
    stream = io.StringIO()
    logs.setup("info", fmt, stream)  # type: ignore[arg-type]
    try:
        logging.getLogger("t9k_operator.controller").info(
            "create",
            extra=logs.fields(
                job="GenericJob/ns/demo", object="Pod/demo-worker-0", reason="needs a pod"
            ),
        )
    finally:
        logging.getLogger().handlers.clear()
    return stream.getvalue()


def test_text_logs_have_one_line_per_action_with_the_job_key() -> None:
    line = log_line("text")
    assert line.count("\n") == 1
    assert (
        'INFO  controller: create job=GenericJob/ns/demo object=Pod/demo-worker-0 reason="needs a pod"'
        in line
    )


def test_json_logs_are_one_object_per_line() -> None:
    data = json.loads(log_line("json"))
    assert data["msg"] == "create"
    assert data["job"] == "GenericJob/ns/demo"
    assert data["level"] == "info"
    assert data["logger"] == "controller"


# -- without the `operator` extra -------------------------------------------------------------

# A core install (`pip install t9k-sdk`) has no Kubernetes client. Rather than build a venv per
# test (slow; `make dist-check` does it once, with the real wheel), a sitecustomize module makes
# `kubernetes` unimportable in a child interpreter, as if it were not installed.
_NO_KUBERNETES = """
import sys

sys.modules["kubernetes"] = None  # `import kubernetes` raises ModuleNotFoundError, find_spec: None
"""


def _operator_without_kubernetes(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "sitecustomize.py").write_text(_NO_KUBERNETES)
    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(root), str(root / "operator")]),
    }
    return subprocess.run(
        [sys.executable, "-m", "t9k_operator", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_help_works_without_the_operator_extra_and_says_how_to_install_it(
    tmp_path: Path,
) -> None:
    result = _operator_without_kubernetes(tmp_path, "--help")
    assert result.returncode == 0, result.stderr
    assert "--kubeconfig" in result.stdout
    assert "needs the `operator` extra" in result.stdout
    assert 'pip install "t9k-sdk[operator] @ git+https://' in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_running_without_the_operator_extra_fails_with_the_install_command(
    tmp_path: Path,
) -> None:
    result = _operator_without_kubernetes(tmp_path, "--namespace", "team-a")
    assert result.returncode == cli.EXIT_MISSING_EXTRA
    assert "kubernetes is not installed" in result.stderr
    assert 'pip install ".[operator]"' in result.stderr
    assert "Traceback" not in result.stderr


def test_the_install_hint_is_absent_when_the_extra_is_installed() -> None:
    assert "operator` extra" not in cli.build_parser().format_help()


def test_metrics_can_be_served_apart_from_the_probes_or_not_at_all() -> None:
    parse = cli.build_parser().parse_args
    assert parse([]).metrics_bind_address == ""  # on the health port
    assert parse(["--metrics-bind-address", "127.0.0.1:8080"]).metrics_bind_address == (
        "127.0.0.1:8080"
    )
    assert parse(["--metrics-bind-address", "0"]).metrics_bind_address == "0"
    for bad in ("8080", "localhost", "127.0.0.1:http", ":8080", "127.0.0.1:70000"):
        with pytest.raises(SystemExit):
            parse(["--metrics-bind-address", bad])
    metrics_only = HealthServer(
        "127.0.0.1",
        0,
        lambda: (True, "ready"),
        lambda _accept: (b"up 1\n", "text/plain"),
        probes=False,
    )
    metrics_only.start()
    try:
        assert fetch(metrics_only, "/metrics") == (200, "up 1\n")
        assert fetch(metrics_only, "/healthz") == (404, "not found: try /metrics\n")
    finally:
        metrics_only.stop()
