"""Requests to the API server through the official Kubernetes client, on every supported release.

`Transport` sends a path, a query and a JSON body through a `kubernetes.client.ApiClient` (it
owns authentication, TLS and the connection pool) and answers with a `Response`: read it whole
as JSON, or line by line as it streams (watches, logs). Every failure is an `ApiError`
(`t9k_sdk._kube.api_error`), status 0 when no answer came. A `Response` can be closed from any
thread, waking a reader blocked on it, through urllib3's public `HTTPResponse.shutdown()`
(urllib3 >= 2.3).

The client changed how raw requests are sent in release 37: `ApiClient.call_api(path, method,
query_params=..., auth_settings=..., _preload_content=False)` became `param_serialize(...)` (URL,
query, auth) followed by `call_api(method, url, header_params, body, _request_timeout)`, which
returns a `RESTResponse` and no longer raises for an error status. `send` speaks both and always
returns the unread urllib3 response, raising `ApiException` for a non-2xx answer as older
clients did. With a real `ApiClient` it skips both: the request goes straight through the
client's own urllib3 pool (its TLS, proxy and default headers) with its bearer token, and the
body is encoded once (the client walks every body twice in Python first). Both paths are tested: `make deps-lowest` (kubernetes at its declared lower bound)
and `make deps-newest` (the newest release pip finds) run the unit tests and a cluster smoke test.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

import urllib3
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from t9k_sdk._kube.api_error import ApiError

__all__ = [
    "APPLY_PATCH",
    "JSON",
    "MERGE_PATCH",
    "ApiClient",
    "Query",
    "Response",
    "Timeout",
    "Transport",
    "send",
]

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

Query = Mapping[str, Any] | Sequence[tuple[str, Any]]
"""Query parameters; None values are left out, booleans are sent as `true`/`false`."""

Timeout = float | tuple[float, float | None] | None
"""Seconds in all, or (connect, read); a read timeout of None waits for ever (streams)."""


def send(
    api_client: Any,
    method: str,
    path: str,
    *,
    query: Sequence[tuple[str, str]] = (),
    headers: Mapping[str, str] | None = None,
    body: Any = None,
    timeout: Timeout = None,
) -> urllib3.response.BaseHTTPResponse:
    """Send `method path?query` with a bearer token (if configured); the response is unread.

    Raises `ApiException` (with `.status`, `.reason`, `.body`, `.headers`) for a non-2xx answer;
    connection failures surface as urllib3/OS errors, as they always did.
    """
    header_params = dict(headers or {})
    if (pool := _pool_manager(api_client)) is not None:
        return _send_direct(api_client, pool, method, path, query, header_params, body, timeout)
    if _takes_query_params(type(api_client)):
        # kubernetes <= 36 (and test doubles written against it)
        response: urllib3.response.BaseHTTPResponse = api_client.call_api(
            path,
            method,
            query_params=list(query),
            header_params=header_params,
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
            _request_timeout=timeout,
        )
        return response
    # kubernetes >= 37: serialize (URL, query, auth headers), then send
    _method, url, sent_headers, sent_body, _post = api_client.param_serialize(
        method,
        path,
        query_params=list(query),
        header_params=header_params,
        body=body,
        auth_settings=["BearerToken"],
    )
    rest = api_client.call_api(
        method, url, header_params=sent_headers, body=sent_body, _request_timeout=timeout
    )
    raw: urllib3.response.BaseHTTPResponse = rest.response
    return _answered(raw)


def _answered(raw: urllib3.response.BaseHTTPResponse) -> urllib3.response.BaseHTTPResponse:
    """`raw` if its status is 2xx; else its body read, its connection released and the
    `ApiException` that kubernetes <= 36 raised for it."""
    if 200 <= raw.status <= 299:
        return raw
    try:
        text = raw.data.decode("utf-8", errors="replace")
    finally:
        raw.release_conn()
    error = ApiException(status=raw.status, reason=raw.reason)
    error.body = text
    error.headers = raw.headers
    raise error


def _pool_manager(api_client: Any) -> Any:
    """The urllib3 pool of a real `ApiClient` (TLS and proxies configured), else None."""
    if not isinstance(api_client, ApiClient):
        return None
    return getattr(getattr(api_client, "rest_client", None), "pool_manager", None)


def _send_direct(
    api_client: ApiClient,
    pool: Any,
    method: str,
    path: str,
    query: Sequence[tuple[str, str]],
    headers: dict[str, str],
    body: Any,
    timeout: Timeout,
) -> urllib3.response.BaseHTTPResponse:
    """`send` straight through the client's urllib3 pool, with its headers and bearer token.

    The client's own path walks every body twice in Python (`sanitize_for_serialization`, then
    `json.dumps`) and builds its request from scratch: for the operator that was a quarter of
    its CPU at 2,000 creates (docs/performance.md). The body is encoded once here instead.
    """
    config = api_client.configuration
    url = config.host + path + (f"?{urlencode(query)}" if query else "")
    sent = {**api_client.default_headers, **headers}
    if api_client.cookie:
        sent["Cookie"] = api_client.cookie
    for auth in config.auth_settings().values():  # BearerToken, refreshed by the client's hook
        if auth.get("in") == "header" and auth.get("value"):
            sent[auth["key"]] = auth["value"]
    data = None if body is None else _encode(api_client, body)
    raw: urllib3.response.BaseHTTPResponse = pool.request(
        method,
        url,
        body=data,
        headers=sent,
        preload_content=False,
        timeout=_urllib3_timeout(timeout),
    )
    return _answered(raw)


def _encode(api_client: ApiClient, body: Any) -> bytes:
    def other(value: Any) -> Any:  # dates, client models: as the client writes them
        return api_client.sanitize_for_serialization(value)

    return json.dumps(body, separators=(",", ":"), default=other).encode()


def _urllib3_timeout(timeout: Timeout) -> urllib3.Timeout | None:
    if timeout is None:
        return None
    if isinstance(timeout, tuple):
        return urllib3.Timeout(connect=timeout[0], read=timeout[1])
    return urllib3.Timeout(total=timeout)


_OLD_SIGNATURE: dict[type, bool] = {}


def _takes_query_params(api_client_type: type) -> bool:
    """True for the `call_api(path, method, query_params=...)` of kubernetes <= 36."""
    known = _OLD_SIGNATURE.get(api_client_type)
    if known is None:
        try:
            signature = inspect.signature(getattr(api_client_type, "call_api"))  # noqa: B009
        except (AttributeError, TypeError, ValueError):
            known = False
        else:
            known = "query_params" in signature.parameters
        _OLD_SIGNATURE[api_client_type] = known
    return known


# -- Transport ---------------------------------------------------------------------------------


class Transport:
    """JSON requests and streamed responses over one `kubernetes.client.ApiClient`.

    `timeout` applies to requests that give none: seconds in all, or (connect, read).
    `before()` runs before every request (the operator takes a rate-limit token there);
    `observe(verb, status)` runs after every request with the HTTP status, 0 for no answer.
    `api_client` may be a test double with the `call_api` of kubernetes <= 36.
    `loads` decodes response bodies and watch lines (the operator passes orjson's: faster, and
    it shares the key strings of the objects it decodes, which thousands of cached pods repeat).
    """

    def __init__(
        self,
        api_client: Any,
        *,
        timeout: Timeout = (10.0, 60.0),
        before: Callable[[], object] | None = None,
        observe: Callable[[str, int], None] | None = None,
        loads: Callable[[bytes], Any] = json.loads,
    ) -> None:
        self.api_client = api_client
        self.timeout = timeout
        self.before = before
        self.observe = observe
        self.loads = loads

    @property
    def server(self) -> str:
        """The API server's URL."""
        return str(getattr(getattr(self.api_client, "configuration", None), "host", ""))

    def close(self) -> None:
        """Release the connection pool."""
        close = getattr(self.api_client, "close", None)
        if close is not None:
            close()

    def send(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: Timeout | None = None,
        stream: bool = False,
        what: str = "",
    ) -> Response:
        """Send one request; the `Response` is unread. Raises `ApiError` for an error answer
        and for no answer (status 0). Without a `timeout` the transport's applies; with
        `stream=True` only its connect timeout (a stream may be silent for long)."""
        if self.before is not None:
            self.before()
        what = what or f"{method} {path}"
        headers = {"Accept": JSON}
        if body is not None:
            headers["Content-Type"] = content_type
        if timeout is None:
            timeout = (_connect_timeout(self.timeout), None) if stream else self.timeout
        status = 0
        try:
            raw = send(
                self.api_client,
                method,
                path,
                query=query_pairs(query),
                headers=headers,
                body=body,
                timeout=timeout,
            )
            status = int(getattr(raw, "status", 200) or 200)
        except ApiException as err:
            status = int(err.status or 0)
            raise error_of(err, what) from None
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise no_answer(err, what) from None
        finally:
            if self.observe is not None:
                self.observe(method, status)
        return Response(raw, what, self.loads)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Any = None,
        content_type: str = JSON,
        timeout: Timeout | None = None,
        what: str = "",
    ) -> dict[str, Any]:
        """Send one request and return its JSON answer (an empty dict for none)."""
        return self.send(
            method,
            path,
            query=query,
            body=body,
            content_type=content_type,
            timeout=timeout,
            what=what,
        ).json()


