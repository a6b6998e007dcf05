"""One real node beside the kwok nodes: containerd, a CNI bridge, kubelet and CoreDNS.

tools/cluster.py starts it after the control plane (`up`) and stops it first (`down`); this
module holds how. The node is called `t9k-real-node`, carries the label `type=real` and the
taint `t9k.dev/real-node=true:NoSchedule`, so only pods that ask for it (a nodeSelector and a
toleration) run there; every other pod keeps landing on the kwok nodes.

Leaving the host as it was found is part of the design, not a clean-up afterwards:

* containerd, kubelet and everything they start run inside a **mount namespace** of their own
  (a `sleep` holds it open). There, a tmpfs covers /run, /var/lib and /var/log, and plain files
  are bound over the kernel tunables kubelet and the bridge plugin would write
  (`vm.overcommit_memory`, `kernel.panic`, `kernel.panic_on_oops`, `net.ipv4.ip_forward`, ...):
  every mount they make (container root file systems, secret volumes, network namespace
  handles) and every file they drop in those directories goes away with the namespace.
* every process of the node (containerd, its shims, the containers, kubelet, CoreDNS) lives in
  one **cgroup tree of its own**, `/t9k-real-node`, which is also kubelet's `cgroupRoot`. `down`
  stops them in order, then kills whatever is still in that tree (ours by construction: nothing
  else is ever placed there) and removes the tree.
* the bridge `t9kbr0` (10.88.0.1/16) is the one link made in the host's network namespace; no
  iptables rule is written (no masquerade, `makeIPTablesUtilChains: false`, no kube-proxy).
  The bridge also holds 10.0.0.1/32, the `kubernetes` Service's address, where
  tools/apirelay.py relays in-cluster clients (the operator's pod) to the API server: gone with
  the bridge.
* CoreDNS answers cluster.local from the API server and nothing else (no forwarding): pods
  reach only the API server's objects, each other and the node.
* `up` records a snapshot of the host (those sysctls, the host's mount table, links, iptables
  chains, cgroup directories and the directories kubelet and containerd would use by default);
  `down` takes it again and fails, naming each difference, if the host is not as it was.

Images never come from a registry: tools/images.py builds them and they are imported here.
containerd's content store is kept in the cache (`~/.cache/t9k-sdk/node/`), so an image is
imported once per recipe, not once per `up`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

if __package__:  # imported as tools.realnode
    from . import procs
else:  # imported by tools/cluster.py run as a script: tools/ is sys.path[0]
    import procs  # type: ignore[no-redef]

Proc = procs.ProcessRecord

NODE_NAME: Final = "t9k-real-node"
NODE_LABEL: Final = ("type", "real")
TAINT_KEY: Final = "t9k.dev/real-node"
BRIDGE: Final = "t9kbr0"
BRIDGE_IP: Final = "10.88.0.1"
# The bridge's own MAC address, set when it is made. A Linux bridge without one takes the lowest
# MAC of its ports, and takes another whenever the pod holding it goes: every pod's neighbour
# entry for the gateway (and CoreDNS, which listens on the bridge) then names a MAC nobody
# answers for, and their DNS queries vanish until the entry expires (about 20-45 s). That was
# the mid-launch flake (docs/contributing/test-cluster.md, "The bridge's address"). Docker
# gives docker0 an address of its own for the same reason. Locally administered, unicast.
BRIDGE_MAC: Final = "02:74:39:6b:00:01"
POD_CIDR: Final = "10.88.0.0/16"
# The `kubernetes` Service's ClusterIP (the first address of tools/cluster.py's service range):
# in-cluster clients (the operator's pod) reach the API server there. The node puts it on its
# bridge and tools/apirelay.py relays it to the API server on loopback: kube-proxy's job for
# this one Service, without iptables rules or ip_forward on the host.
API_SERVICE_IP: Final = "10.0.0.1"
API_SERVICE_PORT: Final = 443
# containerd's registry client goes through this proxy, a closed port on loopback: a pull can
# never leave the machine, whatever an image's name says (the images are imported, not pulled).
NO_PULL_PROXY: Final = "http://127.0.0.1:9"
CGROUP_ROOT: Final = "t9k-real-node"
CLUSTER_DOMAIN: Final = "cluster.local"

# What kubelet (KernelTunableModify) and the bridge plugin (isGateway) would write on the host;
# inside the node's mount namespace plain files holding these values are bound over them.
FAKE_SYSCTLS: Final = {
    "vm/overcommit_memory": "1",
    "vm/panic_on_oom": "0",
    "kernel/panic": "10",
    "kernel/panic_on_oops": "1",
    "kernel/keys/root_maxkeys": "1000000",
    "kernel/keys/root_maxbytes": "25000000",
    "net/ipv4/ip_forward": "1",
}
# Covered by a tmpfs inside the namespace: what kubelet, containerd and the CNI library write
# to by default even when told to use other directories (/var/log/containers, /var/lib/cni,
# /run/containerd, /var/run/netns).
PRIVATE_DIRS: Final = ("/run", "/var/lib", "/var/log")
# Default paths of kubelet, containerd and CNI, which must not appear on the host.
WATCHED_PATHS: Final = (
    "/var/lib/kubelet",
    "/var/lib/containerd",
    "/var/lib/cni",
    "/var/log/containers",
    "/var/log/pods",
    "/run/containerd",
    "/var/run/netns",
    "/etc/cni/net.d",
    "/opt/cni",
    "/etc/kubernetes",
)
PACKAGES: Final = {
    "containerd": "containerd",
    "runc": "runc",
    "ctr": "containerd",
    "/usr/lib/cni/bridge": "containernetworking-plugins",
    "unshare": "util-linux",
    "nsenter": "util-linux",
    "ip": "iproute2",
}


class NodeError(Exception):
    """The real node could not start or stop; the message says why and what to read."""


class NodeRefused(NodeError):
    """The real node was not started, and nothing was changed: another one runs, or this
    machine lacks something. Nothing is to be undone (above all, not the other node)."""


class ApiLike(Protocol):
    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = 10.0,
        accept: str = "application/json",
    ) -> tuple[int, Any]: ...


def cache_dir() -> Path:
    env = os.environ.get("T9K_CACHE_DIR")
    if env:
        return Path(env) / "node"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "t9k-sdk" / "node"


@dataclass
class Paths:
    """Where the node keeps its files: run-time state under the cluster's directory, the
    container images in the cache (they outlive a cluster)."""

    state_dir: Path  # <cluster>/node

    @property
    def containerd_root(self) -> Path:
        return cache_dir() / "containerd"

    @property
    def containerd_state(self) -> Path:
        return self.state_dir / "containerd"

    @property
    def socket(self) -> Path:
        return self.state_dir / "containerd.sock"

    @property
    def kubelet_dir(self) -> Path:
        return self.state_dir / "kubelet"

    @property
    def cni_conf_dir(self) -> Path:
        return self.state_dir / "cni" / "net.d"

    @property
    def ipam_dir(self) -> Path:
        return self.state_dir / "cni" / "ipam"

    @property
    def pod_logs(self) -> Path:
        return self.state_dir / "pod-logs"

    @property
    def sysctl_dir(self) -> Path:
        return self.state_dir / "sysctl"

    @property
    def host_before(self) -> Path:
        return self.state_dir / "host-before.json"

    @property
    def info(self) -> Path:
        return self.state_dir / "node.json"


# --------------------------------------------------------------------------------------------
# processes and cgroups


def cgroup_mounts() -> list[Path]:
    """The mount point of every cgroup hierarchy (v1: one per controller; v2: one)."""
    found: list[Path] = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fstype = right.split()[0] if right else ""
        if fstype in ("cgroup", "cgroup2"):
            found.append(Path(left.split()[4]))
    return found


def _node_cgroups() -> list[Path]:
    return [m / CGROUP_ROOT for m in cgroup_mounts()]


def _make_cgroups() -> None:
    for mount in cgroup_mounts():
        top = mount / CGROUP_ROOT
        for sub in (top, top / "system"):
            sub.mkdir(exist_ok=True)
            if mount.name == "cpuset" or (mount / "cpuset.cpus").exists():
                # a v1 cpuset cgroup starts empty and accepts no task until cpus and mems are set
                for knob in ("cpuset.cpus", "cpuset.mems"):
                    own = sub / knob
                    if own.exists() and not own.read_text().strip():
                        own.write_text((sub.parent / knob).read_text())


def _join_system_cgroup() -> None:
    """preexec_fn: move the child into <cgroup root>/system in every hierarchy before exec."""
    pid = str(os.getpid())
    for top in _node_cgroups():
        procs = top / "system" / "cgroup.procs"
        if procs.exists():
            procs.write_text(pid)


def cgroup_pids() -> set[int]:
    """Every process in the node's cgroup tree, in any hierarchy."""
    pids: set[int] = set()
    for top in _node_cgroups():
        if not top.is_dir():
            continue
        for procs in top.rglob("cgroup.procs"):
            with contextlib.suppress(OSError):
                pids.update(int(p) for p in procs.read_text().split())
    return pids


