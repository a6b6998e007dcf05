"""Leader election: one holder at a time, takeover only after expiry, quick hand-over on release."""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from t9k_operator.leader import LeaderElector, LeaseSettings
from t9k_sdk._kube.api_error import ApiError


class FakeLeases:
    """A Lease store with the API server's optimistic concurrency (resourceVersion)."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.down = False
        self.writes = 0

    def get_lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        if self.down:
            raise ApiError(0, "ConnectionRefused")
        return copy.deepcopy(self.lease)

    def create_lease(self, lease: Mapping[str, Any]) -> dict[str, Any]:
        if self.down:
            raise ApiError(0, "ConnectionRefused")
        if self.lease is not None:
            raise ApiError(409, "AlreadyExists")
        return self._store(lease)

    def update_lease(self, lease: Mapping[str, Any]) -> dict[str, Any]:
        if self.down:
            raise ApiError(0, "ConnectionRefused")
        assert self.lease is not None
        if lease["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "the object has been modified")
        return self._store(lease)

    def _store(self, lease: Mapping[str, Any]) -> dict[str, Any]:
        self.version += 1
        self.writes += 1
        self.lease = copy.deepcopy(dict(lease))
        self.lease["metadata"] = {**self.lease["metadata"], "resourceVersion": str(self.version)}
        return copy.deepcopy(self.lease)

    @property
    def holder(self) -> str | None:
        return None if self.lease is None else self.lease["spec"].get("holderIdentity")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def candidate(store: FakeLeases, clock: Clock, name: str) -> LeaderElector:
    return LeaderElector(
        store,
        LeaseSettings(identity=name, namespace="ns"),
        clock=clock,
        wall=lambda: datetime(2025, 1, 1, tzinfo=UTC),
    )


def test_the_first_candidate_creates_the_lease_and_leads() -> None:
    store, clock = FakeLeases(), Clock()
    a = candidate(store, clock, "a")
    assert a.try_acquire_or_renew()
    assert store.holder == "a"
    assert store.lease is not None
    spec = store.lease["spec"]
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert spec["renewTime"] == "2025-01-01T00:00:00.000000Z"


def test_a_second_candidate_stands_by_while_the_holder_renews() -> None:
    store, clock = FakeLeases(), Clock()
    a, b = candidate(store, clock, "a"), candidate(store, clock, "b")
    assert a.try_acquire_or_renew()
    for _ in range(10):  # 50 s of renewals every 5 s: b never gets in
        assert not b.try_acquire_or_renew()
        clock.now += 5
        assert a.try_acquire_or_renew()
    assert store.holder == "a"
    assert b.holder == "a"


def test_a_silent_holder_is_replaced_only_after_the_lease_duration() -> None:
    store, clock = FakeLeases(), Clock()
    a, b = candidate(store, clock, "a"), candidate(store, clock, "b")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()  # b observes a's record now
    clock.now += 14.9
    assert not b.try_acquire_or_renew()
    clock.now += 0.2
    assert b.try_acquire_or_renew()
    assert store.holder == "b"
    assert store.lease is not None
    assert store.lease["spec"]["leaseTransitions"] == 1


def test_expiry_is_measured_from_when_the_candidate_saw_the_record_change() -> None:
    # b starts late: an old renewTime in the Lease does not let it in at once (no clock-skew
    # trust); it waits a full lease duration of not seeing the record change.
    store, clock = FakeLeases(), Clock()
    a = candidate(store, clock, "a")
    assert a.try_acquire_or_renew()
    clock.now += 60
    b = candidate(store, clock, "b")
    assert not b.try_acquire_or_renew()
    clock.now += 15.1
    assert b.try_acquire_or_renew()


def test_two_candidates_racing_for_an_expired_lease_cannot_both_win() -> None:
    store, clock = FakeLeases(), Clock()
    a, b, c = (candidate(store, clock, n) for n in "abc")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert not c.try_acquire_or_renew()
    clock.now += 16
    # Both read the expired lease, then both write: the second write carries a stale version.
    lease_b = store.get_lease("ns", "t9k-operator")
    real_get = store.get_lease
    store.get_lease = lambda ns, name: copy.deepcopy(lease_b)  # type: ignore[method-assign]
    won_b = b.try_acquire_or_renew()
    won_c = c.try_acquire_or_renew()
    store.get_lease = real_get  # type: ignore[method-assign]
    assert [won_b, won_c] == [True, False]
    assert store.holder == "b"


def test_release_lets_a_standby_take_over_at_its_next_try() -> None:
    store, clock = FakeLeases(), Clock()
    a, b = candidate(store, clock, "a"), candidate(store, clock, "b")
    assert a.try_acquire_or_renew()
    a.is_leader = True
    assert not b.try_acquire_or_renew()
    assert a.release()
    assert store.holder is None
    assert b.try_acquire_or_renew()  # no waiting for expiry
    assert store.holder == "b"


def test_release_does_not_touch_a_lease_someone_else_holds() -> None:
    store, clock = FakeLeases(), Clock()
    a, b = candidate(store, clock, "a"), candidate(store, clock, "b")
    assert b.try_acquire_or_renew()
    a.is_leader = True  # a wrongly believes it leads
    writes = store.writes
    assert not a.release()
    assert store.writes == writes
    assert store.holder == "b"


def test_hold_gives_up_when_renewals_fail_past_the_deadline() -> None:
    store, clock = FakeLeases(), Clock()
    a = candidate(store, clock, "a")
    stop = threading.Event()
    waits: list[float] = []

    def wait(timeout: float | None = None) -> bool:
        waits.append(timeout or 0)
        clock.now += timeout or 0
        return False

    stop.wait = wait  # type: ignore[method-assign]
    assert a.acquire(stop)
    store.down = True
    assert a.hold(stop) is False
    assert not a.is_leader
    # renew period first, then retries every 2 s, giving up after 10 s without a renewal:
    assert waits == [5.0, 2.0, 2.0, 2.0]
    assert clock.now - 100.0 < 15.0  # before the lease could expire for anyone else


def test_hold_gives_up_at_once_when_another_holder_appears() -> None:
    store, clock = FakeLeases(), Clock()
    a = candidate(store, clock, "a")
    stop = threading.Event()
    stop.wait = lambda timeout=None: False  # type: ignore[method-assign]
    assert a.acquire(stop)
    assert store.lease is not None
    store.lease["spec"]["holderIdentity"] = "intruder"
    store.lease["spec"]["renewTime"] = "2025-01-01T00:00:01.000000Z"
    assert a.hold(stop) is False
    assert a.holder == "intruder"


def test_hold_returns_true_when_stopped_cleanly() -> None:
    store, clock = FakeLeases(), Clock()
    a = candidate(store, clock, "a")
    stop = threading.Event()
    assert a.acquire(stop)
    stop.set()
    assert a.hold(stop) is True


def test_inconsistent_timings_are_rejected() -> None:
    with pytest.raises(ValueError, match="renew_deadline"):
        LeaseSettings(lease_duration=10, renew_deadline=10)