class Response:
    """An answer of the API server, read whole (`json()`) or as it streams (`lines()`,
    `objects()`). `close()` works from any thread, also while another thread is blocked reading;
    the reader then simply stops. Reading failures raise `ApiError` (status 0)."""

    def __init__(
        self, raw: Any, what: str = "", loads: Callable[[bytes], Any] = json.loads
    ) -> None:
        self.raw = raw
        self.what = what
        self._loads = loads
        self._closed = threading.Event()
        self._reading = False
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def json(self) -> dict[str, Any]:
        """The whole body as JSON (a dict; anything else gives {}). Releases the connection."""
        try:
            data = self.raw.data
        except (urllib3.exceptions.HTTPError, OSError) as err:
            self._discard()
            raise no_answer(err, self.what) from None
        with contextlib.suppress(Exception):
            self.raw.release_conn()
        try:
            parsed = self._loads(data) if data else {}
        except ValueError as err:
            raise ApiError(0, "InvalidResponse", str(err), what=self.what) from None
        return parsed if isinstance(parsed, dict) else {}

    def lines(self) -> Iterator[bytes]:
        """The lines of the body as they arrive, without their newlines. Ends quietly when
        `close()` was called; the connection is released (or dropped) at the end."""
        buffer = b""
        with self._lock:
            if self.closed:
                self._discard()
                return
            self._reading = True
        finished = False
        try:
            for chunk in self.raw.stream(amt=None, decode_content=True):
                buffer += chunk
                *complete, buffer = buffer.split(b"\n")
                yield from complete
            if buffer:
                yield buffer
            finished = True
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as err:
            if self._closed.is_set():
                return
            raise no_answer(err, self.what, broke_off=True) from None
        except Exception:
            if self._closed.is_set():
                return  # close() pulled the connection away: whatever that raised means nothing
            raise
        finally:
            with self._lock:
                self._reading = False
            if finished and not self.closed:
                with contextlib.suppress(Exception):
                    self.raw.release_conn()
            else:
                self._discard()

    def objects(self) -> Iterator[dict[str, Any]]:
        """The body as JSON lines (a watch): one dict per non-empty line."""
        for line in self.lines():
            if not line.strip():
                continue
            try:
                data = self._loads(line)
            except ValueError as err:
                raise ApiError(0, "InvalidResponse", str(err), what=self.what) from None
            yield data if isinstance(data, dict) else {}

    def close(self) -> None:
        """Stop reading, from any thread; a reader blocked on the response wakes and ends."""
        with self._lock:
            if self._closed.is_set():
                return
            self._closed.set()
            reading = self._reading
        with contextlib.suppress(Exception):
            self.raw.shutdown()  # urllib3 >= 2.3: shuts the socket down for reading
        if not reading:
            self._discard()

    def _discard(self) -> None:
        """Drop the connection: a half-read response must not go back to the pool."""
        for name in ("close", "release_conn"):
            method = getattr(self.raw, name, None)
            if method is not None:
                with contextlib.suppress(Exception):
                    method()


