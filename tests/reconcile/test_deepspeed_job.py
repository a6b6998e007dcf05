"""DeepSpeedJob: bootstrap objects, hostfile, launch argv, outcome, elastic resizing and run
policies."""

from __future__ import annotations

import base64
import json
import shlex
import subprocess
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from t9k_sdk.reconcile import bootstrap
from t9k_sdk.reconcile.types import Plan
from tests.sdk.manifests import colossalai_job, deepspeed_job, pod

from .sim import KEY, Sim, by_name, container_of, env_of


def test_deepspeed_objects_and_worker_commands() -> None:
    job = deepspeed_job(
        config={"slotsPerWorker": 2, "run": {"python": ["train.py", "--epochs", "3"]}},
        worker={
            "replicas": 3,
            "template": pod(
                "worker",
                env=[{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "my_var", "value": "x"}],
            ),
        },
    )
    sim = Sim(job, ssh_key=KEY)
    plan = sim.step()
    first_pods = by_name(plan.create, "Pod")
    # worker-0 launches `deepspeed`: it is created once the other workers run
    assert sorted(first_pods) == ["demo-worker-1", "demo-worker-2"]
    secret = by_name(plan.create, "Secret")["demo-ssh"]
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert data["id_ed25519"] == KEY[0]
    assert data["authorized_keys"] == KEY[1]
    assert "StrictHostKeyChecking no" in data["config"]
    cm = by_name(plan.create, "ConfigMap")["demo-config"]
    assert cm["data"]["hostfile"] == (
        "demo-worker-0.demo slots=2\ndemo-worker-1.demo slots=2\ndemo-worker-2.demo slots=2\n"
    )
    svc = by_name(plan.create, "Service")["demo"]
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["publishNotReadyAddresses"] is True
    assert svc["spec"]["selector"] == {"deepspeedjob": "demo"}
    sim.run()
    pods = {**first_pods, **sim.launch()}
    w0, w1 = pods["demo-worker-0"], pods["demo-worker-1"]
    assert (w0["spec"]["hostname"], w0["spec"]["subdomain"]) == ("demo-worker-0", "demo")
    # the pods' DNS is the template's: the launch needs no resolver option of ours (the barrier
    # pins the workers' addresses it looked up)
    assert "dnsConfig" not in w0["spec"]
    launch = container_of(w0)["command"]
    assert launch == [
        "/bin/sh",
        "/t9k/scripts/t9k-launch.sh",
        "deepspeed",
        "--hostfile",
        "/t9k/hostfile",
        "--master_addr",
        "demo-worker-0.demo",
        "train.py",
        "--epochs",
        "3",
    ]
    env = env_of(container_of(w0))
    assert env["T9K_FORWARD_ENV"] == "1"
    assert container_of(w1)["command"] == ["/bin/sh", "/t9k/scripts/t9k-sshd.sh"]
    mounts = {m["mountPath"]: m for m in container_of(w1)["volumeMounts"]}
    assert mounts["/root/.ssh"]["readOnly"] is True
    assert mounts["/t9k/hostfile"]["subPath"] == "hostfile"
    # creation order: the secret and config map exist before any pod mounts them; the service
    # follows the pods (the launcher waits until every host resolves)
    kinds = [m["kind"] for m in plan.create]
    assert kinds.index("Pod") > max(kinds.index("Secret"), kinds.index("ConfigMap"))
    assert kinds.index("Service") > max(i for i, k in enumerate(kinds) if k == "Pod")


def test_ssh_secret_waits_for_a_key_and_is_never_replaced() -> None:
    sim = Sim(deepspeed_job())
    plan = sim.step()
    assert "Secret" not in {m["kind"] for m in plan.create}  # no key yet: the operator makes one
    sim.ssh_key = KEY
    plan = sim.step()
    assert "Secret" in {m["kind"] for m in plan.create}
    sim.ssh_key = ("other", "other")
    plan = sim.step()
    assert not [u for u in plan.update if u.manifest["kind"] == "Secret"]


