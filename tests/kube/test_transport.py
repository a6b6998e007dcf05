"""The shared API layer (`t9k_sdk._kube`): transport, errors, kubeconfig, list and watch.

The transport runs the installed `kubernetes.client.ApiClient` against a small local HTTP server
that answers like the API server (no cluster needed); tests/cluster/test_kube_layer.py does the
same against the real one.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from kubernetes import client as k8s

from t9k_sdk._kube import config, listwatch
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk._kube.resources import JOB_RESOURCES, LEASES, PODS, job_resource, resource_for
from t9k_sdk._kube.transport import Transport
from t9k_sdk.models import JOB_KINDS

INVALID = {
    "kind": "Status",
    "status": "Failure",
    "reason": "Invalid",
    "message": 'Pod "x" is invalid',
    "code": 422,
    "details": {
        "name": "x",
        "kind": "pods",
        "causes": [{"field": "spec.containers", "message": "Required value"}],
    },
}


class Server:
    """Answers pages of pods (2 per page), an Invalid status, a 410, and a watch that stays
    open (blocked) until the test ends."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, status: int, data: Any) -> None:
                body = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                self._json(
                    201,
                    {
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": json.loads(body),
                    },
                )

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                query = dict(parse_qsl(url.query))
                outer.requests.append((self.command, url.path, query))
                if url.path.endswith("/invalid"):
                    self._json(422, INVALID)
                elif url.path.endswith("/gone"):
                    self._json(410, {"kind": "Status", "reason": "Expired", "code": 410})
                elif query.get("watch") == "true":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    line = b'{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n'
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                    self.wfile.flush()
                    outer.release.wait(30)  # the watch stays open: the reader blocks
                else:
                    start = int(query.get("continue") or 0)
                    names = ["p0", "p1", "p2", "p3", "p4"][start : start + 2]
                    more = start + 2 < 5
                    self._json(
                        200,
                        {
                            "items": [{"metadata": {"name": n}} for n in names],
                            "metadata": {
                                "resourceVersion": "77",
                                "continue": str(start + 2) if more else "",
                            },
                        },
                    )

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"


@pytest.fixture
def server() -> Iterator[Server]:
    server = Server()
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.httpd.shutdown()
        server.httpd.server_close()


@pytest.fixture
def transport(server: Server) -> Iterator[Transport]:
    configuration = k8s.Configuration()
    configuration.host = server.url
    transport = Transport(k8s.ApiClient(configuration))
    yield transport
    transport.close()


def test_a_list_follows_continue_tokens_and_fills_in_api_version_and_kind(
    transport: Transport, server: Server
) -> None:
    result = listwatch.list_all(transport.send, PODS.path("ns"), resource=PODS, page_size=2)
    assert [i["metadata"]["name"] for i in result.items] == ["p0", "p1", "p2", "p3", "p4"]
    assert {(i["apiVersion"], i["kind"]) for i in result.items} == {("v1", "Pod")}
    assert result.resource_version == "77"
    assert [q.get("continue") for _, _, q in server.requests] == [None, "2", "4"]
    assert {q["limit"] for _, _, q in server.requests} == {"2"}


def test_an_error_answer_carries_the_status_reason_message_causes_and_what(
    transport: Transport,
) -> None:
    with pytest.raises(ApiError) as info:
        transport.request("GET", PODS.path("ns", "invalid"), what="get pods ns/invalid")
    err = info.value
    assert (err.status, err.reason, err.message) == (422, "Invalid", 'Pod "x" is invalid')
    assert err.causes == ["spec.containers: Required value"]
    assert err.permanent
    assert str(err).startswith("get pods ns/invalid: 422 Invalid")


