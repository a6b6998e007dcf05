"""The real node itself: it leaves the host as it found it, and a pod on it reaches nothing it
should not (the kubelet's API, the world outside the bridge)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from kubernetes import client

from tests.cluster.real_helpers import RealNode, base_image, kubectl, logs, placement
from tools import cluster as cluster_tool
from tools import realnode
from tools.kit import wait_for

pytestmark = pytest.mark.realnode


def test_host_differences_name_every_change() -> None:
    before = {"sysctls": ["vm.overcommit_memory=0"], "links": ["eth0", "lo"], "mounts": ["/"]}
    after = {
        "sysctls": ["vm.overcommit_memory=1"],
        "links": ["eth0", "lo", "t9kbr0"],
        "mounts": ["/", "/run/netns/cni-1"],
    }
    assert realnode.host_differences(before, after) == [
        "links: added t9kbr0",
        "mounts: added /run/netns/cni-1",
        "sysctls: added vm.overcommit_memory=1",
        "sysctls: removed vm.overcommit_memory=0",
    ]
    assert realnode.host_differences(before, before) == []


def _probe_pod(core_v1: client.CoreV1Api, namespace: str, script: str) -> str:
    """Run `script` in a pod on the real node; return its log once it has finished."""
    name = f"probe-{uuid.uuid4().hex[:6]}"
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            **placement(),
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "probe",
                    "image": base_image(),
                    "imagePullPolicy": "Never",
                    "command": ["python3", "-c", script],
                }
            ],
        },
    }
    core_v1.create_namespaced_pod(namespace, body)
    pod = wait_for(
        lambda: core_v1.read_namespaced_pod(name, namespace),
        lambda p: p.status.phase in ("Succeeded", "Failed"),
        f"pod {name} to finish",
        120,
    )
    text = logs(core_v1, namespace, name)
    assert pod.status.phase == "Succeeded", text
    return text


def test_a_pod_cannot_use_the_kubelet_api_or_reach_outside(
    real_node: RealNode, core_v1: client.CoreV1Api, namespace: str
) -> None:
    info = realnode.Paths(cluster_tool.NODE_DIR).info.read_text()
    port = json.loads(info)["ports"]["kubelet"]
    script = f"""
import socket, ssl, urllib.request, urllib.error
ctx = ssl._create_unverified_context()
for path in ("/pods", "/run/default/x/y"):
    try:
        urllib.request.urlopen("https://{realnode.BRIDGE_IP}:{port}" + path, context=ctx, timeout=5)
        print("kubelet", path, "open")
    except urllib.error.HTTPError as err:
        print("kubelet", path, err.code)
for name in ("pypi.org", "kubernetes.default.svc.cluster.local.example.com"):
    try:
        print("resolved", name, socket.gethostbyname(name))
    except OSError as err:
        print("unresolved", name)
