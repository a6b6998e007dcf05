"""The background processes of tools/cluster.py and tools/realnode.py: how they are started,
recorded and recognised, the loopback ports they get and how their health endpoints are read.
Standard library only.

A process is recorded with its pid and its start time (field 22 of /proc/<pid>/stat), so that a
pid the kernel reused for another program is never taken for ours, and is started in a session
of its own, so that its whole process group can be signalled.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def proc_stat(pid: int) -> tuple[str, int, int, int] | None:
    """(state, pgrp, session, start_ticks) of a live pid, or None."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may contain spaces: split after it.
    fields = raw[raw.rindex(")") + 2 :].split()
    return fields[0], int(fields[2]), int(fields[3]), int(fields[19])


@dataclass
class ProcessRecord:
    name: str
    pid: int
    start_ticks: int  # field 22 of /proc/<pid>/stat: tells a reused pid from ours
    log: str

    def alive(self) -> bool:
        """True if the recorded process still runs (not a zombie, not a reused pid)."""
        stat = proc_stat(self.pid)
        return stat is not None and stat[0] not in ("Z", "X") and stat[3] == self.start_ticks

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "pid": self.pid,
            "start_ticks": self.start_ticks,
            "log": self.log,
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> ProcessRecord:
        return ProcessRecord(
            name=str(data["name"]),
            pid=int(data["pid"]),
            start_ticks=int(data["start_ticks"]),
            log=str(data["log"]),
        )


def spawn(
    name: str,
    argv: list[str],
    log_dir: Path,
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    before_exec: Callable[[], None] | None = None,
) -> ProcessRecord:
    """Start `argv` in a session of its own, its output appended to log_dir/<name>.log.

    `before_exec` runs in the child before the program starts (the real node's daemons join
    their cgroup there, so nothing they fork is ever outside it).
    """
    log_path = log_dir / f"{name}.log"
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,  # own session and process group: `down` kills the group
            preexec_fn=before_exec,  # the callers are single-threaded CLIs: safe
        )
    # Popen does not keep the child for us: the record is what `down` goes by.
    proc.returncode = 0  # silence Popen.__del__'s "still running" ResourceWarning
    stat = proc_stat(proc.pid)
    return ProcessRecord(name, proc.pid, stat[3] if stat else 0, str(log_path))


def free_ports(names: Sequence[str]) -> dict[str, int]:
    """One free loopback port per name (all bound at once, so they are distinct)."""
    socks = []
    try:
        for _ in names:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return {name: s.getsockname()[1] for name, s in zip(names, socks, strict=True)}
    finally:
        for s in socks:
            s.close()


def http_get(url: str, ctx: ssl.SSLContext | None = None, timeout: float = 2.0) -> tuple[int, str]:
    """(status, body) of a GET; status 0 if nothing answered."""
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=ctx) as resp:
            return int(resp.status), resp.read().decode(errors="replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")
    except (OSError, ssl.SSLError):
        return 0, ""
