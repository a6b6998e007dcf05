"""The real `t9k-operator` process and the jobs it runs, on the local control plane.

* `Operator`: one `python -m t9k_operator` process with its log in a file and its health port.
* `launch_operators(kubeconfig, namespace, log_dir)`: a context manager yielding `start(*flags)`;
  every operator started through it watches `namespace` only (its Lease lives there too) and is
  stopped on exit, its log printed (pytest shows it for a failed test).
* Job helpers for the three kinds: create, read the status, wait for a phase, list pods and
  Events.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from kubernetes import client

from t9k_sdk import models
from tools.kit._control_plane import wait_for


class Operator:
    """One `t9k-operator` process."""

    def __init__(self, args: list[str], log_path: Path) -> None:
        self.port = _free_port()
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "t9k_operator",
                *args,
                "--health-port",
                str(self.port),
                "--health-bind",
                "127.0.0.1",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def readyz(self) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=2) as r:
                return r.status, r.read().decode().strip()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode().strip()
        except OSError as err:
            return 0, f"unreachable: {err}"

    def wait_ready(self, role: str, timeout: float = 30.0) -> str:
        """Wait until /readyz answers 200 with `role` ("leader" or "standby"); return the text."""

        def fetch() -> tuple[int, str]:
            if self.proc.poll() is not None:
                raise AssertionError(f"operator exited with {self.proc.returncode}:\n{self.log()}")
            return self.readyz()

        _code, text = wait_for(
            fetch,
            lambda r: r[0] == 200 and r[1].startswith(role),
            f"/readyz to say {role}",
            timeout,
        )
        return text

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()
        return self.proc.returncode

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def identity(self) -> str:
        for line in self.log().splitlines():
            if " starting " in line and "identity=" in line:
                return line.split("identity=")[1].split()[0]
        raise AssertionError(f"no start-up line in the log:\n{self.log()}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def launch_operators(
    kubeconfig: Path, namespace: str, log_dir: Path, *, flags: Sequence[str] = ()
) -> Iterator[Callable[..., Operator]]:
    """Yield `start(*flags, kubeconfig_path=None)`; stop every operator started on exit.

    `flags` go to every operator started (e.g. `("--watch-timeout-seconds", "2,5")`), before
    the flags of each `start`."""
    started: list[Operator] = []

    def start(*extra: str, kubeconfig_path: Path | None = None) -> Operator:
        args = [
            "--kubeconfig",
            str(kubeconfig_path or kubeconfig),
            "--namespace",
            namespace,
            "--lease-namespace",
            namespace,
            "--workers",
            "2",
            *flags,
            *extra,
        ]
        op = Operator(args, log_dir / f"operator-{len(started)}.log")
        started.append(op)
        return op

    try:
        yield start
    finally:
        for n, op in enumerate(started):
            op.stop()
            print(f"===== operator {n} (exit {op.proc.returncode}) log: {op.log_path} =====")
            print(op.log())


# --- jobs ------------------------------------------------------------------------------------


def create_job(custom: client.CustomObjectsApi, namespace: str, job: dict[str, Any]) -> Any:
    plural = models.JOB_KINDS[job.get("kind", "GenericJob")].PLURAL
    return custom.create_namespaced_custom_object(
        models.GROUP, models.VERSION, namespace, plural, job
    )


def read_job(
    custom: client.CustomObjectsApi, namespace: str, name: str, kind: str = "GenericJob"
) -> dict[str, Any]:
    obj = custom.get_namespaced_custom_object(
        models.GROUP, models.VERSION, namespace, models.JOB_KINDS[kind].PLURAL, name
    )
    return dict(obj)


def job_status(
    custom: client.CustomObjectsApi, namespace: str, name: str, kind: str = "GenericJob"
) -> dict[str, Any]:
    return dict(read_job(custom, namespace, name, kind).get("status") or {})


def wait_job_phase(
    custom: client.CustomObjectsApi,
    namespace: str,
    name: str,
    phase: str,
    timeout: float = 30.0,
    kind: str = "GenericJob",
) -> dict[str, Any]:
    return wait_for(
        lambda: job_status(custom, namespace, name, kind),
        lambda s: s.get("phase") == phase,
        f"{kind} {namespace}/{name} to be {phase}",
        timeout,
    )


def job_pods(core_v1: client.CoreV1Api, namespace: str, job: str) -> dict[str, str]:
    """name -> uid of the pods labelled as the job's."""
    pods = core_v1.list_namespaced_pod(
        namespace, label_selector=f"tensorstack.dev/owner-name={job}"
    )
    return {p.metadata.name: p.metadata.uid for p in pods.items}


def job_events(
    core_v1: client.CoreV1Api, namespace: str, job: str, kind: str = "GenericJob"
) -> list[Any]:
    events = core_v1.list_namespaced_event(
        namespace, field_selector=f"involvedObject.kind={kind},involvedObject.name={job}"
    )
    return list(events.items)