@pytest.mark.parametrize(
    ("config", "tail"),
    [
        (
            {"run": {"module": ["pkg.train", "--lr", "0.1"]}},
            ["--module", "pkg.train", "--lr", "0.1"],
        ),
        ({"run": {"exec": ["/opt/train"]}}, ["--no_python", "/opt/train"]),
        (
            {
                "run": {"python": ["t.py"]},
                "localRank": False,
                "autotune": "tune",
                "otherArgs": ["--master_port=29600"],
            },
            ["--no_local_rank", "--autotuning", "tune", "--master_port=29600", "t.py"],
        ),
    ],
)
def test_deepspeed_launcher_flags(config: dict[str, Any], tail: list[str]) -> None:
    pods = Sim(deepspeed_job(config=config), ssh_key=KEY).launch()
    command = container_of(pods["demo-worker-0"])["command"]
    assert command[7:] == tail


def test_custom_command_runs_through_sh_and_keeps_the_hostfile_slots() -> None:
    job = deepspeed_job(
        config={"customCommand": "deepspeed --hostfile /t9k/hostfile x.py", "slotsPerWorker": 4}
    )
    sim = Sim(job, ssh_key=KEY)
    command = container_of(sim.launch()["demo-worker-0"])["command"]
    assert command[2:] == ["/bin/sh", "-c", "deepspeed --hostfile /t9k/hostfile x.py"]
    assert "slots=4" in by_name(sim.plans[0].create, "ConfigMap")["demo-config"]["data"]["hostfile"]


def test_disable_custom_env_forwards_nothing() -> None:
    plan = Sim(deepspeed_job(disableCustomEnv=True), ssh_key=KEY).step()
    for name, p in by_name(plan.create, "Pod").items():
        assert "T9K_FORWARD_ENV" not in env_of(container_of(p)), name
        assert "t9k-run" not in {v["name"] for v in p["spec"]["volumes"]}


