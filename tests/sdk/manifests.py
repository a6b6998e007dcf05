"""Minimal valid manifests of each kind, for tests to start from and break on purpose."""

from __future__ import annotations

import copy
from typing import Any

from t9k_sdk import models

API = models.API_VERSION


def pod(name: str = "main", **container: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": name, "image": "busybox", **container}]}}


def generic_job(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "apiVersion": API,
        "kind": "GenericJob",
        "metadata": {"name": "demo"},
        "spec": {"replicaSpecs": [{"type": "worker", "replicas": 2, "template": pod()}]},
    }
    base["spec"].update(copy.deepcopy(spec))
    return base


def deepspeed_job(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "apiVersion": API,
        "kind": "DeepSpeedJob",
        "metadata": {"name": "demo"},
        "spec": {
            "config": {"run": {"python": ["train.py"]}},
            "worker": {"replicas": 2, "template": pod("worker")},
        },
    }
    base["spec"].update(copy.deepcopy(spec))
    return base


def colossalai_job(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "apiVersion": API,
        "kind": "ColossalAIJob",
        "metadata": {"name": "demo"},
        "spec": {
            "torchConfig": {"script": ["train.py"]},
            "replicaSpecs": [
                {"type": "launcher", "template": pod("launcher")},
                {"type": "worker", "replicas": 2, "template": pod("worker")},
            ],
        },
    }
    base["spec"].update(copy.deepcopy(spec))
    return base


MAKERS = {"GenericJob": generic_job, "DeepSpeedJob": deepspeed_job, "ColossalAIJob": colossalai_job}
