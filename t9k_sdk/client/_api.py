"""Raw JSON requests to the API server through the official client's connection pool.

The client's generated API classes turn objects into models we do not need (jobs are parsed by
`t9k_sdk.codecs`, pods are read as dicts); here every request is a path, a query and a JSON
body, and every failure becomes a `ClientError` whose message a user can act on.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote

import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from t9k_sdk._kube import send
from t9k_sdk.client.errors import ApiRequestError, ClientError, ClusterUnreachableError

__all__ = ["Api", "Response", "status_of"]

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
CONNECT_TIMEOUT = 10.0

Response = urllib3.response.BaseHTTPResponse


def path(*parts: str) -> str:
    return "/" + "/".join(quote(p, safe="") for p in parts if p)


def status_of(exc: ApiException) -> dict[str, Any]:
    """The `Status` object of an error response (empty if the body is not one)."""
    body = exc.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        data = json.loads(body) if body else {}
    except ValueError:
        return {"message": str(body).strip()}
    return data if isinstance(data, dict) else {}


def request_error(exc: ApiException, server: str) -> ClientError:
    """A `ClientError` for an error answer (or for no answer: status 0)."""
    if not exc.status:
        return ClusterUnreachableError(
            f"cannot reach the Kubernetes API server at {server}: {exc.reason}"
        )
    status = status_of(exc)
    message = str(status.get("message") or exc.reason or "").strip()
    reason = str(status.get("reason") or exc.reason or "")
    causes = (status.get("details") or {}).get("causes") or ()
    details = [
        f"{c.get('field')}: {c.get('message')}" if c.get("field") else str(c.get("message"))
        for c in causes
        if c.get("message") and str(c.get("message")) not in message
    ]
    if details:
        message += "".join(f"\n  - {d}" for d in details)
    if exc.status == 401:
        message = (
            f"the API server at {server} did not accept the credentials of the kubeconfig"
            f" (Unauthorized): {message}"
        )
    return ApiRequestError(message or f"HTTP {exc.status}", status=exc.status, reason=reason)


def _unreachable(exc: Exception, server: str) -> ClusterUnreachableError:
    reason = getattr(exc, "reason", None) or exc
    return ClusterUnreachableError(f"cannot reach the Kubernetes API server at {server}: {reason}")


class Api:
    """JSON over the official client's `ApiClient` (authentication, TLS, connection pool)."""

    def __init__(self, api_client: k8s.ApiClient) -> None:
        self.api_client = api_client

    @property
    def server(self) -> str:
        return str(self.api_client.configuration.host)

    def call(
        self,
        method: str,
        url: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        read_timeout: float | None = 60.0,
    ) -> Response:
        """Send a request; the response is unread. Raises `ApiException` for an error answer,
        `ClusterUnreachableError` when there is no answer. `read_timeout=None` for streams."""
        headers = {"Accept": JSON}
        if body is not None:
            headers["Content-Type"] = content_type
        params = [(k, _query_value(v)) for k, v in (query or {}).items() if v is not None]
        try:
            response = send(
                self.api_client,
                method,
                url,
                query=params,
                headers=headers,
                body=body,
                timeout=(CONNECT_TIMEOUT, read_timeout),
            )
        except ApiException:
            raise
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise _unreachable(exc, self.server) from None
        return response

    def json(
        self,
        method: str,
        url: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: float = 60.0,
    ) -> dict[str, Any]:
        """Send a request and return the JSON answer. Raises `ClientError` for any failure."""
        try:
            response = self.call(
                method,
                url,
                query=query,
                body=body,
                content_type=content_type,
                read_timeout=timeout,
            )
        except ApiException as exc:
            raise request_error(exc, self.server) from None
        try:
            data = response.data
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise _unreachable(exc, self.server) from None
        finally:
            response.release_conn()
        parsed = json.loads(data) if data else {}
        return parsed if isinstance(parsed, dict) else {}


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def lines(response: Response) -> Iterator[bytes]:
    """The lines of a streamed response as they arrive (without their newlines)."""
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=True):
        buffer += chunk
        while True:
            newline = buffer.find(b"\n")
            if newline < 0:
                break
            yield buffer[:newline]
            buffer = buffer[newline + 1 :]
    if buffer:
        yield buffer


def abort(response: Response) -> None:
    """Close a streamed response from any thread, waking a reader blocked on it."""
    sock = _socket_of(response)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
    # Closing twice, or while another thread reads: nothing more to do.
    with contextlib.suppress(Exception):
        response.close()


def _socket_of(response: Response) -> socket.socket | None:
    connection = getattr(response, "connection", None) or getattr(response, "_connection", None)
    sock = getattr(connection, "sock", None)
    if isinstance(sock, socket.socket):
        return sock
    fp = getattr(response, "_fp", None)
    raw = getattr(getattr(getattr(fp, "fp", None), "raw", None), "_sock", None)
    return raw if isinstance(raw, socket.socket) else None