SECRET_ENV = [
    {"name": "NCCL_DEBUG", "value": "INFO"},
    {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
]


ENV_FROM = [{"configMapRef": {"name": "settings"}}, {"secretRef": {"name": "creds"}}]


def test_deepspeed_env_reaches_every_worker_by_reference_not_by_value() -> None:
    """Issue 10 item 8: worker-0 used to copy `env` values into /root/.deepspeed_env (which
    DeepSpeed puts on pdsh's command line and into its log) and dropped `envFrom`. Now every
    worker's ssh sessions load that worker's own container environment, kept in memory."""
    job = deepspeed_job(
        worker={"replicas": 2, "template": pod("worker", env=SECRET_ENV, envFrom=ENV_FROM)}
    )
    pods = by_name(Sim(job, ssh_key=KEY).step().create, "Pod")
    for name, p in pods.items():
        c = container_of(p)
        env = {e["name"]: e for e in c["env"]}
        assert env["T9K_FORWARD_ENV"]["value"] == "1", name
        assert env["HF_TOKEN"] == SECRET_ENV[1]  # still a reference, resolved by the kubelet
        assert c["envFrom"] == ENV_FROM
        assert not any(n.startswith("T9K_ENV") for n in env)  # no env file any more
        (run,) = [v for v in p["spec"]["volumes"] if v["name"] == "t9k-run"]
        assert run == {"name": "t9k-run", "emptyDir": {"medium": "Memory"}}
        assert {"name": "t9k-run", "mountPath": "/t9k/run"} in c["volumeMounts"]
    assert (
        "t9k-session.sh"
        in by_name(Sim(job, ssh_key=KEY).step().create, "ConfigMap")["demo-config"]["data"]
    )


@pytest.mark.parametrize("run", [{"python": []}, {"module": []}, {"exec": [""]}])
def test_deepspeed_empty_run_list_is_invalid_unless_debugging(run: dict[str, Any]) -> None:
    sim = Sim(deepspeed_job(config={"run": run}), ssh_key=KEY)
    sim.step()
    assert sim.phase == "Failed"
    assert sim.condition("Failed")["reason"] == "InvalidSpec"
    assert "an empty list launches nothing" in sim.condition("Failed")["message"]
    debug = Sim(
        deepspeed_job(config={"run": run}, runMode={"debug": {"enabled": True}}), ssh_key=KEY
    )
    debug.step()
    assert debug.phase != "Failed"  # T9k's debug examples use `run: {python: []}`


HOSTILE = [
    "a b",
    "it's",
    'say "hi"',
    "x; rm -rf /",
    "$(reboot)",
    "`id`",
    "line1\nline2",
    "--flag=$HOME",
    "*",
]


def through_deepspeed_pdsh(args: list[str]) -> list[str]:
    """What the training processes receive when `deepspeed` starts them over pdsh, seen on the
    real node (tests/cluster/test_real_training.py): DeepSpeed's pdsh runner wraps an argument
    holding a space in double quotes (its `"` escaped as `\\"`) and passes any other as it is,
    joined by spaces; pdsh replaces `%%`, `%n`, `%h`, `%u` in that line; the worker's bash runs
    it. The last step is a real bash here."""
    words = [f'"{a.replace(chr(34), chr(92) + chr(34))}"' if " " in a else a for a in args]
    line, out, i = " ".join(words), [], 0
    while i < len(line):
        if line[i] == "%" and i + 1 < len(line) and line[i + 1] in "%nhu":
            out.append({"%": "%", "n": "0", "h": "host", "u": "root"}[line[i + 1]])
            i += 2
        else:
            out.append(line[i])
            i += 1
    script = 'python3 -c "import json, sys; print(json.dumps(sys.argv[1:]))" ' + "".join(out)
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, (script, proc.stderr)
    return list(json.loads(proc.stdout))


def _deepspeed_launch(
    run: list[str], workers: int = 2, other_args: list[str] | None = None
) -> list[str]:
    config: dict[str, Any] = {"run": {"python": run}}
    if other_args is not None:
        config["otherArgs"] = other_args
    job = deepspeed_job(config=config, worker={"replicas": workers, "template": pod("worker")})
    command = container_of(Sim(job, ssh_key=KEY).launch()["demo-worker-0"])["command"]
    return list(command[command.index(run[0]) :])


def test_hostile_strings_stay_single_arguments() -> None:
    job = deepspeed_job(config={"run": {"python": ["train.py"]}, "otherArgs": ["--x", *HOSTILE]})
    command = container_of(Sim(job, ssh_key=KEY).launch()["demo-worker-0"])["command"]
    # deepspeed's own options are parsed by deepspeed: no shell between
    assert command[command.index("--x") + 1 : command.index("train.py")] == HOSTILE
    # the script's arguments go through DeepSpeed's pdsh runner and the workers' bash, and
    # arrive as written
    launched = _deepspeed_launch(["train.py", *HOSTILE, "50%n", "a\\b c", 'say "hi"', "it's"])
    assert through_deepspeed_pdsh(launched) == [
        "train.py", *HOSTILE, "50%n", "a\\b c", 'say "hi"', "it's"
    ]  # fmt: skip
    # one worker: DeepSpeed runs the script itself, no pdsh and no shell: nothing is escaped
    assert _deepspeed_launch(["train.py", *HOSTILE], workers=1) == ["train.py", *HOSTILE]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.text(
            st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=12
        ),
        max_size=4,
    )
)
def test_any_script_argument_survives_deepspeeds_pdsh_runner(args: list[str]) -> None:
    launched = _deepspeed_launch(["train.py", *args])
    assert through_deepspeed_pdsh(launched) == ["train.py", *args]
    caij = colossalai_job(torchConfig={"script": ["train.py", *HOSTILE]})
    launcher = container_of(Sim(caij, ssh_key=KEY).launch()["demo-launcher"], "launcher")
    # colossalai run joins the torchrun command with spaces and a shell on each worker runs it
    tail = launcher["command"][launcher["command"].index("--") + 1 :]
    assert shlex.split(" ".join(tail)) == ["train.py", *HOSTILE]


