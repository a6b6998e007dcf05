"""Multi-replica log following with `[type-index]` prefixes (no I/O of its own).

`follow_logs(feed, source, ...)` turns a feed of pod snapshots (the pods of one job, each time
they change) and a log source (opens one container's log) into one stream of `LogLine`s:

* one reader per container incarnation, keyed by (pod uid, container, restart count): a pod
  that is deleted and created again under the same name (a replica restart) has a new uid, and
  its log is read from the start; so is a container the kubelet restarted in place;
* a pod is read once its container has started (running or terminated): pods that do not exist
  yet, or are still being scheduled, are simply picked up by a later snapshot;
* `tail` applies to the pods that exist when following begins; later incarnations are read in
  full, so nothing they print is lost;
* when the feed says the job has finished (`final`), readers of containers that are still
  running get `drain` seconds to deliver what they have, then are closed, and the iteration ends
  once every reader has.

`Client.logs()` feeds it from a watch of the job and its pods, and reads logs from the API
server (`t9k_sdk.client._log_feed`, the I/O this module leaves out). Tests feed it snapshots and a source they control: the local test cluster has no
kubelet (kwok only writes pod status), so no container there ever produced a log line.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from t9k_sdk import _conventions as conventions
from t9k_sdk import _objects as o

__all__ = [
    "LogLine",
    "LogSource",
    "LogStream",
    "LogUnavailableError",
    "PodFeed",
    "PodSnapshot",
    "follow_logs",
    "replica_name",
]


@dataclass(frozen=True)
class LogLine:
    """One line of a replica's log; `str(line)` is `[worker-0] text`."""

    replica: str
    """`worker-0`, `launcher`, ...: the replica type and index, from the pod's labels."""
    text: str
    """The line, without its newline."""
    pod: str = ""
    container: str = ""
    notice: bool = False
    """True for a message of t9k-sdk about the log (e.g. why it cannot be read), not a line
    the container printed."""

    def __str__(self) -> str:
        return f"[{self.replica}] {self.text}"


class LogUnavailableError(Exception):
    """A log cannot be opened. `retry`: worth trying again when the pod changes."""

    def __init__(self, message: str, *, retry: bool = False) -> None:
        super().__init__(message)
        self.retry = retry


class LogStream(Protocol):
    """The lines of one container's log; `close()` (from any thread) ends the iteration."""

    def __iter__(self) -> Iterator[str]: ...

    def close(self) -> None: ...


class LogSource(Protocol):
    """Opens container logs. Raises `LogUnavailableError` when a log cannot be read."""

    def open(
        self, pod: str, container: str, *, follow: bool, tail: int | None, timestamps: bool
    ) -> LogStream: ...


@dataclass(frozen=True)
class PodSnapshot:
    """All the pods of a job at one moment. `final`: the job has finished, no more will come."""

    pods: Sequence[Mapping[str, Any]]
    final: bool = False


class PodFeed(Protocol):
    """Snapshots, each time the pods change; `close()` (from any thread) ends the iteration."""

    def __iter__(self) -> Iterator[PodSnapshot]: ...

    def close(self) -> None: ...


def replica_name(pod: Mapping[str, Any]) -> str:
    """`worker-0` from the pod's replica-type and replica-index labels (the pod name otherwise)."""
    meta = o.meta(pod)
    labels = meta.labels
    rtype = labels.get(conventions.REPLICA_TYPE)
    if not rtype:
        return meta.name or "?"
    index = labels.get(conventions.REPLICA_INDEX)
    return f"{rtype}-{index}" if index not in (None, "") else str(rtype)


def _selected(pod: Mapping[str, Any], replica_type: str | None, index: int | None) -> bool:
    labels = o.meta(pod).labels
    if replica_type is not None and labels.get(conventions.REPLICA_TYPE) != replica_type:
        return False
    return index is None or labels.get(conventions.REPLICA_INDEX) == str(index)


def _container_of(pod: Mapping[str, Any], wanted: str | None) -> tuple[str | None, list[str]]:
    """(container to read or None, all container names)."""
    containers = o.container_names(pod)
    if wanted is not None:
        return (wanted if wanted in containers else None), containers
    default = o.meta(pod).annotations.get("kubectl.kubernetes.io/default-container")
    if default in containers:
        return default, containers
    return (containers[0] if containers else None), containers


