"""Every validation rule: a manifest that breaks it is rejected with the field path and the rule.

Table-driven: (id, manifest, expected field path, words the message must contain). The same
table runs against the real API server with the generated CRDs in
tests/cluster/test_crd_validation.py, which checks that the server rejects each case too.
"""

from __future__ import annotations

from typing import Any

import pytest

from t9k_sdk import LegacyManifestWarning, codecs
from t9k_sdk.errors import InvalidManifestError
from t9k_sdk.validation import validate_manifest

from .manifests import colossalai_job, deepspeed_job, generic_job, pod

W = {"type": "worker", "replicas": 2, "template": pod()}


def _named(data: dict[str, Any], name: str) -> dict[str, Any]:
    data["metadata"]["name"] = name
    return data


# (id, manifest, path, message fragment)
INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "container-names-repeat",
        generic_job(
            replicaSpecs=[
                {
                    **W,
                    "template": {
                        "spec": {
                            "initContainers": [{"name": "w", "image": "i"}],
                            "containers": [{"name": "w", "image": "i"}],
                        }
                    },
                }
            ]
        ),
        "spec.replicaSpecs[0].template.spec.containers[0].name",
        "container names must be unique within a pod",
    ),
    (
        "queue-not-a-label-value",
        generic_job(scheduler={"t9kScheduler": {"queue": "team a/gpu"}}),
        "spec.scheduler.t9kScheduler.queue",
        "must be a label value (it labels the job's pods)",
    ),
    (
        "deepspeed-env-name-not-a-shell-name",
        deepspeed_job(
            worker={
                "replicas": 2,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "worker",
                                "image": "i",
                                "env": [
                                    {"name": "OK", "value": "1"},
                                    {"name": "A-DASH", "value": "2"},
                                ],
                            }
                        ]
                    }
                },
            }
        ),
        "spec.worker.template.spec.containers[0].env[1].name",
        "set disableCustomEnv: true to keep it for the entrypoint only; got 'A-DASH'",
    ),
    ("no-replica-specs", generic_job(replicaSpecs=[]), "spec.replicaSpecs", "at least 1 item"),
    (
        "duplicate-types",
        generic_job(replicaSpecs=[W, W]),
        "spec.replicaSpecs[1].type",
        "replica types must be unique",
    ),
    (
        "type-not-dns",
        generic_job(replicaSpecs=[{**W, "type": "Worker_1"}]),
        "spec.replicaSpecs[0].type",
        "DNS label",
    ),
    ("name-not-dns", _named(generic_job(), "Demo.Job"), "metadata.name", "DNS label"),
    (
        "pod-name-too-long",
        _named(generic_job(replicaSpecs=[{**W, "replicas": 10}]), "x" * 55),
        "metadata.name",
        "at most 63 characters",
    ),
    (
        "deepspeed-pod-name-too-long",
        _named(deepspeed_job(), "d" * 55),
        "metadata.name",
        "at most 63 characters",
    ),
    (
        "priority-above-100",
        generic_job(scheduler={"t9kScheduler": {"queue": "default", "priority": 101}}),
        "spec.scheduler.t9kScheduler.priority",
        "less than or equal to 100",
    ),
    (
        "priority-negative",
        generic_job(scheduler={"t9kScheduler": {"queue": "default", "priority": -1}}),
        "spec.scheduler.t9kScheduler.priority",
        "greater than or equal to 0",
    ),
    (
        "restart-limit-negative",
        generic_job(replicaSpecs=[{**W, "restartPolicy": {"policy": "OnFailure", "limit": -1}}]),
        "spec.replicaSpecs[0].restartPolicy.limit",
        "greater than or equal to 0",
    ),
    (
        "restart-policy-unknown",
        generic_job(replicaSpecs=[{**W, "restartPolicy": {"policy": "Sometimes"}}]),
        "spec.replicaSpecs[0].restartPolicy.policy",
        "'ExitCode'",
    ),
    (
        "finish-rule-unknown-type",
        generic_job(successRules=[{"master": [0]}]),
        "spec.successRules[0].master",
        "existing replica types",
    ),
    (
        "finish-rule-index-out-of-range",
        generic_job(failureRules=[{"worker": [0, 2]}]),
        "spec.failureRules[0].worker[1]",
        "has 2 replicas",
    ),
    (
        "finish-rule-empty",
        generic_job(successRules=[{"worker": [0]}, {}]),
        "spec.successRules[1]",
        "must name at least one replica",
    ),
    (
        "finish-rule-empty-list",
        generic_job(successRules=[{"worker": []}]),
        "spec.successRules[0].worker",
        "must name at least one replica",
    ),
    (
        "failure-rule-empty-list",
        generic_job(failureRules=[{"worker": []}]),
        "spec.failureRules[0].worker",
        "must name at least one replica",
    ),
    (
        "debug-type-unknown",
        generic_job(runMode={"debug": {"enabled": True, "replicaSpecs": [{"type": "ps"}]}}),
        "spec.runMode.debug.replicaSpecs[0].type",
        "existing replica types",
    ),
    (
        "template-without-containers",
        generic_job(replicaSpecs=[{**W, "template": {"spec": {}}}]),
        "spec.replicaSpecs[0].template.spec.containers",
        "at least one container",
    ),
    (
        "run-two-choices",
        deepspeed_job(config={"run": {"python": ["a.py"], "module": ["m"]}}),
        "spec.config.run",
        "exactly one of python, module and exec",
    ),
    (
        "run-no-choice",
        deepspeed_job(config={"run": {}}),
        "spec.config.run",
        "exactly one of python, module and exec",
    ),
    (
        "nothing-to-launch",
        deepspeed_job(config={"slotsPerWorker": 2}),
        "spec.config",
        "config.run or config.customCommand",
    ),
    (
        "other-args-conflict",
        deepspeed_job(config={"run": {"python": ["a.py"]}, "otherArgs": ["--no_local_rank"]}),
        "spec.config.otherArgs[0]",
        "config.localRank",
    ),
    (
        "elastic-order",
        deepspeed_job(
            elastic={"enabled": True, "minReplicas": 4, "expectedReplicas": 2, "maxReplicas": 8}
        ),
        "spec.elastic",
        "minReplicas <= expectedReplicas <= maxReplicas",
    ),
    (
        "elastic-bounds-missing",
        deepspeed_job(elastic={"enabled": True, "expectedReplicas": 2}),
        "spec.elastic",
        "needs minReplicas and maxReplicas",
    ),
    (
        "deadline-zero",
        deepspeed_job(runPolicy={"activeDeadlineSeconds": 0}),
        "spec.runPolicy.activeDeadlineSeconds",
        "greater than or equal to 1",
    ),
    (
        "autotune-unknown",
        deepspeed_job(config={"run": {"python": ["a.py"]}, "autotune": "fast"}),
        "spec.config.autotune",
        "'tune'",
    ),
    (
        "colossalai-two-launchers",
        colossalai_job(
            replicaSpecs=[
                {"type": "launcher", "template": pod("launcher")},
                {"type": "launcher", "template": pod("launcher")},
                {"type": "worker", "template": pod("worker")},
            ]
        ),
        "spec.replicaSpecs",
        "exactly one replica spec of type launcher",
    ),
    (
        "colossalai-launcher-replicas",
        colossalai_job(
            replicaSpecs=[
                {"type": "launcher", "replicas": 2, "template": pod("launcher")},
                {"type": "worker", "template": pod("worker")},
            ]
        ),
        "spec.replicaSpecs[0].replicas",
        "with replicas 1",
    ),
    (
        "colossalai-no-worker",
        colossalai_job(replicaSpecs=[{"type": "launcher", "template": pod("launcher")}]),
        "spec.replicaSpecs",
        "replica spec of type worker",
    ),
    (
        "colossalai-unknown-type",
        colossalai_job(
            replicaSpecs=[
                {"type": "launcher", "template": pod("launcher")},
                {"type": "ps", "template": pod("worker")},
            ]
        ),
        "spec.replicaSpecs[1].type",
        "'launcher' or 'worker'",
    ),
    (
        "colossalai-sshd-relative",
        colossalai_job(ssh={"sshdPath": "usr/sbin/sshd"}),
        "spec.ssh.sshdPath",
        "must be an absolute path",
    ),
    (
        "misspelled-field",
        deepspeed_job(config={"slotPerWorker": 1, "run": {"python": ["a.py"]}}),
        "spec.config.slotPerWorker",
        "did you mean 'slotsPerWorker'",
    ),
    (
        "wrong-type",
        generic_job(replicaSpecs=[{**W, "replicas": "2"}]),
        "spec.replicaSpecs[0].replicas",
        "expected an integer",
    ),
    ("wrong-kind", {**generic_job(), "kind": "Genericjob"}, "kind", "did you mean 'GenericJob'"),
    (
        "wrong-api-version",
        {**generic_job(), "apiVersion": "batch.tensorstack.dev/v1"},
        "apiVersion",
        "batch.tensorstack.dev/v1beta1",
    ),
]

