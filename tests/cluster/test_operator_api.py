"""The operator's API layer (`t9k_operator.cluster.Cluster`) against the real API server."""

from __future__ import annotations

from pathlib import Path

from kubernetes import client

from t9k_operator.cluster import Cluster
from t9k_sdk._kube.resources import PODS
from tools.kit import pod


def test_many_deletes_in_a_row_reuse_connections_safely(
    kubeconfig: Path, core_v1: client.CoreV1Api, namespace: str
) -> None:
    """Regression: `delete` returned its connection to the pool with the response body unread,
    so a later request on it failed now and then with ResponseNotReady('Request-sent')."""
    names = [f"p{i}" for i in range(40)]
    for name in names:
        core_v1.create_namespaced_pod(namespace, pod(name))
    cluster = Cluster.connect(kubeconfig=str(kubeconfig))
    try:
        assert all(cluster.delete(PODS, namespace, name) for name in names)
    finally:
        cluster.close()
