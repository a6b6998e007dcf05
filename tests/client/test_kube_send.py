"""Raw requests through the installed official Kubernetes client, whatever its release.

kubernetes 37 changed `ApiClient.call_api` (and is what `pip install ".[client]"`
resolves today); every cluster verb and the operator go through `t9k_sdk._kube.transport`. These
tests use the real `ApiClient` of the installed release against a small local HTTP server that
answers like the API server, so they need no cluster: `make deps-newest` and `make deps-lowest`
run them on the newest and the oldest supported client.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from kubernetes import client as k8s

from t9k_operator.cluster import Cluster
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk._kube.resources import LEASES
from t9k_sdk.client._api import Api
from t9k_sdk.client.errors import ApiRequestError

TOKEN = "s3cret-token"


class Seen:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []


def _handler(seen: Seen) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, status: int, body: bytes, *, chunks: list[bytes] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            if chunks is None:
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in chunks:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")

        def _handle(self) -> None:
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            seen.requests.append(
                {
                    "method": self.command,
                    "path": url.path,
                    "query": dict(parse_qsl(url.query)),
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": json.loads(body) if body else None,
                }
            )
            if url.path.endswith("/missing"):
                status = {
                    "kind": "Status",
                    "status": "Failure",
                    "reason": "NotFound",
                    "message": 'genericjobs "missing" not found',
                    "code": 404,
                }
                self._answer(404, json.dumps(status).encode())
            elif url.path.endswith("/conflict"):
                status = {"kind": "Status", "reason": "Conflict", "message": "stale", "code": 409}
                self._answer(409, json.dumps(status).encode())
            elif dict(parse_qsl(url.query)).get("watch") == "true":
                self._answer(200, b"", chunks=[b'{"type":"ADDED"}\n{"type":', b'"DELETED"}\n'])
            else:
                self._answer(200, json.dumps({"kind": "Thing", "got": self.command}).encode())

        do_GET = do_PATCH = do_POST = do_PUT = do_DELETE = _handle

    return Handler


@pytest.fixture
def server() -> Iterator[tuple[k8s.ApiClient, Seen]]:
    seen = Seen()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(seen))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    configuration = k8s.Configuration()
    configuration.host = f"http://127.0.0.1:{httpd.server_address[1]}"
    configuration.api_key = {"authorization": TOKEN}
    configuration.api_key_prefix = {"authorization": "Bearer"}
    api_client = k8s.ApiClient(configuration)
    try:
        yield api_client, seen
    finally:
        api_client.close()
        httpd.shutdown()
        httpd.server_close()


def test_a_get_sends_the_query_and_the_token_and_returns_the_json(
    server: tuple[k8s.ApiClient, Seen],
) -> None:
    api_client, seen = server
    answer = Api(api_client).json(
        "GET", "/api/v1/namespaces/ns/pods", query={"labelSelector": "a=b,c in (x)", "limit": 5}
    )
    assert answer == {"kind": "Thing", "got": "GET"}
    [request] = seen.requests
    assert request["path"] == "/api/v1/namespaces/ns/pods"
    assert request["query"] == {"labelSelector": "a=b,c in (x)", "limit": "5"}
    assert request["headers"]["authorization"] == f"Bearer {TOKEN}"


def test_a_patch_sends_the_body_with_its_content_type(server: tuple[k8s.ApiClient, Seen]) -> None:
    api_client, seen = server
    body = {"spec": {"runMode": {"pause": {"enabled": True}}}}
    Api(api_client).json(
        "PATCH",
        "/apis/g/v1/namespaces/ns/genericjobs/a",
        body=body,
        content_type="application/merge-patch+json",
    )
    [request] = seen.requests
    assert request["method"] == "PATCH"
    assert request["headers"]["content-type"] == "application/merge-patch+json"
    assert request["body"] == body


def test_an_error_answer_becomes_a_client_error_with_the_servers_message(
    server: tuple[k8s.ApiClient, Seen],
) -> None:
    api_client, _ = server
    with pytest.raises(ApiRequestError, match='genericjobs "missing" not found') as err:
        Api(api_client).json("GET", "/apis/g/v1/namespaces/ns/genericjobs/missing")
    assert err.value.status == 404
    assert err.value.reason == "NotFound"


def test_a_stream_is_read_line_by_line_as_it_arrives(server: tuple[k8s.ApiClient, Seen]) -> None:
    api_client, _ = server
    response = Api(api_client).call("GET", "/api/v1/pods", query={"watch": True}, stream=True)
    try:
        assert list(response.lines()) == [b'{"type":"ADDED"}', b'{"type":"DELETED"}']
    finally:
        response.close()


def test_the_operator_reads_objects_and_names_an_error_status(
    server: tuple[k8s.ApiClient, Seen],
) -> None:
    api_client, seen = server
    cluster = Cluster(api_client)
    assert cluster.get(LEASES, "ns", "lease") == {"kind": "Thing", "got": "GET"}
    assert cluster.get(LEASES, "ns", "missing") is None
    with pytest.raises(ApiError) as err:
        cluster.get(LEASES, "ns", "conflict")
    assert err.value.status == 409
    assert err.value.reason == "Conflict"
    assert seen.requests[0]["headers"]["authorization"] == f"Bearer {TOKEN}"
