"""The client's side of the shared transport (`t9k_sdk._kube.transport`): give up and explain.

Every request is a path, a query and a JSON body (jobs are parsed by `t9k_sdk.codecs`, in one
function: `job_from_server`; pods are read as dicts); every failure the transport raises (`ApiError`) becomes a `ClientError` whose
message a user can act on, in one function: `client_error`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from t9k_sdk import codecs
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk._kube.transport import JSON, Response, Transport
from t9k_sdk.client.errors import ApiRequestError, ClientError, ClusterUnreachableError
from t9k_sdk.errors import LegacyManifestWarning

__all__ = ["Api", "Response", "client_error", "job_from_server"]

CONNECT_TIMEOUT = 10.0


def client_error(err: ApiError, server: str) -> ClientError:
    """The `ClientError` for a failed request: `ClusterUnreachableError` for no answer,
    `ApiRequestError` with the server's message and causes for an error answer."""
    if err.unreachable:
        reason = err.message or err.reason
        return ClusterUnreachableError(
            f"cannot reach the Kubernetes API server at {server}: {reason}"
        )
    message = err.message or err.reason
    details = [c for c in err.causes if c.split(": ", 1)[-1] not in message]
    if details:
        message += "".join(f"\n  - {d}" for d in details)
    if err.status == 401:
        message = (
            f"the API server at {server} did not accept the credentials of the kubeconfig"
            f" (Unauthorized): {message}"
        )
    return ApiRequestError(message or f"HTTP {err.status}", status=err.status, reason=err.reason)


def job_from_server(data: Mapping[str, Any]) -> codecs.AnyJob:
    """Parse a job the server returned (legacy spellings are not the user's doing here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LegacyManifestWarning)
        return codecs.from_manifest(data)


class Api:
    """The shared `Transport`, with the client's timeouts and errors."""

    def __init__(self, api_client: Any) -> None:
        self.api_client = api_client
        self.transport = Transport(api_client, timeout=(CONNECT_TIMEOUT, 60.0))

    @property
    def server(self) -> str:
        return self.transport.server

    def call(self, method: str, url: str, **options: Any) -> Response:
        """`Transport.send` (query, body, content_type, timeout, stream): the one way the
        client sends a request; the response is unread. Raises `ApiError` (status 0: no
        answer)."""
        return self.transport.send(method, url, **options)

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
            return self.call(
                method,
                url,
                query=query,
                body=body,
                content_type=content_type,
                timeout=(CONNECT_TIMEOUT, timeout),
            ).json()
        except ApiError as err:
            raise client_error(err, self.server) from None
