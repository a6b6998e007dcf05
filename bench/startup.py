"""Start-up cost of the `t9k-sdk` command line: CPU seconds of the whole process, per command.

    python bench/startup.py [--runs 21] [--compare DIR] [--doc]

Each command runs in a fresh interpreter, as a shell runs it, and is measured as the CPU time
(user + system) of that process, from `resource.getrusage(RUSAGE_CHILDREN)` around it: what it
costs the machine, whatever else the machine is doing (wall-clock time on a shared machine
measures the neighbours too). The figure is the median of `--runs` runs (the fastest run in
brackets); the runs of all commands are interleaved, round after round, so that a change in the
machine's load touches every command alike.

The commands: `python -c pass` (the interpreter alone: the floor), `t9k-sdk --help`,
`--version`, `validate --help`, `completion bash` (what a shell runs when it loads the
completion script; pressing Tab runs no Python) and `validate examples/deepspeed_bert.yaml`.
`t9k-sdk` is run as its console script runs it (`from t9k_sdk.cli import main`), from the
checkout. The bytecode cache is written first (PYTHONDONTWRITEBYTECODE is dropped for the
children and every command runs once before the measured rounds), as for an installed package.

`--compare DIR` measures another checkout in the same rounds (e.g. the commit before a change:
`git worktree add /tmp/before HEAD~1`), on the same example file. `--doc` writes the table into
docs/performance.md.
"""

from __future__ import annotations

import sys

# Run as a script, this file's directory comes first on sys.path, where bench/operator.py would
# shadow the standard library's `operator` module (which argparse, collections, ... import).
if __name__ == "__main__" and sys.path and sys.path[0].rstrip("/").endswith("bench"):
    del sys.path[0]

import argparse
import os
import platform
import resource
import statistics
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench._docs import write_block  # noqa: E402  (the checkout first on sys.path)

DOC = REPO / "docs" / "performance.md"
EXAMPLE = REPO / "examples" / "deepspeed_bert.yaml"
BEGIN = "<!-- startup-bench:begin (bench/startup.py --doc writes this part) -->"
END = "<!-- startup-bench:end -->"

CLI = "import sys; from t9k_sdk.cli import main; sys.exit(main())"
"""What the `t9k-sdk` console script runs."""


@dataclass(frozen=True)
class Case:
    label: str
    argv: tuple[str, ...]
    """The arguments of `t9k-sdk`."""
    target: float | None
    """CPU seconds the command should stay under (the targets in docs/performance.md)."""
    cli: bool = True
    """False: `python -c pass` instead of `t9k-sdk`."""


CASES = (
    Case("`python -c pass` (the interpreter alone)", (), None, cli=False),
    Case("`t9k-sdk --help`", ("--help",), 0.1),
    Case("`t9k-sdk --version`", ("--version",), 0.1),
    Case("`t9k-sdk validate --help`", ("validate", "--help"), 0.1),
    Case("`t9k-sdk completion bash`", ("completion", "bash"), 0.1),
    Case(f"`t9k-sdk validate {EXAMPLE.relative_to(REPO)}`", ("validate", str(EXAMPLE)), 0.2),
)


def command(case: Case) -> list[str]:
    if not case.cli:
        return [sys.executable, "-c", "pass"]
    return [sys.executable, "-c", CLI, *case.argv]


def environment(root: Path) -> dict[str, str]:
    """The children's environment: `root`'s t9k_sdk first, bytecode written as when installed."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(root)
    return env


def cpu_seconds(argv: Sequence[str], root: Path) -> float:
    """User + system CPU seconds of one run of `argv` in `root`. Fails if the command fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        argv, cwd=root, env=environment(root), capture_output=True, text=True, check=False
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[3:])} in {root} failed:\n{done.stderr}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(roots: Sequence[Path], runs: int) -> dict[Path, dict[str, list[float]]]:
    """Seconds of each run of each case in each checkout, the rounds interleaved."""
    for root in roots:  # writes the bytecode cache, warms the file cache
        for case in CASES:
            cpu_seconds(command(case), root)
    seconds: dict[Path, dict[str, list[float]]] = {r: {c.label: [] for c in CASES} for r in roots}
    for _ in range(runs):
        for root in roots:
            for case in CASES:
                seconds[root][case.label].append(cpu_seconds(command(case), root))
    return seconds


def _cell(values: Sequence[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f})"


def table(seconds: dict[Path, dict[str, list[float]]], labels: Sequence[str]) -> str:
    """Markdown: a row per command, a column per checkout, the target and whether it is met."""
    roots = list(seconds)
    lines = [
        "| Command | " + " | ".join(f"{label}, s" for label in labels) + " | Target | Met |",
        "| --- |" + " ---: |" * len(labels) + " ---: | --- |",
    ]
    for case in CASES:
        cells = [_cell(seconds[root][case.label]) for root in roots]
        if case.target is None:
            target = met = "-"
        else:
            target = f"< {case.target:.1f} s"
            met = "yes" if statistics.median(seconds[roots[0]][case.label]) < case.target else "no"
        lines.append(f"| {case.label} | " + " | ".join(cells) + f" | {target} | {met} |")
    return "\n".join(lines)


def machine() -> str:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{os.cpu_count()} CPUs ({cpu}), {platform.system()} {platform.release()}, CPython"
        f" {platform.python_version()}, load average {os.getloadavg()[0]:.1f} at the start"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=21, help="runs per command (default 21)")
    parser.add_argument(
        "--compare", type=Path, metavar="DIR", help="also measure the checkout in DIR"
    )
    parser.add_argument("--doc", action="store_true", help=f"write the table into {DOC.name}")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs: at least 1")
    roots = [REPO]
    labels = ["this checkout"]
    if args.compare is not None:
        if not (args.compare / "t9k_sdk" / "cli").is_dir():
            parser.error(f"--compare {args.compare}: not a t9k-sdk checkout (no t9k_sdk/cli)")
        roots.append(args.compare.resolve())
        labels.append(f"`{args.compare.name}`")
    started = machine()
    run = f"python bench/startup.py --runs {args.runs}" + (
        f" --compare {args.compare}" if args.compare is not None else ""
    )
    seconds = measure(roots, args.runs)
    result = table(seconds, labels)
    print(f"{started}; CPU seconds, median of {args.runs} runs (fastest in brackets)")
    print(result)
    if args.doc:
        block = "\n".join(
            [
                BEGIN,
                f"Measured on {datetime.now(UTC):%Y-%m-%d}: {started}. Command: `{run}`. CPU"
                f" seconds (user + system) of the whole process, median of {args.runs} runs (the"
                " fastest in brackets):",
                "",
                result,
                END,
            ]
        )
        write_block(DOC, block, BEGIN, END)
        print(f"updated {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
