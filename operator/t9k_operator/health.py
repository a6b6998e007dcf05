"""`/healthz` (the process serves requests) and `/readyz` over plain HTTP, for the kubelet probes."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["HealthServer"]

log = logging.getLogger(__name__)

Readiness = Callable[[], tuple[bool, str]]
"""() -> (ready, one-line explanation)."""


class HealthServer:
    """Serves the probes on `bind:port` from a daemon thread (port 0: any free port)."""

    def __init__(self, bind: str, port: int, readiness: Readiness) -> None:
        def respond(handler: BaseHTTPRequestHandler) -> None:
            if handler.path == "/healthz":
                ok, text = True, "ok"
            elif handler.path == "/readyz":
                ok, text = readiness()
            else:
                ok, text = False, "not found: try /healthz or /readyz"
            code = 200 if ok else (404 if text.startswith("not found") else 503)
            body = (text + "\n").encode()
            handler.send_response(code)
            handler.send_header("Content-Type", "text/plain; charset=utf-8")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                respond(self)

            def log_message(self, format: str, *args: object) -> None:
                log.debug("%s " + format, self.address_string(), *args)

        self._server = ThreadingHTTPServer((bind, port), Handler)
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
