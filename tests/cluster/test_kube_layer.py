"""The shared API layer (`t9k_sdk._kube`) against the real API server: what only a real server
shows (its pagination tokens, its Status objects, a watch that stays open) for the code both the
client and the operator stand on. The loop's answer to 410 Gone is tested with scripted streams
in tests/kube and tests/operator/test_informer.py, and against this server by
tests/cluster/test_client_api.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from t9k_sdk._kube import config, listwatch
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk._kube.resources import CONFIG_MAPS, PODS
from t9k_sdk._kube.transport import Transport


@pytest.fixture
def transport(kubeconfig: Path) -> Iterator[Transport]:
    connection = config.connect(kubeconfig, user_agent="t9k-sdk-tests")
    transport = Transport(connection.api_client)
    yield transport
    transport.close()


def _config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}


def test_a_list_in_small_pages_gets_every_object_once(transport: Transport, namespace: str) -> None:
    names = [f"cm-{i}" for i in range(7)]
    for name in names:
        transport.request("POST", CONFIG_MAPS.path(namespace), body=_config_map(name))
    pages: list[dict[str, Any]] = []

    def counting(method: str, path: str, **options: Any) -> Any:
        pages.append(dict(options.get("query") or {}))
        return transport.send(method, path, **options)

    result = listwatch.list_all(
        counting, CONFIG_MAPS.path(namespace), resource=CONFIG_MAPS, page_size=3
    )
    found = [i["metadata"]["name"] for i in result.items if i["metadata"]["name"] in names]
    assert found == names
    assert all(i["kind"] == "ConfigMap" and i["apiVersion"] == "v1" for i in result.items)
    assert len(pages) >= 3
    assert pages[0].get("continue") is None
    assert all(p.get("continue") for p in pages[1:])
    assert int(result.resource_version) > 0


def test_the_servers_status_becomes_the_error(transport: Transport, namespace: str) -> None:
    with pytest.raises(ApiError) as missing:
        transport.request("GET", PODS.path(namespace, "nope"), what=f"get pods {namespace}/nope")
    assert missing.value.not_found
    assert missing.value.details.get("name") == "nope"
    assert str(missing.value).startswith(f"get pods {namespace}/nope: 404 NotFound")
    invalid = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {}}
    with pytest.raises(ApiError) as refused:
        transport.request("POST", PODS.path(namespace), body=invalid)
    assert (refused.value.status, refused.value.reason) == (422, "Invalid")
    assert any(c.startswith("spec.containers") for c in refused.value.causes)
    assert refused.value.permanent
    body = _config_map("twice")
    transport.request("POST", CONFIG_MAPS.path(namespace), body=body)
    with pytest.raises(ApiError) as again:
        transport.request("POST", CONFIG_MAPS.path(namespace), body=body)
    assert again.value.already_exists


def test_a_watch_closed_from_another_thread_wakes_its_blocked_reader(
    transport: Transport, namespace: str
) -> None:
    path = CONFIG_MAPS.path(namespace)
    version = listwatch.list_all(transport.send, path).resource_version
    stream = listwatch.watch(transport.send, path, version, timeout_seconds=300)
    seen: list[listwatch.WatchEvent] = []
    done = threading.Event()

    def read() -> None:
        seen.extend(stream)
        done.set()

    threading.Thread(target=read, daemon=True).start()
    transport.request("POST", path, body=_config_map("one"))

    # kube-controller-manager publishes `kube-root-ca.crt` into every new namespace, sometimes
    # only after the list above: its event is not the test's.
    def ours() -> list[tuple[str, str]]:
        names = [(e.type, e.object["metadata"]["name"]) for e in list(seen)]
        return [n for n in names if n[1] != "kube-root-ca.crt"]

    deadline = time.monotonic() + 10
    while not ours() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ours() == [("ADDED", "one")]
    started = time.monotonic()
    stream.close()
    assert done.wait(5), "the reader stayed blocked after close()"
    assert time.monotonic() - started < 5
    # The connection pool is still good for the next request.
    listed = transport.request("GET", path)["items"]
    assert "one" in {i["metadata"]["name"] for i in listed}