# Size limits (MAX_PODS pods per job, MAX_SLOTS processes per worker): the message names the
# value and the maximum.
INVALID += [
    (
        "replicas-above-maximum",
        generic_job(replicaSpecs=[{**W, "replicas": 100_000_000}]),
        "spec.replicaSpecs[0].replicas",
        "less than or equal to 10000; got 100000000",
    ),
    (
        "total-pods-above-maximum",
        generic_job(
            replicaSpecs=[
                {**W, "type": "a", "replicas": 6000},
                {**W, "type": "b", "replicas": 6000},
            ]
        ),
        "spec.replicaSpecs",
        "a job has at most 10000 pods: the replicas of all replica specs add up to more;"
        " got 6000 + 6000 = 12000",
    ),
    (
        "colossalai-total-pods-above-maximum",
        colossalai_job(
            replicaSpecs=[
                {"type": "launcher", "template": pod("launcher")},
                {"type": "worker", "replicas": 10_000, "template": pod("worker")},
            ]
        ),
        "spec.replicaSpecs",
        "got 1 + 10000 = 10001",
    ),
    (
        "deepspeed-workers-above-maximum",
        deepspeed_job(worker={"replicas": 10_001, "template": pod("worker")}),
        "spec.worker.replicas",
        "less than or equal to 10000; got 10001",
    ),
    (
        "elastic-max-above-maximum",
        deepspeed_job(elastic={"enabled": True, "minReplicas": 1, "maxReplicas": 20_000}),
        "spec.elastic.maxReplicas",
        "less than or equal to 10000; got 20000",
    ),
    (
        "slots-per-worker-above-maximum",
        deepspeed_job(config={"slotsPerWorker": 4096, "run": {"python": ["a.py"]}}),
        "spec.config.slotsPerWorker",
        "less than or equal to 1024; got 4096",
    ),
    (
        "proc-per-worker-above-maximum",
        colossalai_job(torchConfig={"script": ["train.py"], "procPerWorker": 1025}),
        "spec.torchConfig.procPerWorker",
        "less than or equal to 1024; got 1025",
    ),
]