def test_deepspeed_outcome_is_decided_by_worker_0() -> None:
    sim = Sim(
        deepspeed_job(
            worker={"replicas": 2, "template": pod("worker")}, runPolicy={"backoffLimit": 0}
        ),
        ssh_key=KEY,
    )
    sim.launch()
    sim.finish("demo-worker-0", code=137)
    sim.step()
    assert sim.phase == "Failed"
    assert (
        sim.condition("Failed")["message"]
        == "DeepSpeedJob demo has failed: demo-worker-0 failed with exit code 137"
    )
    ok = Sim(deepspeed_job(worker={"replicas": 2, "template": pod("worker")}), ssh_key=KEY)
    ok.launch()
    ok.finish("demo-worker-0")
    ok.step()
    assert ok.phase == "Succeeded"  # worker-1 still runs sshd: worker-0 decides


def test_deepspeed_backoff_limit_is_shared_by_all_workers() -> None:
    job = deepspeed_job(
        worker={"replicas": 2, "template": pod("worker"), "restartPolicy": "OnFailure"},
        runPolicy={"backoffLimit": 1},
    )
    sim = Sim(job, ssh_key=KEY)
    sim.launch()
    sim.finish("demo-worker-1", code=1)
    sim.step()
    sim.step()
    assert sim.status["backoffCount"] == 1
    sim.run()
    sim.finish("demo-worker-0", code=1)
    sim.step()
    assert sim.phase == "Failed"  # the job-wide budget is spent
    assert sim.status["backoffCount"] == 1


