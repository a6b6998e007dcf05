"""`t9k-sdk completion`: print a shell completion script (bash, zsh or fish)."""

from __future__ import annotations

import argparse
import sys

from t9k_sdk.cli._completion import SHELLS, completion_script
from t9k_sdk.cli._declare import Subcommands, command
from t9k_sdk.cli._errors import EXIT_OK

__all__ = ["add", "run"]

_HELP = """\
Print a script that makes the shell complete t9k-sdk's commands, their flags, the values of
flags with fixed choices (-o, --dry-run), the job kinds (gj, dj, caij) and file names, and after
a kind the names of its jobs, asked of the cluster as `t9k-sdk get KIND -o name` would (with the
-n, --context and --kubeconfig typed; at most 5 s). Load it in the current shell with
`source <(t9k-sdk completion bash)`, or save it where the shell looks for completions (see the
examples). The script is generated from this version's commands: regenerate it after an upgrade.
"""


def add(sub: Subcommands) -> None:
    parser = command(
        sub,
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description=_HELP,
        examples="  source <(t9k-sdk completion bash)\n"
        "  t9k-sdk completion bash > ~/.local/share/bash-completion/completions/t9k-sdk\n"
        "  echo 'source <(t9k-sdk completion zsh)' >> ~/.zshrc\n"
        "  t9k-sdk completion fish > ~/.config/fish/completions/t9k-sdk.fish",
        run=run,
    )
    parser.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")


def run(args: argparse.Namespace) -> int:
    """The script describes `args.root`, the whole parser (`t9k_sdk.cli._app` sets it)."""
    sys.stdout.write(completion_script(args.root, args.shell))
    return EXIT_OK
