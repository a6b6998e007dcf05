"""tools/cluster.py as a developer uses it against the running cluster."""

from __future__ import annotations

import subprocess
import sys
import time

from tools import cluster as cluster_tool
from tools.kit import ControlPlane


def _tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, cluster_tool.__file__, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_second_up_is_a_quick_no_op(cluster: ControlPlane) -> None:
    before = cluster_tool.read_state()
    assert before is not None
    started = time.monotonic()
    proc = _tool("up")
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    assert "already running" in proc.stdout
    assert f"export KUBECONFIG={cluster.kubeconfig}" in proc.stdout
    assert elapsed < 5, f"a second `up` took {elapsed:.1f}s"
    after = cluster_tool.read_state()
    assert after is not None
    assert [(p.name, p.pid) for p in after.processes] == [(p.name, p.pid) for p in before.processes]


def test_status_lists_every_component_running(cluster: ControlPlane) -> None:
    proc = _tool("status")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"):
        line = next(line for line in proc.stdout.splitlines() if line.split()[:1] == [name])
        assert " running " in line, line
    assert cluster.server in proc.stdout


def test_env_prints_the_kubeconfig_export(cluster: ControlPlane) -> None:
    proc = _tool("env")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"export KUBECONFIG={cluster.kubeconfig}"
    assert cluster.kubeconfig.is_file()
