"""The test kit: what the tests (tests/cluster), the tools (tools/chaos.py, tools/demo.py) and
the benchmarks (bench/) share to drive the local control plane of tools/cluster.py.

    from tools.kit import ControlPlane, generic_job, replica, finish, launch_operators

* The control plane: `ControlPlane.running()` (the one `tools/cluster.py up` started),
  `wait_for`, `fresh_namespace`, `request`, pod reads and `service_account_kubeconfig`.
* Manifest factories: `generic_job`, `deepspeed_job`, `colossalai_job`, `replica`, `container`,
  `template`, `pod`, and `finish(...)`, the kwok annotations that make a pod end.
* Operator launchers: `Operator` (one `t9k-operator` process) and `launch_operators`, plus
  helpers that create and read jobs.

It imports nothing from tests/ (an import-linter contract in pyproject.toml says so), and it is
not part of the package users install.
"""

from tools.kit._control_plane import (
    TERMINAL_PHASES,
    ControlPlane,
    fresh_namespace,
    pod_gone,
    read_pod,
    request,
    service_account_kubeconfig,
    wait_for,
    wait_phase,
)
from tools.kit._manifests import (
    EXIT_CODE,
    IMAGE,
    OWNER_LABEL,
    REASON,
    RUN_FOR,
    colossalai_job,
    container,
    deepspeed_job,
    finish,
    generic_job,
    pod,
    replica,
    template,
)
from tools.kit._operators import (
    Operator,
    create_job,
    job_events,
    job_pods,
    job_status,
    launch_operators,
    read_job,
    wait_job_phase,
)

__all__ = [
    "EXIT_CODE",
    "IMAGE",
    "OWNER_LABEL",
    "REASON",
    "RUN_FOR",
    "TERMINAL_PHASES",
    "ControlPlane",
    "Operator",
    "colossalai_job",
    "container",
    "create_job",
    "deepspeed_job",
    "finish",
    "fresh_namespace",
    "generic_job",
    "job_events",
    "job_pods",
    "job_status",
    "launch_operators",
    "pod",
    "pod_gone",
    "read_job",
    "read_pod",
    "replica",
    "request",
    "service_account_kubeconfig",
    "template",
    "wait_for",
    "wait_job_phase",
    "wait_phase",
]