def test_a_write_carries_the_token_user_agent_query_and_json_body(server: Server) -> None:
    """Writes go straight through the client's urllib3 pool (not its Python serializer): they
    must still carry what the client would send."""
    configuration = k8s.Configuration()
    configuration.host = server.url
    configuration.api_key = {"authorization": "secret-token"}
    configuration.api_key_prefix = {"authorization": "Bearer"}
    api = k8s.ApiClient(configuration)
    api.user_agent = "t9k-test/1"
    transport = Transport(api)
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    body = {"metadata": {"name": "p", "labels": {"a": "b c"}}, "at": when}
    echo = transport.request(
        "POST", "/api/v1/namespaces/ns/pods", query={"dryRun": "All", "x": None}, body=body
    )
    transport.close()
    assert echo["path"] == "/api/v1/namespaces/ns/pods?dryRun=All"
    assert echo["headers"]["authorization"] == "Bearer secret-token"
    assert echo["headers"]["user-agent"] == "t9k-test/1"
    assert echo["headers"]["content-type"] == "application/json"
    assert echo["body"] == {**body, "at": "2026-01-02T03:04:05+00:00"}


def test_a_410_answer_is_gone(transport: Transport) -> None:
    with pytest.raises(ApiError) as info:
        listwatch.watch(transport.send, PODS.path("ns", "gone"), "1")
    assert info.value.gone


def test_no_answer_is_an_unreachable_error_with_status_0() -> None:
    configuration = k8s.Configuration()
    configuration.host = "http://127.0.0.1:1"
    configuration.retries = False
    transport = Transport(k8s.ApiClient(configuration), timeout=(2.0, 2.0))
    with pytest.raises(ApiError) as info:
        transport.request("GET", "/api/v1/pods", what="list pods")
    assert info.value.unreachable
    assert info.value.what == "list pods"
    transport.close()


def test_the_hooks_see_every_request(transport: Transport) -> None:
    before: list[str] = []
    observed: list[tuple[str, int]] = []
    transport.before = lambda: before.append("token")
    transport.observe = lambda verb, code: observed.append((verb, code))
    transport.request("GET", PODS.path("ns"))
    with pytest.raises(ApiError):
        transport.request("GET", PODS.path("ns", "invalid"))
    assert before == ["token", "token"]
    assert observed == [("GET", 200), ("GET", 422)]


def test_a_stream_closed_from_another_thread_wakes_its_blocked_reader(
    transport: Transport,
) -> None:
    stream = listwatch.watch(transport.send, PODS.path("ns"), "5")
    seen: list[listwatch.WatchEvent] = []
    done = threading.Event()

    def read() -> None:
        seen.extend(stream)  # blocks after the first event: the server keeps the watch open
        done.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 5
    while not seen and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [e.type for e in seen] == ["ADDED"]
    stream.close()
    assert done.wait(5), "the reader stayed blocked after close()"


class ScriptedStream:
    def __init__(self, events: list[listwatch.WatchEvent | ApiError]) -> None:
        self.events = events
        self.closed = False

    def __iter__(self) -> Iterator[listwatch.WatchEvent]:
        for event in self.events:
            if isinstance(event, ApiError):
                raise event
            yield event

    def close(self) -> None:
        self.closed = True


class Recorder:
    """A policy that records and gives up after `give_up_after` failures."""

    def __init__(self, give_up_after: int = 1) -> None:
        self.log: list[tuple[str, Any]] = []
        self.give_up_after = give_up_after

    def on_sync(self, items: list[dict[str, Any]]) -> None:
        self.log.append(("SYNC", [i["metadata"]["name"] for i in items]))

    def on_event(self, type: str, obj: dict[str, Any]) -> None:
        self.log.append((type, obj["metadata"]["name"]))

    def on_failure(self, error: Exception, failures: int, listing: bool) -> float | None:
        self.log.append(("FAILED", getattr(error, "status", None)))
        return 0.0 if failures < self.give_up_after else None