def _started(pod: Mapping[str, Any], container: str) -> tuple[bool, int, bool]:
    """(has the container started, its restart count, is it still running)."""
    for status in o.container_statuses(pod):
        if status.name != container:
            continue
        state = status.state
        started = state.running or state.terminated is not None
        return started, status.restart_count, state.running
    return False, 0, False


_Key = tuple[str, str, int]


@dataclass
class _Reader:
    key: _Key
    replica: str
    pod: str
    container: str
    running: bool
    stream: LogStream | None = None
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def attach(self, stream: LogStream) -> bool:
        with self.lock:
            if self.closed:
                return False
            self.stream = stream
            return True

    def close(self) -> None:
        with self.lock:
            self.closed = True
            stream = self.stream
        if stream is not None:
            stream.close()


def follow_logs(
    feed: PodFeed | Iterable[PodSnapshot],
    source: LogSource,
    *,
    follow: bool,
    tail: int | None = None,
    replica_type: str | None = None,
    index: int | None = None,
    container: str | None = None,
    timestamps: bool = False,
    drain: float = 2.0,
) -> Iterator[LogLine]:
    """The log lines of the selected replicas, as they arrive (see the module docstring).

    Without `follow` every log is read to its current end, from the pods of the first snapshot
    (which should be `final`). Closing the iterator closes every reader and the feed.
    """
    follower = _Follower(
        feed,
        source,
        follow=follow,
        tail=tail,
        replica_type=replica_type,
        index=index,
        container=container,
        timestamps=timestamps,
        drain=drain,
    )
    yield from follower.run()