def test_active_deadline_fails_the_job_and_asks_to_be_requeued_until_then() -> None:
    sim = Sim(deepspeed_job(runPolicy={"activeDeadlineSeconds": 60}), ssh_key=KEY)
    sim.job["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    plan = sim.step()
    assert plan.requeue_after == pytest.approx(60)  # counted from the first pass, not creation
    sim.run()
    sim.now += timedelta(seconds=120)
    sim.step()
    assert sim.phase == "Failed"
    assert sim.condition("Failed")["reason"] == "DeadlineExceeded"


def test_elastic_resize_rewrites_the_hostfile_and_relaunches_worker_0() -> None:
    job = deepspeed_job(
        elastic={"enabled": True, "minReplicas": 1, "maxReplicas": 4, "expectedReplicas": 2}
    )
    sim = Sim(job, ssh_key=KEY)
    assert sorted(sim.launch()) == ["demo-worker-0", "demo-worker-1"]
    sim.settle()
    sim.job["spec"]["elastic"]["expectedReplicas"] = 3
    plan = sim.step()
    assert sorted(by_name(plan.create, "Pod")) == ["demo-worker-2"]
    (update,) = plan.update
    assert update.manifest["data"]["hostfile"].count("\n") == 3
    assert not plan.delete  # worker-0 is relaunched once the ConfigMap holds the new hostfile
    plan = sim.step()
    assert [d.name for d in plan.delete] == ["demo-worker-0"]  # relaunch with the new hostfile
    sim.drain_deletions()
    plan = sim.step()
    assert not by_name(plan.create, "Pod")  # the new launch waits for the new worker to run
    sim.run("demo-worker-2")
    plan = sim.step()
    assert sorted(by_name(plan.create, "Pod")) == ["demo-worker-0"]
    assert sim.status["backoffCount"] == 0  # a resize is not a restart


def test_deepspeed_pod_group_uses_min_replicas_when_elastic() -> None:
    job = deepspeed_job(
        scheduler={"t9kScheduler": {"queue": "q"}},
        elastic={"enabled": True, "minReplicas": 2, "maxReplicas": 8, "expectedReplicas": 4},
    )
    group = by_name(Sim(job, ssh_key=KEY).step().create, "PodGroup")["demo"]
    assert group["spec"] == {"minMember": 2, "queue": "q", "priority": 0}


def test_deepspeed_debug_workers_run_the_jobs_sshd_set_up() -> None:
    """Issue 10 item 4: a bare `/usr/sbin/sshd -D` used the image's sshd config (StrictModes on,
    no host keys, ~/.ssh/authorized_keys) and no environment; debug pods run the job's sshd
    script, so `deepspeed` started by hand on worker-0 reaches every worker
    (tests/bootstrap proves it against OpenSSH)."""
    plan = Sim(deepspeed_job(runMode={"debug": {"enabled": True}}), ssh_key=KEY).step()
    for name in ("demo-worker-0", "demo-worker-1"):
        c = container_of(by_name(plan.create, "Pod")[name])
        assert c["command"] == bootstrap.sshd_command(), name
        assert "args" not in c
        assert env_of(c)["T9K_FORWARD_ENV"] == "1"
        assert any(m["mountPath"] == "/root/.ssh" for m in c["volumeMounts"])
    custom = deepspeed_job(
        runMode={
            "debug": {
                "enabled": True,
                "replicaSpecs": [{"type": "worker", "command": ["sleep", "1d"]}],
            }
        }
    )
    c = container_of(by_name(Sim(custom, ssh_key=KEY).step().create, "Pod")["demo-worker-1"])
    assert c["command"] == ["sleep", "1d"]


def test_barrier_timeout_message_reaches_the_replica_failure_condition() -> None:
    job = deepspeed_job(runPolicy={"backoffLimit": 0})
    sim = Sim(job, ssh_key=KEY)
    sim.launch()
    sim.finish("demo-worker-0", code=bootstrap.BARRIER_EXIT_CODE)
    message = "t9k bootstrap: worker demo-worker-1.demo: sshd did not answer within 300s"
    sim.pods["demo-worker-0"]["status"]["containerStatuses"][0]["state"]["terminated"][
        "message"
    ] = message
    sim.step()
    assert sim.phase == "Failed"
    # as T9k's DeepSpeedJob writes it (reason Failed, the job's message), with the pod's reason
    t9k = "DeepSpeedJob demo has failed: demo-worker-0 failed with exit code 124"
    assert sim.condition("ReplicaFailure")["message"] == f"{t9k}: {message}"
    for type in ("ReplicaFailure", "Failed", "Completed"):
        assert sim.condition(type)["reason"] == "Failed"
        assert sim.condition(type)["message"].startswith(t9k)
    assert sim.condition("Failed")["message"] == t9k


def test_deepspeed_failure_reads_as_t9ks_real_status_dump() -> None:
    """T9k's dump (baichuan2-sft): ReplicaFailure, Failed and Completed all say
    `DeepSpeedJob <job> has failed: <job>-worker-0 failed with exit code 137`, reason Failed."""
    sim = Sim(deepspeed_job(runPolicy={"backoffLimit": 0}), ssh_key=KEY)
    sim.launch()
    sim.finish("demo-worker-0", code=137, reason="OOMKilled")
    sim.step()
    message = "DeepSpeedJob demo has failed: demo-worker-0 failed with exit code 137"
    for type in ("ReplicaFailure", "Failed", "Completed"):
        assert (sim.condition(type)["status"], sim.condition(type)["reason"]) == ("True", "Failed")
        assert sim.condition(type)["message"] == message


@pytest.mark.parametrize(
    ("workers", "other_args", "through_pdsh"),
    [
        (2, [], True),
        (1, [], False),
        (1, ["--force_multi"], True),
        (2, ["--launcher", "openmpi"], False),
        (2, ["--launcher=mvapich"], False),
        (2, ["--launcher", "pdsh"], True),
        (2, ["--no_ssh"], False),
        (2, ["--num_nodes", "1"], False),
        (3, ["--num_nodes=2"], True),
    ],
)
def test_arguments_are_escaped_only_when_deepspeed_starts_the_script_through_pdsh(
    workers: int, other_args: list[str], through_pdsh: bool
) -> None:
    args = ["it's", "a b", "50%n"]
    launched = _deepspeed_launch(["train.py", *args], workers, other_args)
    if through_pdsh:
        assert through_deepspeed_pdsh(launched) == ["train.py", *args]
    else:  # DeepSpeed passes them to the script as they are (a list, no shell)
        assert launched == ["train.py", *args]


# -- the launcher waits for its workers ------------------------------------------------------------
#
# T9k documents no launch timeout: a job whose workers have not started is Pending. The operator
# creates the launcher (DeepSpeedJob worker-0, ColossalAIJob launcher) only once every worker it
# reaches over ssh runs, so a job that waits for GPUs, images or a scheduler is never failed by
# the launcher's barrier and never spends a restart on waiting.


def test_deepspeed_worker_0_waits_pending_for_hours_and_starts_once_every_worker_runs() -> None:
    sim = Sim(
        deepspeed_job(worker={"replicas": 3, "template": pod("worker")}),
        ssh_key=KEY,
    )
    plan = sim.step()
    assert sorted(by_name(plan.create, "Pod")) == ["demo-worker-1", "demo-worker-2"]
    assert sim.phase == "Pending"
    running = sim.condition("Running")
    assert running["reason"] == "WaitingForWorkers"
    assert "demo-worker-1, demo-worker-2" in running["message"]
    assert sim.replica("demo-worker-0")["phase"] == "Pending"
    assert sim.status["aggregate"]["pending"] == 1
    assert sim.reasons().count("WaitingForWorkers") == 1

    sim.run("demo-worker-1")
    sim.unschedulable("demo-worker-2", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
    for _ in range(3):
        sim.step(seconds=3600)
    assert sim.phase == "Pending"  # hours later: waiting, not failed
    assert sim.condition("Running")["reason"] == "Unschedulable"  # the worker's own reason first
    assert sim.status["backoffCount"] == 0
    assert "demo-worker-0" not in sim.pods

    sim.run("demo-worker-2")
    plan = sim.step()
    assert sorted(by_name(plan.create, "Pod")) == ["demo-worker-0"]
    sim.run()
    sim.step()
    assert sim.phase == "Running"
    assert sim.status["backoffCount"] == 0


def test_a_restarted_launcher_waits_for_a_restarted_worker_and_counts_once() -> None:
    job = deepspeed_job(
        worker={"replicas": 2, "template": pod("worker"), "restartPolicy": "OnFailure"},
        runPolicy={"backoffLimit": 3},
    )
    sim = Sim(job, ssh_key=KEY)
    sim.launch()
    sim.step()
    sim.finish("demo-worker-0", code=1)
    sim.finish("demo-worker-1", code=1)
    sim.step()  # both deleted for a restart
    plan = sim.step()
    assert sorted(by_name(plan.create, "Pod")) == ["demo-worker-1"]  # worker-0 waits for it
    sim.step()
    sim.step()
    assert "demo-worker-0" not in sim.pods
    assert sim.status["backoffCount"] == 1  # worker-1's restart; worker-0's not yet made
    sim.run("demo-worker-1")
    plan = sim.step()
    assert sorted(by_name(plan.create, "Pod")) == ["demo-worker-0"]
    assert sim.status["backoffCount"] == 2  # each restart counted once
    assert sim.reasons().count("RestartedPod") == 2


def test_debug_mode_creates_the_launcher_at_once() -> None:
    sim = Sim(deepspeed_job(runMode={"debug": {"enabled": True}}), ssh_key=KEY)
    plan = sim.step()
    assert sorted(by_name(plan.create, "Pod")) == ["demo-worker-0", "demo-worker-1"]


@pytest.mark.parametrize(
    ("value", "used"),
    [("45", "45"), ("86400", "86400"), ("0", "300"), ("abc", "300"), ("1e3", "300"), (None, "300")],
)
def test_the_launch_barrier_timeout_is_the_users_when_it_is_whole_seconds(
    value: str | None, used: str
) -> None:
    env = [{"name": "T9K_BARRIER_TIMEOUT", "value": value}] if value is not None else []
    pods = Sim(
        deepspeed_job(worker={"replicas": 2, "template": pod("worker", env=env)}), ssh_key=KEY
    ).launch()
    assert env_of(container_of(pods["demo-worker-0"]))["T9K_BARRIER_TIMEOUT"] == used
    assert "T9K_BARRIER_TIMEOUT" not in env_of(container_of(pods["demo-worker-1"]))
    caij = colossalai_job(
        replicaSpecs=[
            {"type": "launcher", "template": pod("launcher", env=env)},
            {"type": "worker", "replicas": 1, "template": pod("worker")},
        ]
    )
    launcher = Sim(caij, ssh_key=KEY).launch()["demo-launcher"]
    assert env_of(container_of(launcher, "launcher"))["T9K_BARRIER_TIMEOUT"] == used


def test_a_refused_hostfile_update_never_relaunches_worker_0_with_the_old_hosts() -> None:
    """The hostfile is mounted as the ConfigMap holds it: while its update is refused, worker-0
    keeps its launch (nothing would change), the job says why, and once the update lands worker-0
    is relaunched with the new hosts. A worker-0 to create meanwhile waits for the update."""
    job = deepspeed_job(
        elastic={"enabled": True, "minReplicas": 1, "maxReplicas": 4, "expectedReplicas": 2}
    )
    sim = Sim(job, ssh_key=KEY)
    sim.launch()
    sim.settle()
    old_hosts = sim.others[("ConfigMap", "demo-config")]["data"]["hostfile"]
    sim.job["spec"]["elastic"]["expectedReplicas"] = 3
    for _ in range(3):  # the API server refuses the update (the simulator drops it)
        plan = sim.step(apply=False)
        sim.apply(Plan(status=plan.status, create=plan.create, events=plan.events))
        sim.run()
        assert not plan.delete
    assert sim.others[("ConfigMap", "demo-config")]["data"]["hostfile"] == old_hosts
    # worker-0 goes meanwhile: it is not recreated to mount the old hosts
    sim.vanish("demo-worker-0")
    plan = sim.step()
    assert not by_name(plan.create, "Pod")
    assert "the new hostfile in ConfigMap demo-config" in sim.condition("Running")["message"]
    # the update lands: worker-0 starts with the new hostfile, and says which it mounted
    new_hosts = plan.update[0].manifest["data"]["hostfile"]
    sim.others[("ConfigMap", "demo-config")]["data"]["hostfile"] = new_hosts
    plan = sim.step()
    (w0,) = by_name(plan.create, "Pod").values()
    mounted = w0["metadata"]["annotations"][bootstrap.HOSTFILE_HASH]
    assert mounted == bootstrap.hostfile_hash(new_hosts)


def test_an_elastic_job_launches_with_min_replicas_and_relaunches_as_workers_arrive() -> None:
    """T9k: the expected scale is not the actual scale. With one worker that cannot be
    scheduled, an elastic job trains with the workers that run (at least minReplicas), and
    grows when the late worker runs."""
    job = deepspeed_job(
        elastic={"enabled": True, "minReplicas": 2, "maxReplicas": 4, "expectedReplicas": 3}
    )
    sim = Sim(job, ssh_key=KEY)
    plan = sim.step()
    assert sorted(by_name(plan.create, "Pod")) == ["demo-worker-1", "demo-worker-2"]
    assert by_name(plan.create, "ConfigMap")["demo-config"]["data"]["hostfile"].count("\n") == 3
    sim.unschedulable("demo-worker-2", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
    plan = sim.step()  # worker-2 will not start by itself: the hostfile leaves it out
    assert plan.update[0].manifest["data"]["hostfile"].count("\n") == 2
    assert not by_name(plan.create, "Pod")  # worker-0 waits for worker-1 to run
    sim.run("demo-worker-1")
    plan = sim.step()
    (w0,) = by_name(plan.create, "Pod").values()  # worker-0 + worker-1 = minReplicas: launch
    hostfile = sim.others[("ConfigMap", "demo-config")]["data"]["hostfile"]
    assert hostfile == "demo-worker-0.demo slots=1\ndemo-worker-1.demo slots=1\n"
    mounted = w0["metadata"]["annotations"][bootstrap.HOSTFILE_HASH]
    assert mounted == bootstrap.hostfile_hash(hostfile)
    sim.run("demo-worker-0")
    for _ in range(3):
        sim.step(seconds=3600)
    assert sim.phase == "Running"  # hours on 2 of 3 workers: running, not failed
    assert "demo-worker-0" in sim.pods

    running = sim.condition("Running")
    assert running["status"] == "True"
    assert "Training with 2 of 3 workers (elastic); demo-worker-2 joins" in running["message"]
    assert "Insufficient nvidia.com/gpu" in running["message"]

    sim.run("demo-worker-2")  # the late worker arrives: a relaunch with all three
    plan = sim.step()
    assert plan.update[0].manifest["data"]["hostfile"].count("\n") == 3
    plan = sim.step()
    assert [d.name for d in plan.delete] == ["demo-worker-0"]
    sim.drain_deletions()
    plan = sim.step()
    assert sorted(by_name(plan.create, "Pod")) == ["demo-worker-0"]
    assert sim.status["backoffCount"] == 0


def test_an_elastic_job_below_min_replicas_waits_pending() -> None:
    job = deepspeed_job(
        elastic={"enabled": True, "minReplicas": 3, "maxReplicas": 4, "expectedReplicas": 3}
    )
    sim = Sim(job, ssh_key=KEY)
    sim.step()
    sim.run("demo-worker-1")
    sim.unschedulable("demo-worker-2", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
    for _ in range(3):
        plan = sim.step(seconds=3600)
        assert not by_name(plan.create, "Pod")
    assert sim.phase == "Pending"
    assert sim.condition("Running")["reason"] == "Unschedulable"


def test_a_worker_that_ended_with_success_is_not_waited_for() -> None:
    """A worker's sshd that exited 0 before the launcher started will not run again: the
    launcher is created rather than held forever (its barrier then says what it cannot reach)."""
    sim = Sim(colossalai_job(), ssh_key=KEY)
    sim.step()
    sim.run("demo-worker-0")
    sim.finish("demo-worker-1", code=0)
    plan = sim.step()
    assert sorted(by_name(plan.create, "Pod")) == ["demo-launcher"]
    assert sim.phase not in ("Failed", "Succeeded")


def test_a_users_dns_settings_reach_the_pods_unchanged() -> None:
    dns = {"nameservers": ["10.0.0.53"], "options": [{"name": "ndots", "value": "2"}]}
    template = pod("worker")
    template["spec"]["dnsConfig"] = dns
    template["spec"]["dnsPolicy"] = "None"
    sim = Sim(deepspeed_job(worker={"replicas": 2, "template": template}), ssh_key=KEY)
    worker = by_name(sim.step().create, "Pod")["demo-worker-1"]
    assert worker["spec"]["dnsConfig"] == dns
    assert worker["spec"]["dnsPolicy"] == "None"
