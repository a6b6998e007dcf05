"""`TorchrunJob`: PyTorch DDP on GenericJob, checked through the operator's own pure core.

What each worker pod ends up with is read from `plan_objects` (which runs
`t9k_sdk.reconcile.desired_children`, the functions the operator uses), so these tests see the
substituted values a pod really gets, not the `$(...)` variables of the manifest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from t9k_sdk import EmptyDir, InvalidManifestError, Resources, TorchrunJob
from t9k_sdk.cli import main
from t9k_sdk.models import core_v1
from t9k_sdk.plan import plan_objects
from t9k_sdk.reconcile.kinds import rules_for

EXAMPLES = Path(__file__).parents[2] / "examples"
IMAGE = "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime"


def _pods(job: TorchrunJob) -> list[dict[str, Any]]:
    return [o for o in plan_objects(job.build()) if o["kind"] == "Pod"]


def _env(pod: dict[str, Any]) -> dict[str, str]:
    (container,) = pod["spec"]["containers"]
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


def test_every_worker_gets_a_unique_rank_and_the_masters_address() -> None:
    job = TorchrunJob(name="ddp", image=IMAGE, workers=5, run=["train.py"])
    pods = _pods(job)
    assert [p["metadata"]["name"] for p in pods] == [f"ddp-worker-{i}" for i in range(5)]
    envs = [_env(p) for p in pods]
    assert sorted(int(e["RANK"]) for e in envs) == list(range(5))
    assert [e["RANK"] for e in envs] == [e["PET_NODE_RANK"] for e in envs]
    assert {e["MASTER_ADDR"] for e in envs} == {"ddp-worker-0"}
    assert {e["PET_MASTER_ADDR"] for e in envs} == {"ddp-worker-0"}
    assert {(e["MASTER_PORT"], e["PET_MASTER_PORT"]) for e in envs} == {("29500", "29500")}
    assert {(e["WORLD_SIZE"], e["PET_NNODES"], e["PET_NPROC_PER_NODE"]) for e in envs} == {
        ("5", "5", "1")
    }
    # rank 0 is the pod the address names
    master = next(p for p, e in zip(pods, envs, strict=True) if e["RANK"] == "0")
    assert master["metadata"]["name"] == "ddp-worker-0"


def test_the_master_address_is_a_service_exposing_the_rendezvous_port() -> None:
    job = TorchrunJob(name="ddp", image=IMAGE, workers=3, master_port=23456, run=["t.py"])
    objects = plan_objects(job.build())
    services = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Service"}
    assert set(services) == {"ddp-worker-0", "ddp-worker-1", "ddp-worker-2"}
    master = services["ddp-worker-0"]["spec"]
    assert master["ports"] == [{"name": "torchrun", "port": 23456}]
    assert master["selector"] == {"genericjob-replica": "ddp-worker-0"}
    pod0 = next(o for o in objects if o["kind"] == "Pod")
    assert pod0["metadata"]["labels"]["genericjob-replica"] == "ddp-worker-0"
    assert pod0["spec"]["containers"][0]["ports"] == [{"name": "torchrun", "containerPort": 23456}]
    assert {_env(p)["MASTER_PORT"] for p in _pods(job)} == {"23456"}


def test_the_torchrun_command_line_is_resolved_per_worker() -> None:
    job = TorchrunJob(
        name="ddp",
        image=IMAGE,
        workers=2,
        gpus_per_worker=4,
        run=["train.py", "--epochs", "3"],
        torchrun_args=["--max-restarts=2"],
    )
    commands = [p["spec"]["containers"][0]["command"] for p in _pods(job)]
    assert commands == [
        [
            "torchrun",
            "--nnodes=2",
            "--nproc_per_node=4",
            f"--node_rank={i}",
            "--master_addr=ddp-worker-0",
            "--master_port=29500",
            "--max-restarts=2",
            "train.py",
            "--epochs",
            "3",
        ]
        for i in range(2)
    ]
    # WORLD_SIZE counts processes, as Kubeflow's PyTorchJob: nodes x processes per node
    assert {_env(p)["WORLD_SIZE"] for p in _pods(job)} == {"8"}


def test_nproc_per_node_overrides_the_gpu_count_and_module_runs_with_dash_m() -> None:
    job = TorchrunJob(
        name="ddp", image=IMAGE, workers=3, nproc_per_node=2, module=["pkg.train", "--lr=0.1"]
    )
    first, *_ = _pods(job)
    command = first["spec"]["containers"][0]["command"]
    assert "--nproc_per_node=2" in command
    assert command[-3:] == ["-m", "pkg.train", "--lr=0.1"]
    assert _env(first)["WORLD_SIZE"] == "6"
    assert _env(first)["PET_NPROC_PER_NODE"] == "2"


@pytest.mark.parametrize(
    "resources",
    [
        {"gpus_per_worker": 8},
        {"resources": Resources(cpu=16, gpus=8)},
        {"resources": core_v1.ResourceRequirements(limits={"nvidia.com/gpu": 8})},
    ],
    ids=["gpus_per_worker", "Resources", "ResourceRequirements"],
)
def test_one_process_per_gpu_by_default(resources: dict[str, Any]) -> None:
    job = TorchrunJob(name="ddp", image=IMAGE, workers=2, run=["t.py"], **resources)
    pod, _ = _pods(job)
    assert "--nproc_per_node=8" in pod["spec"]["containers"][0]["command"]
    assert _env(pod)["WORLD_SIZE"] == "16"


def test_the_users_env_volumes_and_resources_are_kept() -> None:
    job = TorchrunJob(
        name="ddp",
        image=IMAGE,
        workers=2,
        run=["t.py"],
        env={"NCCL_DEBUG": "INFO"},
        volumes=[EmptyDir(mount_path="/dev/shm", medium="Memory")],
        cpu_per_worker=4,
        memory_per_worker="8Gi",
    )
    pod, _ = _pods(job)
    env = _env(pod)
    assert env["NCCL_DEBUG"] == "INFO"
    assert env["MASTER_ADDR"] == "ddp-worker-0"
    container = pod["spec"]["containers"][0]
    assert container["volumeMounts"] == [{"name": "vol-dev-shm", "mountPath": "/dev/shm"}]
    assert container["resources"]["limits"] == {"cpu": 4, "memory": "8Gi"}


def test_the_job_succeeds_when_rank_0_succeeds_and_fails_when_any_worker_fails() -> None:
    job = TorchrunJob(name="ddp", image=IMAGE, workers=3, run=["t.py"])
    rules = rules_for(job.build())
    # rank 0 done, the others still running: done (Kubeflow's default for PyTorchJob)
    assert rules.outcome({"ddp-worker-0": "Succeeded"}, {}) == (
        "Succeeded",
        "The job has finished successfully.",
    )
    assert rules.outcome({"ddp-worker-1": "Succeeded"}, {}) is None
    outcome = rules.outcome({"ddp-worker-2": "Failed"}, {"ddp-worker-2": 1})
    assert outcome is not None
    assert outcome[0] == "Failed"


def test_a_torchrun_job_is_a_generic_job_in_yaml() -> None:
    job = TorchrunJob(name="ddp", image=IMAGE, workers=2, run=["t.py"])
    manifest = job.to_dict()
    assert manifest["kind"] == "GenericJob"
    assert manifest["spec"]["successRules"] == [{"worker": [0]}]
    assert manifest["spec"]["service"] == {"ports": [{"name": "torchrun", "port": 29500}]}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (
            {"run": ["t.py"], "nproc_per_node": 0},
            "nproc_per_node: input should be greater than or equal to 1; got 0",
        ),
        ({"run": ["t.py"], "workers": 0}, "workers: input should be greater than or equal to 1"),
        ({"run": ["t.py"], "master_port": 70000}, "master_port: input should be less than or"),
        ({}, "give exactly one of run= (a script and its arguments) or module="),
        ({"run": ["t.py"], "module": ["m"]}, "got run and module"),
        ({"run": []}, "run: run= is empty: name the script to start"),
        (
            {"run": ["t.py"], "env": {"RANK": "3", "MASTER_ADDR": "x"}},
            "env: MASTER_ADDR, RANK are set by TorchrunJob for each worker; remove them from env",
        ),
        ({"run": ["t.py"], "nprocs_per_node": 2}, "did you mean 'nproc_per_node'?"),
    ],
)
def test_nonsense_is_refused_naming_the_argument(arguments: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidManifestError) as info:
        TorchrunJob(name="ddp", image=IMAGE, **arguments)
    assert expected in str(info.value)
    assert "TorchrunJob 'ddp' is invalid" in str(info.value)


def test_plan_shows_each_workers_resolved_environment(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plan", str(EXAMPLES / "genericjob_mnist.py")]) == 0
    out = capsys.readouterr().out
    for i in range(4):
        assert (
            f"env:     MASTER_ADDR=mnist-worker-0 MASTER_PORT=29500 WORLD_SIZE=4 RANK={i} " in out
        )
        assert f"--node_rank={i} --master_addr=mnist-worker-0 --master_port=29500" in out
    assert "$(" not in out
    assert "Service    mnist-worker-0" in out
