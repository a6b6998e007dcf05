"""`make demo` as a user runs it: real training on the real node, the loss printed as it falls."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.cluster.real_helpers import RealNode
from tools.kit import wait_for

pytestmark = pytest.mark.realnode
DEMO = Path(__file__).resolve().parents[2] / "tools" / "demo.py"


@pytest.fixture
def _demo_operator_removed(core_v1: client.CoreV1Api) -> Iterator[None]:
    """The demo leaves its operator installed in t9k-system, as it should for a user; the tests
    after this one install into t9k-system themselves, so it goes, and is waited for."""
    yield

    def gone() -> bool:
        try:
            core_v1.delete_namespace("t9k-system")
        except ApiException as err:
            return err.status == 404
        return False

    wait_for(gone, bool, "the demo's namespace t9k-system to be gone", 120)


@pytest.mark.usefixtures("_demo_operator_removed")
def test_make_demo_trains_and_shows_the_loss_of_every_job(real_node: RealNode) -> None:
    proc = subprocess.run(
        [sys.executable, str(DEMO), "--restart-operator"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-5000:] + proc.stderr[-2000:]
    # the operator runs in the cluster, from its image, installed as a user installs it
    assert "| kubectl apply --server-side -f -" in out
    assert re.search(r"^  the operator runs as pod t9k-system/t9k-operator-\S+ on the real node,",
                     out, re.M), out[:3000]  # fmt: skip
    # both training jobs' logs streamed, every rank's line prefixed with its job and replica
    for rank in range(4):
        assert re.search(rf"^  \[torchrun-ddp/worker-[01]\]\s+rank={rank} world_size=4", out, re.M)
        assert re.search(
            rf"^  \[deepspeed-zero/worker-0\] deepspeed-zero-worker-[01]: rank={rank} world_size=4",
            out,
            re.M,
        )
    falls = re.findall(r"loss fell from ([\d.]+) to ([\d.]+)", out)
    assert len(falls) == 2, out[-5000:]
    assert all(float(last) < float(first) / 2 for first, last in falls), falls
    summary = out[out.index("[5/5] Summary") :]
    for line in (
        r"Succeeded\s+GenericJob\s+torchrun-ddp",
        r"Succeeded\s+DeepSpeedJob\s+deepspeed-zero",
        r"Failed\s+GenericJob\s+exits-1\s+The job is failed: Pod\[exits-1-worker-0\] exited with"
        r" error code 1$",
        r"Failed\s+GenericJob\s+oom-killed\s+.*exited with error code 137 \(2 restarts\)",
        r"Succeeded\s+GenericJob\s+paused",
        r"Running\s+DeepSpeedJob\s+deepspeed-debug",
    ):
        assert re.search(line, summary, re.M), (line, summary)
