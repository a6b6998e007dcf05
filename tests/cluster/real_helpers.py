"""Jobs on the real node (tools/realnode.py): real containers, real launchers, real exits.

    def test_x(real_node: RealNode, jobs: Jobs) -> None:
        jobs.create(real(generic_job("a", replica("worker", 2, containers=[train(...)]))))

* `RealNode` (fixture `real_node`, per session): the node is Ready and the images of
  tools/images.py are built and imported; otherwise the session fails with the reason (it never
  falls back to kwok).
* `real(manifest)`: puts every pod template of a job on the real node (its label and toleration)
  with `imagePullPolicy: Never` (nothing is ever pulled).
* `train_container(...)`: the training image with the scripts of training/ mounted at
  /workspace from a ConfigMap that `scripts_configmap(namespace)` creates.
* `logs(...)`, `exec_in(...)`: what `kubectl logs` and `kubectl exec` show, through the API
  server and the node's kubelet.
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from kubernetes import client

from tools import images, realnode

REPO = Path(__file__).resolve().parents[2]
TRAINING_DIR = REPO / "training"
SCRIPTS_CONFIGMAP = "training-scripts"
WORKSPACE = "/workspace"
# Every rank's line as the training scripts print it.
RANK_LINE = r"rank=(\d+) world_size=(\d+)"
REAL_TIMEOUT = 240.0  # a job of a few real pods on 2 loaded cores: tens of seconds; leave room


@dataclass(frozen=True)
class RealNode:
    name: str
    base_image: str
    train_image: str


def train_image() -> str:
    return images.IMAGES["train"].ref


def base_image() -> str:
    return images.IMAGES["base"].ref


def placement() -> dict[str, Any]:
    """The pod spec fields that put a pod on the real node."""
    return {
        "nodeSelector": {realnode.NODE_LABEL[0]: realnode.NODE_LABEL[1]},
        "tolerations": [{"key": realnode.TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
    }


def _templates(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for key in ("worker", "launcher"):
        if isinstance(spec.get(key), dict) and "template" in spec[key]:
            yield spec[key]["template"]
    for rs in spec.get("replicaSpecs") or []:
        yield rs["template"]


def real(manifest: dict[str, Any]) -> dict[str, Any]:
    """A copy of the job with every pod template placed on the real node, images never pulled,
    and no kwok annotation."""
    out = copy.deepcopy(manifest)
    for tpl in _templates(out["spec"]):
        pod = tpl.setdefault("spec", {})
        pod.update(placement())
        pod.setdefault("terminationGracePeriodSeconds", 5)
        for c in [*pod.get("containers", []), *pod.get("initContainers", [])]:
            c["imagePullPolicy"] = "Never"
            if c.get("image", "").startswith("example.invalid/"):
                c["image"] = train_image()
        meta = tpl.get("metadata") or {}
        for key in list(meta.get("annotations") or {}):
            if key.startswith("sim.t9k.dev/"):
                del meta["annotations"][key]
    return out


def train_container(
    name: str = "worker",
    command: list[str] | None = None,
    args: list[str] | None = None,
    env: dict[str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "image": train_image(),
        "imagePullPolicy": "Never",
        "workingDir": WORKSPACE,
        "env": [
            {"name": "OMP_NUM_THREADS", "value": "1"},
            *({"name": k, "value": v} for k, v in (env or {}).items()),
        ],
        "volumeMounts": [{"name": "training-scripts", "mountPath": WORKSPACE}],
        **extra,
    }
    if command is not None:
        out["command"] = command
    if args is not None:
        out["args"] = args
    return out


def scripts_volume() -> dict[str, Any]:
    return {"name": "training-scripts", "configMap": {"name": SCRIPTS_CONFIGMAP}}


def with_scripts(manifest: dict[str, Any]) -> dict[str, Any]:
    """Mount the training scripts' ConfigMap in every pod template of the job."""
    for tpl in _templates(manifest["spec"]):
        vols = tpl.setdefault("spec", {}).setdefault("volumes", [])
        if not any(v["name"] == "training-scripts" for v in vols):
            vols.append(scripts_volume())
    return manifest


def scripts_configmap(core_v1: client.CoreV1Api, namespace: str) -> None:
    data = {p.name: p.read_text() for p in sorted(TRAINING_DIR.glob("*.py"))}
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=SCRIPTS_CONFIGMAP), data=data)
    try:
        core_v1.create_namespaced_config_map(namespace, body)
    except client.ApiException as err:
        if err.status != 409:
            raise
        core_v1.replace_namespaced_config_map(SCRIPTS_CONFIGMAP, namespace, body)


def logs(core_v1: client.CoreV1Api, namespace: str, pod: str, previous: bool = False) -> str:
    """The pod's log as `kubectl logs` returns it (through the API server and the kubelet)."""
    return str(
        core_v1.read_namespaced_pod_log(
            pod, namespace, previous=previous, _preload_content=False
        ).data.decode(errors="replace")
    )


def kubectl(kubeconfig: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real kubectl of tools/ensure-binaries.sh against the test cluster."""
    bin_dir = subprocess.run(
        ["bash", str(REPO / "tools" / "ensure-binaries.sh"), "--print-dir"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return subprocess.run(
        [f"{bin_dir}/kubectl", f"--kubeconfig={kubeconfig}", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def cli(
    kubeconfig: Path, verb: str, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`t9k-sdk VERB ARGS` as a user runs it, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "t9k_sdk.cli", verb, "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


# A followed log line: the kubelet's timestamp, then what rank 0 of the training scripts prints
# each tenth step.
_STEP = re.compile(r"^(\S+) .*\bstep=(\d+) loss=", re.M)


def logged_steps(
    logs: list[tuple[str, str]], since: float, prefix: str = ""
) -> list[tuple[float, int]]:
    """(seconds after `since`, step) of each training step logged after `since`, by the
    kubelet's timestamps, in the followed logs (`PodHistory.logs_since`) whose pod starts
    with `prefix`; earliest first."""
    found = []
    for where, text in logs:
        if not where.startswith(prefix):
            continue
        for stamp, step in _STEP.findall(text):
            at = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
            if at > since:
                found.append((at - since, int(step)))
    return sorted(found)