def _remove_cgroups() -> list[str]:
    """rmdir the node's cgroup tree, deepest first; returns what could not be removed."""
    left: list[str] = []
    for top in _node_cgroups():
        if not top.is_dir():
            continue
        dirs = sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
        for d in [*dirs, top]:
            try:
                d.rmdir()
            except FileNotFoundError:
                pass
            except OSError as err:
                left.append(f"{d}: {err.strerror}")
    return left


def _spawn(name: str, argv: list[str], log_dir: Path, env: dict[str, str] | None = None) -> Proc:
    return procs.spawn(name, argv, log_dir, env=env, before_exec=_join_system_cgroup)


def _stop(proc: Proc, grace: float) -> None:
    if not proc.alive():
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while proc.alive() and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(proc.pid, os.WNOHANG)
        time.sleep(0.1)
    if proc.alive():
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)


def _kill_cgroup_tree(timeout: float = 15.0) -> list[int]:
    """SIGKILL every process left in the node's cgroups until none is; returns survivors."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = cgroup_pids()
        if not pids:
            return []
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        time.sleep(0.2)
    return sorted(cgroup_pids())


# --------------------------------------------------------------------------------------------
# the host, before and after


def _run_text(argv: list[str]) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout if proc.returncode == 0 else ""


def host_snapshot() -> dict[str, list[str]]:
    """What the node could change on the host, in comparable form."""
    sysctls = []
    for key in FAKE_SYSCTLS:
        with contextlib.suppress(OSError):
            sysctls.append(f"{key.replace('/', '.')}={Path('/proc/sys', key).read_text().strip()}")
    mounts = sorted(
        {
            line.split()[4]
            for line in Path("/proc/self/mountinfo").read_text().splitlines()
            if len(line.split()) > 4
        }
    )
    links = sorted(
        line.split(":")[1].strip().split("@")[0]
        for line in _run_text(["ip", "-o", "link", "show"]).splitlines()
        if ":" in line
    )
    chains: list[str] = []
    for tool in ("iptables-save", "ip6tables-save"):
        if shutil.which(tool):
            table = ""
            for line in _run_text([tool]).splitlines():
                if line.startswith("*"):
                    table = line[1:]
                elif line.startswith((":", "-A")):
                    chains.append(f"{tool.split('-')[0]} {table} {line.split(' [')[0]}")
    cgroups = sorted(
        str(p)
        for mount in cgroup_mounts()
        for p in (mount / CGROUP_ROOT, mount / "kubepods", mount / "k8s.io")
        if p.exists()
    )
    paths = sorted(p for p in WATCHED_PATHS if os.path.lexists(p))
    return {
        "sysctls": sysctls,
        "mounts": mounts,
        "links": links,
        "iptables": sorted(chains),
        "cgroups": cgroups,
        "paths": paths,
    }


def host_differences(before: dict[str, list[str]], after: dict[str, list[str]]) -> list[str]:
    """Each change from `before` to `after`, in words."""
    out: list[str] = []
    for kind in sorted(set(before) | set(after)):
        old, new = set(before.get(kind, [])), set(after.get(kind, []))
        out.extend(f"{kind}: added {item}" for item in sorted(new - old))
        out.extend(f"{kind}: removed {item}" for item in sorted(old - new))
    return out


# --------------------------------------------------------------------------------------------
# start


def preflight(paths: Sequence[Path] = ()) -> list[str]:
    """Why the node cannot start here, one line per reason (empty when it can). `paths`: the
    directories the node keeps its files in, which must not lie where the node's mount
    namespace covers the host's directories with a tmpfs."""
    problems: list[str] = []
    for path in paths:
        resolved = path.resolve()
        for private in PRIVATE_DIRS:
            if resolved.is_relative_to(Path(private).resolve()):
                problems.append(
                    f"{path} lies under {private}, which the real node covers with a tmpfs of"
                    " its own: use another directory (T9K_CLUSTER_DIR, T9K_CACHE_DIR)"
                )
    if os.geteuid() != 0:
        problems.append(
            "the real node needs root (containerd, cgroups, a bridge and mounts in a namespace of"
            " its own); run as root, or pass --no-real-node for a kwok-only cluster"
        )
    missing = sorted(
        {pkg for tool, pkg in PACKAGES.items() if not (shutil.which(tool) or Path(tool).exists())}
    )
    if missing:
        problems.append(
            f"missing Debian packages {' '.join(missing)}: run `make system-packages`"
            f" (apt-get install {' '.join(missing)})"
        )
    if not cgroup_mounts():
        problems.append("no cgroup file system is mounted")
    problems.extend(_subnet_taken())
    return problems


