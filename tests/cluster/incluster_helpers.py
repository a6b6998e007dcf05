"""The operator as a platform team runs it: its own image, as a pod on the real node, installed
by one of the install paths, with its ServiceAccount's token and nothing else.

    with operator_namespace(core_v1, "cli") as ops:
        install ... into ops, watching `namespace`
        deployment = wait_operator_ready(apps, ops)
        trained = run_to_end(custom, namespace, torchrun_job("tr"))

* `operator_namespace` makes the namespace the operator is installed into, annotated so that
  its pods land on the real node (the API server's PodNodeSelector and
  PodTolerationRestriction plugins read those annotations): the install itself is applied
  unmodified, as a user applies it. No host operator watches the namespaces of these tests.
* `scrape(core_v1, ops)`: the leader's /metrics through the API server's pod proxy.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from prometheus_client.parser import text_string_to_metric_families

from t9k_sdk import models
from t9k_sdk.install import HEALTH_PORT, NAME
from tools import realnode
from tools.kit import wait_for

PLACEMENT = {
    "scheduler.alpha.kubernetes.io/node-selector": f"{realnode.NODE_LABEL[0]}={realnode.NODE_LABEL[1]}",
    "scheduler.alpha.kubernetes.io/defaultTolerations": json.dumps(
        [{"key": realnode.TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]
    ),
}
SELECTOR = f"app.kubernetes.io/name={NAME}"
READY_TIMEOUT = 120.0


@contextlib.contextmanager
def operator_namespace(core_v1: client.CoreV1Api, label: str) -> Iterator[str]:
    """A fresh namespace whose pods run on the real node; deleted afterwards."""
    name = f"op-{label}-{uuid.uuid4().hex[:6]}"
    meta = client.V1ObjectMeta(name=name, annotations=PLACEMENT)
    core_v1.create_namespace(client.V1Namespace(metadata=meta))
    try:
        yield name
    finally:
        with contextlib.suppress(ApiException):
            core_v1.delete_namespace(name, propagation_policy="Background")


def operator_pods(core_v1: client.CoreV1Api, ops: str) -> list[Any]:
    return list(core_v1.list_namespaced_pod(ops, label_selector=SELECTOR).items)


def _ready(pod: Any) -> bool:
    return pod.metadata.deletion_timestamp is None and any(
        c.type == "Ready" and c.status == "True" for c in pod.status.conditions or ()
    )


def wait_operator_ready(core_v1: client.CoreV1Api, ops: str, replicas: int = 1) -> list[Any]:
    """The operator's pods once `replicas` of them are Ready; the error names what each pod
    waits for (image, probe, crash) and the leader's last log lines."""

    def describe() -> str:
        lines = []
        for pod in operator_pods(core_v1, ops):
            for status in pod.status.container_statuses or ():
                state = status.state.waiting or status.state.terminated
                lines.append(f"{pod.metadata.name}: {state.reason if state else 'running'}")
            with contextlib.suppress(ApiException):
                lines.append(core_v1.read_namespaced_pod_log(pod.metadata.name, ops)[-3000:])
        return "\n".join(lines)

    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        ready = [p for p in operator_pods(core_v1, ops) if _ready(p)]
        if len(ready) >= replicas:
            return ready
        time.sleep(1)
    raise AssertionError(f"the operator in {ops} is not Ready after {READY_TIMEOUT:.0f}s:\n"
                         + describe())  # fmt: skip


def leader(core_v1: client.CoreV1Api, ops: str) -> str:
    """The pod that holds the Lease (its identity starts with the pod's name)."""
    coordination = client.CoordinationV1Api(core_v1.api_client)

    def holder() -> str:
        with contextlib.suppress(ApiException):
            lease = coordination.read_namespaced_lease(NAME, ops)
            return str(lease.spec.holder_identity or "")
        return ""

    identity = wait_for(holder, bool, f"a holder of the Lease {ops}/{NAME}", READY_TIMEOUT)
    return identity.split("_", 1)[0]


def scrape(
    core_v1: client.CoreV1Api, ops: str, pod: str
) -> dict[tuple[str, frozenset[Any]], float]:
    """The pod's /metrics, read through the API server's pod proxy."""
    text = core_v1.connect_get_namespaced_pod_proxy_with_path(
        f"{pod}:{HEALTH_PORT}", ops, "metrics"
    )
    samples: dict[tuple[str, frozenset[Any]], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples


def create_job(custom: client.CustomObjectsApi, namespace: str, manifest: dict[str, Any]) -> None:
    plural = models.JOB_KINDS[manifest["kind"]].PLURAL
    custom.create_namespaced_custom_object(
        models.GROUP, models.VERSION, namespace, plural, manifest
    )


def job_status(
    custom: client.CustomObjectsApi, namespace: str, kind: str, name: str
) -> dict[str, Any]:
    plural = models.JOB_KINDS[kind].PLURAL
    job = custom.get_namespaced_custom_object(models.GROUP, models.VERSION, namespace, plural, name)
    return dict(job.get("status") or {})


def wait_phase(
    custom: client.CustomObjectsApi,
    namespace: str,
    kind: str,
    name: str,
    phases: tuple[str, ...],
    timeout: float,
) -> dict[str, Any]:
    return wait_for(
        lambda: job_status(custom, namespace, kind, name),
        lambda s: s.get("phase") in phases,
        f"{kind} {namespace}/{name} in phase {' or '.join(phases)}",
        timeout,
    )


def operator_log(core_v1: client.CoreV1Api, ops: str, pod: str) -> list[dict[str, Any]]:
    """The pod's JSON log lines, parsed (any other line is kept as {"msg": line})."""
    text = core_v1.read_namespaced_pod_log(pod, ops)
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append({"msg": line})
    return out


# how the operator logs a refused request (`... : 403 Forbidden`, the API server's "is forbidden")
_DENIED = re.compile(r"\b403 Forbidden\b|\bforbidden\b", re.IGNORECASE)


def denied(lines: list[dict[str, Any]]) -> list[str]:
    """Log lines that report a request the API server refused (403)."""
    return [json.dumps(x) for x in lines if re.search(_DENIED, json.dumps(x))]
