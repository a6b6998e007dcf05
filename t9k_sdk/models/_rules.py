"""Cross-field rules: one message each, checked in Python by the models and by CEL in the CRDs.

A rule's message is shared verbatim by the SDK (which adds the offending value) and by the
`x-kubernetes-validations` entry of the generated CRD, so a user sees the same sentence from
`t9k-sdk validate` and from `kubectl apply`.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "CAIJ_EXTRA_ARG",
    "CAIJ_SCRIPT",
    "DNS_LABEL",
    "MAX_NAME",
    "RESERVED_VOLUMES",
    "Msg",
    "cel",
    "mount_problems",
    "normalize_path",
]

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
MAX_NAME = 63


class Msg:
    """Rule messages (wire vocabulary)."""

    NAME_DNS = (
        "must be a lowercase DNS label (a-z, 0-9 and '-', starting and ending with a letter or"
        " digit): it becomes part of pod and service names"
    )
    POD_NAME_LENGTH = (
        "generated pod names '<job>-<type>-<index>' must be at most 63 characters;"
        " shorten metadata.name or the replica type"
    )
    DJ_POD_NAME_LENGTH = (
        "generated pod names '<job>-worker-<index>' must be at most 63 characters;"
        " shorten metadata.name"
    )
    CAIJ_POD_NAME_LENGTH = (
        "generated pod names '<job>-launcher' and '<job>-worker-<index>' must be at most 63"
        " characters; shorten metadata.name"
    )
    TYPE_DNS = (
        "replica type must be a lowercase DNS label (a-z, 0-9 and '-', starting and ending with a"
        " letter or digit): it becomes part of pod names"
    )
    TYPES_UNIQUE = "replica types must be unique"
    FINISH_RULES = (
        "finish rules must name existing replica types and replica indices from 0 to replicas-1"
    )
    FINISH_RULE_EMPTY = (
        "a finish rule must name at least one replica (a replica type and at least one of its"
        " indices, e.g. {worker: [0]}): an empty rule would hold before any replica ran"
    )
    MODE_TYPES = "runMode replicaSpecs and resumeSpecs must name existing replica types"
    CONTAINERS = "every replica's pod template needs at least one container"
    RUN_EXACTLY_ONE = "exactly one of python, module and exec must be set"
    LAUNCH = "config.run or config.customCommand is required unless runMode.debug.enabled is true"
    OTHER_ARGS = (
        "otherArgs must not contain --no_local_rank, --autotuning, --module or --no_python;"
        " use config.localRank, config.autotune and config.run instead"
    )
    ELASTIC_ORDER = "elastic replicas need minReplicas <= expectedReplicas <= maxReplicas"
    ELASTIC_BOUNDS = "elastic training needs minReplicas and maxReplicas when enabled"
    ELASTIC_IMMUTABLE = "elastic minReplicas and maxReplicas cannot be changed once the job exists"
    RESUME_IMMUTABLE = "runMode.pause.resumeSpecs cannot be changed once the job exists"
    CAIJ_LAUNCHER = (
        "a ColossalAIJob needs exactly one replica spec of type launcher, with replicas 1"
    )
    CAIJ_WORKER = "a ColossalAIJob needs a replica spec of type worker"
    CAIJ_WORKER_CONTAINER = (
        "the worker pod template needs a container named 'worker' (the training container)"
    )
    # DeepSpeedJob and ColossalAIJob: what the launchers can run
    RUN_EMPTY = (
        "must name what to launch, the script, module or program first and then its arguments"
        " (an empty list launches nothing; it is allowed only with runMode.debug.enabled)"
    )
    CAIJ_SCRIPT = (
        "torchConfig.script must start with a Python file ending in .py, e.g. train.py or"
        " src/train.py, made of letters, digits and _ . / @ % + = : , - (and not starting with"
        " '-'): colossalai run starts nothing for anything else and still exits 0"
    )
    CAIJ_EXTRA_ARGS = (
        "torchConfig.extraArgs entries must each be one torchrun option, '--name' or"
        " '--name=value' (value: letters, digits and _ . : / @ % + -), because colossalai run"
        " passes them to torchrun as one comma-separated --extra_launch_args 'name=value,...'"
    )
    CAIJ_EXTRA_ARGS_OWNED = (
        "torchConfig.extraArgs must not set --nproc_per_node, --nnodes or --node_rank:"
        " use torchConfig.procPerWorker; colossalai run sets the others from the hostfile"
    )
    # DeepSpeedJob and ColossalAIJob: paths the operator mounts into the training container
    MOUNT_RESERVED = "is reserved: the operator mounts the job's {what} there"
    DJ_MOUNTS = (
        "the training container must not mount a volume at /, /t9k, /root/.ssh, /t9k/hostfile,"
        " /t9k/scripts, /t9k/run or /root/.deepspeed_env, nor inside the last five: the"
        " operator mounts the job's SSH keys, hostfile, scripts and session environment there,"
        " and DeepSpeed reads its env file there"
    )
    MOUNT_DUPLICATE = "mountPath must be unique within a container (Kubernetes rejects the pod)"
    VOLUME_RESERVED = (
        "volume names t9k-ssh, t9k-config and t9k-run are reserved for the operator's volumes"
    )
    AUTH_MOUNT_PATH = (
        "ssh.authMountPath must be an absolute directory other than /, /t9k, /t9k/hostfile and"
        " /t9k/scripts and not inside the last two: the operator mounts the hostfile and its"
        " scripts there"
    )


def cel(rule: str, message: str, field_path: str | None = None) -> dict[str, Any]:
    """One `x-kubernetes-validations` entry."""
    entry: dict[str, Any] = {"rule": rule, "message": message}
    if field_path:
        entry["fieldPath"] = field_path
    return entry


def replicas_of(cel_var: str) -> str:
    """CEL for the effective replica count of a replica spec (default 1)."""
    return f"(has({cel_var}.replicas) ? {cel_var}.replicas : 1)"


# -- DeepSpeedJob and ColossalAIJob launch arguments ------------------------------------------

CAIJ_SCRIPT = re.compile(r"^[A-Za-z0-9_./@%+=:,][A-Za-z0-9_./@%+=:,-]*[.]py$")
"""A script `colossalai run` accepts (it must end in .py) and whose name needs no shell quoting:
colossalai joins the torchrun command into one string that a shell runs on every worker."""
CAIJ_EXTRA_ARG = re.compile(r"^--[A-Za-z][A-Za-z0-9_-]*(=[A-Za-z0-9_.:/@%+-]*)?$")
"""One torchrun option that survives `--extra_launch_args` (split on ',' and '=') and the shell."""
CAIJ_OWNED_ARG = re.compile(r"^--(nproc[_-]per[_-]node|nnodes|node[_-]rank)(=.*)?$")


# -- reserved mount paths ---------------------------------------------------------------------

RESERVED_VOLUMES = ("t9k-ssh", "t9k-config", "t9k-run")
OPERATOR_DIR = "/t9k"
"""Parent of the operator's mounts; subdirectories other than those stay free (T9k's /t9k/mnt)."""
"""Names of the volumes the operator adds to DeepSpeedJob and ColossalAIJob pods."""


def normalize_path(path: str) -> str:
    """`path` as the container runtime resolves it: no '//', '.', '..' or trailing '/'."""
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/" + "/".join(parts)


def mount_problems(
    mount_paths: list[str], reserved: dict[str, str], rule: str | None = None
) -> list[tuple[int, str]]:
    """(index, message) for each mount path that is `/` or `/t9k`, at or under a reserved path
    (path -> what the operator mounts there), or a duplicate of an earlier one in the container.

    Kubernetes rejects a pod whose container mounts two volumes at the same path; a mount inside
    one of the operator's read-only mounts fails when the container starts. A mount at a parent
    of the SSH directory (e.g. /root) is allowed: the keys are mounted on top of it."""
    problems: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(mount_paths):
        path = normalize_path(raw)
        clash = next(
            (r for r in reserved if path == r or path.startswith(r.rstrip("/") + "/")), None
        )
        why = None
        if path == "/":
            why = f"mountPath {raw!r} would hide the whole image; mount elsewhere"
        elif path == OPERATOR_DIR:
            why = (
                f"mountPath {raw!r} would hold the operator's {OPERATOR_DIR}/hostfile and"
                f" {OPERATOR_DIR}/scripts; mount at a subdirectory such as"
                f" {OPERATOR_DIR}/mnt instead"
            )
        elif clash is not None:
            why = (
                f"mountPath {raw!r}: {clash} "
                + Msg.MOUNT_RESERVED.format(what=reserved[clash])
                + "; mount your volume elsewhere"
            )
        if why is not None:
            problems.append((i, f"{rule}; {why}" if rule and reserved else why))
        elif path in seen:
            problems.append(
                (i, f"{Msg.MOUNT_DUPLICATE}; {raw!r} is also volumeMounts[{seen[path]}]")
            )
        seen.setdefault(path, i)
    return problems
