"""Every command of `t9k-sdk`, one module each (pause and resume share one): `add(sub)` declares
its parser (arguments, help, examples) through `t9k_sdk.cli._declare.command`, and `run(args)`
beside it does the work and returns an exit status.

A module imports only what building its parser takes; `run` imports the rest (the models, YAML,
the client) when the command runs, so `t9k-sdk --help`, `--version`, `COMMAND --help` and
`completion` load no pydantic, models, YAML or Kubernetes client
(tests/sdk/test_cli_startup.py), and `validate` loads only what validating takes.
"""

from __future__ import annotations

from t9k_sdk.cli._commands import (
    apply,
    argocd_health,
    completion,
    convert,
    crds,
    delete,
    describe,
    diff,
    get,
    install,
    logs,
    pause,
    plan,
    render,
    scale,
    validate,
    wait,
)

__all__ = ["COMMANDS"]

COMMANDS = (
    render,
    validate,
    crds,
    convert,
    plan,
    install,
    argocd_health,
    apply,
    diff,
    get,
    describe,
    wait,
    logs,
    pause,
    scale,
    delete,
    completion,
)
"""In the order `t9k-sdk --help` lists them."""