class _Follower:
    """One `follow_logs`: a thread reads the feed, one thread reads each container's log, and
    all of them send messages to one queue; `run` handles each kind of message in its own
    method (a line, a reader's end, a log that cannot be read, the feed's snapshot, error or
    end) and, once the job has finished, gives the running readers `drain` seconds."""

    def __init__(
        self,
        feed: PodFeed | Iterable[PodSnapshot],
        source: LogSource,
        *,
        follow: bool,
        tail: int | None,
        replica_type: str | None,
        index: int | None,
        container: str | None,
        timestamps: bool,
        drain: float,
    ) -> None:
        self.feed = feed
        self.source = source
        self.follow = follow
        self.tail = tail
        self.replica_type = replica_type
        self.index = index
        self.container = container
        self.timestamps = timestamps
        self.drain = drain
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.stop = threading.Event()
        self.readers: dict[_Key, _Reader] = {}
        self.done: set[_Key] = set()
        """Every incarnation a reader was started for (one that may be retried is removed)."""
        self.noticed: set[tuple[str, str]] = set()
        """(pod, message) of the notices given, each given once."""
        self.first = True
        self.feed_over = False
        self.drain_until: float | None = None

    def run(self) -> Iterator[LogLine]:
        producer = threading.Thread(target=self._produce, name="t9k-logs-feed", daemon=True)
        producer.start()
        try:
            while not (self.feed_over and not self.readers):
                message = self._next()
                if message is None:
                    self._drained()
                    continue
                kind, payload = message
                if kind == "line":
                    yield payload
                elif kind == "end":
                    self.readers.pop(payload, None)
                elif kind == "unavailable":
                    yield from self._unavailable(*payload)
                elif kind == "feed-error":
                    raise payload
                elif kind == "feed-end":
                    self.feed_over = True
                elif kind == "snapshot":
                    yield from self._snapshot(payload)
        finally:
            self._close()

    def _next(self) -> tuple[str, Any] | None:
        """The next message; None when the drain time is over first."""
        timeout = None
        if self.drain_until is not None and self.readers:
            timeout = max(0.0, self.drain_until - time.monotonic())
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            return None

    def _drained(self) -> None:
        """The job has finished and its running containers had `drain` seconds: stop them."""
        for reader in list(self.readers.values()):
            if reader.running:
                reader.close()
        self.drain_until = None

    def _unavailable(self, reader: _Reader, exc: LogUnavailableError) -> Iterator[LogLine]:
        """A log that cannot be read: say why (once); try again at the next snapshot when the
        container has not started yet."""
        self.readers.pop(reader.key, None)
        if exc.retry:
            self.done.discard(reader.key)
        notice = (reader.pod, str(exc))
        if notice not in self.noticed:
            self.noticed.add(notice)
            yield _notice(reader, f"t9k-sdk: cannot read the log of {reader.pod}: {exc}")

    def _snapshot(self, snapshot: PodSnapshot) -> Iterator[LogLine]:
        """The pods now: start a reader for each new incarnation; after the final snapshot
        (or the only one, without `follow`) no more pods will come."""
        for pod in snapshot.pods:
            started = _start(
                pod,
                self.replica_type,
                self.index,
                self.container,
                self.done,
                self.noticed,
                self.first,
            )
            if isinstance(started, LogLine):
                yield started
            elif started is not None:
                self._launch(*started)
        self.first = False
        if snapshot.final or not self.follow:
            self.feed_over = True
            if self.follow:
                self.drain_until = time.monotonic() + self.drain

    def _launch(self, reader: _Reader, tail_applies: bool) -> None:
        self.readers[reader.key] = reader
        self.done.add(reader.key)
        threading.Thread(
            target=self._read,
            args=(reader, self.tail if tail_applies else None),
            name=f"t9k-logs-{reader.pod}",
            daemon=True,
        ).start()

    def _produce(self) -> None:
        """The feed's thread: each snapshot, until the final one (or the first, without
        `follow`), then its end."""
        try:
            for snapshot in self.feed:
                self.events.put(("snapshot", snapshot))
                if snapshot.final or self.stop.is_set() or not self.follow:
                    break
        except Exception as exc:
            self.events.put(("feed-error", exc))
        finally:
            self.events.put(("feed-end", None))

    def _read(self, reader: _Reader, tail_lines: int | None) -> None:
        """A reader's thread: each line of one container's log, then its end."""
        try:
            try:
                stream = self.source.open(
                    reader.pod,
                    reader.container,
                    follow=self.follow,
                    tail=tail_lines,
                    timestamps=self.timestamps,
                )
            except LogUnavailableError as exc:
                self.events.put(("unavailable", (reader, exc)))
                return
            if not reader.attach(stream):
                stream.close()
                return
            try:
                for text in stream:
                    self.events.put(
                        ("line", LogLine(reader.replica, text, reader.pod, reader.container))
                    )
            finally:
                stream.close()
        except Exception as exc:
            if not reader.closed:
                message = f"t9k-sdk: the log of {reader.pod} ended with an error: {exc}"
                self.events.put(("line", _notice(reader, message)))
        finally:
            self.events.put(("end", reader.key))

    def _close(self) -> None:
        """The iteration ends (done, failed or closed): stop every reader and the feed."""
        self.stop.set()
        for reader in list(self.readers.values()):
            reader.close()
        close = getattr(self.feed, "close", None)
        if callable(close):
            close()


def _notice(reader: _Reader, message: str) -> LogLine:
    return LogLine(reader.replica, message, reader.pod, reader.container, notice=True)


def _start(
    pod: Mapping[str, Any],
    replica_type: str | None,
    index: int | None,
    wanted: str | None,
    done: set[_Key],
    noticed: set[tuple[str, str]],
    first: bool,
) -> tuple[_Reader, bool] | LogLine | None:
    """A reader to start for this pod (with whether `tail` applies), a notice, or nothing."""
    if not _selected(pod, replica_type, index):
        return None
    meta = o.meta(pod)
    name = meta.name
    uid = meta.uid or name
    replica = replica_name(pod)
    chosen, containers = _container_of(pod, wanted)
    if chosen is None:
        message = (
            f"t9k-sdk: pod {name} has no container {wanted!r} (its containers: {', '.join(containers)})"
            if wanted
            else f"t9k-sdk: pod {name} has no containers"
        )
        if (name, message) in noticed:
            return None
        noticed.add((name, message))
        return LogLine(replica, message, name, wanted or "", notice=True)
    started, restarts, running = _started(pod, chosen)
    if not started:
        return None
    key = (uid, chosen, restarts)
    if key in done:
        return None
    # The tail applies to what existed when following began, not to a later incarnation.
    earlier = any(k[0] == uid and k[1] == chosen for k in done)
    return _Reader(key, replica, name, chosen, running), first and not earlier