def _connect_timeout(timeout: Timeout) -> float:
    if isinstance(timeout, tuple):
        return timeout[0]
    return 10.0 if timeout is None else timeout


# -- errors ------------------------------------------------------------------------------------


def query_pairs(query: Query | None) -> list[tuple[str, str]]:
    """Query parameters as the client sends them: None left out, booleans as `true`/`false`."""
    items = query.items() if isinstance(query, Mapping) else (query or ())
    return [(str(k), _query_value(v)) for k, v in items if v is not None]


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def error_of(err: ApiException, what: str = "") -> ApiError:
    """The `ApiError` of an error answer, with the reason, message and details of its `Status`."""
    status = int(err.status or 0)
    reason = str(err.reason or "")
    message = ""
    details: Mapping[str, Any] | None = None
    body = err.body
    if isinstance(body, bytes | bytearray):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str) and body.strip():
        try:
            data = json.loads(body)
        except ValueError:
            message = body.strip()[:500]
        else:
            if isinstance(data, dict):
                reason = str(data.get("reason") or reason)
                message = str(data.get("message") or "").strip()
                if isinstance(data.get("details"), Mapping):
                    details = data["details"]
    return ApiError(status, reason, message, what=what, details=details)


def no_answer(err: BaseException, what: str = "", *, broke_off: bool = False) -> ApiError:
    """The `ApiError` (status 0) of a request that got no answer, or a stream that broke off."""
    cause = getattr(err, "reason", None) or err
    reason = "BrokenStream" if broke_off else type(cause).__name__
    return ApiError(0, reason, str(cause), what=what)