# Cases only the offline validator reports (the API server prunes or accepts them silently).
STRICT_ONLY = {"colossalai-worker-container-name"}

INVALID.append(
    (
        "colossalai-worker-container-name",
        colossalai_job(
            replicaSpecs=[
                {"type": "launcher", "template": pod("launcher")},
                {"type": "worker", "template": pod("trainer")},
            ]
        ),
        "spec.replicaSpecs[1].template.spec.containers",
        "container named 'worker'",
    )
)


# Issue 10: what DeepSpeedJob/ColossalAIJob launchers can run, and paths the operator mounts.
# Before these rules each of these jobs passed `validate` and then launched nothing (exit 0),
# or had its pods refused by the API server (422) forever.
_RESERVED = {"name": "data", "mountPath": "/root/.ssh"}
INVALID += [
    (
        "deepspeed-empty-python",
        deepspeed_job(config={"run": {"python": []}}),
        "spec.config.run.python",
        "an empty list launches nothing",
    ),
    (
        "colossalai-script-not-python",
        colossalai_job(torchConfig={"script": ["train.sh", "--epochs", "3"]}),
        "spec.torchConfig.script[0]",
        "must start with a Python file ending in .py",
    ),
    (
        "colossalai-script-option",
        colossalai_job(torchConfig={"script": ["--max_restarts=3", "train.py"]}),
        "spec.torchConfig.script[0]",
        "must start with a Python file ending in .py",
    ),
    (
        "colossalai-script-trailing-newline",
        colossalai_job(torchConfig={"script": ["train.py\n"]}),
        "spec.torchConfig.script[0]",
        "must start with a Python file ending in .py",
    ),
    (
        "colossalai-extra-args-trailing-newline",
        colossalai_job(torchConfig={"script": ["t.py"], "extraArgs": ["--max_restarts=3\n"]}),
        "spec.torchConfig.extraArgs[0]",
        "one torchrun option, '--name' or '--name=value'",
    ),
    (
        "colossalai-extra-args-split-value",
        colossalai_job(torchConfig={"script": ["t.py"], "extraArgs": ["--max_restarts", "3"]}),
        "spec.torchConfig.extraArgs[1]",
        "one torchrun option, '--name' or '--name=value'",
    ),
    (
        "colossalai-extra-args-comma",
        colossalai_job(torchConfig={"script": ["t.py"], "extraArgs": ["--rdzv_conf=a=1,b=2"]}),
        "spec.torchConfig.extraArgs[0]",
        "one comma-separated --extra_launch_args",
    ),
    (
        "colossalai-extra-args-nproc",
        colossalai_job(torchConfig={"script": ["t.py"], "extraArgs": ["--nproc_per_node=8"]}),
        "spec.torchConfig.extraArgs[0]",
        "use torchConfig.procPerWorker",
    ),
    (
        "colossalai-auth-mount-path-hostfile",
        colossalai_job(ssh={"authMountPath": "/t9k/hostfile"}),
        "spec.ssh.authMountPath",
        "must be an absolute directory other than /, /t9k",
    ),
    (
        "deepspeed-mount-at-ssh-dir",
        deepspeed_job(worker={"template": pod("worker", volumeMounts=[_RESERVED])}),
        "spec.worker.template.spec.containers[0].volumeMounts[0].mountPath",
        "/root/.ssh is reserved: the operator mounts the job's SSH keys there",
    ),
    (
        "deepspeed-mount-at-env-file",
        deepspeed_job(
            worker={
                "template": pod(
                    "worker", volumeMounts=[{"name": "e", "mountPath": "/root/.deepspeed_env"}]
                )
            }
        ),
        "spec.worker.template.spec.containers[0].volumeMounts[0].mountPath",
        "DeepSpeed env file",
    ),
    (
        "deepspeed-mount-inside-scripts",
        deepspeed_job(
            worker={
                "template": pod(
                    "worker", volumeMounts=[{"name": "x", "mountPath": "/t9k/scripts/x/"}]
                )
            }
        ),
        "spec.worker.template.spec.containers[0].volumeMounts[0].mountPath",
        "/t9k/scripts is reserved",
    ),
    (
        "deepspeed-mount-at-t9k",
        deepspeed_job(
            worker={"template": pod("worker", volumeMounts=[{"name": "x", "mountPath": "/t9k"}])}
        ),
        "spec.worker.template.spec.containers[0].volumeMounts[0].mountPath",
        "would hold the operator's /t9k/hostfile",
    ),
    (
        "deepspeed-duplicate-mount-path",
        deepspeed_job(
            worker={
                "template": pod(
                    "worker",
                    volumeMounts=[
                        {"name": "a", "mountPath": "/data"},
                        {"name": "b", "mountPath": "/data/"},
                    ],
                )
            }
        ),
        "spec.worker.template.spec.containers[0].volumeMounts[1].mountPath",
        "mountPath must be unique within a container",
    ),
    (
        "deepspeed-reserved-volume-name",
        deepspeed_job(
            worker={
                "template": {
                    "spec": {
                        "containers": [{"name": "worker", "image": "busybox"}],
                        "volumes": [{"name": "t9k-ssh", "emptyDir": {}}],
                    }
                }
            }
        ),
        "spec.worker.template.spec.volumes[0].name",
        "volume names t9k-ssh, t9k-config and t9k-run are reserved",
    ),
    (
        "colossalai-launcher-mount-at-auth-mount-path",
        colossalai_job(
            ssh={"authMountPath": "/home/u/.ssh"},
            replicaSpecs=[
                {
                    "type": "launcher",
                    "template": pod(
                        "launcher", volumeMounts=[{"name": "k", "mountPath": "/home/u/.ssh"}]
                    ),
                },
                {"type": "worker", "template": pod("worker")},
            ],
        ),
        "spec.replicaSpecs[0].template.spec.containers[0].volumeMounts[0].mountPath",
        "SSH keys (ssh.authMountPath)",
    ),
    (
        "colossalai-worker-mount-at-hostfile",
        colossalai_job(
            replicaSpecs=[
                {"type": "launcher", "template": pod("launcher")},
                {
                    "type": "worker",
                    "template": pod(
                        "worker", volumeMounts=[{"name": "h", "mountPath": "/t9k/hostfile"}]
                    ),
                },
            ],
        ),
        "spec.replicaSpecs[1].template.spec.containers[0].volumeMounts[0].mountPath",
        "/t9k/hostfile is reserved",
    ),
]
# The CRDs check pod-template mounts only where the API server's CEL cost budget allows: a
# DeepSpeedJob's first container when it is the training container. Duplicates, ColossalAIJob
# templates and other containers are checked by the SDK's validator and the operator
# (InvalidSpec, before any pod is created).
STRICT_ONLY |= {
    "deepspeed-duplicate-mount-path",
    "colossalai-launcher-mount-at-auth-mount-path",
    "colossalai-worker-mount-at-hostfile",
}
# The CRD's rules see one container list at a time, and CEL over every container's variables
# exceeds the API server's cost budget: the SDK alone refuses these (docs/operator/security.md).
STRICT_ONLY |= {"container-names-repeat", "deepspeed-env-name-not-a-shell-name"}


