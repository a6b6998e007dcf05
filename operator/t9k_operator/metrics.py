"""The operator's Prometheus metrics, served at `/metrics` on the health port.

Names mirror controller-runtime's (`controller_runtime_reconcile_total` ->
`t9k_operator_reconcile_total`, `workqueue_depth` -> `t9k_operator_workqueue_depth`,
`rest_client_requests_total` -> `t9k_operator_rest_client_requests_total`, ...) with the same
labels, so dashboards written for Go operators work after a rename. docs/operator/metrics.md
lists every metric.

Every `OperatorMetrics` owns its `CollectorRegistry` (tests run several operators in one
process). Counters and histograms are updated by the shell as things happen (the controller,
the work queue, the transport's `observe` hook); gauges that describe state (queue depth, jobs by
phase, leadership) are computed from the live objects when Prometheus scrapes, never kept by
hand. No label carries a job's name or namespace: the number of series does not grow with the
number of jobs.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from t9k_sdk import __version__, models
from t9k_sdk import _objects as o

__all__ = [
    "JOB_PHASES",
    "LAUNCH_BUCKETS",
    "PREFIX",
    "QUEUE_NAME",
    "OperatorMetrics",
    "StateCollector",
]

PREFIX = "t9k_operator"
QUEUE_NAME = "jobs"
"""The `name` label of the work-queue metrics (the operator has one queue: job keys)."""

JOB_PHASES = (*(str(p) for p in models.JobPhase), "")
"""The phases `t9k_operator_jobs` reports; "" is a job the operator has not given a status yet."""

RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
QUEUE_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0)
LAUNCH_BUCKETS = (
    1.0,
    2.0,
    5.0,
    10.0,
    20.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
    1200.0,
    1800.0,
    3600.0,
)
"""Job launch latency: seconds to an hour (image pulls and queueing take minutes)."""

RESULTS = ("success", "error", "requeue", "requeue_after")
"""The `result` label of `t9k_operator_reconcile_total`, as controller-runtime's."""


class StateCollector(Collector):
    """Gauges read from live state at scrape time: queue depth and ages, jobs by kind and phase,
    leadership. Each source is a callable, so this class knows nothing of the controller."""

    def __init__(
        self,
        *,
        jobs: Callable[[], Iterable[Mapping[str, Any]]] | None = None,
        queue_depth: Callable[[], int] | None = None,
        processing_ages: Callable[[], list[float]] | None = None,
        leader: Callable[[], bool] | None = None,
        lease_name: str = "",
    ) -> None:
        self.jobs = jobs
        self.queue_depth = queue_depth
        self.processing_ages = processing_ages
        self.leader = leader
        self.lease_name = lease_name

    def collect(self) -> Iterator[Metric]:
        if self.jobs is not None:
            family = GaugeMetricFamily(
                f"{PREFIX}_jobs",
                "Jobs in the operator's cache, by kind and status.phase"
                ' (phase "" = no status yet; any other unknown value counts as Unknown).',
                labels=["kind", "phase"],
            )
            counts = {(k, p): 0 for k in models.JOB_KINDS for p in JOB_PHASES}
            for job in self.jobs():
                kind = str(job.get("kind") or "")
                if kind not in models.JOB_KINDS:
                    continue
                phase = o.phase(job)
                if phase not in JOB_PHASES:
                    phase = str(models.JobPhase.UNKNOWN)
                counts[(kind, phase)] += 1
            for (kind, phase), count in counts.items():
                family.add_metric([kind, phase], count)
            yield family
        if self.queue_depth is not None:
            depth = GaugeMetricFamily(
                f"{PREFIX}_workqueue_depth",
                "Job keys waiting in the work queue, ready to be processed.",
                labels=["name"],
            )
            depth.add_metric([QUEUE_NAME], self.queue_depth())
            yield depth
        if self.processing_ages is not None:
            ages = self.processing_ages()
            unfinished = GaugeMetricFamily(
                f"{PREFIX}_workqueue_unfinished_work_seconds",
                "Seconds of work in progress not yet observed by work_duration"
                " (large values mean stuck passes).",
                labels=["name"],
            )
            unfinished.add_metric([QUEUE_NAME], sum(ages))
            yield unfinished
            longest = GaugeMetricFamily(
                f"{PREFIX}_workqueue_longest_running_processor_seconds",
                "Seconds the longest-running pass has been running.",
                labels=["name"],
            )
            longest.add_metric([QUEUE_NAME], max(ages, default=0.0))
            yield longest
        if self.leader is not None:
            leader = GaugeMetricFamily(
                f"{PREFIX}_leader_election_master_status",
                "1 while this replica holds the leader Lease (and so acts), 0 while it stands by.",
                labels=["name"],
            )
            leader.add_metric([self.lease_name], 1.0 if self.leader() else 0.0)
            yield leader


