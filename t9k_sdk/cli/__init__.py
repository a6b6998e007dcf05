"""The `t9k-sdk` command line, above the library: it parses arguments, reads job inputs, prints.

    t9k-sdk render jobs/ --out-dir manifests/    t9k-sdk apply -f manifests/
    t9k-sdk validate manifests/                  t9k-sdk wait gj mnist --for condition=Completed

Modules (all private; `main` is the entry point of the `t9k-sdk` console script):

* `_app`: the parser and `main`, where every error becomes a message and an exit status;
* `_commands`: every command's arguments and help; its code is imported when it runs, so
  `--help`, `--version` and `completion` load no pydantic, models or YAML;
* `_offline`: render, validate, crds, convert, plan, install, argocd-health (no cluster
  needed);
* `_cluster`: apply, diff, get, describe, wait, logs, pause, resume, scale, delete (through
  `t9k_sdk.client.Client`);
* `_sources`: the one reader of job inputs (YAML and JSON files, directories, `-`, Python
  files and modules), and what each command accepts;
* `_errors`: the exit codes, the usage error, the error and data printers;
* `_format`: tables, colours, durations; `_completion`: shell completion scripts.

`t9k_sdk.client` (the library) never imports this package.
"""

from __future__ import annotations

from t9k_sdk.cli._app import main

__all__ = ["main"]