def _subnet_taken() -> list[str]:
    """The pods' subnet must be free on this machine: a route to it that is not the node's
    own bridge would send the pods' traffic somewhere else."""
    import ipaddress

    ours = ipaddress.ip_network(POD_CIDR)
    service = ipaddress.ip_network(f"{API_SERVICE_IP}/32")
    taken = []
    for line in _run_text(["ip", "-o", "-4", "route", "show"]).splitlines():
        dest = line.split()[0] if line.split() else ""
        if f"dev {BRIDGE} " in line + " ":
            continue
        if dest == "default":
            if f"via {API_SERVICE_IP} " in line + " ":
                taken.append(
                    f"the API server's Service address {API_SERVICE_IP} is this"
                    f" machine's gateway: {line}"
                )
            continue
        try:
            if ipaddress.ip_network(dest, strict=False).overlaps(ours):
                taken.append(f"the pods' subnet {POD_CIDR} is in use on this machine: {line}")
            if ipaddress.ip_network(dest, strict=False).overlaps(service):
                taken.append(
                    f"the API server's Service address {API_SERVICE_IP} is routed on this"
                    f" machine: {line}"
                )
        except ValueError:
            continue
    return taken


def _wait(what: str, check: Callable[[], bool], timeout: float, procs: list[Proc]) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        for p in procs:
            if not p.alive():
                raise NodeError(f"{p.name} exited while {what}; read {p.log}:\n{_tail(p.log)}")
        if time.monotonic() > deadline:
            logs = "; ".join(p.log for p in procs)
            raise NodeError(f"timed out after {timeout:.0f}s {what}; read {logs}")
        time.sleep(0.2)


