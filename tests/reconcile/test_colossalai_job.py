"""ColossalAIJob: the launcher and its workers, SSH settings, launch argv and outcome."""

from __future__ import annotations

from t9k_sdk.reconcile import bootstrap
from tests.sdk.manifests import colossalai_job, pod

from .sim import KEY, Sim, by_name, container_of, env_of


def test_colossalai_launcher_workers_and_ssh_settings() -> None:
    job = colossalai_job(
        ssh={"authMountPath": "/home/u/.ssh", "sshdPath": "/opt/sshd"},
        torchConfig={
            "procPerWorker": 4,
            "script": ["train.py", "--x"],
            "extraArgs": ["--master_port=29600"],
        },
        replicaSpecs=[
            {"type": "launcher", "template": {}},
            {"type": "worker", "replicas": 2, "template": pod("worker", image="colossal:1")},
        ],
    )
    sim = Sim(job, ssh_key=KEY)
    pods = sim.launch()
    plan = sim.plans[0]
    assert sorted(pods) == ["demo-launcher", "demo-worker-0", "demo-worker-1"]
    assert sorted(by_name(plan.create, "Pod")) == ["demo-worker-0", "demo-worker-1"]
    launcher = container_of(pods["demo-launcher"], "launcher")
    assert launcher["image"] == "colossal:1"  # empty launcher template: the worker's image
    assert launcher["command"][2:] == [
        "colossalai",
        "run",
        "--nproc_per_node",
        "4",
        "--hostfile",
        "/t9k/hostfile",
        "--master_addr",
        "demo-worker-0.demo",
        "--extra_launch_args",
        "master_port=29600",
        "--",
        "train.py",
        "--x",
    ]
    assert env_of(launcher)["T9K_SCRIPT"] == "train.py"  # checked on every worker before launch
    worker = container_of(pods["demo-worker-1"])
    assert worker["command"] == ["/bin/sh", "/t9k/scripts/t9k-sshd.sh"]
    assert env_of(worker)["T9K_SSHD"] == "/opt/sshd"
    assert any(m["mountPath"] == "/home/u/.ssh" for m in worker["volumeMounts"])
    assert (
        by_name(plan.create, "ConfigMap")["demo-config"]["data"]["hostfile"]
        == "demo-worker-0.demo\ndemo-worker-1.demo\n"
    )
    assert pods["demo-launcher"]["metadata"]["labels"]["job-role"] == "master"


def test_colossalai_launcher_decides_and_workers_never_restart() -> None:
    job = colossalai_job(
        replicaSpecs=[
            {"type": "launcher", "template": pod("launcher")},
            {
                "type": "worker",
                "replicas": 2,
                "template": pod("worker"),
                "restartPolicy": {"policy": "OnFailure", "limit": 5},
            },
        ],
        runPolicy={"cleanUpWorkers": True},
    )
    sim = Sim(job, ssh_key=KEY)
    sim.launch()
    sim.finish("demo-worker-1", code=1)
    plan = sim.step()
    assert not plan.delete  # a ColossalAI worker cannot rejoin a running training
    assert sim.phase not in ("Failed", "Succeeded")
    sim.finish("demo-launcher")
    plan = sim.step()
    assert sim.phase == "Succeeded"
    assert {d.name for d in plan.delete} == {"demo-worker-0", "demo-worker-1"}  # launcher kept


def test_colossalai_debug_keeps_sshd_on_workers_and_sleeps_on_the_launcher() -> None:
    plan = Sim(colossalai_job(runMode={"debug": {"enabled": True}}), ssh_key=KEY).step()
    pods = by_name(plan.create, "Pod")
    assert container_of(pods["demo-launcher"], "launcher")["command"] == ["sleep", "inf"]
    assert container_of(pods["demo-worker-0"])["command"] == bootstrap.sshd_command()


def test_colossalai_extra_args_become_one_extra_launch_args_option() -> None:
    """Issue 10 item 3: extraArgs used to be colossalai run options; an unknown one was taken
    for the script (not a .py file), so colossalai run started nothing and exited 0."""
    job = colossalai_job(
        torchConfig={
            "script": ["train.py", "--master_port", "1"],
            "extraArgs": ["--max_restarts=3", "--rdzv_backend=c10d", "--standalone"],
        }
    )
    launcher = container_of(Sim(job, ssh_key=KEY).launch()["demo-launcher"], "launcher")
    command = launcher["command"]
    i = command.index("--extra_launch_args")
    assert command[i + 1] == "max_restarts=3,rdzv_backend=c10d,standalone"
    # after `--` colossalai takes nothing as its own option: the script keeps --master_port
    assert command[i + 2 :] == ["--", "train.py", "--master_port", "1"]


def test_colossalai_debug_applies_runmode_replica_specs_to_workers() -> None:
    """Issue 10 item 4: workers ignored runMode.debug.replicaSpecs (command, skipInitContainer)."""
    worker = pod("worker", image="colossal:1")
    worker["spec"]["initContainers"] = [{"name": "fetch", "image": "busybox"}]
    job = colossalai_job(
        replicaSpecs=[
            {"type": "launcher", "template": pod("launcher")},
            {"type": "worker", "replicas": 2, "template": worker},
        ],
        runMode={
            "debug": {
                "enabled": True,
                "replicaSpecs": [
                    {"type": "worker", "command": ["sleep", "1d"], "skipInitContainer": True}
                ],
            }
        },
    )
    pods = by_name(Sim(job, ssh_key=KEY).step().create, "Pod")
    for name in ("demo-worker-0", "demo-worker-1"):
        assert container_of(pods[name])["command"] == ["sleep", "1d"]
        assert "initContainers" not in pods[name]["spec"]
    assert container_of(pods["demo-launcher"], "launcher")["command"] == ["sleep", "inf"]


def test_colossalai_launcher_waits_and_a_worker_that_ends_first_fails_the_job() -> None:
    sim = Sim(colossalai_job(), ssh_key=KEY)
    plan = sim.step()
    assert sorted(by_name(plan.create, "Pod")) == ["demo-worker-0", "demo-worker-1"]
    assert sim.condition("Running")["reason"] == "WaitingForWorkers"
    sim.run("demo-worker-0")
    sim.finish("demo-worker-1", code=2)  # ColossalAI workers are never restarted
    sim.step()
    assert sim.phase == "Failed"
    assert sim.condition("Failed")["message"] == (
        "ColossalAIJob demo has failed: demo-worker-1 failed with exit code 2 before the"
        " launcher demo-launcher could start, and is not restarted"
    )
    assert "demo-launcher" not in sim.pods