def test_mounts_outside_the_operators_paths_are_fine() -> None:
    mounts = [
        {"name": "mnt", "mountPath": "/t9k/mnt"},  # T9k's usual workspace mount
        {"name": "home", "mountPath": "/root"},  # the keys are mounted on top of it
        {"name": "shm", "mountPath": "/dev/shm"},
    ]
    assert (
        validate_manifest(deepspeed_job(worker={"template": pod("worker", volumeMounts=mounts)}))
        == []
    )
    sidecar = pod("worker")
    sidecar["spec"]["containers"].append(
        {
            "name": "proxy",
            "image": "busybox",
            "volumeMounts": [{"name": "k", "mountPath": "/root/.ssh"}],
        }
    )
    assert validate_manifest(deepspeed_job(worker={"template": sidecar})) == []  # not the trainer


def test_debug_mode_accepts_an_empty_run_list_like_t9ks_examples() -> None:
    debug = {"debug": {"enabled": True}}
    assert validate_manifest(deepspeed_job(config={"run": {"python": []}}, runMode=debug)) == []


@pytest.mark.parametrize(
    ("manifest", "path", "fragment"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID]
)
def test_invalid_manifest_is_rejected_naming_the_field(
    manifest: dict[str, Any], path: str, fragment: str
) -> None:
    with pytest.raises(InvalidManifestError) as info:
        codecs.from_manifest(manifest)
    matching = [p for p in info.value.problems if p.path == path]
    assert matching, f"no problem at {path}: {info.value}"
    assert any(fragment in p.message for p in matching), str(info.value)
    # validate_manifest reports the same problem, without raising
    assert any(p.path == path and fragment in p.message for p in validate_manifest(manifest))