def _tail(path: str, lines: int = 20) -> str:
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return "    (no log)"
    return "\n".join("    " + line for line in text[-lines:])


def _in_ns(holder: Proc, argv: list[str]) -> list[str]:
    return ["nsenter", f"--target={holder.pid}", "--mount", "--", *argv]


def _ns_setup(holder: Proc, paths: Paths) -> None:
    """Inside the node's mount namespace: tmpfs over the default directories, and plain files
    bound over the kernel tunables."""
    for d in PRIVATE_DIRS:
        _check(_in_ns(holder, ["mount", "-t", "tmpfs", "-o", "mode=755,size=512m", "t9k-node", d]))
    paths.sysctl_dir.mkdir(parents=True, exist_ok=True)
    for key, value in FAKE_SYSCTLS.items():
        target = Path("/proc/sys", key)
        if not target.exists():
            continue
        fake = paths.sysctl_dir / key.replace("/", ".")
        fake.write_text(value + "\n")
        _check(_in_ns(holder, ["mount", "--bind", str(fake), str(target)]))


def _check(argv: list[str]) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise NodeError(f"`{' '.join(argv)}` failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def _containerd_config(paths: Paths, pause_ref: str) -> str:
    return f"""version = 2
root = "{paths.containerd_root}"
state = "{paths.containerd_state}"
oom_score = 0

[grpc]
  address = "{paths.socket}"

[ttrpc]
  address = "{paths.socket}.ttrpc"

[metrics]
  address = ""

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause_ref}"
  # no CAP_SYS_RESOURCE here: a negative oom_score_adj cannot be written, clamp it instead
  restrict_oom_score_adj = true
  enable_selinux = false
  disable_apparmor = true
  max_container_log_line_size = 16384
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{paths.cni_conf_dir}"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{paths.state_dir / 'opt'}"
"""


def _cni_config(paths: Paths) -> dict[str, Any]:
    return {
        "cniVersion": "1.0.0",
        "name": "t9k-node",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "ipMasq": False,  # nothing leaves the bridge: no NAT rule on the host
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(paths.ipam_dir),
                    # the pod's connected /16 reaches the other pods and the node; the one
                    # route more is the API server's Service address, via the bridge (where
                    # tools/apirelay.py answers it). Nothing else is routed anywhere.
                    "ranges": [[{"subnet": POD_CIDR, "rangeStart": "10.88.1.1"}]],
                    "routes": [{"dst": f"{API_SERVICE_IP}/32", "gw": BRIDGE_IP}],
                },
            },
            {"type": "loopback"},
        ],
    }


