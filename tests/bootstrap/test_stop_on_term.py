"""What the bootstrap scripts do as a container's PID 1 when the kubelet stops the pod: SIGTERM
goes to every process of the container, however it was started (a child, a process in a session
of its own), and PID 1 waits until all of them have exited, so each can save first.

Run for real in a PID namespace of its own (util-linux `unshare --pid --mount-proc`, as root),
where the script is PID 1 as it is in a container; skipped without root or `unshare`, and failed
instead under CI (T9K_REQUIRE_CLUSTER=1).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from t9k_sdk.reconcile import bootstrap

UNSHARE = shutil.which("unshare")
MISSING = os.geteuid() != 0 or UNSHARE is None
if MISSING and os.environ.get("T9K_REQUIRE_CLUSTER"):
    pytest.fail("root and util-linux unshare are needed (make test installs them)")
pytestmark = pytest.mark.skipif(MISSING, reason="needs root and util-linux unshare")

# Two ranks, each saving for a second once told: one the script's child, one in a session of its
# own (as a rank under sshd is), neither reachable through the script's process group.
RANK = "trap 'sleep 1; echo saved {0} >> {1}; exit 0' TERM; echo ready >> {1}; while :; do sleep 0.1; done"


def _pid1(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path]:
    out = tmp_path / "ranks"
    script = tmp_path / "pid1.sh"
    script.write_text(
        "#!/bin/sh\nset -eu\n"
        + bootstrap.STOP_ON_TERM
        + "trap t9k_stop TERM INT\n"
        + f"sh -c \"{RANK.format('child', out)}\" &\n"
        + f"setsid sh -c \"{RANK.format('session', out)}\" &\n"
        + 't9k_main=$!\nwait "$t9k_main"\nexit $?\n'
    )
    assert UNSHARE is not None
    # --kill-child: the namespace goes with the test, whatever happens
    proc = subprocess.Popen(
        [UNSHARE, "--pid", "--fork", "--mount-proc", "--kill-child", "sh", str(script)]
    )
    deadline = time.monotonic() + 20
    while not (out.exists() and out.read_text().count("ready") == 2):
        assert time.monotonic() < deadline, "the ranks did not start"
        time.sleep(0.05)
    return proc, out


def test_sigterm_reaches_every_process_and_pid_1_waits_until_they_saved(tmp_path: Path) -> None:
    proc, out = _pid1(tmp_path)
    # the kubelet signals PID 1 of the namespace alone: unshare's child
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    assert len(children) == 1, children
    start = time.monotonic()
    os.kill(int(children[0]), signal.SIGTERM)
    assert proc.wait(20) == 143
    assert time.monotonic() - start >= 1  # it waited for the ranks' one-second save
    assert sorted(line for line in out.read_text().splitlines() if line.startswith("saved")) == [
        "saved child",
        "saved session",
    ]