"""
    text = _probe_pod(core_v1, namespace, script)
    # no client certificate, no anonymous access: exec and the pod list are closed to pods
    assert "kubelet /pods 401" in text, text
    assert "kubelet /run/default/x/y 401" in text, text
    # CoreDNS answers cluster.local only; nothing is forwarded to the host's resolver
    assert "unresolved pypi.org" in text, text


def _tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, cluster_tool.__file__, *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _node_cgroup_dirs() -> list[Path]:
    return [p for p in (m / realnode.CGROUP_ROOT for m in realnode.cgroup_mounts()) if p.exists()]


def test_the_real_node_leaves_the_host_as_it_found_it(
    real_node: RealNode, core_v1: client.CoreV1Api, namespace: str
) -> None:
    # something real on the node first: a pod with a network namespace, mounts and cgroups
    assert "ran" in _probe_pod(core_v1, namespace, "print('ran')")
    before = realnode.host_snapshot()
    assert realnode.BRIDGE in before["links"]
    assert _node_cgroup_dirs()

    down = _tool("real-node", "down")
    # `down` compares the host with the snapshot `up` took and fails naming any difference
    assert down.returncode == 0, down.stdout + down.stderr
    assert "the host is as it was" in down.stderr
    after = realnode.host_snapshot()
    assert realnode.BRIDGE not in after["links"]
    assert _node_cgroup_dirs() == []
    assert realnode.cgroup_pids() == set()
    assert not any("t9k-real-node" in m or "/node/kubelet" in m for m in after["mounts"])

    up = _tool("real-node", "up")
    assert up.returncode == 0, up.stdout + up.stderr
    node = wait_for(
        lambda: core_v1.read_node(realnode.NODE_NAME),
        lambda n: any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or []),
        "the real node to be Ready again",
        120,
    )
    assert node.metadata.labels["type"] == "real"
    assert "ran again" in _probe_pod(core_v1, namespace, "print('ran again')")


@pytest.mark.parametrize(
    ("placement_fields", "pod_fields", "what"),
    [
        (placement(), {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}, "a hostPath"),
        ({"nodeName": realnode.NODE_NAME}, {"hostNetwork": True}, "hostNetwork"),
        ({"tolerations": [{"operator": "Exists"}]}, {"hostPID": True}, "hostPID"),
        (placement(), {"privileged": True}, "a privileged container"),
        (placement(), {"image": "docker.io/library/busybox:1"}, "an image from a registry"),
    ],
)
def test_a_pod_headed_for_the_real_node_cannot_reach_into_the_machine(
    real_node: RealNode,
    core_v1: client.CoreV1Api,
    namespace: str,
    placement_fields: dict[str, object],
    pod_fields: dict[str, object],
    what: str,
) -> None:
    container: dict[str, object] = {"name": "c", "image": base_image(), "command": ["true"]}
    spec: dict[str, object] = {**placement_fields, "containers": [container]}
    if pod_fields.get("privileged"):
        container["securityContext"] = {"privileged": True}
    if "image" in pod_fields:
        container["image"] = pod_fields["image"]
    spec.update({k: v for k, v in pod_fields.items() if k not in ("privileged", "image")})
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hostile"}, "spec": spec}
    with pytest.raises(client.ApiException) as err:
        core_v1.create_namespaced_pod(namespace, body, dry_run="All")
    assert err.value.status in (403, 422), err.value
    assert f"may not use {what}" in str(err.value.body), err.value.body
    # the same pod for the kwok nodes (no placement on the real node) is not this policy's
    kwok_spec = {k: v for k, v in spec.items() if k not in placement_fields}
    core_v1.create_namespaced_pod(namespace, {**body, "spec": kwok_spec}, dry_run="All")


def test_a_second_cluster_is_refused_the_real_node_and_the_first_keeps_it(
    real_node: RealNode, core_v1: client.CoreV1Api, namespace: str, tmp_path: Path
) -> None:
    env = {**os.environ, "T9K_CLUSTER_DIR": str(tmp_path / "second")}
    tool = [sys.executable, cluster_tool.__file__]
    try:
        proc = subprocess.run(
            [*tool, "up"], env=env, capture_output=True, text=True, timeout=300, check=False
        )
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "a real node already runs for the cluster in" in proc.stderr, proc.stderr
    finally:
        subprocess.run([*tool, "down"], env=env, capture_output=True, timeout=120, check=False)
    # nothing of the first cluster's node was touched by the refused start or its clean-up
    assert realnode.BRIDGE in realnode.host_snapshot()["links"]
    assert realnode.cgroup_pids()
    assert "ran" in _probe_pod(core_v1, namespace, "print('ran')")


def _sleeper(core_v1: client.CoreV1Api, namespace: str, name: str) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            **placement(),
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "c",
                    "image": base_image(),
                    "imagePullPolicy": "Never",
                    "command": ["sleep", "3600"],
                }
            ],
        },
    }
    core_v1.create_namespaced_pod(namespace, body)


def test_a_pod_going_away_does_not_cut_the_dns_of_the_others(
    real_node: RealNode, core_v1: client.CoreV1Api, kubeconfig: Path, namespace: str
) -> None:
    """The bridge keeps its own MAC address while pods come and go. (A bridge without one takes
    its ports' lowest: when the pod holding it went, every other pod's DNS went quiet for 20 s
    and more, and a launcher's ssh check failed with 'Could not resolve hostname'.)"""
    names = ["p0", "p1", "p2"]
    for name in names:
        _sleeper(core_v1, namespace, name)
    wait_for(
        lambda: [core_v1.read_namespaced_pod(n, namespace).status.phase for n in names],
        lambda phases: phases == ["Running"] * len(names),
        "the pods running",
        120,
    )

    def run(pod: str, script: str) -> subprocess.CompletedProcess[str]:
        return kubectl(kubeconfig, "exec", "-n", namespace, pod, "--", "sh", "-c", script)

    # each pod's port on the bridge: its eth0's peer, by interface index
    brif = Path(f"/sys/class/net/{realnode.BRIDGE}/brif")
    ports = {}
    for name in names:
        peer = run(name, "cat /sys/class/net/eth0/iflink").stdout.strip()
        for port in brif.iterdir():
            if (Path("/sys/class/net") / port.name / "ifindex").read_text().strip() == peer:
                ports[name] = port.name
    assert sorted(ports) == names

    def mac(name: str) -> str:
        return (Path("/sys/class/net") / ports[name] / "address").read_text().strip()

    # the pod with the lowest MAC goes (a bridge without its own address had taken that one)
    victim, *_, survivor = sorted(names, key=mac)
    bridge = Path(f"/sys/class/net/{realnode.BRIDGE}/address")
    assert bridge.read_text().strip() == realnode.BRIDGE_MAC
    lookup = "timeout 4 getent ahostsv4 kubernetes.default.svc.cluster.local"
    assert run(survivor, lookup).returncode == 0  # its neighbour entry for the bridge is fresh
    core_v1.delete_namespaced_pod(victim, namespace, grace_period_seconds=0)
    wait_for(
        lambda: (brif / ports[victim]).exists(),
        lambda there: not there,
        f"{victim}'s port to leave the bridge",
        60,
    )
    assert bridge.read_text().strip() == realnode.BRIDGE_MAC
    answered = run(survivor, lookup)
    assert answered.returncode == 0, f"{survivor}'s DNS went quiet: {answered.stderr}"
    assert answered.stdout.startswith("10.0.0.1 ")
