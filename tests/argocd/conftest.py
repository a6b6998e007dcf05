"""Fixture `lua`: the Argo CD Lua runner (tests/argocd/runner.py), built once per session."""

from __future__ import annotations

import pytest

from tests.argocd.runner import ArgoLua


@pytest.fixture(scope="session")
def lua() -> ArgoLua:
    return ArgoLua.ensure()