@pytest.mark.parametrize(
    "manifest",
    [
        generic_job(),
        deepspeed_job(),
        colossalai_job(),
        generic_job(
            replicaSpecs=[
                {**W, "type": "a", "replicas": 5000},
                {**W, "type": "b", "replicas": 5000},
            ]
        ),
        deepspeed_job(
            elastic={"enabled": True, "minReplicas": 1, "maxReplicas": 10_000},
            config={"slotsPerWorker": 1024, "run": {"python": ["a.py"]}},
        ),
    ],
    ids=["GenericJob", "DeepSpeedJob", "ColossalAIJob", "10000-pods", "elastic-10000"],
)
def test_minimal_manifests_are_valid(manifest: dict[str, Any]) -> None:
    assert validate_manifest(manifest) == []


def test_all_problems_are_reported_at_once() -> None:
    bad = generic_job(
        successRules=[{"master": [0]}],
        scheduler={"t9kScheduler": {"queue": "q", "priority": 500}},
    )
    bad["metadata"]["name"] = "Bad_Name"
    paths = {p.path for p in validate_manifest(bad)}
    assert {"metadata.name", "spec.scheduler.t9kScheduler.priority"} <= paths


def test_error_message_names_subject_field_value_and_allowed() -> None:
    with pytest.raises(InvalidManifestError) as info:
        codecs.from_manifest(
            generic_job(replicaSpecs=[{**W, "restartPolicy": {"policy": "Sometimes"}}])
        )
    text = str(info.value)
    assert text.startswith("GenericJob 'demo' is invalid:")
    assert "spec.replicaSpecs[0].restartPolicy.policy" in text
    assert "'Sometimes'" in text  # the bad value
    assert "'Always', 'OnFailure', 'Never' or 'ExitCode'" in text  # what is allowed


