"""The DeepSpeed/ColossalAI bootstrap scripts, run for real: OpenSSH's sshd in one network
namespace per worker, the launcher's readiness barrier in the host namespace resolving the
workers' DNS names (a private /etc/hosts in a mount namespace), key-based ssh with the job's
generated key and client config, the env file, and argv passing of hostile strings.

Needs root, iproute2, util-linux `unshare` and OpenSSH (client and server); `make test` installs
openssh-server from Debian's packages. Without them these tests fail under `make test`/CI
(T9K_REQUIRE_CLUSTER=1) and are skipped elsewhere.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from t9k_sdk.reconcile import bootstrap

SSHD = "/usr/sbin/sshd"
NEEDS = [
    SSHD,
    shutil.which("ssh"),
    shutil.which("ip"),
    shutil.which("unshare"),
    shutil.which("ssh-keygen"),
]
MISSING = os.geteuid() != 0 or not all(n and Path(n).exists() for n in NEEDS)
REASON = "needs root, iproute2, unshare and OpenSSH client+server (make test installs them)"

if MISSING:
    if os.environ.get("T9K_REQUIRE_CLUSTER") == "1":
        pytest.fail(f"bootstrap tests cannot run: {REASON}", pytrace=False)
    pytest.skip(REASON, allow_module_level=True)

HOSTILE = [
    "a b",
    "it's",
    'say "hi"',
    "x; touch /tmp/t9k-pwned",
    "$(id)",
    "`id`",
    "two\nlines",
    "*",
    "",
]


@dataclass
class Workers:
    hosts: dict[str, str]  # DNS name -> IP in its network namespace
    ssh_dir: Path
    scripts: Path
    hostfile: Path
    root: Path

    def hosts_file(self) -> Path:
        path = self.root / "hosts"
        lines = Path("/etc/hosts").read_text()
        lines += "".join(f"{ip} {name}\n" for name, ip in self.hosts.items())
        path.write_text(lines)
        return path

    def launch(
        self, argv: list[str], env: dict[str, str], timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run t9k-launch.sh as the launcher container would: with the workers' names in DNS."""
        script = (
            f"mount --bind {self.hosts_file()} /etc/hosts && "
            f'exec sh {self.scripts}/t9k-launch.sh "$@"'
        )
        full_env = {
            **os.environ,
            "T9K_HOSTFILE": str(self.hostfile),
            "T9K_SSH_DIR": str(self.ssh_dir),
            "T9K_TERMINATION_LOG": str(self.root / "termination-log"),
            **env,
        }
        return subprocess.run(
            ["unshare", "--mount", "sh", "-c", script, "launcher", *argv],
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def _sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True)


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    root = tmp_path_factory.mktemp("bootstrap")
    # The job's key, as the operator's Secret mounts it.
    key = root / "key"
    _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "t9k-test", "-f", str(key))
    ssh_dir = root / "ssh"
    ssh_dir.mkdir(mode=0o700)
    (ssh_dir / bootstrap.KEY_FILE).write_text(key.read_text())
    (ssh_dir / bootstrap.KEY_FILE).chmod(0o600)
    public = (root / "key.pub").read_text()
    (ssh_dir / "authorized_keys").write_text(public)
    (ssh_dir / "authorized_keys").chmod(0o600)
    (ssh_dir / "config").write_text(bootstrap.ssh_client_config(str(ssh_dir)))
    scripts = root / "scripts"
    scripts.mkdir()
    (scripts / "t9k-sshd.sh").write_text(bootstrap.SSHD_SCRIPT)
    (scripts / "t9k-launch.sh").write_text(bootstrap.LAUNCH_SCRIPT)
    tag = f"{os.getpid() % 10000}"
    hosts: dict[str, str] = {}
    procs: list[subprocess.Popen[bytes]] = []
    namespaces: list[str] = []
    links: list[str] = []
    try:
        for i in range(2):
            ns, host_if, ns_if = f"t9k-{tag}-w{i}", f"t9k{tag}h{i}", f"t9k{tag}n{i}"
            subnet = f"10.213.{(int(tag) + i) % 250}"
            _sh("ip", "netns", "add", ns)
            namespaces.append(ns)
            _sh("ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if)
            links.append(host_if)
            _sh("ip", "link", "set", ns_if, "netns", ns)
            _sh("ip", "addr", "add", f"{subnet}.1/24", "dev", host_if)
            _sh("ip", "link", "set", host_if, "up")
            _sh("ip", "netns", "exec", ns, "ip", "addr", "add", f"{subnet}.2/24", "dev", ns_if)
            _sh("ip", "netns", "exec", ns, "ip", "link", "set", ns_if, "up")
            _sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
            env = {**os.environ, "T9K_SSHD": SSHD, "T9K_SSH_DIR": str(ssh_dir)}
            procs.append(
                subprocess.Popen(
                    ["ip", "netns", "exec", ns, "sh", str(scripts / "t9k-sshd.sh")],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            hosts[f"demo-worker-{i}.demo"] = f"{subnet}.2"
        hostfile = root / "hostfile"
        hostfile.write_text("# generated\n" + "".join(f"{h} slots=1\n" for h in hosts))
        yield Workers(hosts, ssh_dir, scripts, hostfile, root)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        for link in links:
            subprocess.run(["ip", "link", "del", link], check=False, capture_output=True)
        for ns in namespaces:
            subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)


def test_barrier_waits_for_every_worker_then_runs_the_launcher_with_argv_intact(
    workers: Workers,
) -> None:
    out = workers.root / "argv.json"
    program = "import json, sys; json.dump(sys.argv[1:], open(sys.argv[1], 'w'))"
    result = workers.launch(
        ["python3", "-c", program, str(out), *HOSTILE], {"T9K_BARRIER_TIMEOUT": "30"}
    )
    assert result.returncode == 0, result.stderr
    for host in workers.hosts:
        assert f"t9k: {host} is ready" in result.stderr
    assert json.loads(out.read_text()) == [str(out), *HOSTILE]
    assert not Path("/tmp/t9k-pwned").exists()


def test_launcher_reaches_every_worker_over_ssh_with_the_job_key(workers: Workers) -> None:
    # What pdsh / colossalai run do after the barrier: ssh to each host and run a command there.
    hosts = " ".join(workers.hosts)
    program = f'for h in {hosts}; do ssh -F "$T9K_SSH_DIR/config" "$h" cat /proc/sys/kernel/hostname >/dev/null && echo "ok $h"; done'
    result = workers.launch(["sh", "-c", program], {"T9K_BARRIER_TIMEOUT": "30"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == [f"ok {h}" for h in workers.hosts]


def test_barrier_times_out_on_a_worker_without_sshd_with_a_clear_message(workers: Workers) -> None:
    hostfile = workers.root / "hostfile-dead"
    dead = "demo-worker-9.demo"
    workers.hosts[dead] = "10.213.251.2"  # resolves, but nothing listens there
    try:
        hostfile.write_text(workers.hostfile.read_text() + f"{dead} slots=1\n")
        started = time.monotonic()
        result = workers.launch(
            ["true"], {"T9K_HOSTFILE": str(hostfile), "T9K_BARRIER_TIMEOUT": "4"}
        )
    finally:
        del workers.hosts[dead]
    assert result.returncode == bootstrap.BARRIER_EXIT_CODE
    assert time.monotonic() - started < 30
    message = (workers.root / "termination-log").read_text()
    assert message == f"t9k bootstrap: worker {dead}: sshd did not answer within 4s\n"


def test_barrier_reports_names_that_do_not_resolve(workers: Workers) -> None:
    hostfile = workers.root / "hostfile-unknown"
    hostfile.write_text("nowhere-worker-0.nowhere slots=1\n")
    result = workers.launch(["true"], {"T9K_HOSTFILE": str(hostfile), "T9K_BARRIER_TIMEOUT": "2"})
    assert result.returncode == bootstrap.BARRIER_EXIT_CODE
    assert "nowhere-worker-0.nowhere: its DNS name did not resolve within 2s" in result.stderr
