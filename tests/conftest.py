"""Session-wide test policy.

* Everything under tests/cluster/ is marked `cluster` (it needs the local control plane).
* A test that uses a fixture of `BINARY_FIXTURES` is marked `binaries`: it needs a Go binary that
  tools/ensure-*-binaries.sh builds (`make binaries`). `make unit` deselects them; elsewhere such
  a fixture skips when its binary is missing, and builds it only with T9K_REQUIRE_CLUSTER=1.
* With T9K_REQUIRE_CLUSTER=1 (set by `make test` and CI) a session fails, loudly, if any cluster
  test was skipped or if no cluster test ran: a green run must have exercised the real API server.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REQUIRE_CLUSTER_ENV = "T9K_REQUIRE_CLUSTER"
CLUSTER_TESTS_DIR = Path(__file__).parent / "cluster"
BINARY_FIXTURES = frozenset({"lua"})
"""Fixtures that run a Go binary: `lua`, the Argo CD Lua runner (tests/argocd/runner.py)."""


def cluster_required() -> bool:
    """True when a cluster test may not be skipped (CI, `make test`)."""
    return os.environ.get(REQUIRE_CLUSTER_ENV, "") == "1"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # tryfirst: the marker must be on the items before `-m "not cluster"` deselects by it.
    for item in items:
        if item.path.is_relative_to(CLUSTER_TESTS_DIR):
            item.add_marker(pytest.mark.cluster)
        if BINARY_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.binaries)


@dataclass(eq=False)  # a pytest plugin must stay hashable
class ClusterTally:
    """What happened to the `cluster`-marked tests of this session."""

    ran: int = 0
    skipped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if "cluster" not in report.keywords:
            return
        if report.skipped and not hasattr(report, "wasxfail"):
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
            self.skipped.append(f"{report.nodeid}: {reason}")
        elif report.when == "call":
            self.ran += 1

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not cluster_required() or session.config.option.collectonly:
            return
        if self.skipped:
            self.problems.append(f"{len(self.skipped)} cluster test(s) were skipped:")
            self.problems.extend(f"  {line}" for line in self.skipped)
        if self.ran == 0:
            self.problems.append(
                "no cluster test ran (were they deselected, or did collection fail?)"
            )
        if self.problems and session.exitstatus in (
            pytest.ExitCode.OK,
            pytest.ExitCode.NO_TESTS_COLLECTED,
        ):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.problems:
            return
        terminalreporter.write_sep(
            "!", f"FAILED: {REQUIRE_CLUSTER_ENV}=1 but the cluster tests did not all run", red=True
        )
        for line in self.problems:
            terminalreporter.write_line(line, red=True)
        terminalreporter.write_line(
            "Start the control plane with `make cluster-up` (logs in .cluster/logs/) or unset"
            f" {REQUIRE_CLUSTER_ENV} to allow skipping.",
            red=True,
        )


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(ClusterTally(), "t9k-cluster-tally")
