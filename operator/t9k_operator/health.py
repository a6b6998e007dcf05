"""`/healthz` (the process serves requests), `/readyz` and `/metrics` over plain HTTP, for the
kubelet probes and Prometheus.

Anything that can reach the pod can reach this port, so no client may hold it, and the kubelet's
probes must be answered while someone tries:

* one thread serves every connection from a selector loop: a connection costs a socket and its
  buffers, never a thread;
* a connection gets `HEAD_DEADLINE` seconds in all for its request line and headers (a client
  that trickles a byte every few seconds is closed all the same), at most `MAX_HEAD_BYTES` of
  them in at most `MAX_HEADER_LINES` lines (more: `431`), and `WRITE_DEADLINE` seconds to take
  its answer;
* at most `MAX_CONNECTIONS` are open at once. A new connection is never refused: it closes the
  one that has waited longest for its request, so a probe, which sends its request at once and
  is answered in the same turn of the loop, gets through while the port is flooded;
* answers not yet taken hold at most `MAX_PENDING_BYTES` (a client that asks for `/metrics` and
  never reads makes room for the others, oldest first).

Memory stays bounded whatever the clients do: `MAX_CONNECTIONS` x `MAX_HEAD_BYTES` of requests
and `MAX_PENDING_BYTES` of answers. Each answer closes its connection (`Connection: close`).
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = [
    "HEAD_DEADLINE",
    "MAX_CONNECTIONS",
    "MAX_HEADER_LINES",
    "MAX_HEAD_BYTES",
    "MAX_PENDING_BYTES",
    "WRITE_DEADLINE",
    "Exposition",
    "HealthServer",
]

MAX_CONNECTIONS = 256
"""Connections open at once; a new one closes the oldest still waiting for its request."""
HEAD_DEADLINE = 5.0
"""Seconds from a connection's accept to the end of its request's headers."""
WRITE_DEADLINE = 10.0
"""Seconds a client has to take its answer."""
MAX_HEAD_BYTES = 8192
"""Bytes of request line and headers (a probe sends about 150, Prometheus about 300)."""
MAX_HEADER_LINES = 64
"""Header lines of a request."""
MAX_PENDING_BYTES = 32 * 1024 * 1024
"""Bytes of answers written but not yet taken, over all connections."""

log = logging.getLogger(__name__)

Readiness = Callable[[], tuple[bool, str]]
"""() -> (ready, one-line explanation)."""

Exposition = Callable[[str], tuple[bytes, str]]
"""(Accept header) -> (body, content type) of a metrics scrape."""

_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}
_TEXT = "text/plain; charset=utf-8"
_ACCEPTS_PER_TURN = 64  # a flood of connects cannot starve the reads of the ones accepted


@dataclass(eq=False)
class _Connection:
    sock: socket.socket
    accepted: float
    inbox: bytearray = field(default_factory=bytearray)
    answer: memoryview | None = None  # set once the request is read: what is left to write
    answered: float = 0.0


class HealthServer:
    """Serves the probes (and the metrics, when given) on `bind:port` from a daemon thread
    (port 0: any free port)."""

    def __init__(
        self,
        bind: str,
        port: int,
        readiness: Readiness,
        metrics: Exposition | None = None,
        *,
        probes: bool = True,
    ) -> None:
        """`probes=False`: a metrics server alone (`--metrics-bind-address`)."""
        self._readiness = readiness
        self._metrics = metrics
        self._probes = probes
        shown = [p for p, on in (("/healthz, /readyz", probes), ("/metrics", metrics)) if on]
        self._paths = " or ".join(shown)
        family = socket.AF_INET6 if ":" in bind else socket.AF_INET
        self._listener = socket.socket(family, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((bind, port))
        self._listener.listen(128)  # a burst is accepted (and served or closed), not stalled
        self._listener.setblocking(False)
        self._wake_r, self._wake_w = socket.socketpair()
        self._stopping = threading.Event()
        self._open: dict[socket.socket, _Connection] = {}
        self._pending = 0
        self._selector = selectors.DefaultSelector()
        self._thread = threading.Thread(target=self._serve, name="health", daemon=True)

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def start(self) -> None:
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake_w.send(b"x")
        if self._thread.is_alive():
            self._thread.join()
        for conn in list(self._open.values()):
            self._close(conn)
        self._selector.close()
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()

    # -- the loop ---------------------------------------------------------------------------

    def _serve(self) -> None:
        while not self._stopping.is_set():
            for key, events in self._selector.select(timeout=0.25):
                if key.fileobj is self._listener:
                    self._accept()
                elif key.fileobj is self._wake_r:
                    self._wake_r.recv(64)
                elif key.data is not None and key.data.sock in self._open:
                    conn = key.data
                    if events & selectors.EVENT_READ and conn.answer is None:
                        self._read(conn)
                    elif events & selectors.EVENT_WRITE and conn.answer is not None:
                        self._write(conn)
            self._sweep(time.monotonic())

    def _accept(self) -> None:
        for _ in range(_ACCEPTS_PER_TURN):
            try:
                sock, _address = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as err:  # out of descriptors: the clients keep their backlog
                log.debug("health server: accept failed: %s", err)
                return
            if len(self._open) >= MAX_CONNECTIONS:
                self._close(self._oldest())
            sock.setblocking(False)
            conn = _Connection(sock, time.monotonic())
            self._open[sock] = conn
            self._selector.register(sock, selectors.EVENT_READ, conn)

    def _oldest(self) -> _Connection:
        """The connection to close for a new one: the longest waiting for its request, else the
        longest writing its answer."""
        reading = [c for c in self._open.values() if c.answer is None]
        return min(reading or self._open.values(), key=lambda c: c.accepted)

    def _read(self, conn: _Connection) -> None:
        try:
            data = conn.sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._close(conn)
            return
        conn.inbox += data
        end = conn.inbox.find(b"\r\n\r\n")
        size = end if end >= 0 else len(conn.inbox)
        # a whole head holds a CRLF per header line; a partial one, one more (its request line's)
        lines = conn.inbox.count(b"\r\n", 0, size) - (0 if end >= 0 else 1)
        if size > MAX_HEAD_BYTES or lines > MAX_HEADER_LINES:
            self._answer(conn, 431, b"request headers too large\n", _TEXT)
        elif end >= 0:
            self._respond(conn, bytes(conn.inbox[:end]))

    def _respond(self, conn: _Connection, head: bytes) -> None:
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            self._answer(conn, 400, b"bad request line\n", _TEXT)
            return
        method, target = parts[0], parts[1]
        if method not in ("GET", "HEAD"):
            self._answer(conn, 405, b"only GET and HEAD\n", _TEXT)
            return
        accept = ""
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "accept":
                accept = value.strip()
        code, body, content_type = self._route(urlsplit(target).path, accept)
        self._answer(conn, code, body, content_type, with_body=method == "GET")

    def _route(self, path: str, accept: str) -> tuple[int, bytes, str]:
        if path == "/metrics" and self._metrics is not None:
            try:
                body, content_type = self._metrics(accept)
            except Exception:  # a broken collector must not take the probes down with it
                log.exception("collecting the metrics failed")
                return 500, b"collecting the metrics failed; see the operator's log\n", _TEXT
            return 200, body, content_type
        if path == "/healthz" and self._probes:
            return 200, b"ok\n", _TEXT
        if path == "/readyz" and self._probes:
            ok, text = self._readiness()
            return (200 if ok else 503), (text + "\n").encode(), _TEXT
        return 404, f"not found: try {self._paths}\n".encode(), _TEXT

    def _answer(
        self,
        conn: _Connection,
        code: int,
        body: bytes,
        content_type: str,
        *,
        with_body: bool = True,
    ) -> None:
        head = (
            f"HTTP/1.1 {code} {_REASONS[code]}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        data = head + body if with_body else head
        while self._pending + len(data) > MAX_PENDING_BYTES and self._writers():
            self._close(min(self._writers(), key=lambda c: c.answered))
        conn.inbox = bytearray()
        conn.answer = memoryview(data)
        conn.answered = time.monotonic()
        self._pending += len(data)
        self._selector.modify(conn.sock, selectors.EVENT_WRITE, conn)
        self._write(conn)  # a probe's answer fits the socket's buffer: done in this turn

    def _writers(self) -> list[_Connection]:
        return [c for c in self._open.values() if c.answer is not None]

    def _write(self, conn: _Connection) -> None:
        assert conn.answer is not None
        try:
            sent = conn.sock.send(conn.answer)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(conn)
            return
        self._pending -= sent
        conn.answer = conn.answer[sent:]
        if not conn.answer:
            self._close(conn)

    def _sweep(self, now: float) -> None:
        for conn in list(self._open.values()):
            if conn.answer is None and now - conn.accepted > HEAD_DEADLINE:
                log.debug("health server: a request's headers took over %ss", HEAD_DEADLINE)
                self._close(conn)
            elif conn.answer is not None and now - conn.answered > WRITE_DEADLINE:
                self._close(conn)

    def _close(self, conn: _Connection) -> None:
        if self._open.pop(conn.sock, None) is None:
            return
        if conn.answer is not None:
            self._pending -= len(conn.answer)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(conn.sock)
        conn.sock.close()