def test_unknown_pod_template_fields_are_kept_but_reported() -> None:
    manifest = generic_job(replicaSpecs=[{**W, "template": pod(comand=["sleep"])}])
    job = codecs.from_manifest(manifest)  # parsing keeps it ...
    container = codecs.to_manifest(job)["spec"]["replicaSpecs"][0]["template"]["spec"][
        "containers"
    ][0]
    assert container["comand"] == ["sleep"]
    problems = validate_manifest(manifest)  # ... validation reports it
    assert [str(p) for p in problems if "comand" in p.path] == [
        next(str(p) for p in problems if "comand" in p.path)
    ]
    assert any("did you mean 'command'" in p.message for p in problems)


def test_pod_template_types_are_checked_against_core_v1() -> None:
    manifest = generic_job(replicaSpecs=[{**W, "template": pod(ports=[{"containerPort": "80"}])}])
    problems = validate_manifest(manifest)
    assert any(
        p.path == "spec.replicaSpecs[0].template.spec.containers[0].ports[0].containerPort"
        and "expected an integer" in p.message
        for p in problems
    )


@pytest.mark.parametrize(("value", "ok"), [(2, True), ("2", True), ("500m", True), (0.5, False)])
def test_quantities_accept_ints_and_strings(value: object, ok: bool) -> None:
    manifest = generic_job(
        replicaSpecs=[{**W, "template": pod(resources={"limits": {"nvidia.com/gpu": value}})}]
    )
    assert (validate_manifest(manifest) == []) is ok
    if ok:  # and the value comes back exactly as written
        out = codecs.to_manifest(codecs.from_manifest(manifest))
        limits = out["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["resources"][
            "limits"
        ]
        assert limits["nvidia.com/gpu"] == value


def test_duplicate_keys_are_an_error_not_last_one_wins() -> None:
    import yaml as _yaml

    from t9k_sdk import load_all_yaml

    text = "apiVersion: batch.tensorstack.dev/v1beta1\nkind: GenericJob\nkind: DeepSpeedJob\n"
    with pytest.raises(_yaml.YAMLError, match="duplicate key 'kind'"):
        load_all_yaml(text)


def test_legacy_manifests_validate_clean_after_conversion() -> None:
    legacy = colossalai_job()
    spec = legacy["spec"]
    del spec["replicaSpecs"], spec["torchConfig"]
    spec["launcher"] = {"image": "colossal", "workingDir": "/w"}
    spec["worker"] = {"replicas": 2, "command": ["train.py"], "template": pod("worker")}
    with pytest.warns(LegacyManifestWarning):
        assert validate_manifest(legacy) == []


