"""SSH bootstrap shared by DeepSpeedJob and ColossalAIJob (pure).

What every such job gets:

* Secret `<job>-ssh`: a key pair the operator generates once (never logged, never in a
  ConfigMap), mounted read-only at the SSH directory (`/root/.ssh`; ColossalAIJob:
  `ssh.authMountPath`) as `id_ed25519`, `id_ed25519.pub`, `authorized_keys` and a client `config`.
* Service `<job>`: headless; each pod sets `hostname: <pod>` and `subdomain: <job>`, so every
  replica is reachable as `<pod>.<job>` from the moment it exists (`publishNotReadyAddresses`).
* ConfigMap `<job>-config`: the hostfile (`/t9k/hostfile`) and three POSIX sh scripts
  (`/t9k/scripts`): `t9k-sshd.sh` runs sshd in the foreground on workers; with
  T9K_FORWARD_ENV=1 (DeepSpeedJob unless disableCustomEnv) it keeps the container's environment
  in the in-memory `/t9k/run` and makes every ssh session load it (`t9k-session.sh`, sshd's
  ForceCommand), so training processes get their own worker's env, valueFrom and envFrom by
  reference, never as values on a command line. Every session runs its command in a process
  group that is stopped when the session's sshd process ends (its launcher went). `t9k-launch.sh` is the launcher's readiness
  barrier: it waits until every host of the hostfile resolves and its sshd answers (exit 124
  with a termination message otherwise, which the job's conditions show), pins the addresses it
  resolved in the launcher's /etc/hosts (so nothing after the barrier depends on DNS), checks
  that a ColossalAIJob's script exists on every worker (exit 127), then `exec`s the launcher.

Commands are argv lists: user strings (script arguments, otherArgs) are passed as separate
arguments after the script. `colossalai run` joins the torchrun command into one string for a
shell on each worker, so ColossalAIJob script arguments are shell-quoted for that shell, and its
extraArgs travel as one validated `--extra_launch_args` value. The scripts read their settings
from environment variables the operator sets (T9K_*), whose values the operator builds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "BARRIER_EXIT_CODE",
    "BARRIER_TIMEOUT_ENV",
    "BARRIER_TIMEOUT_MAX",
    "BARRIER_TIMEOUT_SECONDS",
    "HOSTFILE",
    "LAUNCH_SCRIPT",
    "SCRIPTS_DIR",
    "SCRIPT_MISSING_EXIT_CODE",
    "SESSION_SCRIPT",
    "SSHD_SCRIPT",
    "config_map",
    "headless_service",
    "hostfile_hash",
    "mount_bootstrap",
    "ssh_secret",
]

HOSTFILE = "/t9k/hostfile"
SCRIPTS_DIR = "/t9k/scripts"
BARRIER_EXIT_CODE = 124
SCRIPT_MISSING_EXIT_CODE = 127
RUN_DIR = "/t9k/run"
RUN_VOLUME = "t9k-run"
# The launcher's pod is created only once every worker it needs is running (core.py), so the
# barrier covers the last seconds of DNS and sshd start-up, not a wait for scheduling. A user
# changes it with T9K_BARRIER_TIMEOUT in the launcher container's env (whole seconds).
BARRIER_TIMEOUT_SECONDS = 300
BARRIER_TIMEOUT_ENV = "T9K_BARRIER_TIMEOUT"
BARRIER_TIMEOUT_MAX = 86400
SSH_VOLUME = "t9k-ssh"
CONFIG_VOLUME = "t9k-config"
KEY_FILE = "id_ed25519"
HOSTFILE_HASH = "batch.tensorstack.dev/hostfile-hash"

STOP_ON_TERM = r"""# t9k: the kubelet stops a container by sending SIGTERM to its PID 1 alone, and kills what is left
# when the pod's grace period ends. As PID 1, this script passes SIGTERM on to every process of
# the container (the ranks, however they started: under ssh sessions, pdsh or a launcher), then
# waits until all of them have exited: every rank gets the whole grace period to save.
t9k_others() {  # a process of this container other than this shell is alive (zombies aside)
  for t9k_proc in /proc/[0-9]*; do
    [ "${t9k_proc#/proc/}" = "$$" ] && continue
    read -r t9k_stat <"$t9k_proc/stat" 2>/dev/null || continue
    t9k_state=${t9k_stat##*) }
    [ "${t9k_state%% *}" = Z ] || return 0
  done
  return 1
}
t9k_stop() {
  trap '' TERM INT
  printf 't9k: SIGTERM: passed on to every process of this container; waiting for them\n' >&2
  kill -TERM -1 2>/dev/null || true
  while t9k_others; do sleep 0.2; done
  exit 143
}
"""
"""What t9k-sshd.sh and t9k-launch.sh do on SIGTERM as a container's PID 1."""

SSHD_SCRIPT = (
    r"""#!/bin/sh
# t9k: run sshd in the foreground so the launcher can start the training on this replica.
# Settings: T9K_SSHD (absolute path of sshd), T9K_SSH_DIR (where the job's keys are mounted),
# T9K_FORWARD_ENV=1 (ssh sessions get this container's environment: see t9k-session.sh).
"""
    + STOP_ON_TERM
    + r"""set -eu
sshd="${T9K_SSHD:-/usr/sbin/sshd}"
ssh_dir="${T9K_SSH_DIR:-/root/.ssh}"
mkdir -p /run/sshd 2>/dev/null || true
if ! ls /etc/ssh/ssh_host_*_key >/dev/null 2>&1; then
  ssh-keygen -A >/dev/null
fi
run_dir="${T9K_RUN_DIR:-/t9k/run}"
if [ "${T9K_FORWARD_ENV:-}" = 1 ]; then
  # The environment the kubelet gave this container (env, valueFrom, envFrom), resolved by
  # reference in this pod; kept in memory (T9K_RUN_DIR is an emptyDir of medium Memory),
  # readable by root only, and loaded by every ssh session before its command.
  (umask 077 && mkdir -p "$run_dir" && export -p > "$run_dir/env.tmp" && mv "$run_dir/env.tmp" "$run_dir/env")
fi
# Every session runs through t9k-session.sh, which stops what it started when its connection
# goes (a relaunched launcher, whatever DeepSpeed version it runs).
set -- -o "ForceCommand=/bin/sh '$(dirname "$0")/t9k-session.sh' '$run_dir'"
# (started by t9k-launch.sh, this is not PID 1: that script passes SIGTERM on)
[ "$$" != 1 ] || trap t9k_stop TERM INT
# StrictModes off: the keys come from a read-only Secret volume whose directory modes differ
# between kubelet versions; the files themselves are 0600/0644 and owned by root.
"$sshd" -D -e -p "${T9K_SSH_PORT:-22}" \
  -o StrictModes=no \
  -o "AuthorizedKeysFile=$ssh_dir/authorized_keys" \
  -o PermitRootLogin=prohibit-password \
  -o PasswordAuthentication=no \
  -o LogLevel=VERBOSE \
  "$@" &
t9k_main=$!
wait "$t9k_main"
exit $?
"""
)

SESSION_SCRIPT = r"""#!/bin/sh
# t9k: an ssh session on a worker (sshd's ForceCommand): load the environment of this worker's
# container when t9k-sshd.sh kept it (T9K_FORWARD_ENV=1), then run what the client asked for, as
# sshd would. The command runs in a process group of its own; when the session's sshd process
# ends (the client went: a launcher deleted or relaunched), that group is stopped, TERM then
# KILL: sshd leaves the processes of a session without a terminal running, and DeepSpeed before
# 0.10.1 does not stop them itself.
# Argument: the directory t9k-sshd.sh wrote the environment to.
run_dir="${1:-/t9k/run}"
if [ -r "$run_dir/env" ]; then
  # `command`: a variable the shell will not set (readonly) must not end the session
  command . "$run_dir/env" || printf 't9k: some variables of %s/env were not loaded\n' "$run_dir" >&2
  unset OLDPWD
fi
if [ -z "${SSH_ORIGINAL_COMMAND:-}" ]; then
  exec "${SHELL:-/bin/sh}" -l
fi
# the session's own sshd process: the first sshd above this script (a shell may sit between)
session=$PPID
pid=$PPID
while [ "$pid" -gt 1 ] 2>/dev/null; do
  case "$(cat "/proc/$pid/comm" 2>/dev/null)" in sshd*) session=$pid; break ;; esac
  pid=$(awk '{ print $4 }' "/proc/$pid/stat" 2>/dev/null) || break
done
# (an asynchronous command would read /dev/null: it gets the session's standard input back)
exec 3<&0
if command -v setsid >/dev/null 2>&1; then
  setsid "${SHELL:-/bin/sh}" -c "$SSH_ORIGINAL_COMMAND" <&3 3<&- &
else  # no util-linux: only the command's own process can be stopped
  "${SHELL:-/bin/sh}" -c "$SSH_ORIGINAL_COMMAND" <&3 3<&- &
fi
group=$!
exec 3<&-
(
  trap '' HUP
  while kill -0 "$group" 2>/dev/null; do
    if ! kill -0 "$session" 2>/dev/null; then
      kill -TERM -"$group" 2>/dev/null || kill -TERM "$group" 2>/dev/null
      sleep 5
      kill -KILL -"$group" 2>/dev/null || kill -KILL "$group" 2>/dev/null
      exit 0
    fi
    sleep 1
  done
) </dev/null >/dev/null 2>&1 &
watcher=$!
wait "$group"
status=$?
kill "$watcher" 2>/dev/null
exit "$status"
"""

LAUNCH_SCRIPT = (
    r"""#!/bin/sh
"""
    + STOP_ON_TERM
    + r"""# t9k: the launcher's readiness barrier. Waits until every host in the hostfile resolves (and
# pins its address in /etc/hosts) and answers on ssh, then replaces itself with the launcher
# command given as arguments.
# Settings: T9K_HOSTFILE, T9K_BARRIER_TIMEOUT (seconds), T9K_SSH_DIR, T9K_SSHD (start sshd here
# too when set), T9K_SCRIPT (ColossalAI: the training script, which must exist on every worker
# in this working directory, where `colossalai run` starts it).
set -u
hostfile="${T9K_HOSTFILE:-/t9k/hostfile}"
timeout="${T9K_BARRIER_TIMEOUT:-300}"
ssh_dir="${T9K_SSH_DIR:-/root/.ssh}"
fail() {
  printf 't9k bootstrap: %s\n' "$2" >"${T9K_TERMINATION_LOG:-/dev/termination-log}" 2>/dev/null || true
  printf 't9k bootstrap: %s\n' "$2" >&2
  exit "$1"
}
if [ -n "${T9K_SSHD:-}" ]; then
  T9K_SSH_DIR="$ssh_dir" sh "$(dirname "$0")/t9k-sshd.sh" &
fi
hosts=$(awk '!/^[[:space:]]*#/ && NF { print $1 }' "$hostfile")
[ -n "$hosts" ] || fail 2 "the hostfile $hostfile lists no workers: nothing would run the training"
start=$(date +%s)
waited() { echo $(( $(date +%s) - start )); }
# Each worker's name is looked up once here, retried until it resolves, and its address is
# pinned in the launcher's hosts file: nothing started after the barrier (the launcher's own ssh
# check, pdsh, colossalai's ssh, torch's MASTER_ADDR) looks a worker up in DNS again, so a DNS
# answer lost or late after the barrier cannot fail the launch. A pod keeps its address for its
# life, and every start of the launcher runs the barrier again.
hosts_file=/etc/hosts
pins=""
for host in $hosts; do
  command -v getent >/dev/null 2>&1 || break
  while ! found=$(getent ahosts "$host" 2>/dev/null | awk 'NR == 1 && NF >= 2 { print $1, $3 }') || [ -z "$found" ]; do
    [ "$(waited)" -ge "$timeout" ] && fail 124 "worker $host: its DNS name did not resolve within ${timeout}s"
    sleep 1
  done
  address=${found%% *}
  canonical=${found#* }
  [ "$canonical" = "$host" ] && canonical=""
  pins="$pins$address $host${canonical:+ $canonical}
"
done
if [ -n "$pins" ]; then
  begin="# t9k-launch.sh: the workers' addresses, looked up once by the launcher's barrier"
  end="# t9k-launch.sh: end"
  if kept=$(awk -v b="$begin" -v e="$end" '$0 == b { skip = 1; next } $0 == e { skip = 0; next } !skip' "$hosts_file" 2>/dev/null) &&
    printf '%s\n%s\n%s%s\n' "$kept" "$begin" "$pins" "$end" 2>/dev/null >"$hosts_file"; then
    printf 't9k: pinned the workers'"'"' addresses in %s\n' "$hosts_file" >&2
  else
    printf 't9k: %s is not writable: the launch looks the workers up in DNS again\n' "$hosts_file" >&2
  fi
fi
for host in $hosts; do
  while ! ssh -F "$ssh_dir/config" -o BatchMode=yes -o ConnectTimeout=3 "$host" true >/dev/null 2>&1; do
    [ "$(waited)" -ge "$timeout" ] && fail 124 "worker $host: sshd did not answer within ${timeout}s"
    sleep 1
  done
  printf 't9k: %s is ready (%ss)\n' "$host" "$(waited)" >&2
done
if [ -n "${T9K_SCRIPT:-}" ]; then
  # colossalai run cds every worker into this directory and runs the script there; a missing
  # script would fail on the workers while older colossalai versions still exit 0.
  cwd=$(pwd -P)
  case "$cwd$T9K_SCRIPT" in *"'"*) fail 2 "the working directory $cwd or script $T9K_SCRIPT contains a quote" ;; esac
  for host in $hosts; do
    ssh -F "$ssh_dir/config" -o BatchMode=yes "$host" "cd '$cwd' && test -f '$T9K_SCRIPT'" </dev/null >/dev/null 2>&1
    case $? in
      0) ;;
      255) fail 124 "worker $host: ssh failed while checking for the training script $T9K_SCRIPT" ;;
      *) fail 127 "worker $host: the training script $T9K_SCRIPT does not exist in $cwd (colossalai run starts it there, in the launcher's working directory)" ;;
    esac
  done
fi
# the launcher runs as this script's child, so that SIGTERM reaches every rank (see above); its
# exit status is the container's
trap t9k_stop TERM INT
"$@" &
t9k_main=$!
wait "$t9k_main"
exit $?
"""
)


def ssh_client_config(ssh_dir: str) -> str:
    """The client config the launcher (and pdsh, DeepSpeed's own ssh check, and colossalai's
    fabric) use. Every one of their ssh connections must succeed on a loaded machine, and
    DeepSpeed checks its first host once, without retrying: the handshake gets 30 s (the
    timeout covers the key exchange too), a refused connection is tried 3 times, and GSSAPI,
    which distributions' ssh_config turn on, is off (its lookups stall a connection)."""
    return (
        "Host *\n"
        f"  IdentityFile {ssh_dir}/{KEY_FILE}\n"
        "  StrictHostKeyChecking no\n"
        "  UserKnownHostsFile /dev/null\n"
        "  LogLevel ERROR\n"
        "  ConnectTimeout 30\n"
        "  ConnectionAttempts 3\n"
        "  GSSAPIAuthentication no\n"
    )


def ssh_secret(
    meta: Mapping[str, Any], key: tuple[str, str] | None, ssh_dir: str
) -> dict[str, Any]:
    """The Secret with the job's key pair; `data` is None until the operator supplies a key."""
    import base64

    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    data = None
    if key is not None:
        private, public = key
        data = {
            KEY_FILE: b64(private),
            f"{KEY_FILE}.pub": b64(public),
            "authorized_keys": b64(public),
            "config": b64(ssh_client_config(ssh_dir)),
        }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": dict(meta),
        "type": "Opaque",
        "data": data,
    }


