"""TorchrunJob end to end: the real `t9k-operator` on the real control plane (kwok runs the pods).

A TorchrunJob is a GenericJob the SDK writes; these tests check what the workers of a PyTorch
DDP job get from the operator: their env (MASTER_ADDR, RANK, WORLD_SIZE...), the resolved
torchrun command, a service per worker that selects the pod MASTER_ADDR names, and that the job
succeeds once rank 0 has succeeded. kwok has no container runtime and no DNS, so that the name
resolves is shown by the master service's endpoints holding the master pod's address.
"""

from __future__ import annotations

from typing import Any

from t9k_sdk import TorchrunJob
from tests.cluster.e2e_helpers import Jobs, replicas_of
from tools.kit import IMAGE, wait_for


def _env(pod: Any) -> dict[str, str]:
    (container,) = pod.spec.containers
    return {e.name: e.value for e in container.env or ()}


def test_the_operator_gives_every_worker_its_rank_and_the_masters_address(jobs: Jobs) -> None:
    job = TorchrunJob(
        name="ddp", image=IMAGE, workers=3, nproc_per_node=2, run=["train.py", "--epochs=1"]
    )
    jobs.create(job.to_dict())
    names = {f"ddp-worker-{i}" for i in range(3)}
    pods = jobs.wait_running("ddp", names)

    for i in range(3):
        env = _env(pods[f"ddp-worker-{i}"])
        assert {k: env[k] for k in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")} == {
            "MASTER_ADDR": "ddp-worker-0",
            "MASTER_PORT": "29500",
            "WORLD_SIZE": "6",
            "RANK": str(i),
        }
        assert env["PET_NODE_RANK"] == str(i)
        assert env["PET_NNODES"] == "3"
        assert env["PET_NPROC_PER_NODE"] == "2"
        assert pods[f"ddp-worker-{i}"].spec.containers[0].command == [
            "torchrun",
            "--nnodes=3",
            "--nproc_per_node=2",
            f"--node_rank={i}",
            "--master_addr=ddp-worker-0",
            "--master_port=29500",
            "train.py",
            "--epochs=1",
        ]

    # MASTER_ADDR is the headless service of worker 0, and it points at worker 0's pod
    service = jobs.core_v1.read_namespaced_service("ddp-worker-0", jobs.namespace)
    assert service.spec.cluster_ip == "None"
    assert [(p.name, p.port) for p in service.spec.ports] == [("torchrun", 29500)]
    master_ip = jobs.pod("ddp-worker-0").status.pod_ip
    assert master_ip

    def endpoint_ips() -> list[str]:
        endpoints = jobs.core_v1.read_namespaced_endpoints("ddp-worker-0", jobs.namespace)
        return [
            a.ip
            for subset in endpoints.subsets or ()
            for a in [*(subset.addresses or ()), *(subset.not_ready_addresses or ())]
        ]

    assert wait_for(endpoint_ips, bool, "endpoints of service ddp-worker-0") == [master_ip]

    # rank 0 finishing successfully ends the job, with the other workers still running
    jobs.end_pod("ddp-worker-0", 0)
    status = jobs.wait_phase("ddp", "Succeeded")
    phases = {name: r["phase"] for name, r in replicas_of(status).items()}
    assert phases["ddp-worker-0"] == "Succeeded"
    assert phases["ddp-worker-1"] != "Succeeded"
    assert phases["ddp-worker-2"] != "Succeeded"
