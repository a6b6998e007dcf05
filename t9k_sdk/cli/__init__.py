"""The `t9k-sdk` command line, above the library: it parses arguments, reads job inputs, prints.

    t9k-sdk render jobs/ --out-dir manifests/    t9k-sdk apply -f manifests/
    t9k-sdk validate manifests/                  t9k-sdk wait gj mnist --for condition=Completed

Modules (all private; `main` is the entry point of the `t9k-sdk` console script):

* `_app`: the parser, built from the commands, and `main`, where every error becomes a message
  and an exit status;
* `_commands`: one module per command (render, validate, crds, convert, plan, install,
  argocd_health, apply, diff, get, describe, wait, logs, pause (and resume), scale, delete,
  completion), each with `add`, its arguments and help, beside `run`, what it does; `run`
  imports the command's code when it runs, so `--help`, `--version` and `completion` load no
  pydantic, models or YAML;
* `_declare`: `command`, the one way a command declares its parser, and the options several
  commands share;
* `_cluster`: what the cluster commands share when they run (the connection through
  `t9k_sdk.client.Client`, the jobs of `-f`, KIND and NAME, printing jobs);
* `_output`: the offline commands' output format and directory, and writing files;
* `_sources`: the one reader of job inputs (YAML and JSON files, directories, `-`, Python
  files and modules), and what each command accepts;
* `_errors`: the exit codes, the usage error, the error and data printers;
* `_format`: tables, colours, durations; `_completion`: shell completion scripts.

`t9k_sdk.client` (the library) never imports this package.
"""

from __future__ import annotations

from t9k_sdk.cli._app import main

__all__ = ["main"]