def _kubelet_config(paths: Paths, ports: dict[str, int], pki: Path) -> dict[str, Any]:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": BRIDGE_IP,
        "port": ports["kubelet"],
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": ports["kubelet-healthz"],
        # The API server presents the admin client certificate (--kubelet-client-certificate);
        # nobody else may use the kubelet API (exec, logs) on the bridge.
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(pki / "ca.crt")},
        },
        "authorization": {"mode": "Webhook"},
        "containerRuntimeEndpoint": f"unix://{paths.socket}",
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": f"/{CGROUP_ROOT}",
        "failCgroupV1": False,
        "cgroupsPerQOS": True,
        "enforceNodeAllocatable": ["pods"],
        "clusterDNS": [BRIDGE_IP],
        "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": str(paths.kubelet_dir / "resolv.conf"),
        "podLogsDir": str(paths.pod_logs),
        # no CAP_SYS_RESOURCE here: kubelet cannot lower its own oom_score_adj
        "oomScoreAdj": 0,
        "failSwapOn": False,
        "serializeImagePulls": False,
        "maxPods": 40,
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {
            "memory.available": "200Mi",
            "nodefs.available": "2%",
            "imagefs.available": "2%",
            "nodefs.inodesFree": "1%",
        },
        "registerWithTaints": [{"key": TAINT_KEY, "value": "true", "effect": "NoSchedule"}],
        "nodeStatusReportFrequency": "10s",
        "nodeStatusUpdateFrequency": "2s",
        "syncFrequency": "5s",
        "fileCheckFrequency": "20s",
        "staticPodPath": "",
        "makeIPTablesUtilChains": False,  # else KUBE-FIREWALL and canary chains on the host
        "shutdownGracePeriod": "0s",
    }


def _corefile(kubeconfig: Path, port: int) -> str:
    return f""".:53 {{
    bind {BRIDGE_IP}
    errors
    log
    health 127.0.0.1:{port}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig}
        pods insecure
        ttl 5
    }}
}}
"""


# A pod headed for the real node (by name, label or a toleration that lets it on) may not reach
# into the machine: no host network, PID or IPC namespace, no hostPath volume, no privileged
# container, no added capability, no image from a registry. The node's containers run as root
# on this very machine.
_ON_THE_NODE = (
    f"(has(object.spec.nodeName) && object.spec.nodeName == '{NODE_NAME}')"
    f" || (has(object.spec.nodeSelector) && '{NODE_LABEL[0]}' in object.spec.nodeSelector"
    f" && object.spec.nodeSelector['{NODE_LABEL[0]}'] == '{NODE_LABEL[1]}')"
    " || (has(object.spec.tolerations) && object.spec.tolerations.exists(t,"
    f" !has(t.key) || t.key == '' || t.key == '{TAINT_KEY}'))"
)
_CONTAINERS = (
    "(object.spec.containers"
    " + (has(object.spec.initContainers) ? object.spec.initContainers : [])"
    " + (has(object.spec.ephemeralContainers) ? object.spec.ephemeralContainers : []))"
)
POD_POLICY: Final = "t9k-real-node-pods"


def pod_policy(also_allowed: Sequence[str] = ()) -> tuple[dict[str, Any], dict[str, Any]]:
    """A ValidatingAdmissionPolicy and its binding that keep pods on the node off the host.
    `also_allowed`: image names besides `localhost/...` (the operator's release name, which
    the node holds, imported: its containerd cannot pull, NO_PULL_PROXY)."""
    allowed = "".join(f" || c.image == '{ref}'" for ref in also_allowed)
    rules = [
        ("!has(object.spec.hostNetwork) || !object.spec.hostNetwork", "hostNetwork"),
        ("!has(object.spec.hostPID) || !object.spec.hostPID", "hostPID"),
        ("!has(object.spec.hostIPC) || !object.spec.hostIPC", "hostIPC"),
        (
            "!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.hostPath))",
            "a hostPath volume",
        ),
        (
            f"{_CONTAINERS}.all(c, !has(c.securityContext)"
            " || ((!has(c.securityContext.privileged) || !c.securityContext.privileged)"
            " && (!has(c.securityContext.capabilities)"
            " || !has(c.securityContext.capabilities.add))))",
            "a privileged container or added capabilities",
        ),
        (
            # images are built here and never pulled: a name elsewhere would be pulled from
            # a registry on the machine's network (localhost/ names a pull could only try here)
            f"{_CONTAINERS}.all(c, c.image.startsWith('localhost/'){allowed})",
            "an image from a registry (only the images of tools/images.py, localhost/...)",
        ),
    ]
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": POD_POLICY},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["pods"],
                    }
                ]
            },
            "matchConditions": [{"name": "on-the-real-node", "expression": _ON_THE_NODE}],
            "validations": [
                {
                    "expression": expr,
                    "message": f"a pod on the real node {NODE_NAME} may not use {what}: its"
                    " containers run as root on the machine that runs the tests",
                }
                for expr, what in rules
            ],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": POD_POLICY},
        "spec": {"policyName": POD_POLICY, "validationActions": ["Deny"]},
    }
    return policy, binding


