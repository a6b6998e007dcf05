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
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from t9k_sdk import codecs
from t9k_sdk.reconcile import bootstrap
from t9k_sdk.reconcile.children import desired_children
from tests.sdk.manifests import colossalai_job, deepspeed_job, pod

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


def _job_files(root: Path) -> tuple[Path, Path]:
    """The job's key, as the operator's Secret mounts it, and the ConfigMap's scripts."""
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
    for name, text in bootstrap.config_map({}, "")["data"].items():
        if name.endswith(".sh"):
            (scripts / name).write_text(text)
    return ssh_dir, scripts


_NAMESPACES = iter(range(1000))


@dataclass
class Pods:
    """Worker pods, each in its own network namespace; names resolve through `hosts_file`."""

    hosts: dict[str, str]
    namespaces: list[str]
    procs: list[subprocess.Popen[bytes]]
    hosts_file: Path

    def exec(
        self, i: int, argv: list[str], env: dict[str, str], timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run `argv` in worker i's network namespace with the workers' names in DNS."""
        return subprocess.run(
            ["ip", "netns", "exec", self.namespaces[i], *_with_hosts(self.hosts_file, argv)],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def _with_hosts(hosts_file: Path, argv: list[str]) -> list[str]:
    script = f'mount --bind {hosts_file} /etc/hosts && exec "$@"'
    return ["unshare", "--mount", "sh", "-c", script, "pod", *argv]


def _mounted(path: str) -> bool:
    return any(
        line.split()[4] == path for line in Path("/proc/self/mountinfo").read_text().splitlines()
    )


@pytest.fixture(autouse=True, scope="module")
def _run_netns_left_as_found() -> Iterator[None]:
    """`ip netns add` creates /run/netns and makes it a shared bind mount of itself, and `ip
    netns del` leaves both: undo them, so that the tests leave the host as they found it."""
    existed, mounted = os.path.lexists("/run/netns"), _mounted("/run/netns")
    yield
    if not mounted and _mounted("/run/netns") and not os.listdir("/run/netns"):
        subprocess.run(["umount", "/run/netns"], check=False, capture_output=True)
    if not existed and os.path.isdir("/run/netns") and not os.listdir("/run/netns"):
        os.rmdir("/run/netns")


@contextmanager
def _worker_namespaces(
    count: int,
    start: Callable[[int, Path], tuple[list[str], dict[str, str]] | None],
    root: Path,
    job: str = "demo",
) -> Iterator[Pods]:
    """Worker i in its own network namespace, running `start(i, hosts_file)` as its pod would
    (None: nothing yet); its output goes to root/worker-<i>.log."""
    tag = f"{(os.getpid() + next(_NAMESPACES) * 7) % 10000}"
    pods = Pods({}, [], [], root / f"hosts-{tag}")
    subnet = f"10.200.{int(tag) % 250}"
    switch = f"t9k-{tag}-sw"  # one L2 segment (a bridge in its own namespace) for all pods
    links: list[str] = []
    namespaces = [switch]
    try:
        _sh("ip", "netns", "add", switch)
        _sh("ip", "netns", "exec", switch, "ip", "link", "add", "br0", "type", "bridge")
        _sh("ip", "netns", "exec", switch, "ip", "link", "set", "br0", "up")

        def plug(inside: str, port: str) -> None:
            _sh("ip", "link", "add", inside, "type", "veth", "peer", "name", port)
            _sh("ip", "link", "set", port, "netns", switch)
            _sh("ip", "netns", "exec", switch, "ip", "link", "set", port, "master", "br0")
            _sh("ip", "netns", "exec", switch, "ip", "link", "set", port, "up")

        plug(f"t9k{tag}h", f"t9k{tag}hb")  # the host namespace: the tests' own launcher
        links.append(f"t9k{tag}h")
        _sh("ip", "addr", "add", f"{subnet}.1/24", "dev", f"t9k{tag}h")
        _sh("ip", "link", "set", f"t9k{tag}h", "up")
        for i in range(count):
            ns, inside = f"t9k-{tag}-w{i}", f"t9k{tag}w{i}"
            _sh("ip", "netns", "add", ns)
            namespaces.append(ns)
            pods.namespaces.append(ns)
            plug(inside, f"t9k{tag}b{i}")
            _sh("ip", "link", "set", inside, "netns", ns)
            _sh(
                "ip",
                "netns",
                "exec",
                ns,
                "ip",
                "addr",
                "add",
                f"{subnet}.{i + 2}/24",
                "dev",
                inside,
            )
            _sh("ip", "netns", "exec", ns, "ip", "link", "set", inside, "up")
            _sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
            pods.hosts[f"{job}-worker-{i}.{job}"] = f"{subnet}.{i + 2}"
        text = Path("/etc/hosts").read_text()
        pods.hosts_file.write_text(text + "".join(f"{ip} {n}\n" for n, ip in pods.hosts.items()))
        for i, ns in enumerate(pods.namespaces):
            started = start(i, pods.hosts_file)
            if started is None:
                continue
            argv, env = started
            with (root / f"worker-{i}.log").open("wb") as log:
                pods.procs.append(
                    subprocess.Popen(
                        ["ip", "netns", "exec", ns, *_with_hosts(pods.hosts_file, argv)],
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )
        yield pods
    finally:
        for p in pods.procs:
            p.terminate()
        for p in pods.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        for ns in pods.namespaces:  # what the pods left running (worker-0's own sshd)
            found = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
            for pid in found.stdout.split():
                subprocess.run(["kill", "-9", pid], check=False, capture_output=True)
        for link in links:
            subprocess.run(["ip", "link", "del", link], check=False, capture_output=True)
        for ns in namespaces:
            subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    root = tmp_path_factory.mktemp("bootstrap")
    ssh_dir, scripts = _job_files(root)
    env = {**os.environ, "T9K_SSHD": SSHD, "T9K_SSH_DIR": str(ssh_dir)}
    sshd = ["sh", str(scripts / "t9k-sshd.sh")]
    with _worker_namespaces(2, lambda i, _: (sshd, env), root) as pods:
        hostfile = root / "hostfile"
        hostfile.write_text("# generated\n" + "".join(f"{h} slots=1\n" for h in pods.hosts))
        yield Workers(pods.hosts, ssh_dir, scripts, hostfile, root)


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


def test_the_barrier_pins_each_worker_so_that_the_launch_looks_nothing_up_again(
    workers: Workers,
) -> None:
    # The launcher's program takes every way to resolve a worker away but the barrier's block
    # (as a DNS that stops answering after the barrier would), then reaches each worker by
    # name, as DeepSpeed's one-shot ssh check and pdsh do; a second barrier keeps one block.
    begin = "# t9k-launch.sh: the workers' addresses, looked up once by the launcher's barrier"
    hosts = " ".join(workers.hosts)
    program = (
        'sed -n "/^$BEGIN$/,/^# t9k-launch.sh: end$/p" /etc/hosts > /tmp/t9k-pins.$$ && '
        "cat /tmp/t9k-pins.$$ > /etc/hosts && rm /tmp/t9k-pins.$$ && "
        f'for h in {hosts}; do ssh -F "$T9K_SSH_DIR/config" -o BatchMode=yes "$h" true '
        '</dev/null && echo "ok $h"; done; '
        f'sh {workers.scripts}/t9k-launch.sh true && grep -c "^$BEGIN$" /etc/hosts; cat /etc/hosts'
    )
    result = workers.launch(["sh", "-c", program], {"T9K_BARRIER_TIMEOUT": "30", "BEGIN": begin})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[:3] == [*(f"ok {h}" for h in workers.hosts), "1"], result.stdout
    pins = {line.split()[1]: line.split()[0] for line in lines[4:] if line and line[0].isdigit()}
    assert pins == workers.hosts
    assert "t9k: pinned the workers' addresses in /etc/hosts" in result.stderr


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


# ---------------------------------------------------------------------------------------------
# The pods the operator's pure core builds, run as they are: their command and T9K_* settings,
# with the pod's paths (/t9k/scripts, /t9k/hostfile, /t9k/run, /root/.ssh) mapped to files here
# and the environment the kubelet would give their container (env, valueFrom, envFrom).
# ---------------------------------------------------------------------------------------------

SECRET = "s3cr3t 'quoted' $(id) ;x"
"""A Secret's value, as the kubelet resolves a `valueFrom.secretKeyRef` into the container."""
SECRET_KEYS = {("hf", "token"): SECRET}
ENV_FROM = {"settings": {"DATA_URL": "s3://bucket/data"}, "creds": {"AWS_KEY": "aws-secret-9"}}
"""The ConfigMap and Secret an `envFrom` names."""
POD_ENV = [
    {"name": "NCCL_DEBUG", "value": "INFO"},
    {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
]
POD_ENV_FROM = [{"configMapRef": {"name": "settings"}}, {"secretRef": {"name": "creds"}}]


def _container_env(container: dict[str, Any]) -> dict[str, str]:
    """What the kubelet puts into the container's environment."""
    out: dict[str, str] = {}
    for src in container.get("envFrom") or ():
        ref = src.get("configMapRef") or src.get("secretRef")
        out.update({src.get("prefix", "") + k: v for k, v in ENV_FROM[ref["name"]].items()})
    for e in container.get("env") or ():
        if "value" in e:
            out[e["name"]] = e["value"]
        else:
            ref = e["valueFrom"]["secretKeyRef"]
            out[e["name"]] = SECRET_KEYS[(ref["name"], ref["key"])]
    return out


@dataclass
class Node:
    """The files every pod of a job sees, at paths under `root`."""

    root: Path
    ssh_dir: Path
    scripts: Path

    @property
    def hostfile(self) -> Path:
        return self.root / "hostfile"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def remap(self, i: int, text: str) -> str:
        for in_pod, here in (
            ("/t9k/scripts", self.scripts),
            ("/t9k/hostfile", self.hostfile),
            ("/t9k/run", self.root / f"run-{i}"),
            ("/root/.deepspeed_env", self.root / "deepspeed_env"),
            ("/root/.ssh", self.ssh_dir),
        ):
            text = text.replace(in_pod, str(here))
        return text

    def process(self, i: int, pod: dict[str, Any], name: str) -> tuple[list[str], dict[str, str]]:
        """argv and environment of the pod's container named `name`, as started here."""
        c = next(c for c in pod["spec"]["containers"] if c["name"] == name)
        env = {"PATH": f"{self.bin}:{os.environ['PATH']}", "HOME": "/root", **_container_env(c)}
        env = {k: self.remap(i, v) if k.startswith("T9K_") else v for k, v in env.items()}
        env["T9K_TERMINATION_LOG"] = str(self.root / f"termination-{i}")
        env["DS_ENV_FILE"] = self.remap(i, "/root/.deepspeed_env")  # DeepSpeed's ~/.deepspeed_env
        return [self.remap(i, a) for a in c["command"]], env

    def fake(self, name: str, body: str) -> None:
        self.bin.mkdir(exist_ok=True)
        path = self.bin / name
        path.write_text(f"#!{sys.executable}\n{body}")
        path.chmod(0o755)


def _node(root: Path, manifest: dict[str, Any]) -> tuple[Node, dict[str, dict[str, Any]]]:
    ssh_dir, scripts = _job_files(root)
    children = desired_children(codecs.from_manifest(manifest), ssh_key=("-", "-"))
    node = Node(root, ssh_dir, scripts)
    node.hostfile.write_text(children.config_maps[0]["data"]["hostfile"])
    return node, {p["metadata"]["name"]: p for p in children.pods}


FAKE_DEEPSPEED = '''"""Stands in for DeepSpeed's `deepspeed` launcher, which cannot run here (it needs torch). It
does what DeepSpeed's pdsh runner does with the environment and the hosts: it exports the
NCCL*/PYTHON* variables and every NAME=value line of the env file (~/.deepspeed_env, here
$DS_ENV_FILE) at the front of the pdsh command, logs that command ("cmd = ..."), and runs it
over ssh on every host of the hostfile."""
import os, shlex, subprocess, sys

args = sys.argv[1:]
opts = {}
while args and args[0].startswith("--"):
    flag = args.pop(0)
    if flag in ("--hostfile", "--master_addr"):
        opts[flag] = args.pop(0)
hosts = [l.split()[0] for l in open(opts["--hostfile"]) if l.strip() and not l.startswith("#")]
exports = {k: v for k, v in os.environ.items() if k.startswith(("NCCL", "PYTHON"))}
if os.path.isfile(os.environ.get("DS_ENV_FILE", "")):
    for line in open(os.environ["DS_ENV_FILE"]):
        key, value = line.rstrip("\\n").split("=", 1)
        exports[key] = value
prefix = "".join(f"export {k}={shlex.quote(v)}; " for k, v in exports.items())
program = " ".join(shlex.quote(a) for a in [sys.executable, "-u", *args])
remote = f"{prefix}cd {shlex.quote(os.getcwd())}; export T9K_TEST_RANK=%n; {program}"
print(f"cmd = pdsh -S -f 1024 -w {','.join(hosts)} {remote}", flush=True)
config = os.path.join(os.environ["T9K_SSH_DIR"], "config")
procs = [
    subprocess.Popen(["ssh", "-F", config, h, remote.replace("%n", str(n))])
    for n, h in enumerate(hosts)
]
sys.exit(max(p.wait() for p in procs))
'''

RECORD_ENV = """import json, os, sys
rank = os.environ["T9K_TEST_RANK"]
json.dump(dict(os.environ), open(os.path.join(sys.argv[1], rank + ".json"), "w"))
"""


def _deepspeed_job(record: Path, out: Path, **spec: Any) -> dict[str, Any]:
    template = pod("worker", env=POD_ENV, envFrom=POD_ENV_FROM)
    return deepspeed_job(
        config={"run": {"python": [str(record), str(out)]}},
        worker={"replicas": 2, "template": template},
        **spec,
    )


def _seen_by_training(out: Path, rank: int) -> dict[str, str]:
    data: dict[str, str] = json.loads((out / f"{rank}.json").read_text())
    return data


def test_deepspeed_training_gets_env_valuefrom_and_envfrom_and_no_secret_is_logged(
    tmp_path: Path,
) -> None:
    """Issue 10 item 8, on OpenSSH: every training process sees `env`, `valueFrom` and
    `envFrom` variables, and no secret value is written onto pdsh's command line (which
    DeepSpeed logs). Before: worker-0 copied only `env` names' values into the env file, so
    envFrom was lost and the secret appeared in worker-0's log."""
    out = tmp_path / "out"
    out.mkdir()
    record = tmp_path / "record.py"
    record.write_text(RECORD_ENV)
    node, pods = _node(tmp_path, _deepspeed_job(record, out))
    node.fake("deepspeed", FAKE_DEEPSPEED)

    def start(i: int, _: Path) -> tuple[list[str], dict[str, str]]:
        return node.process(i, pods[f"demo-worker-{i}"], "worker")

    with _worker_namespaces(2, start, tmp_path) as running:
        code = running.procs[0].wait(timeout=90)
    log = (tmp_path / "worker-0.log").read_text()
    assert code == 0, log
    assert "cmd = pdsh" in log
    for rank in (0, 1):
        seen = _seen_by_training(out, rank)
        assert seen["HF_TOKEN"] == SECRET, rank
        assert (seen["DATA_URL"], seen["AWS_KEY"]) == ("s3://bucket/data", "aws-secret-9")
        assert seen["NCCL_DEBUG"] == "INFO"
    assert "s3cr3t" not in log
    assert "aws-secret-9" not in log
    assert not (tmp_path / "deepspeed_env").exists()


def test_deepspeed_debug_pods_let_you_start_the_training_by_hand(tmp_path: Path) -> None:
    """Issue 10 item 4, on OpenSSH: in debug mode every worker runs the command the core gives
    it, and `deepspeed` typed on worker-0 (`kubectl exec`) reaches every worker with the job's
    key and each worker's own environment. Before: a bare `/usr/sbin/sshd -D` with the image's
    sshd configuration, which does not accept the job's key."""
    out = tmp_path / "out"
    out.mkdir()
    record = tmp_path / "record.py"
    record.write_text(RECORD_ENV)
    node, pods = _node(tmp_path, _deepspeed_job(record, out, runMode={"debug": {"enabled": True}}))
    node.fake("deepspeed", FAKE_DEEPSPEED)

    def start(i: int, _: Path) -> tuple[list[str], dict[str, str]]:
        return node.process(i, pods[f"demo-worker-{i}"], "worker")

    with _worker_namespaces(2, start, tmp_path) as running:
        _, env = start(0, running.hosts_file)
        by_hand = ["deepspeed", "--hostfile", str(node.hostfile), str(record), str(out)]
        for _attempt in range(30):  # sshd needs a moment to start, as in a pod
            result = running.exec(0, by_hand, env)
            if result.returncode == 0:
                break
            time.sleep(1)
        assert [p.poll() for p in running.procs] == [None, None]  # still serving
        # sessions run through t9k-session.sh (sshd's ForceCommand): scp and sftp still work
        config = str(node.ssh_dir / "config")
        copy = ["scp", "-F", config, str(record), f"demo-worker-1.demo:{tmp_path}/copied.py"]
        copied = running.exec(0, copy, env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert copied.returncode == 0, copied.stderr
    assert (tmp_path / "copied.py").read_text() == RECORD_ENV
    for rank in (0, 1):
        assert _seen_by_training(out, rank)["HF_TOKEN"] == SECRET


FAKE_COLOSSALAI = '''"""Stands in for ColossalAI's `colossalai run`, which cannot run here (it needs torch). It uses
click, the parser colossalai uses, with its options and settings (ignore_unknown_options), and
does what colossalai/cli/launcher/run.py does: a script that is not a .py file makes it print an
error and exit 0; --extra_launch_args 'a=1,b' becomes torchrun options '--a=1 --b'; the torchrun
command is joined with spaces and run by a shell on every host of the hostfile, over ssh, after
`cd` into this directory and exporting this environment; it exits 1 if a host failed."""
import os, subprocess, sys
import click

@click.command(context_settings=dict(ignore_unknown_options=True))
@click.option("--hostfile", type=str, default=None)
@click.option("--nproc_per_node", type=int, default=None)
@click.option("--master_port", type=int, default=29500)
@click.option("--master_addr", type=str, default="127.0.0.1")
@click.option("--extra_launch_args", type=str, default=None)
@click.argument("user_script", type=str)
@click.argument("user_args", nargs=-1)
def run(hostfile, nproc_per_node, master_port, master_addr, extra_launch_args, user_script, user_args):
    if not user_script.endswith(".py"):
        click.echo(f"Error: invalid Python file {user_script}.")
        sys.exit(0)
    hosts = [l.strip() for l in open(hostfile) if l.strip()]
    extra = {}
    for arg in extra_launch_args.split(",") if extra_launch_args else []:
        key, value = arg.split("=") if "=" in arg else (arg, None)
        extra[key] = value
    rdzv = {"master_addr": master_addr, "master_port": master_port}
    for key in list(rdzv):
        if key in extra:
            rdzv[key] = extra.pop(key)
    env = " ".join(f'{k}="{v}"' for k, v in os.environ.items() if v and "\\n" not in v)
    config = os.path.join(os.environ["T9K_SSH_DIR"], "config")
    procs = []
    for rank, host in enumerate(hosts):
        cmd = ["torchrun", f"--nproc_per_node={nproc_per_node}", f"--nnodes={len(hosts)}",
               f"--node_rank={rank}"]
        cmd += [f"--{k}={v}" if v else f"--{k}" for k, v in {**rdzv, **extra}.items()]
        cmd = " ".join([*cmd, user_script, *user_args])
        remote = f"cd {os.getcwd()} && export {env} && {cmd}"
        procs.append(subprocess.Popen(["ssh", "-F", config, host, remote]))
    sys.exit(1 if any(p.wait() for p in procs) else 0)

@click.group()
def cli():
    pass

cli.add_command(run)
cli()
'''

FAKE_TORCHRUN = '''"""Stands in for torchrun: records its arguments; fails like python if the script is missing."""
import json, os, sys
args = sys.argv[1:]
rank = next(a.split("=", 1)[1] for a in args if a.startswith("--node_rank="))
json.dump(args, open(os.path.join(os.environ["T9K_TEST_OUT"], rank + ".json"), "w"))
script = next(a for a in args if not a.startswith("--"))
sys.exit(0 if os.path.isfile(script) else 2)
'''


def _colossalai(
    tmp_path: Path, torch_config: dict[str, Any]
) -> tuple[subprocess.CompletedProcess[str], Path, Node]:
    """Run the ColossalAIJob's launcher pod against its two worker pods."""
    out = tmp_path / "out"
    out.mkdir()
    workspace = tmp_path / "workspace"  # the launcher's workingDir, shared with the workers
    workspace.mkdir()
    (workspace / "train.py").write_text("print('training')\n")
    node, pods = _node(tmp_path, colossalai_job(torchConfig=torch_config))
    node.fake("colossalai", FAKE_COLOSSALAI)
    node.fake("torchrun", FAKE_TORCHRUN)

    def start(i: int, _: Path) -> tuple[list[str], dict[str, str]]:
        return node.process(i, pods[f"demo-worker-{i}"], "worker")

    with _worker_namespaces(2, start, tmp_path) as running:
        argv, env = node.process(9, pods["demo-launcher"], "launcher")
        env.update(T9K_BARRIER_TIMEOUT="30", T9K_TEST_OUT=str(out))
        result = subprocess.run(
            _with_hosts(running.hosts_file, argv),
            env=env,
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
    return result, out, node


def test_colossalai_extra_args_and_script_arguments_reach_torchrun_intact(tmp_path: Path) -> None:
    """Issue 10 item 3: `colossalai run` takes an unknown option for the script, refuses it as
    not a .py file and exits 0, so the job "succeeded" without training. extraArgs now reach
    torchrun through --extra_launch_args, and the script's arguments survive the shell that
    runs the torchrun command on each worker."""
    result, out, _ = _colossalai(
        tmp_path,
        {
            "procPerWorker": 2,
            "script": ["train.py", *HOSTILE],
            "extraArgs": ["--max_restarts=3", "--monitor_interval=1", "--master_port=29600"],
        },
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in (0, 1):
        argv = json.loads((out / f"{rank}.json").read_text())
        assert argv == [
            "--nproc_per_node=2",
            "--nnodes=2",
            f"--node_rank={rank}",
            "--master_addr=demo-worker-0.demo",
            "--master_port=29600",
            "--max_restarts=3",
            "--monitor_interval=1",
            "train.py",
            *HOSTILE,
        ]
    assert not Path("/tmp/t9k-pwned").exists()


def test_colossalai_launcher_fails_when_the_script_is_missing_on_a_worker(tmp_path: Path) -> None:
    """Issue 10 item 3: a launcher that cannot run the training must not report success; the
    barrier checks the script on every worker, in the launcher's working directory."""
    result, out, node = _colossalai(tmp_path, {"script": ["missing.py", "--x"]})
    assert result.returncode == bootstrap.SCRIPT_MISSING_EXIT_CODE, result.stderr
    workspace = tmp_path / "workspace"
    assert (node.root / "termination-9").read_text() == (
        "t9k bootstrap: worker demo-worker-0.demo: the training script missing.py does not exist"
        f" in {workspace} (colossalai run starts it there, in the launcher's working directory)\n"
    )
    assert not list(out.iterdir())  # colossalai run was never started


def test_a_session_whose_launcher_is_gone_stops_what_it_started(workers: Workers) -> None:
    """What a relaunch leaves on the other workers: the old launcher's ssh client dies (its pod
    deleted), and the ranks it started there must stop with it, whatever DeepSpeed version
    started them (before 0.10.1 DeepSpeed does not stop them itself; sshd never does)."""
    host = next(iter(workers.hosts))
    pids = workers.root / "session-pids"
    if pids.exists():
        pids.unlink()
    # a "rank" and a child of it, as deepspeed.launcher.launch and its training processes
    remote = f"sleep 300 & echo $! >> {pids}; echo $$ >> {pids}; wait"
    program = (
        f"ssh -F \"$T9K_SSH_DIR/config\" {host} '{remote}' & client=$!;"
        f" for i in $(seq 100); do [ -s {pids} ] && [ $(wc -l < {pids}) -ge 2 ] && break;"
        " sleep 0.1; done; kill -9 $client; echo killed"
    )
    result = workers.launch(["sh", "-c", program], {"T9K_BARRIER_TIMEOUT": "30"})
    assert result.returncode == 0, result.stderr
    assert "killed" in result.stdout
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 2, started

    def alive() -> list[int]:
        return [p for p in started if Path(f"/proc/{p}").exists()]

    deadline = time.monotonic() + 30
    while alive() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert alive() == [], "the session's processes outlived its launcher"


def test_a_session_keeps_its_exit_status_and_its_standard_input(workers: Workers) -> None:
    host = next(iter(workers.hosts))
    program = f'echo piped | ssh -F "$T9K_SSH_DIR/config" {host} "cat; exit 7";' ' echo "status=$?"'
    result = workers.launch(["sh", "-c", program], {"T9K_BARRIER_TIMEOUT": "30"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == ["piped", "status=7"], result.stdout