@pytest.mark.parametrize(("name_length", "valid"), [(53, True), (54, True), (55, False)])
def test_colossalai_launcher_has_no_index_in_its_pod_name(name_length: int, valid: bool) -> None:
    # `<job>-launcher` (9 more characters) and `<job>-worker-1` (9 more characters)
    manifest = colossalai_job()
    manifest["metadata"]["name"] = "c" * name_length
    assert (validate_manifest(manifest) == []) is valid


def test_deepspeed_name_length_counts_elastic_max_replicas_like_the_crd() -> None:
    manifest = deepspeed_job(elastic={"enabled": False, "maxReplicas": 100})
    manifest["metadata"]["name"] = "d" * 54  # '-worker-99' would make 64 characters
    problems = validate_manifest(manifest)
    assert any(
        "'<job>-worker-<index>' must be at most 63 characters" in p.message for p in problems
    )


def test_status_keeps_unknown_keys_when_read_but_validation_reports_them() -> None:
    live = generic_job()
    live["status"] = {"phase": "Running", "startTime": "2024-09-09T09:56:52Z"}
    job = codecs.from_manifest(live)
    assert codecs.to_manifest(job)["status"]["startTime"] == "2024-09-09T09:56:52Z"
    assert [p.path for p in validate_manifest(live)] == ["status.startTime"]