def _apply_pod_policy(api: ApiLike, also_allowed: Sequence[str]) -> None:
    base = "/apis/admissionregistration.k8s.io/v1"
    for obj, plural in zip(
        pod_policy(also_allowed),
        ("validatingadmissionpolicies", "validatingadmissionpolicybindings"),
        strict=True,
    ):
        status, body = api.request(
            "PATCH",
            f"{base}/{plural}/{obj['metadata']['name']}?fieldManager=t9k-cluster&force=true",
            obj,
            content_type="application/apply-patch+yaml",
        )
        if status not in (200, 201):
            raise NodeError(
                f"applying the {obj['kind']} {POD_POLICY} failed (HTTP {status}): {body}"
            )


def _node_ready(api: ApiLike) -> bool:
    status, body = api.request("GET", f"/api/v1/nodes/{NODE_NAME}")
    if status != 200 or not isinstance(body, dict):
        return False
    conditions = (body.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def up(
    api: ApiLike,
    state_dir: Path,
    kubeconfig: Path,
    pki: Path,
    bin_dir: Path,
    images: Callable[[], tuple[str, list[str]]],
    say: Callable[[str], None],
    record: Callable[[Proc], None],
    *,
    api_port: int,
    also_allowed: Sequence[str] = (),
) -> None:
    """Start the node. `api_port`: the API server's port on loopback (for the relay);
    `also_allowed`: images the pod policy admits besides `localhost/...`. `record` is called with each process as soon as it runs (the namespace
    holder first), so that a failure, or an interrupt, at any point leaves a record that
    `down` goes by. `images()` returns the pause image's name and the archives to import.

    NodeRefused: nothing was started or changed. Any other failure: the caller runs `down`.
    """
    problems = preflight([state_dir, cache_dir()])
    if problems:
        raise NodeRefused("the real node cannot start:\n  " + "\n  ".join(problems))
    _apply_pod_policy(api, also_allowed)  # before any pod can reach the node
    other = _other_owner(state_dir)
    if other:
        raise NodeRefused(
            f"a real node already runs for the cluster in {other} (one per machine): stop it with"
            f" `T9K_CLUSTER_DIR={other} python tools/cluster.py down`, or start this cluster"
            " with --no-real-node"
        )
    _remove_leftovers(say)
    paths = Paths(state_dir)
    for d in (paths.state_dir, paths.kubelet_dir, paths.cni_conf_dir, paths.ipam_dir):
        d.mkdir(parents=True, exist_ok=True)
    paths.containerd_root.mkdir(parents=True, exist_ok=True)
    paths.pod_logs.mkdir(exist_ok=True)
    logs = paths.state_dir / "logs"
    logs.mkdir(exist_ok=True)
    paths.host_before.write_text(json.dumps(host_snapshot(), indent=1))
    ports = procs.free_ports(["kubelet", "kubelet-healthz", "coredns-health"])
    paths.info.write_text(json.dumps({"ports": ports, "owner": str(state_dir)}))
    _claim(state_dir)
    t0 = time.monotonic()

    _make_cgroups()
    holder = _spawn(
        "node-namespace",
        ["unshare", "--mount", "--propagation", "slave", "--", "sleep", "infinity"],
        logs,
    )
    record(holder)
    _wait("creating the mount namespace", lambda: _ns_ready(holder), 10, [holder])
    _ns_setup(holder, paths)

    pause_ref, archives = images()
    (paths.state_dir / "containerd.toml").write_text(_containerd_config(paths, pause_ref))
    no_pull = {"HTTPS_PROXY": NO_PULL_PROXY, "HTTP_PROXY": NO_PULL_PROXY, "NO_PROXY": ""}
    containerd = _spawn(
        "containerd",
        _in_ns(holder, ["containerd", "--config", str(paths.state_dir / "containerd.toml")]),
        logs,
        env={**os.environ, **no_pull},
    )
    record(containerd)
    ctr = _ctr(paths)
    _wait(
        "waiting for containerd to answer",
        lambda: subprocess.run([*ctr, "version"], capture_output=True, check=False).returncode == 0,
        30,
        [containerd],
    )
    load_images(paths, archives, say)
    say(f"containerd {time.monotonic() - t0:.1f}s")

    _check(["ip", "link", "add", BRIDGE, "address", BRIDGE_MAC, "type", "bridge"])
    _check(["ip", "addr", "add", f"{BRIDGE_IP}/16", "dev", BRIDGE])
    _check(["ip", "addr", "add", f"{API_SERVICE_IP}/32", "dev", BRIDGE])
    _check(["ip", "link", "set", BRIDGE, "up"])
    relay = _spawn(
        "apirelay",
        [
            sys.executable,
            str(Path(__file__).with_name("apirelay.py")),
            API_SERVICE_IP,
            str(API_SERVICE_PORT),
            "127.0.0.1",
            str(api_port),
        ],
        logs,
    )
    record(relay)
    (paths.cni_conf_dir / "10-t9k.conflist").write_text(json.dumps(_cni_config(paths), indent=2))

    corefile = paths.state_dir / "Corefile"
    corefile.write_text(_corefile(kubeconfig, ports["coredns-health"]))
    coredns = _spawn("coredns", [str(bin_dir / "coredns"), "-conf", str(corefile)], logs)
    record(coredns)

    (paths.kubelet_dir / "resolv.conf").write_text("")  # pods get only the cluster's DNS
    config = paths.kubelet_dir / "config.yaml"
    config.write_text(json.dumps(_kubelet_config(paths, ports, pki), indent=1))
    shutil.copy(kubeconfig, paths.kubelet_dir / "kubeconfig")
    kubelet = _spawn(
        "kubelet",
        _in_ns(
            holder,
            [
                str(bin_dir / "kubelet"),
                f"--config={config}",
                f"--kubeconfig={paths.kubelet_dir / 'kubeconfig'}",
                f"--root-dir={paths.kubelet_dir / 'root'}",
                f"--hostname-override={NODE_NAME}",
                f"--node-ip={BRIDGE_IP}",
                f"--node-labels={NODE_LABEL[0]}={NODE_LABEL[1]}",
                "--v=1",
            ],
        ),
        logs,
    )
    record(kubelet)
    health = f"http://127.0.0.1:{ports['coredns-health']}/health"
    _wait("waiting for CoreDNS", lambda: procs.http_get(health)[0] == 200, 30, [coredns])
    _wait("waiting for the node to be Ready", lambda: _node_ready(api), 90, [kubelet, containerd])
    say(f"node Ready {time.monotonic() - t0:.1f}s")


def _remove_leftovers(say: Callable[[str], None]) -> None:
    """Undo what a real node that was killed (not stopped with `down`) left: its bridge and its
    empty cgroup tree. Refuses while any process still runs in that tree."""
    pids = cgroup_pids()
    if pids:
        raise NodeRefused(
            f"processes of another real node still run (pids {sorted(pids)[:10]}, in the cgroup"
            f" tree /{CGROUP_ROOT}): stop that cluster with `python tools/cluster.py down` in its"
            " checkout first"
        )
    if Path(f"/sys/class/net/{BRIDGE}").exists():
        _check(["ip", "link", "del", BRIDGE])
        say(f"removed the bridge {BRIDGE}, left by a real node that was killed")
    left = _remove_cgroups()
    if left:
        raise NodeError("cannot remove the cgroups a killed real node left: " + "; ".join(left))


def _ns_ready(holder: Proc) -> bool:
    try:
        return os.readlink(f"/proc/{holder.pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
    except OSError:
        return False


def _ctr(paths: Paths) -> list[str]:
    return ["ctr", "--address", str(paths.socket), "--namespace", "k8s.io"]


def _archive_manifest(archive: str) -> tuple[str, str]:
    """(image name, manifest digest) of an OCI archive of tools/images.py."""
    import tarfile

    with tarfile.open(archive) as tf:
        fh = tf.extractfile("index.json")
        index = json.load(fh) if fh else {}
    entry = index["manifests"][0]
    return str(entry["annotations"]["io.containerd.image.name"]), str(entry["digest"])


def load_images(paths: Paths, archives: Sequence[str], say: Callable[[str], None]) -> None:
    """Make containerd hold exactly these images of the project: import each archive unless
    its manifest is there already, then remove the project's images (`localhost/t9k/...`) of
    older recipes, whose layers containerd's garbage collector then frees: a rebuilt 6 GB
    training image does not pile up."""
    ctr = _ctr(paths)

    def listing() -> dict[str, str]:
        rows = subprocess.run(
            [*ctr, "images", "ls"], capture_output=True, text=True, check=False
        ).stdout.splitlines()[1:]
        return {row.split()[0]: row.split()[2] for row in rows if len(row.split()) > 2}

    present = listing()
    kept: set[str] = set()
    for archive in archives:
        name, digest = _archive_manifest(archive)
        kept.add(digest)
        if present.get(name) == digest:
            continue
        start = time.monotonic()
        say(f"importing {name} into containerd (once per image recipe)")
        _check([*ctr, "images", "import", archive])
        say(f"imported {name} in {time.monotonic() - start:.0f}s")
    # kubelet also names each image by its id (`sha256:...`): those go with their image
    stale = sorted(
        ref
        for ref, digest in listing().items()
        if ref.startswith(("localhost/t9k/", "sha256:")) and digest not in kept
    )
    if stale:
        _check([*ctr, "images", "rm", "--sync", *stale])
        named = [ref for ref in stale if not ref.startswith("sha256:")]
        say(f"removed images of older recipes: {', '.join(named) or ', '.join(stale)}")


def _owner_file() -> Path:
    return cache_dir() / "owner"


def owned_by(state_dir: Path) -> bool:
    """Whether the machine's real node (its cgroup tree and bridge) is this cluster's."""
    try:
        return _owner_file().read_text().strip() == str(state_dir.parent)
    except OSError:
        return False


def _claim(state_dir: Path) -> None:
    _owner_file().parent.mkdir(parents=True, exist_ok=True)
    _owner_file().write_text(str(state_dir.parent))


def _other_owner(state_dir: Path) -> str | None:
    """The cluster directory of another live real node on this machine, if any."""
    try:
        owner = _owner_file().read_text().strip()
    except OSError:
        return None
    if owner == str(state_dir.parent):
        return None
    info = Path(owner) / "node" / "node.json"
    return owner if info.exists() and cgroup_pids() else None


# --------------------------------------------------------------------------------------------
# stop


def _delete_pods(api: ApiLike, timeout: float) -> None:
    """Cordon the node and delete its pods while kubelet still runs, so that kubelet tears
    them down (containers, network namespaces, volumes, cgroups) the regular way."""
    api.request(
        "PATCH",
        f"/api/v1/nodes/{NODE_NAME}",
        {"spec": {"unschedulable": True}},
        content_type="application/merge-patch+json",
    )
    selector = f"spec.nodeName%3D{NODE_NAME}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body = api.request("GET", f"/api/v1/pods?fieldSelector={selector}")
        if status != 200 or not isinstance(body, dict):
            return
        items = body.get("items") or []
        if not items:
            return
        for pod in items:
            meta = pod["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            api.request(
                "DELETE",
                f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                {"gracePeriodSeconds": 2},
            )
        time.sleep(0.5)


def down(
    api: ApiLike | None, state_dir: Path, procs: list[Proc], say: Callable[[str], None]
) -> list[str]:
    """Stop the node and undo every change on the host; returns what differs from before `up`
    (empty when the host is as it was). The cgroup tree and the bridge are touched only when
    this cluster owns the machine's real node: never another checkout's."""
    paths = Paths(state_dir)
    mine = owned_by(state_dir)
    by_name = {p.name: p for p in procs}
    kubelet = by_name.get("kubelet")
    if api is not None and kubelet is not None and kubelet.alive():
        with contextlib.suppress(OSError):
            _delete_pods(api, timeout=45)
    for name in ("kubelet", "coredns", "apirelay"):
        if name in by_name:
            _stop(by_name[name], 10)
    containerd = by_name.get("containerd")
    if containerd is not None and containerd.alive():
        ctr = _ctr(paths)
        for task in _run_text([*ctr, "tasks", "ls", "-q"]).split():
            _run_text([*ctr, "tasks", "kill", "--signal", "SIGKILL", task])
        _stop(containerd, 10)
    if not mine:
        for proc in procs:  # only what this cluster recorded
            _stop(proc, 5)
        say("the machine's real node belongs to another cluster: left it alone")
        return []
    survivors = _kill_cgroup_tree()
    for proc in procs:  # the namespace holder is in the tree too; reap it if it is our child
        with contextlib.suppress(ChildProcessError):
            os.waitpid(proc.pid, os.WNOHANG)
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        if Path(f"/sys/class/net/{BRIDGE}").exists():
            _check(["ip", "link", "del", BRIDGE])
    problems = [f"processes still in the node's cgroups: {survivors}"] if survivors else []
    problems += [f"cgroup not removed: {c}" for c in _remove_cgroups()]
    if api is not None:
        with contextlib.suppress(OSError):
            api.request("DELETE", f"/api/v1/nodes/{NODE_NAME}")
    try:
        before = json.loads(paths.host_before.read_text())
    except (OSError, ValueError):
        before = None
    if before is not None:
        # a pod's network namespace, and its veth, go a moment after its last process
        deadline = time.monotonic() + 15
        while (diff := host_differences(before, host_snapshot())) and time.monotonic() < deadline:
            time.sleep(0.5)
        problems += diff
    _owner_file().unlink(missing_ok=True)  # ours: `mine` was checked above
    say("real node stopped" + ("" if problems else "; the host is as it was"))
    return problems
