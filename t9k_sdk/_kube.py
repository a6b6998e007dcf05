"""One raw request through the official Kubernetes client, on every supported client version.

`t9k_sdk.client` and the operator send paths, queries and JSON bodies through a
`kubernetes.client.ApiClient` (it owns authentication, TLS and the connection pool). The client
changed how that is done in release 37: `ApiClient.call_api(path, method, query_params=...,
auth_settings=..., _preload_content=False)` became `param_serialize(...)` (URL, query, auth)
followed by `call_api(method, url, header_params, body, _request_timeout)`, which returns a
`RESTResponse` and no longer raises for an error status. `send` speaks both and always returns
the unread urllib3 response, raising `ApiException` for a non-2xx answer as older clients did.

Both paths are tested: `make deps-lowest` (kubernetes at its declared lower bound) and
`make deps-newest` (the newest release pip finds) run the unit tests and a cluster smoke test.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import urllib3
from kubernetes.client.exceptions import ApiException

__all__ = ["send"]

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
    if not 200 <= raw.status <= 299:
        try:
            text = raw.data.decode("utf-8", errors="replace")
        finally:
            raw.release_conn()
        error = ApiException(status=raw.status, reason=raw.reason)
        error.body = text
        error.headers = raw.headers
        raise error
    return raw


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
