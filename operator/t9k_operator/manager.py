"""The manager: the process around the controller, as controller-runtime's manager is.

    Manager(ManagerSettings(...)).run()  ->  exit status

It owns the connection to the API server (`cluster.Cluster`, instrumented by the metrics), the
Prometheus metrics, the health server (and a metrics server of its own when asked), leader
election (`leader.LeaderElector`), the SIGTERM/SIGINT handlers, and the start and stop of the
controller: it acts only while holding the Lease, stops taking work on a signal, lets running
passes finish, then releases the Lease. A leader that loses its Lease exits at once
(`EXIT_LEASE_LOST`), as controller-runtime's does.

Needs the `operator` extra (the Kubernetes client, prometheus_client): `t9k_operator.cli` imports
it only once it has checked that the extra is installed.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType

from t9k_operator.cluster import Cluster, ConfigError
from t9k_operator.controller import Controller, ReconcileFn, Settings
from t9k_operator.health import HealthServer
from t9k_operator.leader import LeaderElector, LeaseSettings, default_identity
from t9k_operator.logs import fields
from t9k_operator.metrics import OperatorMetrics
from t9k_sdk import __version__
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk._kube.resources import JOB_RESOURCES
from t9k_sdk.reconcile import reconcile as core_reconcile

__all__ = ["EXIT_LEASE_LOST", "EXIT_USAGE", "Manager", "ManagerSettings"]

log = logging.getLogger("t9k_operator")

EXIT_LEASE_LOST = 1
"""The leader lost its Lease: the Deployment restarts the pod, which then stands by."""
EXIT_USAGE = 2
"""The API server configuration cannot be loaded, or the health or metrics port not bound."""


@dataclass(frozen=True)
class ManagerSettings:
    """What the process runs with (the flags of `t9k-operator`)."""

    controller: Settings = field(default_factory=Settings)
    kubeconfig: str | None = None
    """None: in-cluster config inside a pod, else $KUBECONFIG or ~/.kube/config."""
    context: str | None = None
    qps: float = 50.0
    burst: int = 100
    page_size: int | None = None
    """Objects per page when listing; None: the cluster layer's default (500)."""
    leader_elect: bool = True
    lease_name: str = "t9k-operator"
    lease_namespace: str = "default"
    health_bind: str = "0.0.0.0"
    health_port: int = 8081
    metrics_bind_address: str = ""
    """HOST:PORT of a metrics server of its own; "0": no metrics; "": on the health port."""


class Manager:
    """Runs the operator process (see the module docstring)."""

    def __init__(self, settings: ManagerSettings, *, reconcile: ReconcileFn | None = None) -> None:
        self.settings = settings
        self.reconcile = reconcile or core_reconcile
        """The core; tests may replace it."""
        self.identity = default_identity()
        self._stop = threading.Event()

    def run(self) -> int:
        """Run until SIGTERM/SIGINT or a lost Lease; the exit status."""
        settings = self.settings
        self._handle_signals()
        metrics = OperatorMetrics()
        try:
            cluster = self._connect(metrics)
        except ConfigError as err:  # says what was tried and what to do
            log.error("cannot load the API server configuration: %s", err)
            return EXIT_USAGE
        controller = Controller(cluster, self.reconcile, settings.controller, metrics=metrics)
        elector = (
            LeaderElector(
                cluster,
                LeaseSettings(
                    name=settings.lease_name,
                    namespace=settings.lease_namespace,
                    identity=self.identity,
                ),
            )
            if settings.leader_elect
            else None
        )
        metrics.read_state(
            jobs=lambda: [job for i in controller.jobs.values() for job in i.store.objects()],
            queue_depth=lambda: len(controller.queue),
            processing_ages=controller.queue.processing_ages,
            leader=lambda: elector.is_leader if elector is not None else True,
            lease_name=settings.lease_name if elector is not None else "",
        )
        try:
            health, metrics_server = self._servers(metrics, _readiness(controller, elector))
        except OSError as err:
            log.error(
                "cannot serve health probes on %s:%s or metrics on %s: %s",
                settings.health_bind,
                settings.health_port,
                settings.metrics_bind_address or "the health port",
                err,
            )
            return EXIT_USAGE
        health.start()
        if metrics_server is not None:
            metrics_server.start()
        log.info(
            "starting",
            extra=fields(
                version=__version__,
                server=cluster.server,
                namespace=settings.controller.namespace or "(all)",
                workers=settings.controller.workers,
                identity=self.identity,
                leader_elect=settings.leader_elect,
                lease=f"{settings.lease_namespace}/{settings.lease_name}" if elector else None,
                health=f"{settings.health_bind}:{health.port}",
            ),
        )

        try:
            if not self._lead(controller, elector):
                return 0
        except ApiError as err:
            log.error("%s", err)
            return 1
        finally:
            health.stop()
            if metrics_server is not None:
                metrics_server.stop()
            cluster.close()
        log.info("stopped")
        return 0

    def _handle_signals(self) -> None:
        """SIGTERM and SIGINT stop the process (gracefully: see `_lead`)."""

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            log.info("stopping", extra=fields(signal=signal.Signals(signum).name))
            self._stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)

    def _connect(self, metrics: OperatorMetrics) -> Cluster:
        settings = self.settings
        return Cluster.connect(
            kubeconfig=settings.kubeconfig,
            context=settings.context,
            qps=settings.qps,
            burst=settings.burst,
            # watches, workers, the shared pool of parallel creates, Events and leases
            connections=len(JOB_RESOURCES)
            + 5
            + settings.controller.workers
            + settings.controller.parallel_creates
            + 4,
            identity=self.identity,
            observe=metrics.observe_request,
            page_size=settings.page_size,
        )

    def _servers(
        self, metrics: OperatorMetrics, readiness: Callable[[], tuple[bool, str]]
    ) -> tuple[HealthServer, HealthServer | None]:
        """The health server (with /metrics unless asked otherwise) and a metrics server of its
        own when `metrics_bind_address` names one; not started yet."""
        settings = self.settings
        health = HealthServer(
            settings.health_bind,
            settings.health_port,
            readiness,
            metrics.exposition if settings.metrics_bind_address == "" else None,
        )
        if settings.metrics_bind_address in ("", "0"):
            return health, None
        host, _, port = settings.metrics_bind_address.rpartition(":")
        return health, HealthServer(host, int(port), readiness, metrics.exposition, probes=False)

    def _lead(self, controller: Controller, elector: LeaderElector | None) -> bool:
        """Run the controller while this process leads, until a signal; False when the signal
        came before it ever led."""
        if elector is not None and not elector.acquire(self._stop):
            return False
        controller.start()
        if elector is None:
            self._stop.wait()
        elif not elector.hold(self._stop):
            # Another replica may act from now on: stop at once, mid-pass or not.
            logging.shutdown()
            os._exit(EXIT_LEASE_LOST)
        controller.stop()
        if elector is not None:
            elector.release()
        return True


def _readiness(
    controller: Controller, elector: LeaderElector | None
) -> Callable[[], tuple[bool, str]]:
    """What /readyz answers: a standby is ready; a leader once its workers take jobs."""

    def readiness() -> tuple[bool, str]:
        if elector is not None and not elector.is_leader:
            leader = elector.holder or "none yet"
            return True, f"standby: the leader is {leader}"
        role = "leader" if elector is not None else "running"
        if controller.working():
            return True, f"{role}: caches synced, workers running"
        pending = ", ".join(str(i.resource) for i in controller.informers if not i.synced.is_set())
        return False, f"{role}: caches not synced ({pending})"

    return readiness
