"""Run and follow T9k jobs on a cluster: apply, get, list, wait, logs, events, diagnose, pause,
resume, scale, delete.

    from t9k_sdk.client import Client
    client = Client()                              # ~/.kube/config, or in-cluster in a pod
    client.apply(job)
    client.wait(job, timeout=600)                  # or ("gj", "mnist"); raises JobFailedError...
    for line in client.logs("gj", "mnist", follow=True):
        print(line)                                # [worker-0] epoch 1 ...

Needs the official Kubernetes client, the `client` extra:
`pip install "t9k-sdk[client] @ git+https://github.com/t9k/t9k-sdk"` (or `pip install ".[client]"` in a checkout).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from t9k_sdk._extras import install_hint
from t9k_sdk.client.diagnosis import Finding, PodInfo
from t9k_sdk.client.errors import (
    ApiRequestError,
    BarrierTimeoutError,
    ClientError,
    ClusterUnreachableError,
    ContainerConfigError,
    CrashLoopError,
    ImagePullError,
    InvalidSpecError,
    JobDeletedError,
    JobFailedError,
    JobFinishedError,
    JobNotFoundError,
    JobStuckError,
    KindNotServedError,
    KubeconfigError,
    ScaleError,
    TargetUnreachableError,
    UnknownKindError,
    UnschedulableError,
    WaitError,
    WaitTimeoutError,
)
from t9k_sdk.client.job_state import JobEvent, Progress, WaitTarget
from t9k_sdk.client.kinds import KINDS, JobKind, resolve_kind
from t9k_sdk.client.logs import LogLine

if TYPE_CHECKING:
    from t9k_sdk.client.client import (
        FIELD_MANAGER,
        Applied,
        Client,
        Description,
        JobLike,
        JobRef,
    )

_NEEDS_KUBERNETES = frozenset(
    {"FIELD_MANAGER", "Applied", "Client", "Description", "JobLike", "JobRef"}
)


def __getattr__(name: str) -> Any:
    """`Client` and its companions, imported on first use: they need the Kubernetes client,
    the rest of this package (errors, kinds, log following, status reading) does not."""
    if name not in _NEEDS_KUBERNETES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = importlib.import_module("t9k_sdk.client.client")
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] not in ("kubernetes", "urllib3"):
            raise
        raise ImportError(
            "t9k_sdk.client.Client needs the Kubernetes client, which is not installed:\n"
            f"  {install_hint('client')}"
        ) from exc
    return getattr(module, name)


__all__ = [
    "FIELD_MANAGER",
    "KINDS",
    "ApiRequestError",
    "Applied",
    "BarrierTimeoutError",
    "Client",
    "ClientError",
    "ClusterUnreachableError",
    "ContainerConfigError",
    "CrashLoopError",
    "Description",
    "Finding",
    "ImagePullError",
    "InvalidSpecError",
    "JobDeletedError",
    "JobEvent",
    "JobFailedError",
    "JobFinishedError",
    "JobKind",
    "JobLike",
    "JobNotFoundError",
    "JobRef",
    "JobStuckError",
    "KindNotServedError",
    "KubeconfigError",
    "LogLine",
    "PodInfo",
    "Progress",
    "ScaleError",
    "TargetUnreachableError",
    "UnknownKindError",
    "UnschedulableError",
    "WaitError",
    "WaitTarget",
    "WaitTimeoutError",
    "resolve_kind",
]
