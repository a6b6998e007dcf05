"""Where a job waits in its Kueue LocalQueue and what quota it needs, from Kueue's objects as
the API server returns them (the real cluster's answer is in tests/cluster/test_kueue.py)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from t9k_sdk._quantity import format_quantity, parse_quantity
from t9k_sdk.client._queue import standing, standing_words, workload_requests
from t9k_sdk.client.diagnosis import diagnose
from tests.client.test_diagnosis import NOW, queued_job


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("8", Decimal(8)),
        ("500m", Decimal("0.5")),
        ("64Gi", Decimal(64 * 2**30)),
        ("1.5k", Decimal(1500)),
        ("1e3", Decimal(1000)),
        ("100Ti", Decimal(100 * 2**40)),
        (4, Decimal(4)),
    ],
)
def test_a_quantity_reads_as_the_api_server_counts_it(text: object, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "eight", "8 Gi", "8GB", "1" * 65, True, None, [8], "1e9999"])
def test_what_is_not_a_quantity_reads_as_none_and_never_raises(text: object) -> None:
    assert parse_quantity(text) is None


@pytest.mark.parametrize(
    ("value", "text"),
    [(Decimal(8), "8"), (Decimal("0.5"), "500m"), (Decimal(64 * 2**30), "64Gi"), (Decimal(0), "0")],
)
def test_a_quantity_is_written_as_the_api_server_writes_it(value: Decimal, text: str) -> None:
    assert format_quantity(value) == text


def workload(
    name: str,
    *,
    queue: str = "gpus",
    created: str = "2026-01-01T12:00:00Z",
    priority: int | None = None,
    reserved: bool = False,
    active: bool = True,
    gpus: str = "8",
    count: int = 1,
) -> dict[str, Any]:
    container = {"name": "worker", "resources": {"limits": {"nvidia.com/gpu": gpus, "cpu": "4"}}}
    spec: dict[str, Any] = {
        "queueName": queue,
        "active": active,
        "podSets": [
            {"name": "worker", "count": count, "template": {"spec": {"containers": [container]}}}
        ],
    }
    if priority is not None:
        spec["priority"] = priority
    status = {"conditions": [{"type": "QuotaReserved", "status": "True"}]} if reserved else {}
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": created},
        "spec": spec,
        "status": status,
    }


LOCAL = {"metadata": {"name": "gpus"}, "spec": {"clusterQueue": "team-a"}}
CLUSTER = {
    "metadata": {"name": "team-a"},
    "spec": {
        "cohortName": "org",
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "nvidia.com/gpu"],
                "flavors": [
                    {
                        "name": "a100",
                        "resources": [
                            {"name": "cpu", "nominalQuota": "32"},
                            {"name": "nvidia.com/gpu", "nominalQuota": "16"},
                        ],
                    }
                ],
            }
        ],
    },
    "status": {
        "flavorsUsage": [
            {
                "name": "a100",
                "resources": [
                    {"name": "cpu", "total": "8"},
                    {"name": "nvidia.com/gpu", "total": "12"},
                ],
            }
        ]
    },
}


def test_the_position_follows_kueues_order_priority_first_then_the_earlier_queued() -> None:
    ours = workload("ours", created="2026-01-01T12:00:05Z")
    others = [
        workload("older", created="2026-01-01T12:00:00Z"),
        workload("urgent", created="2026-01-01T12:00:09Z", priority=100),
        workload("younger", created="2026-01-01T12:00:07Z"),
        workload("running", created="2026-01-01T11:00:00Z", reserved=True),
        workload("deactivated", created="2026-01-01T11:00:00Z", active=False),
        workload("elsewhere", created="2026-01-01T11:00:00Z", queue="cpus"),
    ]
    found = standing(ours, [ours, *others], LOCAL, CLUSTER)
    assert (found.position, found.pending) == (3, 4)


def test_a_requeued_workload_queues_from_its_requeue_not_its_creation() -> None:
    evicted = workload("evicted", created="2026-01-01T11:00:00Z")
    evicted["status"]["conditions"] = [
        {"type": "Requeued", "status": "True", "lastTransitionTime": "2026-01-01T12:30:00Z"}
    ]
    ours = workload("ours", created="2026-01-01T12:00:00Z")
    assert standing(ours, [evicted, ours], LOCAL, CLUSTER).position == 1


def test_the_needs_count_every_pod_and_the_largest_init_container() -> None:
    found = workload("ours", gpus="8", count=3)
    spec = found["spec"]["podSets"][0]["template"]["spec"]
    spec["initContainers"] = [{"name": "warm", "resources": {"requests": {"cpu": "10"}}}]
    assert workload_requests(found) == {"cpu": Decimal(30), "nvidia.com/gpu": Decimal(24)}


def test_the_words_give_the_position_the_needs_and_what_the_cluster_queue_has_free() -> None:
    ours = workload("ours", gpus="8")
    words = standing_words(
        standing(ours, [workload("first", created="2026-01-01T11:00:00Z"), ours], LOCAL, CLUSTER)
    )
    assert words.startswith("2nd of 2 waiting in LocalQueue gpus")
    assert "it needs cpu 4, nvidia.com/gpu 8" in words
    assert (
        "ClusterQueue team-a has free cpu 24 of 32 (flavour a100), nvidia.com/gpu 4 of 16"
        " (flavour a100), and may borrow from cohort org"
    ) in words


def test_usage_above_the_nominal_quota_is_borrowed_and_leaves_none_free() -> None:
    over = {
        **CLUSTER,
        "status": {
            "flavorsUsage": [
                {"name": "a100", "resources": [{"name": "nvidia.com/gpu", "total": "20"}]}
            ]
        },
    }
    found = standing(workload("ours"), [], LOCAL, over)
    assert [(h.resource, h.free) for h in found.headroom] == [("cpu", 32), ("nvidia.com/gpu", 0)]


def test_a_cluster_queue_that_cannot_be_read_is_said_so_and_the_rest_is_still_given() -> None:
    ours = workload("ours")
    found = standing(ours, [ours], LOCAL, None, "not allowed to read its ClusterQueue team-a")
    words = standing_words(found)
    assert words.startswith("1st of 1 waiting")
    assert words.endswith(
        "it needs cpu 4, nvidia.com/gpu 8; not allowed to read its ClusterQueue team-a"
    )


def test_hostile_quantities_in_kueues_objects_are_ignored_not_raised() -> None:
    ours = workload("ours", gpus="lots")
    bad = {
        **CLUSTER,
        "status": {
            "flavorsUsage": [{"name": "a100", "resources": [{"name": "cpu", "total": "9" * 5000}]}]
        },
    }
    found = standing(ours, [ours, {"metadata": "x", "spec": []}], LOCAL, bad)
    assert found.needs == {"cpu": Decimal(4)}
    assert [(h.resource, h.free) for h in found.headroom] == [("cpu", 32)]


def test_diagnose_puts_the_standing_after_kueues_reason() -> None:
    ours = workload("ours")
    queue = standing(ours, [ours], LOCAL, CLUSTER)
    manifest = queued_job("Queued", "couldn't assign flavors to pod set worker.")
    first = diagnose(manifest, [], [], NOW, queue)[0]
    assert first.message.startswith(
        "not admitted by Kueue (Queued, LocalQueue team-a): couldn't assign flavors to pod set"
        " worker. 1st of 1 waiting in LocalQueue gpus"
    )
    assert "ClusterQueue team-a has free" in first.message
