"""Fixtures of the client tests that need no cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

UNREACHABLE = """\
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: t}
contexts:
- name: ctx
  context: {cluster: c, user: u, namespace: team-a}
current-context: ctx
"""


@pytest.fixture
def unreachable(tmp_path: Path) -> Path:
    """A kubeconfig whose API server does not answer (port 1 on loopback)."""
    path = tmp_path / "kubeconfig"
    path.write_text(UNREACHABLE)
    return path
