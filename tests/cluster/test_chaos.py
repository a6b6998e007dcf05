"""The fault campaign of tools/chaos.py at its small size (docs/reliability.md).

Two operator replicas with leader election run two dozen jobs of the three kinds while the
leader is SIGKILLed three times in the middle of pod creates, kube-apiserver and etcd are
restarted, pods are deleted by hand, and jobs are deleted, paused or scaled (an elastic
DeepSpeedJob's `expectedReplicas`, a GenericJob's replica count) while their pods are being
created. Afterwards every job has exactly its pods, its status is what a new pass would write,
every job reached its phase, and a fresh operator over the converged namespace writes nothing.
`make chaos` runs the same campaign with 200 jobs.
"""

from __future__ import annotations

import json
from pathlib import Path

from tools import chaos
from tools.kit import ControlPlane


def test_faults_lose_nothing_and_duplicate_nothing(cluster: ControlPlane, tmp_path: Path) -> None:
    result = chaos.run_campaign(cluster.kubeconfig, chaos.SIZES["small"], tmp_path, seed=13)
    detail = json.dumps(result, indent=2, sort_keys=True)
    assert result[
        "converged"
    ], f"the jobs did not converge (operator logs in {tmp_path}):\n{detail}"
    assert result["faults"]["operator-kill"] == 3, detail
    assert result["mid_create_kills"] >= 1, detail
    assert result["faults"]["kube-apiserver-restart"] == 1, detail
    assert result["faults"]["etcd-restart"] == 1, detail
    assert result["faults"]["job-edit"] == 2, detail
    assert result["job_edits"] == {"edited": 2, "resized": 2}, detail
    restart = result["restart"]
    wrote = f"an operator started over converged jobs wrote to them:\n{detail}"
    assert restart["objects_changed"] == 0, wrote
    assert not restart["operator_writes"], wrote