def headless_service(meta: Mapping[str, Any], selector: Mapping[str, str]) -> dict[str, Any]:
    """The Service that gives every replica the DNS name `<pod>.<job>`."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": dict(meta),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": dict(selector),
            "ports": [{"name": "ssh", "port": 22}],
        },
    }


def config_map(meta: Mapping[str, Any], hostfile: str) -> dict[str, Any]:
    """The ConfigMap with the hostfile and the bootstrap scripts."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": dict(meta),
        "data": {
            "hostfile": hostfile,
            "t9k-sshd.sh": SSHD_SCRIPT,
            "t9k-session.sh": SESSION_SCRIPT,
            "t9k-launch.sh": LAUNCH_SCRIPT,
        },
    }


def hostfile_hash(hostfile: str) -> str:
    """A short digest of a hostfile: a launcher started with another one must be relaunched."""
    return hashlib.sha256(hostfile.encode()).hexdigest()[:16]


def mount_bootstrap(
    spec: dict[str, Any],
    container: dict[str, Any],
    *,
    job: str,
    ssh_dir: str,
    pod_name: str,
    settings: Mapping[str, str],
    run_dir: bool = False,
) -> None:
    """Add the key, hostfile and script mounts (with `run_dir`, the in-memory directory of the
    ssh session environment too), the DNS identity and the T9K_* settings."""
    ours = (SSH_VOLUME, CONFIG_VOLUME, RUN_VOLUME)
    volumes: list[dict[str, Any]] = [
        {
            "name": SSH_VOLUME,
            "secret": {
                "secretName": f"{job}-ssh",
                "defaultMode": 0o600,
                "items": [
                    {"key": KEY_FILE, "path": KEY_FILE, "mode": 0o600},
                    {"key": f"{KEY_FILE}.pub", "path": f"{KEY_FILE}.pub", "mode": 0o644},
                    {"key": "authorized_keys", "path": "authorized_keys", "mode": 0o600},
                    {"key": "config", "path": "config", "mode": 0o644},
                ],
            },
        },
        {"name": CONFIG_VOLUME, "configMap": {"name": f"{job}-config", "defaultMode": 0o755}},
    ]
    mounts = [
        {"name": SSH_VOLUME, "mountPath": ssh_dir, "readOnly": True},
        {"name": CONFIG_VOLUME, "mountPath": HOSTFILE, "subPath": "hostfile", "readOnly": True},
        {"name": CONFIG_VOLUME, "mountPath": SCRIPTS_DIR, "readOnly": True},
    ]
    if run_dir:
        volumes.append({"name": RUN_VOLUME, "emptyDir": {"medium": "Memory"}})
        mounts.append({"name": RUN_VOLUME, "mountPath": RUN_DIR})
    spec["volumes"] = [v for v in spec.get("volumes") or () if v.get("name") not in ours] + volumes
    container["volumeMounts"] = [
        m for m in container.get("volumeMounts") or () if m.get("name") not in ours
    ] + mounts
    env = [e for e in container.get("env") or () if not str(e.get("name", "")).startswith("T9K_")]
    env += [{"name": k, "value": v} for k, v in settings.items()]
    container["env"] = env
    spec["hostname"] = pod_name
    spec["subdomain"] = job


