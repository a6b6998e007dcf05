"""Real training on the real node: the operator's pods run torchrun, `deepspeed` and
`colossalai run` in real containers, and the model learns.

Each test creates its job, waits for the phase a user would wait for, and reads what a user
reads: `t9k-sdk get`/`describe`/`logs`, the pods' logs through the API server and the job's
Events. The training scripts are training/*.py, mounted from a ConfigMap.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from t9k_sdk import models
from tests.cluster.e2e_helpers import E2E, Jobs
from tests.cluster.real_helpers import (
    RANK_LINE,
    REAL_TIMEOUT,
    RealNode,
    cli,
    logs,
    real,
    scripts_configmap,
    train_container,
    with_scripts,
)
from tools.kit import wait_for

pytestmark = pytest.mark.realnode


@pytest.fixture(autouse=True, scope="module")
def _scripts(e2e: E2E, core_v1: client.CoreV1Api, real_node: RealNode) -> None:
    scripts_configmap(core_v1, e2e.namespace)


def _ranks(text: str) -> set[tuple[int, int]]:
    return {(int(r), int(w)) for r, w in re.findall(RANK_LINE, text)}


def _loss_fell(text: str) -> tuple[float, float]:
    m = re.search(r"loss fell from ([\d.]+) to ([\d.]+)", text)
    assert m, f"no final loss line in:\n{text[-3000:]}"
    first, last = float(m.group(1)), float(m.group(2))
    assert last < first / 2, f"the loss did not fall enough: {first} -> {last}"
    return first, last


def _job(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": models.API_VERSION,
        "kind": kind,
        "metadata": {"name": name},
        "spec": spec,
    }


def torchrun_job(name: str, steps: int = 40, pause: float = 0.0) -> dict[str, Any]:
    """2 pods x 2 processes; the worker's command uses the operator's substitutions, and first
    prints what the per-replica Service names resolve to inside the pod (a name resolves once
    its pod has an address: the loop waits for the other pod, as torchrun's rendezvous does).

    The rendezvous is torchrun's c10d one, hosted by worker 0's agent at its Service name:
    its rounds are numbered and an agent that stops closes it, so no agent waits on in a round
    that is over, and a pod recreated alone (the replica's OnFailure restart) meets the others
    in a new one (what the real node showed is in the lost-worker test below). The static
    rendezvous (`--node_rank --master_addr`) has no new round: in CI (2026-12-04) worker 1
    failed (exit 1) 35 s into the job while worker 0 ran on, and the job failed with worker 1's
    restarts spent (docs/operator/semantics.md, "Restarting one torchrun node"). Ranks follow
    the hosts' sorted names, so worker 0 still holds ranks 0-1."""
    launch = (
        "for h in $(service.worker[0].host) $(service.worker[1].host); do"
        " until getent hosts $h; do sleep 0.5; done | sed 's/^/resolved: /'; done; "
        "case $(rank) in 0) host=1;; *) host=0;; esac; "
        "exec torchrun --nnodes=2 --nproc_per_node=2 --max-restarts=3"
        " --rdzv-backend=c10d --rdzv-id=$(type)"
        " --rdzv-endpoint=$(service.worker[0].host):$(service.port[torch])"
        " --rdzv-conf=is_host=$host"
        f" torchrun_train.py --steps={steps} --pause={pause} --from-replica=$(type)-$(rank)"
    )
    return with_scripts(
        real(
            _job(
                "GenericJob",
                name,
                {
                    "service": {"ports": [{"name": "torch", "port": 29500}]},
                    "replicaSpecs": [
                        {
                            "type": "worker",
                            "replicas": 2,
                            # A rendezvous that breaks (once on a loaded CI machine,
                            # "TCPStore ... failed to recv, got 0 bytes") fails a worker; it is
                            # recreated and rejoins the c10d rendezvous (see the docstring).
                            "restartPolicy": {"policy": "OnFailure", "limit": 4},
                            "template": {
                                "spec": {
                                    "containers": [train_container(command=["sh", "-c", launch])]
                                }
                            },
                        }
                    ],
                },
            )
        )
    )


def test_torchrun_genericjob_trains_across_two_pods(
    jobs: Jobs, core_v1: client.CoreV1Api, kubeconfig: Any
) -> None:
    jobs.create(torchrun_job("tr"))
    status = jobs.wait_final("tr", REAL_TIMEOUT)
    text = {p: logs(core_v1, jobs.namespace, p) for p in ("tr-worker-0", "tr-worker-1")}
    if status["phase"] != "Succeeded":  # the whole logs, which an assertion's repr would cut
        pytest.fail(
            f"{json.dumps(status, indent=1)}\n" + "\n".join(f"== {p}\n{t}" for p, t in text.items())
        )

    # every rank ran, with torchrun's RANK/WORLD_SIZE
    assert _ranks(text["tr-worker-0"]) == {(0, 4), (1, 4)}
    assert _ranks(text["tr-worker-1"]) == {(2, 4), (3, 4)}
    for rank in range(4):
        assert f"env_RANK={rank} env_WORLD_SIZE=4" in "".join(text.values())
    # $(type) and $(rank) as the process saw them
    assert "extra=['--from-replica=worker-0']" in text["tr-worker-0"]
    assert "extra=['--from-replica=worker-1']" in text["tr-worker-1"]
    # the per-replica Service names resolve inside the pods, to the pods' own addresses
    ips = {p: jobs.pod(p).status.pod_ip for p in text}
    for pod_text in text.values():
        resolved = dict(
            reversed(line.split()[1:3])
            for line in pod_text.splitlines()
            if line.startswith("resolved:")
        )
        assert set(resolved.values()) == set(ips.values()), pod_text
    first, last = _loss_fell(text["tr-worker-0"])
    # the job's Events tell the story in order: created, running, finished
    wait_for(
        lambda: [r for r in jobs.reasons("tr") if r in ("Pending", "Running", "Succeeded")],
        lambda phases: phases == ["Pending", "Running", "Succeeded"],
        "the phase Events Pending, Running, Succeeded",
        30,
    )
    assert jobs.event_count("tr", "SuccessfulCreatePod") == 2
    assert jobs.named_in("tr", "SuccessfulCreatePod") == ["tr-worker-0", "tr-worker-1"]

    # what a user sees with the CLI
    got = cli(kubeconfig, "get", "genericjob", "tr", "-n", jobs.namespace)
    assert got.returncode == 0, got.stderr
    assert re.search(r"^tr\s+GenericJob\s+Succeeded", got.stdout, re.M), got.stdout
    out = cli(kubeconfig, "logs", "genericjob", "tr", "-n", jobs.namespace)
    assert out.returncode == 0, out.stderr
    assert f"[worker-0] loss fell from {first:.4f} to {last:.4f}" in out.stdout
    assert re.search(r"^\[worker-1\] rank=3 world_size=4", out.stdout, re.M), out.stdout


def test_a_torchrun_worker_lost_mid_training_is_recreated_and_the_job_trains_again(
    jobs: Jobs, core_v1: client.CoreV1Api
) -> None:
    """A worker's pod deleted while the ranks train (its node gone, a user's `kubectl delete`):
    the operator creates it again and the job trains to Succeeded. What happens in between
    (seen on the real node): the deleted pod's agent closes the c10d rendezvous as it stops,
    worker 0's ranks fail ("Connection reset by peer"), its agent cannot rejoin a closed
    rendezvous and exits 1, worker 0 is restarted under OnFailure, and both new pods meet in a
    new rendezvous and train from step 1 (the script keeps no checkpoint)."""
    jobs.create(torchrun_job("trl", steps=60, pause=0.25))

    def rank0_log() -> str:  # "" until the pod exists and its container has started
        try:
            return logs(core_v1, jobs.namespace, "trl-worker-0")
        except ApiException as err:
            if err.status in (400, 404):
                return ""
            raise

    wait_for(
        rank0_log,
        lambda text: "step=10 " in text,
        "rank 0 logging step 10",
        REAL_TIMEOUT,
    )
    first = jobs.pod("trl-worker-1").metadata.uid
    core_v1.delete_namespaced_pod("trl-worker-1", jobs.namespace, grace_period_seconds=0)
    status = jobs.wait_final("trl", REAL_TIMEOUT)
    text = {p: logs(core_v1, jobs.namespace, p) for p in ("trl-worker-0", "trl-worker-1")}
    if status["phase"] != "Succeeded":
        pytest.fail(
            f"{json.dumps(status, indent=1)}\n" + "\n".join(f"== {p}\n{t}" for p, t in text.items())
        )
    assert jobs.pod("trl-worker-1").metadata.uid != first  # a new pod, not the old one
    # the pods that finished the job trained all 60 steps together, with the same ranks
    assert _ranks(text["trl-worker-0"]) == {(0, 4), (1, 4)}
    assert _ranks(text["trl-worker-1"]) == {(2, 4), (3, 4)}
    assert "step=60 " in text["trl-worker-0"]
    _loss_fell(text["trl-worker-0"])


def deepspeed_job(name: str, args: list[str], workers: int = 2, **spec: Any) -> dict[str, Any]:
    worker = train_container(env={"DEMO_FORWARDED": "from-the-container-env"})
    return with_scripts(
        real(
            _job(
                "DeepSpeedJob",
                name,
                {
                    "config": {"slotsPerWorker": 2, "run": {"python": args}},
                    **spec,
                    "worker": {
                        "replicas": workers,
                        "template": {"spec": {"containers": [worker]}},
                    },
                },
            )
        )
    )


# What a user may pass: spaces, quotes, a `;`, a `$(...)` and a `$HOME`.
TRICKY_ARGS = [
    "two words",
    "it's",
    'say "hi"',
    "a;b",
    "$(id -u)",
    "$HOME",
    "50%n",
    "a\\b c",
    "`x` y",
]


def test_deepspeedjob_trains_with_zero_over_pdsh_and_ssh(
    jobs: Jobs, core_v1: client.CoreV1Api, kubeconfig: Any
) -> None:
    jobs.create(deepspeed_job("ds", ["deepspeed_train.py", "--steps=30", *TRICKY_ARGS]))
    status = jobs.wait_final("ds", REAL_TIMEOUT)
    text = logs(core_v1, jobs.namespace, "ds-worker-0")
    assert status["phase"] == "Succeeded", (status, text[-4000:])

    # the launcher's output holds every rank's line (pdsh prefixes each remote host's lines)
    assert _ranks(text) == {(r, 4) for r in range(4)}, text[-4000:]
    assert text.count("backend=gloo") == 4
    # the container's own env reached every rank, on both workers, through ssh
    assert text.count("DEMO_FORWARDED=from-the-container-env") == 4
    # the script's arguments, as the training processes received them
    # (the ranks of one worker share pdsh's output and may interleave: read each JSON list)
    argvs = {
        tuple(json.loads(a)) for a in re.findall(r'argv=(\[(?:"(?:[^"\\]|\\.)*"(?:, )?)*\])', text)
    }
    assert argvs == {tuple(TRICKY_ARGS)}, argvs
    _loss_fell(text)
    assert "ZeRO stage 1" in text

    out = cli(kubeconfig, "describe", "deepspeedjob", "ds", "-n", jobs.namespace)
    assert out.returncode == 0, out.stderr
    assert "Succeeded" in out.stdout


def test_a_missing_script_fails_the_deepspeedjob_with_the_real_exit_code(
    jobs: Jobs, core_v1: client.CoreV1Api
) -> None:
    jobs.create(deepspeed_job("nofile", ["no_such_script.py"], runPolicy={"backoffLimit": 0}))
    status = jobs.wait_final("nofile", REAL_TIMEOUT)
    text = logs(core_v1, jobs.namespace, "nofile-worker-0")
    assert status["phase"] == "Failed", status
    assert "no_such_script.py" in text, text[-3000:]
    assert "No such file or directory" in text, text[-3000:]
    code = jobs.pod("nofile-worker-0").status.container_statuses[0].state.terminated.exit_code
    assert code != 0
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert f"exit code {code}" in failed["message"], failed


def test_worker_0_is_created_once_a_slow_worker_runs_and_the_job_never_fails_meanwhile(
    jobs: Jobs, core_v1: client.CoreV1Api
) -> None:
    """A worker that takes its time to start (here an init container that sleeps, as an image
    pull or a busy GPU would) keeps the job Pending: worker-0, which launches `deepspeed`, is
    created only after it runs, so no launch barrier can time out and no restart is spent."""
    job = deepspeed_job("slow", ["deepspeed_train.py", "--steps=5"], runPolicy={"backoffLimit": 0})
    template = job["spec"]["worker"]["template"]["spec"]
    slow = "case $HOSTNAME in *-worker-0) ;; *) sleep 20 ;; esac"
    template["initContainers"] = [train_container("slow", command=["sh", "-c", slow])]
    jobs.create(job)
    waiting = jobs.wait_status(
        "slow",
        lambda s: any(c.get("reason") == "WaitingForWorkers" for c in s.get("conditions") or ()),
        "the Running condition WaitingForWorkers",
        60,
    )
    assert waiting["phase"] == "Pending"
    assert "slow-worker-1" in next(
        c["message"] for c in waiting["conditions"] if c["type"] == "Running"
    )
    with pytest.raises(ApiException) as missing:
        core_v1.read_namespaced_pod("slow-worker-0", jobs.namespace)
    assert missing.value.status == 404
    status = jobs.wait_final("slow", REAL_TIMEOUT)
    text = logs(core_v1, jobs.namespace, "slow-worker-0")
    assert status["phase"] == "Succeeded", (status, text[-4000:])
    assert status["backoffCount"] == 0
    worker_1 = jobs.pod("slow-worker-1").status.container_statuses[0].state
    started = (worker_1.running or worker_1.terminated).started_at
    assert jobs.pod("slow-worker-0").metadata.creation_timestamp >= started.replace(microsecond=0)
    assert "WaitingForWorkers" in jobs.reasons("slow")


def colossalai_job(name: str, script: list[str]) -> dict[str, Any]:
    spec = {
        "ssh": {"authMountPath": "/root/.ssh", "sshdPath": "/usr/sbin/sshd"},
        "runMode": {"debug": {"enabled": False}},
        "torchConfig": {"procPerWorker": 2, "script": script},
        "replicaSpecs": [
            {
                "type": "launcher",
                "replicas": 1,
                "template": {"spec": {"containers": [train_container("launcher")]}},
            },
            {
                "type": "worker",
                "replicas": 2,
                "template": {"spec": {"containers": [train_container("worker")]}},
            },
        ],
    }
    return with_scripts(real(_job("ColossalAIJob", name, spec)))


def test_colossalaijob_trains_with_colossalai_run(jobs: Jobs, core_v1: client.CoreV1Api) -> None:
    jobs.create(colossalai_job("cai", ["colossalai_train.py", "--steps=30"]))
    status = jobs.wait_final("cai", REAL_TIMEOUT)
    text = logs(core_v1, jobs.namespace, "cai-launcher")
    assert status["phase"] == "Succeeded", (status, text[-4000:])
    assert _ranks(text) == {(r, 4) for r in range(4)}, text[-4000:]
    _loss_fell(text)
