"""Builders: what a user writes in Python becomes the manifest they expect."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from t9k_sdk import (
    PVC,
    ColossalAIJob,
    Debug,
    DeepSpeedJob,
    Elastic,
    EmptyDir,
    GenericJob,
    InvalidManifestError,
    Launcher,
    Replica,
    Resources,
    Resume,
    TorchrunJob,
    from_manifest,
    models,
)


def _container(manifest: dict[str, Any], path: str = "worker") -> dict[str, Any]:
    spec = manifest["spec"]
    template = spec["worker"]["template"] if path == "worker" else path
    result: dict[str, Any] = template["spec"]["containers"][0]
    return result


def test_deepspeed_job_from_the_issue() -> None:
    job = DeepSpeedJob(
        name="bert",
        image="deepspeed/deepspeed:0.14",
        workers=4,
        gpus_per_worker=8,
        run=["train.py", "--epochs", "3"],
    )
    manifest = job.to_dict()
    assert manifest["kind"] == "DeepSpeedJob"
    assert manifest["spec"]["worker"]["replicas"] == 4
    assert manifest["spec"]["config"] == {
        "slotsPerWorker": 8,
        "run": {"python": ["train.py", "--epochs", "3"]},
    }
    container = _container(manifest)
    assert container["name"] == "worker"
    assert container["resources"] == {
        "limits": {"nvidia.com/gpu": 8},
        "requests": {"nvidia.com/gpu": 8},
    }
    assert yaml.safe_load(job.to_yaml()) == manifest
    assert isinstance(job.build(), models.DeepSpeedJob)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"module": ["deepspeed.pkg"]}, {"module": ["deepspeed.pkg"]}),
        ({"exec": ["/bin/train"]}, {"exec": ["/bin/train"]}),
    ],
)
def test_deepspeed_launch_choices(kwargs: dict[str, Any], expected: dict[str, Any]) -> None:
    manifest = DeepSpeedJob(name="d", image="i", **kwargs).to_dict()
    assert manifest["spec"]["config"]["run"] == expected


def test_deepspeed_custom_command_keeps_slots() -> None:
    manifest = DeepSpeedJob(
        name="d",
        image="i",
        gpus_per_worker=2,
        custom_command="deepspeed --hostfile /t9k/hostfile x.py",
    ).to_dict()
    assert manifest["spec"]["config"] == {
        "customCommand": "deepspeed --hostfile /t9k/hostfile x.py",
        "slotsPerWorker": 2,
    }


def test_deepspeed_needs_exactly_one_launch() -> None:
    with pytest.raises(InvalidManifestError, match=r"module: give only one of run, module, exec"):
        DeepSpeedJob(name="d", image="i", run=["a.py"], module=["m"])
    with pytest.raises(InvalidManifestError, match="say what to launch"):
        DeepSpeedJob(name="d", image="i")
    # debug mode needs no program
    manifest = DeepSpeedJob(name="d", image="i", debug=True).to_dict()
    assert manifest["spec"]["runMode"] == {"debug": {"enabled": True}}
    assert "config" not in manifest["spec"]


def test_deepspeed_elastic_and_policies() -> None:
    manifest = DeepSpeedJob(
        name="d",
        image="i",
        workers=4,
        run=["a.py"],
        elastic=Elastic(min=2, max=8),
        backoff_limit=5,
        active_deadline_seconds=3600,
        clean_up_policy=models.CleanUpPolicy.ALL,
        restart_policy=models.RestartPolicyType.EXIT_CODE,
    ).to_dict()
    spec = manifest["spec"]
    assert spec["elastic"] == {
        "enabled": True,
        "minReplicas": 2,
        "maxReplicas": 8,
        "expectedReplicas": 4,
    }
    assert spec["runPolicy"] == {
        "activeDeadlineSeconds": 3600,
        "backoffLimit": 5,
        "cleanUpPolicy": "All",
    }
    assert spec["worker"]["restartPolicy"] == "ExitCode"


def test_workers_outside_the_elastic_bounds_name_the_workers_argument() -> None:
    with pytest.raises(InvalidManifestError) as info:
        DeepSpeedJob(name="d", image="i", workers=9, run=["a.py"], elastic=Elastic(min=2, max=8))
    assert [str(p) for p in info.value.problems] == [
        "workers: must be between elastic min and max (2-8), or give elastic expected=; got 9"
    ]
    scaled = DeepSpeedJob(
        name="d", image="i", workers=9, run=["a.py"], elastic=Elastic(min=2, max=8, expected=4)
    )
    assert scaled.to_dict()["spec"]["elastic"]["expectedReplicas"] == 4


def test_resources_shortcuts_and_full_form_are_exclusive() -> None:
    with pytest.raises(InvalidManifestError, match="either resources= or the gpus_per_worker"):
        DeepSpeedJob(name="d", image="i", run=["a"], gpus_per_worker=1, resources=Resources(cpu=2))


def test_resources_request_and_limit_the_same_unless_overridden() -> None:
    req = Resources(cpu=8, memory="64Gi", gpus=2, requests={"cpu": 4}).to_requirements()
    assert req.limits == {"cpu": 8, "memory": "64Gi", "nvidia.com/gpu": 2}
    assert req.requests == {"cpu": 4, "memory": "64Gi", "nvidia.com/gpu": 2}


def test_volumes_env_and_node_placement() -> None:
    manifest = DeepSpeedJob(
        name="d",
        image="i",
        run=["a.py"],
        env={"NCCL_DEBUG": "INFO"},
        working_dir="/workspace",
        volumes=[
            PVC(claim="data", mount_path="/data", read_only=True),
            EmptyDir(mount_path="/dev/shm", medium="Memory", size_limit="8Gi"),
        ],
        node_selector={"gpu": "a100"},
        tolerations=[{"key": "gpu", "operator": "Exists"}],
    ).to_dict()
    pod = manifest["spec"]["worker"]["template"]["spec"]
    assert pod["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data", "readOnly": True}},
        {"name": "vol-dev-shm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}},
    ]
    c = pod["containers"][0]
    assert c["volumeMounts"] == [
        {"name": "data", "mountPath": "/data", "readOnly": True},
        {"name": "vol-dev-shm", "mountPath": "/dev/shm"},
    ]
    assert c["env"] == [{"name": "NCCL_DEBUG", "value": "INFO"}]
    assert c["workingDir"] == "/workspace"
    assert pod["nodeSelector"] == {"gpu": "a100"}
    assert pod["tolerations"] == [{"key": "gpu", "operator": "Exists"}]


def test_raw_template_escape_hatch_is_kept_and_overlaid() -> None:
    template = {
        "metadata": {"labels": {"team": "nlp"}},
        "spec": {
            "priorityClassName": "high",
            "containers": [
                {"name": "sidecar", "image": "proxy"},
                {"name": "worker", "image": "old", "securityContext": {"runAsUser": 1000},
                 "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
            ],
        },
    }  # fmt: skip
    manifest = DeepSpeedJob(
        name="d", image="new", run=["a.py"], env={"B": "3"}, template=template
    ).to_dict()
    pod = manifest["spec"]["worker"]["template"]
    assert pod["metadata"] == {"labels": {"team": "nlp"}}
    assert pod["spec"]["priorityClassName"] == "high"  # unknown to the models, kept
    sidecar, worker = pod["spec"]["containers"]
    assert sidecar == {"name": "sidecar", "image": "proxy"}
    assert worker["image"] == "new"  # the training container is the one named "worker"
    assert worker["securityContext"] == {"runAsUser": 1000}
    assert worker["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}]


def test_generic_job_replicas_rules_service_and_scheduler() -> None:
    job = GenericJob(
        name="tf",
        namespace="ml",
        labels={"team": "a"},
        replicas=[
            Replica(type="ps", image="tf", command=["python", "ps.py"]),
            Replica(
                type="worker",
                count=3,
                image="tf",
                args=["--task=$(rank)"],
                resources=Resources(gpus=1),
                ports={"http": 2222},
                restart_policy=models.RestartPolicyType.ON_FAILURE,
                restart_limit=2,
            ),
        ],
        success_rules=[{"worker": [0]}],
        failure_rules=[{"ps": [0]}, {"worker": [0, 1, 2]}],
        service_ports={"http": 2222},
        clean_up_policy=models.CleanUpPolicy.UNFINISHED,
        queue="default",
        priority=50,
    )
    m = job.to_dict()
    assert m["metadata"] == {"name": "tf", "namespace": "ml", "labels": {"team": "a"}}
    spec = m["spec"]
    assert [r["type"] for r in spec["replicaSpecs"]] == ["ps", "worker"]
    worker = spec["replicaSpecs"][1]
    assert worker["replicas"] == 3
    assert worker["restartPolicy"] == {"policy": "OnFailure", "limit": 2}
    assert worker["template"]["spec"]["containers"][0]["name"] == "worker"
    assert worker["template"]["spec"]["containers"][0]["ports"] == [
        {"name": "http", "containerPort": 2222}
    ]
    assert spec["service"] == {"ports": [{"name": "http", "port": 2222}]}
    assert spec["scheduler"] == {"t9kScheduler": {"queue": "default", "priority": 50}}
    assert spec["cleanUpPolicy"] == "Unfinished"
    assert from_manifest(m) == job.build()  # the manifest parses back to the same model


def test_run_modes() -> None:
    m = GenericJob(
        name="g",
        replicas=[Replica(type="worker", image="i")],
        debug=Debug(command=["sleep", "inf"], skip_init_containers=True),
        paused=True,
        resume={"worker": Resume(command=["python", "resume.py"])},
    ).to_dict()
    assert m["spec"]["runMode"] == {
        "debug": {
            "enabled": True,
            "replicaSpecs": [
                {"type": "worker", "skipInitContainer": True, "command": ["sleep", "inf"]}
            ],
        },
        "pause": {
            "enabled": True,
            "resumeSpecs": [{"type": "worker", "command": ["python", "resume.py"]}],
        },
    }


def test_priority_needs_a_queue() -> None:
    with pytest.raises(InvalidManifestError, match="priority: needs queue"):
        GenericJob(name="g", replicas=[Replica(type="w", image="i")], priority=5)


def test_builder_errors_name_the_argument_and_all_problems_at_construction() -> None:
    with pytest.raises(InvalidManifestError) as info:
        GenericJob(
            name="Bad_Name",
            replicas=[Replica(type="worker", image="x")],
            success_rules=[{"master": [0]}],
        )
    paths = [p.path for p in info.value.problems]
    assert paths == ["name", "success_rules[0].master"]
    assert str(info.value).startswith("GenericJob 'Bad_Name' is invalid:")


def test_builder_rejects_an_empty_finish_rule_naming_field_value_and_what_is_allowed() -> None:
    # an empty rule names no replica, so it would hold before any replica ran
    with pytest.raises(InvalidManifestError) as info:
        GenericJob(
            name="g",
            replicas=[Replica(type="worker", count=2, image="x")],
            success_rules=[{"worker": []}],
            failure_rules=[{}],
        )
    problems = {p.path: str(p) for p in info.value.problems}
    assert set(problems) == {"success_rules[0].worker", "failure_rules[0]"}
    assert problems["success_rules[0].worker"] == (
        "success_rules[0].worker: a finish rule must name at least one replica"
        " (a replica type and at least one of its indices, e.g. {worker: [0]}):"
        " an empty rule would hold before any replica ran; got []"
    )
    assert problems["failure_rules[0]"].endswith("; got {}")


def test_builder_arguments_are_type_checked_with_the_same_error_type() -> None:
    with pytest.raises(InvalidManifestError) as info:
        DeepSpeedJob(name="d", image="i", run=["a"], workers="4")  # type: ignore[arg-type]
    assert (
        str(info.value) == "DeepSpeedJob 'd' is invalid:\n  - workers: expected an integer; got '4'"
    )
    with pytest.raises(
        InvalidManifestError, match="unknown field 'worker'; did you mean 'workers'"
    ):
        DeepSpeedJob(name="d", image="i", run=["a"], worker=4)  # type: ignore[call-arg]


def test_colossalai_job_launcher_and_workers() -> None:
    m = ColossalAIJob(
        name="palm",
        image="hpcaitech/colossalai:0.3.0",
        workers=2,
        gpus_per_worker=4,
        script=["train.py", "--distplan=colossalai"],
        extra_args=["--master_port=29600"],
        working_dir="/workspace",
        volumes=[PVC(claim="code", mount_path="/workspace")],
        launcher=Launcher(resources=Resources(cpu=1, memory="2Gi")),
        clean_up_workers=True,
        sshd_path="/usr/sbin/sshd",
    ).to_dict()
    spec = m["spec"]
    assert spec["torchConfig"] == {
        "procPerWorker": 4,
        "script": ["train.py", "--distplan=colossalai"],
        "extraArgs": ["--master_port=29600"],
    }
    assert spec["ssh"] == {"sshdPath": "/usr/sbin/sshd"}
    assert spec["runPolicy"] == {"cleanUpWorkers": True}
    launcher, worker = spec["replicaSpecs"]
    lc = launcher["template"]["spec"]["containers"][0]
    assert (launcher["type"], launcher["replicas"], lc["name"]) == ("launcher", 1, "launcher")
    assert lc["image"] == "hpcaitech/colossalai:0.3.0"  # taken from the job
    assert lc["workingDir"] == "/workspace"  # where the workers run the script from
    assert lc["resources"]["limits"] == {"cpu": 1, "memory": "2Gi"}
    assert "volumes" not in launcher["template"]["spec"]  # volumes are the workers'
    wc = worker["template"]["spec"]["containers"][0]
    assert (worker["replicas"], wc["name"]) == (2, "worker")
    assert wc["volumeMounts"] == [{"name": "code", "mountPath": "/workspace"}]


def test_builders_are_immutable_and_build_once() -> None:
    job = GenericJob(name="g", replicas=[Replica(type="w", image="i")])
    assert job.build() is job.build()
    with pytest.raises(ValidationError, match="frozen"):
        job.name = "other"  # type: ignore[misc]


# -- issue 10: arguments the launchers cannot use, paths the operator mounts --------------------


@pytest.mark.parametrize(
    ("make", "argument", "fragment"),
    [
        (lambda: DeepSpeedJob(name="d", image="x", run=[]), "run", "run=[] launches nothing"),
        (lambda: DeepSpeedJob(name="d", image="x", exec=[""]), "exec", "launches nothing"),
        (
            lambda: DeepSpeedJob(
                name="d",
                image="x",
                run=["t.py"],
                volumes=[PVC(claim="c", mount_path="/root/.ssh/")],
            ),
            "volumes[0].mount_path",
            "/root/.ssh is reserved",
        ),
        (
            lambda: DeepSpeedJob(
                name="d",
                image="x",
                run=["t.py"],
                volumes=[PVC(claim="a", mount_path="/data"), PVC(claim="b", mount_path="/data")],
            ),
            "volumes[1].mount_path",
            "mountPath must be unique",
        ),
        (
            lambda: ColossalAIJob(name="c", image="x", script=["run.sh"]),
            "script",
            "must start with a Python file ending in .py",
        ),
        (
            lambda: ColossalAIJob(
                name="c", image="x", script=["t.py"], extra_args=["--max_restarts", "3"]
            ),
            "extra_args[1]",
            "'--name' or '--name=value'",
        ),
        (
            lambda: ColossalAIJob(
                name="c",
                image="x",
                script=["t.py"],
                ssh_auth_mount_path="/home/u/.ssh",
                launcher=Launcher(volumes=[PVC(claim="k", mount_path="/home/u/.ssh")]),
            ),
            "launcher.volumes[0].mount_path",
            "SSH keys (ssh.authMountPath)",
        ),
        (
            lambda: ColossalAIJob(name="c", image="x", script=["t.py"], ssh_auth_mount_path="/t9k"),
            "ssh_auth_mount_path",
            "must be an absolute directory other than /, /t9k",
        ),
    ],
)
def test_builder_names_the_argument_the_launcher_or_operator_cannot_use(
    make: Callable[[], object], argument: str, fragment: str
) -> None:
    with pytest.raises(InvalidManifestError) as info:
        make()
    assert any(p.path == argument and fragment in p.message for p in info.value.problems), str(
        info.value
    )


def test_builder_accepts_an_empty_run_in_debug_mode() -> None:
    job = DeepSpeedJob(name="d", image="x", run=[], debug=True).to_dict()
    assert job["spec"]["config"]["run"] == {"python": []}


def test_node_lost_after_sets_the_annotation_and_refuses_what_cannot_work() -> None:
    job = TorchrunJob(name="r", image="busybox", run=["t.py"], workers=2, node_lost_after=60)
    assert job.to_dict()["metadata"]["annotations"] == {"t9k-sdk.dev/node-lost-after": "60"}
    with pytest.raises(InvalidManifestError, match="node_lost_after: 60 disagrees with"):
        TorchrunJob(
            name="r",
            image="busybox",
            run=["t.py"],
            workers=2,
            node_lost_after=60,
            annotations={"t9k-sdk.dev/node-lost-after": "30"},
        )
    for bad in (-1, 604801):
        with pytest.raises(InvalidManifestError, match="node_lost_after: input should be"):
            TorchrunJob(name="r", image="busybox", run=["t.py"], workers=2, node_lost_after=bad)


def test_restart_scope_sets_the_annotation_and_refuses_a_disagreeing_one() -> None:
    job = TorchrunJob(name="r", image="busybox", run=["train.py"], workers=2, restart_scope="Job")
    assert job.to_dict()["metadata"]["annotations"] == {"t9k-sdk.dev/restart-scope": "Job"}
    with pytest.raises(InvalidManifestError, match="restart_scope: 'Job' disagrees with"):
        TorchrunJob(
            name="r",
            image="busybox",
            run=["train.py"],
            workers=2,
            restart_scope="Job",
            annotations={"t9k-sdk.dev/restart-scope": "Replica"},
        )
    with pytest.raises(InvalidManifestError, match="restart_scope: input should be 'Replica'"):
        TorchrunJob(name="r", image="busybox", run=["train.py"], workers=2, restart_scope="job")