def _pod(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": rv}}


def test_the_loop_lists_again_after_410_as_an_http_status_and_as_an_error_event() -> None:
    lists = [
        listwatch.ListResult([_pod("a", "1")], "10"),
        listwatch.ListResult([_pod("b", "2")], "20"),
        listwatch.ListResult([], "30"),
    ]
    gone_event = listwatch.WatchEvent("ERROR", {"kind": "Status", "code": 410})
    watches: list[Any] = [
        ScriptedStream([gone_event]),
        ApiError(410, "Gone"),
        ScriptedStream([ApiError(403, "Forbidden")]),
    ]
    versions: list[str] = []

    def watch(version: str) -> ScriptedStream:
        versions.append(version)
        step = watches.pop(0)
        if isinstance(step, ApiError):
            raise step
        return step  # type: ignore[no-any-return]

    policy = Recorder()
    loop = listwatch.ListWatch(lambda: lists.pop(0), watch, policy)
    loop.run()
    assert policy.log == [("SYNC", ["a"]), ("SYNC", ["b"]), ("SYNC", []), ("FAILED", 403)]
    assert versions == ["10", "20", "30"]
    assert (loop.lists, loop.watches) == (3, 2)


def test_the_loop_resumes_a_broken_watch_from_the_last_version_without_listing() -> None:
    streams = [
        ScriptedStream(
            [
                listwatch.WatchEvent("ADDED", _pod("a", "11")),
                listwatch.WatchEvent("BOOKMARK", _pod("", "15")),
                ApiError(0, "BrokenStream"),
            ]
        ),
        ScriptedStream([ApiError(500, "InternalError")]),
    ]
    versions: list[str] = []

    def watch(version: str) -> ScriptedStream:
        versions.append(version)
        return streams.pop(0)

    policy = Recorder(give_up_after=2)
    loop = listwatch.ListWatch(lambda: listwatch.ListResult([], "10"), watch, policy)
    loop.run()
    assert versions == ["10", "15"]
    assert policy.log == [("SYNC", []), ("ADDED", "a"), ("FAILED", 0), ("FAILED", 500)]
    assert loop.lists == 1


def test_the_loop_starts_from_a_given_version_without_listing() -> None:
    policy = Recorder()
    stop = threading.Event()

    def watch(version: str) -> ScriptedStream:
        stop.set()
        return ScriptedStream([listwatch.WatchEvent("ADDED", _pod("a", "6"))])

    def never() -> listwatch.ListResult:
        raise AssertionError("listed")

    loop = listwatch.ListWatch(never, watch, policy, version="5")
    loop.run(stop)
    assert loop.lists == 0


def test_resources_come_from_the_models_job_kinds() -> None:
    assert [r.kind for r in JOB_RESOURCES] == list(JOB_KINDS)
    gj = job_resource("GenericJob")
    assert gj.path("ns", "a/b") == (
        "/apis/batch.tensorstack.dev/v1beta1/namespaces/ns/genericjobs/a%2Fb"
    )
    assert resource_for("coordination.k8s.io/v1", "Lease") is LEASES
    with pytest.raises(ValueError, match="Deployment"):
        resource_for("apps/v1", "Deployment")


def test_no_kubeconfig_anywhere_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(config.ConfigError, match=r"pass --kubeconfig FILE.*set KUBECONFIG"):
        config.connect()


def test_a_missing_kubeconfig_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(config.ConfigError, match=re.escape(f"kubeconfig {missing}: no such file")):
        config.connect(missing)


def test_a_broken_kubeconfig_is_a_config_error(tmp_path: Path) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("clusters: [unclosed\n")
    with pytest.raises(config.ConfigError, match=re.escape(f"cannot load the kubeconfig {broken}")):
        config.connect(broken)


def test_a_kubeconfig_gives_its_context_namespace_user_agent_and_pool(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: a, context: {cluster: c, user: u, namespace: team-a}},"
        " {name: b, context: {cluster: c, user: u}}]\n"
        "current-context: a\n"
    )
    connection = config.connect(path, user_agent="me/1", pool_size=7)
    assert connection.namespace == "team-a"
    assert connection.api_client.user_agent == "me/1"
    assert connection.api_client.configuration.connection_pool_maxsize == 7
    assert connection.api_client.configuration.retries is False
    connection.api_client.close()
    other = config.connect(path, "b")
    assert other.namespace is None
    other.api_client.close()
