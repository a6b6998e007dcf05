"""tools/apirelay.py (the `kubernetes` Service's address for the real node's pods) and the node's
preflight for that address, without a node: the relay on loopback in front of a server of the
test's own."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools import realnode

RELAY = Path(__file__).resolve().parents[2] / "tools" / "apirelay.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def upstream() -> Iterator[int]:
    """A server that answers each connection with what it read, upper-cased, then closes."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                data = b""
                while not data.endswith(b"\n"):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                conn.sendall(data.upper())

    threading.Thread(target=serve, daemon=True).start()
    yield port
    server.close()


def _relay(target_port: int) -> tuple[subprocess.Popen[str], int]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(RELAY), "127.0.0.1", str(port), "127.0.0.1", str(target_port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("apirelay: 127.0.0.1:")
    return proc, port


def _ask(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def test_the_relay_copies_every_byte_both_ways_for_many_connections(upstream: int) -> None:
    proc, port = _relay(upstream)
    try:
        big = b"x" * 300_000 + b"\n"
        assert _ask(port, big) == big.upper()
        answers: list[bytes] = []
        threads = [
            threading.Thread(target=lambda i=i: answers.append(_ask(port, f"c{i}\n".encode())))
            for i in range(20)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(answers) == sorted(f"C{i}\n".encode() for i in range(20))
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0  # SIGTERM ends it cleanly
        assert proc.stdout is not None
        proc.stdout.close()


def test_a_refused_upstream_closes_the_client_and_the_relay_keeps_serving(
    upstream: int,
) -> None:
    proc, port = _relay(_free_port())  # nothing listens there
    try:
        assert _ask(port, b"hello\n") == b""
        time.sleep(0.2)
        assert proc.poll() is None
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        assert proc.stdout is not None
        proc.stdout.close()


@pytest.mark.parametrize(
    ("routes", "problem"),
    [
        ("default via 192.0.2.1 dev eth0\n192.0.2.0/24 dev eth0 scope link\n", None),
        ("default via 10.0.0.1 dev eth0\n10.0.0.0/24 dev eth0\n", "gateway"),
        ("default via 192.0.2.1 dev eth0\n10.0.0.0/8 dev ens4 scope link\n", "is routed"),
        ("10.88.0.0/16 dev t9kbr0 scope link\n10.0.0.1 dev t9kbr0 scope link\n", None),
    ],
)
def test_the_node_refuses_a_machine_where_the_service_address_is_taken(
    monkeypatch: pytest.MonkeyPatch, routes: str, problem: str | None
) -> None:
    monkeypatch.setattr(realnode, "_run_text", lambda argv: routes.replace("\n", " \n"))
    found = realnode._subnet_taken()
    if problem is None:
        assert found == []
    else:
        assert any(problem in line and realnode.API_SERVICE_IP in line for line in found), found