def test_validate_warns_about_secrets_deepspeed_copies_into_pdshs_command_line(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Valid, so exit 0, but said: DeepSpeed's pdsh runner copies MLFLOW_*, NCCL_*, PYTHON*,
    MV2*, UCX* variables of the launcher into the command line of every worker."""
    from t9k_sdk.cli import main
    from t9k_sdk.validation import manifest_warnings

    secret = {"secretKeyRef": {"name": "mlflow", "key": "password"}}
    container = {
        "name": "worker",
        "image": "i",
        "env": [
            {"name": "MLFLOW_TRACKING_PASSWORD", "valueFrom": secret},
            {"name": "MY_TOKEN", "valueFrom": secret},  # not copied by DeepSpeed: no warning
            {"name": "NCCL_DEBUG", "value": "INFO"},  # not a Secret: no warning
        ],
        "envFrom": [{"secretRef": {"name": "more"}}, {"configMapRef": {"name": "cm"}}],
    }
    job = deepspeed_job(worker={"replicas": 2, "template": {"spec": {"containers": [container]}}})
    assert validate_manifest(job) == []
    warned = manifest_warnings(job)
    assert [w.path for w in warned] == [
        "spec.worker.template.spec.containers[0].env[0]",
        "spec.worker.template.spec.containers[0].envFrom[0]",
    ]
    assert "MLFLOW_TRACKING_PASSWORD comes from a Secret" in warned[0].message
    assert manifest_warnings(generic_job()) == []
    path = tmp_path / "job.yaml"
    path.write_text(codecs.dump_all_yaml([job]))
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "warning: spec.worker.template.spec.containers[0].env[0]: MLFLOW_TRACKING" in out
    assert out.splitlines()[-1] == "1 document valid (2 warnings)"


def test_validate_warns_about_always_without_a_limit_and_service_variables_without_a_service() -> (
    None
):
    """T9k's manual shows both: `Always` with the default limit never restarts anything here,
    and `$(service...)` without `spec.service` reaches the pods as literal text."""
    from t9k_sdk.validation import manifest_warnings

    replica = {
        **W,
        "restartPolicy": {"policy": "Always"},
        "template": pod("w", command=["run", "--peer=$(service.worker[0].host)"]),
    }
    warned = manifest_warnings(generic_job(replicaSpecs=[replica]))
    assert [w.path for w in warned] == [
        "spec.replicaSpecs[0].restartPolicy.limit",
        "spec.replicaSpecs[0].template",
    ]
    assert "never restarts the replica" in warned[0].message
    assert "no spec.service" in warned[1].message
    fine = {**replica, "restartPolicy": {"policy": "Always", "limit": 3}}
    served = generic_job(replicaSpecs=[fine], service={"ports": [{"name": "p", "port": 80}]})
    assert manifest_warnings(served) == []


def test_validate_warns_about_t9k_variables_the_operator_replaces_or_cannot_take() -> None:
    """The operator sets T9K_* in DeepSpeed and ColossalAI pods; a user may set only
    T9K_BARRIER_TIMEOUT, in whole seconds."""
    from t9k_sdk.validation import manifest_warnings

    env = [
        {"name": "T9K_BARRIER_TIMEOUT", "value": "90"},  # taken
        {"name": "T9K_HOSTFILE", "value": "/mine"},  # replaced
        {"name": "T9K_BARRIER_TIMEOUT", "value": "10m"},  # not whole seconds
    ]
    job = deepspeed_job(worker={"replicas": 2, "template": pod("worker", env=env)})
    assert validate_manifest(job) == []
    warned = manifest_warnings(job)
    base = "spec.worker.template.spec.containers[0]"
    assert [w.path for w in warned] == [f"{base}.env[1]", f"{base}.env[2].value"]
    assert "T9K_HOSTFILE is set by the operator" in warned[0].message
    assert "'10m' is not whole seconds from 1 to 86400" in warned[1].message
    caij = colossalai_job(
        replicaSpecs=[
            {"type": "launcher", "template": pod("launcher", env=env[2:])},
            {"type": "worker", "replicas": 1, "template": pod("worker")},
        ]
    )
    assert [w.path for w in manifest_warnings(caij)] == [
        "spec.replicaSpecs[0].template.spec.containers[0].env[0].value"
    ]
    # a GenericJob's T9K_* variables are its own
    generic = generic_job(replicaSpecs=[{**W, "template": pod("w", env=env)}])
    assert manifest_warnings(generic) == []


def test_validate_warns_alike_about_what_t9ks_manuals_do_not_support() -> None:
    """The API reference allows ExitCode for every kind and any DeepSpeed launcher; T9k's manuals
    list three policies for GenericJob and ColossalAIJob, and pdsh only: valid, and warned."""
    from t9k_sdk.validation import manifest_warnings

    for make in (generic_job, colossalai_job):
        job = make()
        job["spec"]["replicaSpecs"][-1]["restartPolicy"] = {"policy": "ExitCode", "limit": 3}
        assert validate_manifest(job) == []
        (warned,) = [w for w in manifest_warnings(job) if w.path.endswith("policy")]
        assert "not among the policies T9k's manual lists" in warned.message
        assert "128-255" in warned.message
    for args in (["--launcher", "openmpi"], ["--launcher=mvapich"]):
        job = deepspeed_job(config={"run": {"python": ["t.py"]}, "otherArgs": args})
        assert validate_manifest(job) == []
        (warned,) = manifest_warnings(job)
        assert warned.path == "spec.config.otherArgs[0]"
        assert "supports the pdsh launcher only" in warned.message
    pdsh = deepspeed_job(config={"run": {"python": ["t.py"]}, "otherArgs": ["--launcher=pdsh"]})
    assert manifest_warnings(pdsh) == []


def test_validate_explains_colossalai_arguments_written_for_a_shell() -> None:
    """T9k's examples pass `--flag='two words'`, which `colossalai run`'s shell unquotes; the
    operator delivers each argument as written, so validate says what to write instead."""
    from t9k_sdk.validation import manifest_warnings

    job = colossalai_job(
        torchConfig={"script": ["train.py", "--flag='two words'", "--plain", "--home=$HOME"]}
    )
    assert validate_manifest(job) == []
    warned = manifest_warnings(job)
    assert [w.path for w in warned] == ["spec.torchConfig.script[1]", "spec.torchConfig.script[3]"]
    assert "write '--flag=two words'" in warned[0].message
    assert "expand $" in warned[1].message


@pytest.mark.filterwarnings("ignore::t9k_sdk.errors.LegacyManifestWarning")
def test_problems_of_a_legacy_enable_name_the_field_as_written() -> None:
    job = generic_job(runMode={"debug": {"enable": "sometimes"}})
    paths = [p.path for p in validate_manifest(job)]
    assert paths
    assert all(p.startswith("spec.runMode.debug.enable") for p in paths), paths
    assert "spec.runMode.debug.enabled" not in paths
    elastic = deepspeed_job(elastic={"enable": True, "minReplicas": -1})
    assert [p.path for p in validate_manifest(elastic)] == ["spec.elastic.minReplicas"]