def barrier_timeout(container: Mapping[str, Any]) -> str:
    """The launcher's barrier timeout: the user's T9K_BARRIER_TIMEOUT (whole seconds, 1 to
    BARRIER_TIMEOUT_MAX, a literal value) or BARRIER_TIMEOUT_SECONDS. `validate` reports a value
    it cannot take (validation.manifest_warnings)."""
    for e in container.get("env") or ():
        if e.get("name") == BARRIER_TIMEOUT_ENV:
            value = e.get("value")
            if valid_barrier_timeout(value):
                return str(value)
    return str(BARRIER_TIMEOUT_SECONDS)


def valid_barrier_timeout(value: object) -> bool:
    """Whether `value` is a T9K_BARRIER_TIMEOUT the operator takes."""
    return (
        isinstance(value, str)
        and value.isascii()
        and value.isdigit()
        and len(value) <= 6
        and 1 <= int(value) <= BARRIER_TIMEOUT_MAX
    )


def launch_command(argv: Sequence[str]) -> list[str]:
    """The launcher container's command: the barrier script, then the launcher argv."""
    return ["/bin/sh", f"{SCRIPTS_DIR}/t9k-launch.sh", *argv]


def sshd_command() -> list[str]:
    """A worker container's command."""
    return ["/bin/sh", f"{SCRIPTS_DIR}/t9k-sshd.sh"]
