"""The operator's health port as anything that reaches the pod can use it: slow clients, stuffed
headers, clients that never read. The server runs in a process of its own (as in the operator)
so that its memory is measured alone; the probes are sent as the kubelet sends them (a fresh
connection, a one-second timeout)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from t9k_operator import health as health_module
from t9k_operator.health import HealthServer

REPO = Path(__file__).resolve().parents[2]
SERVER = """
import sys, time
from t9k_operator.health import HealthServer
body = b"# metrics\\n" + b"x" * (1 << 20)  # a large scrape, 1 MiB
server = HealthServer("127.0.0.1", 0, lambda: (True, "ready"), lambda accept: (body, "text/plain"))
server.start()
print(server.port, flush=True)
sys.stdin.read()  # until the test closes our standard input
server.stop()
"""


@pytest.fixture
def served() -> Iterator[tuple[int, int]]:
    """(port, pid) of a health server in a process of its own."""
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'operator'}{os.pathsep}{REPO}"}
    with subprocess.Popen(
        [sys.executable, "-c", SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdin is not None
        port = int(proc.stdout.readline())
        try:
            yield port, proc.pid
        finally:
            proc.stdin.close()
            proc.wait(timeout=30)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def probe(port: int, path: str = "/healthz") -> int:
    """The status a kubelet probe would see (0: no answer within its one second)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=1) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return 0


def test_probes_are_answered_while_the_port_is_flooded_and_memory_stays_bounded(
    served: tuple[int, int],
) -> None:
    """64 connections that send a byte every 3 s, 64 that stuff their headers, 64 that ask for
    the metrics and never read, all reconnecting as soon as they are closed: every probe is
    answered within the kubelet's second, and the server's memory stays flat. (The
    thread-per-connection server failed 15 of 15 probes and grew by 387 MiB.)"""
    port, pid = served
    stop = threading.Event()
    idle_rss = rss_mib(pid)

    def attacker(first: bytes, then: bytes, every: float) -> None:
        while not stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    s.sendall(first)
                    while not stop.wait(every):
                        s.sendall(then)
            except OSError:  # closed by the server: come back at once
                continue

    stuffing = b"X-Stuff: " + b"a" * 4000 + b"\r\n"
    kinds = [
        (b"G", b"E", 3.0),  # trickles its request line
        (b"GET /healthz HTTP/1.1\r\n" + stuffing, stuffing, 0.5),  # stuffs its headers
        (b"GET /metrics HTTP/1.1\r\n\r\n", b"", 3600.0),  # never reads its 1 MiB answer
    ]
    threads = [
        threading.Thread(target=attacker, args=kind, daemon=True)
        for kind in kinds
        for _ in range(64)
    ]
    for thread in threads:
        thread.start()
    try:
        time.sleep(2)
        answers, peak = [], idle_rss
        for _ in range(15):
            answers.append(probe(port))
            peak = max(peak, rss_mib(pid))
            time.sleep(1)
        assert answers == [200] * 15
        assert probe(port, "/readyz") == 200
        assert peak - idle_rss < 64, f"{idle_rss:.0f} MiB idle, {peak:.0f} MiB under attack"
    finally:
        stop.set()


@pytest.fixture
def server() -> Iterator[HealthServer]:
    server = HealthServer("127.0.0.1", 0, lambda: (True, "ready"))
    server.start()
    yield server
    server.stop()


def exchange(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_a_request_that_trickles_in_is_closed_at_its_deadline_however_it_keeps_sending(
    server: HealthServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(health_module, "HEAD_DEADLINE", 1.0)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        started = time.monotonic()
        closed = False
        for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\n":
            try:
                s.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            time.sleep(0.1)  # never idle for long: an idle timeout would not close it
        if not closed:
            s.settimeout(5)
            assert s.recv(1) == b""  # closed, without an answer
        assert time.monotonic() - started < 4


def test_headers_over_the_limits_get_431_and_a_probe_still_gets_200(server: HealthServer) -> None:
    big = b"GET /healthz HTTP/1.1\r\nX: " + b"a" * health_module.MAX_HEAD_BYTES + b"\r\n\r\n"
    assert exchange(server.port, big).startswith(b"HTTP/1.1 431 ")
    many = (
        b"GET /healthz HTTP/1.1\r\n" + b"X: y\r\n" * (health_module.MAX_HEADER_LINES + 1) + b"\r\n"
    )
    assert exchange(server.port, many).startswith(b"HTTP/1.1 431 ")
    assert probe(server.port) == 200


def test_answers_name_their_length_and_close_and_head_has_no_body(server: HealthServer) -> None:
    answer = exchange(server.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer == (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
        b"Content-Length: 3\r\nConnection: close\r\n\r\nok\n"
    )
    assert exchange(server.port, b"HEAD /healthz HTTP/1.1\r\n\r\n").endswith(b"\r\n\r\n")
    assert exchange(server.port, b"POST /healthz HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 405 ")
    assert exchange(server.port, b"nonsense\r\n\r\n").startswith(b"HTTP/1.1 400 ")


def test_more_connections_than_allowed_close_the_oldest_waiting_not_the_new_one(
    server: HealthServer,
) -> None:
    idle = [
        socket.create_connection(("127.0.0.1", server.port), timeout=5)
        for _ in range(health_module.MAX_CONNECTIONS + 20)
    ]
    try:
        assert probe(server.port) == 200  # the newest is served
        time.sleep(0.5)
        # the first 20 (and one more, for the probe) were closed to make room
        assert [s.recv(1) for s in idle[:21]] == [b""] * 21
    finally:
        for s in idle:
            s.close()
