"""`/healthz` (the process serves requests), `/readyz` and `/metrics` over plain HTTP, for the
kubelet probes and Prometheus.

The server is reachable by anything that can reach the pod, so what one client can hold is
bounded: at most `MAX_CONNECTIONS` connections are served at once (more are closed at once,
without a thread), and a connection that sends nothing for `IDLE_TIMEOUT` seconds is closed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = ["IDLE_TIMEOUT", "MAX_CONNECTIONS", "Exposition", "HealthServer"]

MAX_CONNECTIONS = 64
"""Connections served at once; a probe or a scrape takes milliseconds."""
IDLE_TIMEOUT = 5.0
"""Seconds a connection may wait for the client's next bytes."""

log = logging.getLogger(__name__)

Readiness = Callable[[], tuple[bool, str]]
"""() -> (ready, one-line explanation)."""

Exposition = Callable[[str], tuple[bytes, str]]
"""(Accept header) -> (body, content type) of a metrics scrape."""


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
        shown = [p for p, on in (("/healthz, /readyz", probes), ("/metrics", metrics)) if on]
        paths = " or ".join(shown)

        def send(
            handler: BaseHTTPRequestHandler, code: int, body: bytes, content_type: str
        ) -> None:
            handler.send_response(code)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)

        def respond(handler: BaseHTTPRequestHandler) -> None:
            path = urlsplit(handler.path).path
            if path == "/metrics" and metrics is not None:
                try:
                    body, content_type = metrics(handler.headers.get("Accept", ""))
                except Exception:  # a broken collector must not take the probes down with it
                    log.exception("collecting the metrics failed")
                    send(
                        handler,
                        500,
                        b"collecting the metrics failed; see the operator's log\n",
                        "text/plain; charset=utf-8",
                    )
                    return
                send(handler, 200, body, content_type)
                return
            if path == "/healthz" and probes:
                code, text = 200, "ok"
            elif path == "/readyz" and probes:
                ok, text = readiness()
                code = 200 if ok else 503
            else:
                code, text = 404, f"not found: try {paths}"
            send(handler, code, (text + "\n").encode(), "text/plain; charset=utf-8")

        class Handler(BaseHTTPRequestHandler):
            timeout = IDLE_TIMEOUT  # applied to the socket: an idle client is dropped

            def do_GET(self) -> None:
                respond(self)

            def log_message(self, format: str, *args: object) -> None:
                log.debug("%s " + format, self.address_string(), *args)

        self._server = _BoundedServer((bind, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="health", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class _BoundedServer(ThreadingHTTPServer):
    """A thread per connection, at most MAX_CONNECTIONS of them; the rest are closed unserved."""

    request_queue_size = 128  # the listen backlog: a burst is accepted (and closed), not stalled

    def __init__(self, address: tuple[str, int], handler: Any) -> None:
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            log.debug("health server busy: closing a connection from %s", client_address)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client that went away or timed out is no error of ours
        log.debug("health server: connection from %s ended early", client_address)