class OperatorMetrics:
    """The registry and instruments of one operator (see the module docstring)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        # in the order /metrics lists them
        self._add_reconcile_metrics()
        self._add_workqueue_metrics()
        self._add_request_metrics()
        self._add_job_launch_metrics()
        self._add_event_metrics()
        self._add_process_metrics()
        self._create_series()

    def _add_reconcile_metrics(self) -> None:
        """Reconcile passes: how many, by result; the failed ones; how long they take."""
        r = self.registry
        self.reconcile_total = Counter(
            f"{PREFIX}_reconcile_total",
            "Reconcile passes, by job kind (controller) and result"
            " (success, error, requeue, requeue_after).",
            ["controller", "result"],
            registry=r,
        )
        self.reconcile_errors = Counter(
            f"{PREFIX}_reconcile_errors_total",
            "Reconcile passes that failed with an error (retried with backoff).",
            ["controller"],
            registry=r,
        )
        self.reconcile_time = Histogram(
            f"{PREFIX}_reconcile_time_seconds",
            "Duration of one reconcile pass: read the caches, plan, make the API calls.",
            ["controller"],
            buckets=RECONCILE_BUCKETS,
            registry=r,
        )

    def _add_workqueue_metrics(self) -> None:
        """The work queue of job keys: adds, retries, time waiting and time worked."""
        r = self.registry
        self.queue_adds = Counter(
            f"{PREFIX}_workqueue_adds_total",
            "Job keys put in the work queue (repeated adds of a waiting key coalesce and count once).",
            ["name"],
            registry=r,
        )
        self.queue_retries = Counter(
            f"{PREFIX}_workqueue_retries_total",
            "Job keys put back after a failed or refused pass (with exponential backoff).",
            ["name"],
            registry=r,
        )
        self.queue_duration = Histogram(
            f"{PREFIX}_workqueue_queue_duration_seconds",
            "Seconds a job key waited in the queue before a worker took it.",
            ["name"],
            buckets=QUEUE_BUCKETS,
            registry=r,
        )
        self.work_duration = Histogram(
            f"{PREFIX}_workqueue_work_duration_seconds",
            "Seconds a worker spent on a job key (one pass, including waits for the rate limiter).",
            ["name"],
            buckets=QUEUE_BUCKETS,
            registry=r,
        )

    def _add_request_metrics(self) -> None:
        """Requests to the API server, by status code and method."""
        self.requests = Counter(
            f"{PREFIX}_rest_client_requests_total",
            "Requests to the API server, by HTTP method and status code (code 0: no answer).",
            ["code", "method"],
            registry=self.registry,
        )

    def _add_job_launch_metrics(self) -> None:
        """Seconds from a job's creation to all its replicas running."""
        self.launch = Histogram(
            f"{PREFIX}_job_launch_duration_seconds",
            "Seconds from a job's creation to all its replicas running (its first move to the"
            " Running phase), observed once per job by the operator that made that move.",
            ["kind"],
            buckets=LAUNCH_BUCKETS,
            registry=self.registry,
        )

    def _add_event_metrics(self) -> None:
        """Events the background recorder dropped."""
        self.events_dropped_total = Counter(
            f"{PREFIX}_events_dropped_total",
            "Events not recorded because the background recorder's queue was full"
            " (the API server took them slower than the jobs made them).",
            registry=self.registry,
        )

    def _add_process_metrics(self) -> None:
        """Build info, the scrape-time gauges (`StateCollector`) and the process's own
        (prometheus_client's process, platform and GC collectors)."""
        r = self.registry
        build = GaugeMetricFamily(
            f"{PREFIX}_build_info",
            "Always 1; the labels say which operator and Python run.",
            labels=["version", "python_version"],
        )
        build.add_metric([__version__, platform.python_version()], 1.0)
        self._build = build
        r.register(_Constant(build))
        self.state = StateCollector()
        r.register(self.state)
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        GCCollector(registry=r)

    def _create_series(self) -> None:
        """Every labelled series exists from the start (rate() needs two samples); the queue's
        children are kept, for the calls made on every job key."""
        for kind in models.JOB_KINDS:
            self.reconcile_errors.labels(kind)
            self.reconcile_time.labels(kind)
            self.launch.labels(kind)
            for result in RESULTS:
                self.reconcile_total.labels(kind, result)
        for family in (self.queue_adds, self.queue_retries):
            family.labels(QUEUE_NAME)
        self._queue_wait = self.queue_duration.labels(QUEUE_NAME)
        self._queue_work = self.work_duration.labels(QUEUE_NAME)
        self._queue_add = self.queue_adds.labels(QUEUE_NAME)
        self._queue_retry = self.queue_retries.labels(QUEUE_NAME)

    def read_state(
        self,
        *,
        jobs: Callable[[], Iterable[Mapping[str, Any]]],
        queue_depth: Callable[[], int],
        processing_ages: Callable[[], list[float]],
        leader: Callable[[], bool],
        lease_name: str,
    ) -> None:
        """Where the scrape-time gauges read from (the controller's caches and queue, the
        leader elector): called once, when those exist."""
        self.state.jobs = jobs
        self.state.queue_depth = queue_depth
        self.state.processing_ages = processing_ages
        self.state.leader = leader
        self.state.lease_name = lease_name

    # --- what the shell calls ------------------------------------------------------------------

    def observe_request(self, method: str, status: int) -> None:
        """The transport's `observe` hook: one request answered with `status` (0: no answer)."""
        self.requests.labels(str(status), method.upper()).inc()

    def events_dropped(self, count: int) -> None:
        self.events_dropped_total.inc(count)

    def reconciled(self, kind: str, result: str, seconds: float) -> None:
        self.reconcile_total.labels(kind, result).inc()
        self.reconcile_time.labels(kind).observe(seconds)
        if result == "error":
            self.reconcile_errors.labels(kind).inc()

    def launched(self, kind: str, seconds: float) -> None:
        self.launch.labels(kind).observe(seconds)

    # the work queue's `QueueMetrics`
    def added(self) -> None:
        self._queue_add.inc()

    def retried(self) -> None:
        self._queue_retry.inc()

    def waited(self, seconds: float) -> None:
        self._queue_wait.observe(seconds)

    def worked(self, seconds: float) -> None:
        self._queue_work.observe(seconds)

    # --- serving -------------------------------------------------------------------------------

    def exposition(self, accept: str = "") -> tuple[bytes, str]:
        """(body, content type) for a scrape, in the format the `Accept` header asks for
        (Prometheus text by default, OpenMetrics when asked)."""
        encoder, content_type = choose_encoder(accept)
        return encoder(self.registry), content_type


class _Constant(Collector):
    def __init__(self, family: Metric) -> None:
        self.family = family

    def collect(self) -> Iterator[Metric]:
        yield self.family
