"""The log feed of `Client.logs()`: a job's pods and their container logs, from the API server.

`t9k_sdk.client.logs.follow_logs` follows the logs of many replicas but does no I/O of its own:
it is handed a feed of pod snapshots and a log source. This module is the I/O behind both for a
real cluster:

* `JobPodFeed`: the job's pods each time they change (a watch of the pods and one of the job),
  the last snapshot `final` once the job has finished;
* `ApiLogSource`: opens one container's log, `GET /api/v1/namespaces/NS/pods/POD/log`, and turns
  the API server's refusals into `LogUnavailableError` (retry when the container has not
  started yet);
* `HttpLogStream`: the lines of one such streamed response.

It is a module of its own, not part of `logs.py`, because the two sides import differently:
`logs.py` is pure (tests drive it with snapshots and a source they control, since the local test
cluster has no kubelet that could produce a log line) and imports without the Kubernetes client,
as the package's eager names must; this module talks to the API server through `_api` and
`_watch`, which need the transport, so only `client.py`, itself imported on first use, imports
it. It is private: `Client.logs()` is the way to use it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from t9k_sdk import _conventions as conventions
from t9k_sdk import _objects as o
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk._kube.resources import PODS
from t9k_sdk._kube.transport import Response
from t9k_sdk.client._api import Api, client_error
from t9k_sdk.client._watch import Watcher, WatchEvent
from t9k_sdk.client.job_state import TERMINAL_PHASES
from t9k_sdk.client.kinds import JobKind
from t9k_sdk.client.logs import LogStream, LogUnavailableError, PodSnapshot

__all__ = ["ApiLogSource", "HttpLogStream", "JobPodFeed", "replica_order"]


def replica_order(pod: Mapping[str, Any]) -> tuple[str, int, str]:
    """Sort key of a job's pods: replica type, then index (numerically), then name."""
    meta = o.meta(pod)
    index = meta.labels.get(conventions.REPLICA_INDEX, "")
    return (
        str(meta.labels.get(conventions.REPLICA_TYPE, "")),
        int(index) if str(index).isdigit() else -1,
        meta.name,
    )


class HttpLogStream:
    """One container's log, streamed by the API server from the node's kubelet."""

    def __init__(self, response: Response, server: str) -> None:
        self._response = response
        self._server = server
        self._closed = threading.Event()

    def __iter__(self) -> Iterator[str]:
        try:
            for line in self._response.lines():
                yield line.decode("utf-8", "replace").rstrip("\r")
        except ApiError as exc:  # the stream broke off (a closed one ends quietly)
            if not self._closed.is_set():
                raise client_error(exc, self._server) from None
        except Exception:
            if not self._closed.is_set():
                raise
        finally:
            self.close()

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self._response.close()


_NOT_STARTED = ("waiting to start", "ContainerCreating", "PodInitializing", "is not available")


class ApiLogSource:
    """Container logs through `GET /api/v1/namespaces/NS/pods/POD/log`."""

    def __init__(self, api: Api, namespace: str) -> None:
        self.api = api
        self.namespace = namespace

    def open(
        self, pod: str, container: str, *, follow: bool, tail: int | None, timestamps: bool
    ) -> LogStream:
        url = PODS.path(self.namespace, pod, "log")
        query = {
            "container": container,
            "follow": follow,
            "tailLines": tail,
            "timestamps": timestamps or None,
        }
        try:
            response = self.api.call("GET", url, query=query, stream=True)
        except ApiError as exc:
            if exc.unreachable:
                raise client_error(exc, self.api.server) from None
            message = exc.message or exc.reason or str(exc.status)
            if exc.status == 404:
                raise LogUnavailableError("the pod no longer exists") from None
            if exc.status == 400 and any(s in message for s in _NOT_STARTED):
                raise LogUnavailableError(message, retry=True) from None
            if "dial tcp" in message or "connection refused" in message:
                message = (
                    "the API server could not reach the kubelet of the pod's node" f" ({message})"
                )
            raise LogUnavailableError(message) from None
        return HttpLogStream(response, self.api.server)


class JobPodFeed:
    """Snapshots of a job's pods as they change; the last is `final` once the job finished.

    `list_pods` reads the job's pods once more when it has finished, so that pods that ended
    just before the job are not missed.
    """

    def __init__(
        self,
        api: Api,
        kind: JobKind,
        name: str,
        namespace: str,
        list_pods: Callable[[], list[dict[str, Any]]],
    ) -> None:
        self.kind = kind
        self.name = name
        self.namespace = namespace
        self._list_pods = list_pods
        self._sink: queue.Queue[WatchEvent] = queue.Queue()
        self._closed = threading.Event()
        self._pods = Watcher(
            api,
            PODS.path(namespace),
            self._sink,
            source="pods",
            label_selector=conventions.child_selector(kind.kind, name),
        )
        self._job = Watcher(
            api,
            kind.resource.path(namespace),
            self._sink,
            source="job",
            field_selector=f"metadata.name={name}",
        )

    def close(self) -> None:
        self._closed.set()
        self._pods.close()
        self._job.close()
        self._sink.put(WatchEvent("CLOSED"))

    def __iter__(self) -> Iterator[PodSnapshot]:
        self._pods.start()
        self._job.start()
        pods: dict[str, dict[str, Any]] = {}
        pods_synced = False
        finished = False
        try:
            while not self._closed.is_set():
                event = self._sink.get()
                if event.type == "CLOSED":
                    return
                if event.type == "ERROR" and event.error is not None:
                    raise event.error
                if event.source == "pods":
                    if event.type == "SYNC":
                        pods = {o.meta(p).name: p for p in event.objects}
                        pods_synced = True
                    elif event.type == "DELETED":
                        name = o.meta(event.obj).name
                        if name in pods and o.meta(pods[name]).uid == o.meta(event.obj).uid:
                            pods.pop(name)
                    else:
                        pods[o.meta(event.obj).name] = event.obj
                else:
                    objects = event.objects if event.type == "SYNC" else [event.obj]
                    if event.type == "DELETED" or not objects:
                        finished = True
                    else:
                        finished = o.phase(objects[0]) in TERMINAL_PHASES
                if not pods_synced:
                    continue
                if finished:
                    # One more look, so pods that ended just before the job are not missed.
                    yield PodSnapshot(self._list_pods(), final=True)
                    return
                yield PodSnapshot(sorted(pods.values(), key=replica_order))
        finally:
            self._pods.close()
            self._job.close()
