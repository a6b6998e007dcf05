"""Leader election through a coordination.k8s.io/v1 Lease (client-go's `leaderelection`).

Every replica is a candidate; only the holder of the Lease starts watches and workers.

* A candidate tries every `retry_period` (2 s). It takes the Lease when nobody holds it, when
  the holder released it (empty `holderIdentity`), or when the holder's record has not changed
  for `leaseDurationSeconds` (15 s) as measured on the candidate's own monotonic clock (no
  clock-skew assumptions, as client-go).
* The leader renews every `renew_period` (5 s), retrying every `retry_period` after a failure.
  If it has not renewed for `renew_deadline` (10 s, less than the lease duration so it stops
  before anyone else may start), or sees another holder, it has lost: the process exits
  non-zero (as controller-runtime does) and its Deployment restarts it as a candidate.
* On a clean shutdown the leader stops its workers first, then releases the Lease (empty
  holder, duration 1 s), so a standby takes over within one retry period.

Every write carries the resourceVersion read, so two candidates racing for an expired Lease
cannot both win: one gets 409 Conflict.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from t9k_operator.logs import fields
from t9k_sdk import _objects as o
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk.reconcile import Manifest

__all__ = ["LeaderElector", "LeaseSettings", "LeaseStore", "default_identity"]

log = logging.getLogger(__name__)


class LeaseStore(Protocol):
    """Lease reads and writes (`cluster.Cluster` implements them; tests use a dict)."""

    def get_lease(self, namespace: str, name: str) -> Manifest | None: ...

    def create_lease(self, lease: Mapping[str, Any]) -> Manifest: ...

    def update_lease(self, lease: Mapping[str, Any]) -> Manifest: ...


@dataclass(frozen=True)
class LeaseSettings:
    name: str = "t9k-operator"
    namespace: str = "default"
    identity: str = ""
    lease_duration: float = 15.0
    renew_period: float = 5.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.renew_deadline < self.lease_duration:
            raise ValueError("renew_deadline must be shorter than lease_duration")
        if not self.retry_period <= self.renew_period <= self.renew_deadline:
            raise ValueError("need retry_period <= renew_period <= renew_deadline")


def default_identity() -> str:
    """`<hostname>_<pid>_<random>`: unique per process, readable in `kubectl get lease`."""
    return f"{socket.gethostname()}_{os.getpid()}_{secrets.token_hex(4)}"


def _micro_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """One candidate (see the module docstring). `run()` blocks; the rest is the state machine."""

    def __init__(
        self,
        store: LeaseStore,
        settings: LeaseSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.store = store
        self.settings = settings
        self.identity = settings.identity or default_identity()
        self._clock = clock
        self._wall = wall
        self.is_leader = False
        self.holder = ""
        """The holder last seen in the Lease ("" if none)."""
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._last_renew = 0.0

    # --- the state machine ------------------------------------------------------------------

    def try_acquire_or_renew(self) -> bool:
        """One attempt: True if this candidate holds the Lease afterwards."""
        name, namespace = self.settings.name, self.settings.namespace
        now = self._clock()
        stamp = _micro_time(self._wall())
        try:
            lease = self.store.get_lease(namespace, name)
        except ApiError as err:
            log.warning("reading the lease failed: %s", err)
            return False
        if lease is None:
            fresh = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": name, "namespace": namespace},
                "spec": self._spec(acquire=stamp, renew=stamp, transitions=0),
            }
            try:
                created = self.store.create_lease(fresh)
            except ApiError as err:
                log.info("creating the lease failed: %s", err)
                return False
            self._observe(created, now)
            return True

        spec = o.spec(lease)
        self._observe(lease, now)
        holder = str(spec.get("holderIdentity") or "")
        duration = float(spec.get("leaseDurationSeconds") or self.settings.lease_duration)
        if holder and holder != self.identity and now < self._observed_at + duration:
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        ours = holder == self.identity
        updated = {
            **lease,
            "spec": self._spec(
                acquire=str(spec.get("acquireTime") or stamp) if ours else stamp,
                renew=stamp,
                transitions=transitions if ours else transitions + 1,
            ),
        }
        try:
            written = self.store.update_lease(updated)
        except ApiError as err:
            log.info("updating the lease failed: %s", err)
            return False
        self._observe(written, now)
        return True

    def _spec(self, *, acquire: str, renew: str, transitions: int) -> dict[str, Any]:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": round(self.settings.lease_duration),
            "acquireTime": acquire,
            "renewTime": renew,
            "leaseTransitions": transitions,
        }

    def _observe(self, lease: Mapping[str, Any], now: float) -> None:
        spec = o.spec(lease)
        # Any write changes the resourceVersion: a renewal counts even with a coarse clock.
        record = (
            o.meta(lease).resource_version,
            *(
                spec.get(k)
                for k in ("holderIdentity", "leaseDurationSeconds", "renewTime", "leaseTransitions")
            ),
        )
        if record != self._observed:
            self._observed = record
            self._observed_at = now
        self.holder = str(spec.get("holderIdentity") or "")

    def release(self) -> bool:
        """Give the Lease up if we hold it (empty holder, 1 s duration). True if released."""
        if not self.is_leader:
            return False
        self.is_leader = False
        try:
            lease = self.store.get_lease(self.settings.namespace, self.settings.name)
            if lease is None or o.spec(lease).get("holderIdentity") != self.identity:
                return False
            spec = dict(o.spec(lease))
            spec.pop("holderIdentity", None)
            spec["leaseDurationSeconds"] = 1
            spec["renewTime"] = _micro_time(self._wall())
            self.store.update_lease({**lease, "spec": spec})
        except ApiError as err:
            log.warning("releasing the lease failed: %s", err)
            return False
        log.info(
            "released the lease", extra=fields(lease=self._lease_ref(), identity=self.identity)
        )
        return True

    def _lease_ref(self) -> str:
        return f"{self.settings.namespace}/{self.settings.name}"

    # --- the loop ---------------------------------------------------------------------------

    def acquire(self, stop: threading.Event) -> bool:
        """Block until this candidate leads (True) or `stop` is set (False)."""
        log.info(
            "waiting to become the leader",
            extra=fields(lease=self._lease_ref(), identity=self.identity),
        )
        reported = ""
        while not stop.is_set():
            if self.try_acquire_or_renew():
                self.is_leader = True
                self._last_renew = self._clock()
                log.info(
                    "became the leader",
                    extra=fields(lease=self._lease_ref(), identity=self.identity),
                )
                return True
            if self.holder != reported:
                reported = self.holder
                log.info("standing by", extra=fields(lease=self._lease_ref(), leader=self.holder))
            stop.wait(self.settings.retry_period)
        return False

    def hold(self, stop: threading.Event) -> bool:
        """Renew until `stop` is set (True) or the lease is lost (False)."""
        wait = self.settings.renew_period
        while not stop.wait(wait):
            if self.try_acquire_or_renew():
                self._last_renew = self._clock()
                wait = self.settings.renew_period
                continue
            lost_to_other = self.holder not in ("", self.identity)
            overdue = self._clock() - self._last_renew > self.settings.renew_deadline
            if lost_to_other or overdue:
                self.is_leader = False
                log.error(
                    "lost the lease",
                    extra=fields(
                        lease=self._lease_ref(),
                        identity=self.identity,
                        holder=self.holder,
                        last_renewed_seconds_ago=round(self._clock() - self._last_renew, 1),
                    ),
                )
                return False
            wait = self.settings.retry_period
        return True
