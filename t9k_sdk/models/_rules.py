"""Cross-field rules: one message each, checked in Python by the models and by CEL in the CRDs.

A rule's message is shared verbatim by the SDK (which adds the offending value) and by the
`x-kubernetes-validations` entry of the generated CRD, so a user sees the same sentence from
`t9k-sdk validate` and from `kubectl apply`.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["DNS_LABEL", "MAX_NAME", "Msg", "cel"]

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
MAX_NAME = 63


class Msg:
    """Rule messages (wire vocabulary)."""

    NAME_DNS = (
        "must be a lowercase DNS label (a-z, 0-9 and '-', starting and ending with a letter or"
        " digit): it becomes part of pod and service names"
    )
    POD_NAME_LENGTH = (
        "generated pod names '<job>-<type>-<index>' must be at most 63 characters;"
        " shorten metadata.name or the replica type"
    )
    DJ_POD_NAME_LENGTH = (
        "generated pod names '<job>-worker-<index>' must be at most 63 characters;"
        " shorten metadata.name"
    )
    CAIJ_POD_NAME_LENGTH = (
        "generated pod names '<job>-launcher' and '<job>-worker-<index>' must be at most 63"
        " characters; shorten metadata.name"
    )
    TYPE_DNS = (
        "replica type must be a lowercase DNS label (a-z, 0-9 and '-', starting and ending with a"
        " letter or digit): it becomes part of pod names"
    )
    TYPES_UNIQUE = "replica types must be unique"
    FINISH_RULES = (
        "finish rules must name existing replica types and replica indices from 0 to replicas-1"
    )
    FINISH_RULE_EMPTY = (
        "a finish rule must name at least one replica (a replica type and at least one of its"
        " indices, e.g. {worker: [0]}): an empty rule would hold before any replica ran"
    )
    MODE_TYPES = "runMode replicaSpecs and resumeSpecs must name existing replica types"
    CONTAINERS = "every replica's pod template needs at least one container"
    RUN_EXACTLY_ONE = "exactly one of python, module and exec must be set"
    LAUNCH = "config.run or config.customCommand is required unless runMode.debug.enabled is true"
    OTHER_ARGS = (
        "otherArgs must not contain --no_local_rank, --autotuning, --module or --no_python;"
        " use config.localRank, config.autotune and config.run instead"
    )
    ELASTIC_ORDER = "elastic replicas need minReplicas <= expectedReplicas <= maxReplicas"
    ELASTIC_BOUNDS = "elastic training needs minReplicas and maxReplicas when enabled"
    ELASTIC_IMMUTABLE = "elastic minReplicas and maxReplicas cannot be changed once the job exists"
    RESUME_IMMUTABLE = "runMode.pause.resumeSpecs cannot be changed once the job exists"
    CAIJ_LAUNCHER = (
        "a ColossalAIJob needs exactly one replica spec of type launcher, with replicas 1"
    )
    CAIJ_WORKER = "a ColossalAIJob needs a replica spec of type worker"
    CAIJ_WORKER_CONTAINER = (
        "the worker pod template needs a container named 'worker' (the training container)"
    )


def cel(rule: str, message: str, field_path: str | None = None) -> dict[str, Any]:
    """One `x-kubernetes-validations` entry."""
    entry: dict[str, Any] = {"rule": rule, "message": message}
    if field_path:
        entry["fieldPath"] = field_path
    return entry


def replicas_of(cel_var: str) -> str:
    """CEL for the effective replica count of a replica spec (default 1)."""
    return f"(has({cel_var}.replicas) ? {cel_var}.replicas : 1)"
