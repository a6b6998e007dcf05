"""DeepSpeedJob and ColossalAIJob end to end: the real `t9k-operator` process, kwok pods.

kwok runs no containers, so the bootstrap scripts never execute here (tests/bootstrap/ runs them
for real against OpenSSH). These tests check what the operator creates (keys, hostfile, headless
Service, pods with their DNS identity and commands) and how it reacts when the simulated pods
end: the launcher (DeepSpeedJob worker-0, ColossalAIJob launcher) decides the outcome, restarts
are budgeted, deadlines and resizes apply. A pod ends when the test says so (`jobs.end_pod`).
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from tests.cluster.e2e_helpers import Jobs, condition, replicas_of
from tools.kit import colossalai_job, deepspeed_job, finish, wait_for

LAUNCH = ["/bin/sh", "/t9k/scripts/t9k-launch.sh"]
SSHD = ["/bin/sh", "/t9k/scripts/t9k-sshd.sh"]


def owner_of(obj: Any) -> tuple[str, str, bool]:
    ref = obj.metadata.owner_references[0]
    return ref.kind, ref.name, ref.controller


def hostfile(jobs: Jobs, job: str) -> str:
    cm = jobs.core_v1.read_namespaced_config_map(f"{job}-config", jobs.namespace)
    return str(cm.data["hostfile"])


def backoff_count(status: dict[str, Any]) -> int:
    return int(status.get("backoffCount") or 0)


def env_of(pod: Any) -> dict[str, str]:
    return {e.name: e.value for e in pod.spec.containers[0].env or ()}


def mounts_of(pod: Any) -> dict[str, str]:
    return {m.mount_path: m.name for m in pod.spec.containers[0].volume_mounts or ()}


# --- DeepSpeedJob ----------------------------------------------------------------------------


def test_a_deepspeed_job_gets_keys_hostfile_service_and_commands_and_worker_0_decides(
    jobs: Jobs,
) -> None:
    jobs.create(deepspeed_job("bert", 2))
    pods = jobs.wait_running("bert", {"bert-worker-0", "bert-worker-1"})

    secret = jobs.core_v1.read_namespaced_secret("bert-ssh", jobs.namespace)
    assert owner_of(secret) == ("DeepSpeedJob", "bert", True)
    assert set(secret.data) == {"id_ed25519", "id_ed25519.pub", "authorized_keys", "config"}
    public = base64.b64decode(secret.data["id_ed25519.pub"]).decode()
    assert public.startswith("ssh-ed25519 ")
    assert base64.b64decode(secret.data["authorized_keys"]).decode() == public
    assert b"PRIVATE KEY" in base64.b64decode(secret.data["id_ed25519"])
    config_maps = jobs.core_v1.list_namespaced_config_map(
        jobs.namespace, label_selector="tensorstack.dev/owner-name=bert"
    ).items
    assert all("PRIVATE KEY" not in str(cm.data) for cm in config_maps)

    assert hostfile(jobs, "bert") == "bert-worker-0.bert slots=1\nbert-worker-1.bert slots=1\n"
    cm = jobs.core_v1.read_namespaced_config_map("bert-config", jobs.namespace)
    assert {"t9k-sshd.sh", "t9k-launch.sh"} <= set(cm.data)
    assert owner_of(cm) == ("DeepSpeedJob", "bert", True)

    svc = jobs.core_v1.read_namespaced_service("bert", jobs.namespace)
    assert svc.spec.cluster_ip == "None"
    assert svc.spec.publish_not_ready_addresses is True
    assert svc.spec.selector == {"deepspeedjob": "bert"}
    assert owner_of(svc) == ("DeepSpeedJob", "bert", True)

    for name, pod in pods.items():
        assert (pod.spec.hostname, pod.spec.subdomain) == (name, "bert")
        assert mounts_of(pod)["/root/.ssh"] == "t9k-ssh"
        assert mounts_of(pod)["/t9k/hostfile"] == "t9k-config"
        assert pod.spec.restart_policy == "Never"
    launcher = pods["bert-worker-0"]
    assert launcher.spec.containers[0].command == [
        *LAUNCH,
        "deepspeed",
        "--hostfile",
        "/t9k/hostfile",
        "--master_addr",
        "bert-worker-0.bert",
        "train.py",
        "--epochs=1",
    ]
    assert launcher.metadata.labels["job-role"] == "master"
    assert env_of(launcher)["T9K_HOSTFILE"] == "/t9k/hostfile"
    assert pods["bert-worker-1"].spec.containers[0].command == SSHD
    assert "job-role" not in pods["bert-worker-1"].metadata.labels

    jobs.end_pod("bert-worker-0", code=0)  # the launch finished; worker-1 still serves sshd
    status = jobs.wait_phase("bert", "Succeeded")
    assert condition(status, "Completed")["message"] == "The job has finished successfully."
    assert jobs.pod("bert-worker-1").status.phase == "Running"  # cleanUpPolicy None
    assert jobs.wait_event("bert", "Succeeded")[0] == "Normal"


def test_a_deepspeed_job_fails_with_the_pod_and_exit_code_when_no_retry_is_left(
    jobs: Jobs,
) -> None:
    jobs.create(deepspeed_job("oom", 2, runPolicy={"backoffLimit": 0}))
    jobs.wait_running("oom", {"oom-worker-0", "oom-worker-1"})
    jobs.end_pod("oom-worker-0", code=137)
    status = jobs.wait_phase("oom", "Failed")
    message = "DeepSpeedJob oom has failed: oom-worker-0 failed with exit code 137"
    failed = condition(status, "Failed")
    assert (failed["status"], failed["message"]) == ("True", message)
    # as in T9k's real dump: reason Failed, the job's failure message
    replica_failure = condition(status, "ReplicaFailure")
    assert replica_failure["reason"] == "Failed"
    assert replica_failure["message"].startswith(message)
    assert backoff_count(status) == 0
    assert len(jobs.history.uids("oom-worker-0")) == 1
    assert jobs.wait_event("oom", "Failed") == ("Warning", "Failed", message)


def test_a_failed_worker_is_restarted_within_the_backoff_limit(jobs: Jobs) -> None:
    jobs.create(deepspeed_job("retry", 2, runPolicy={"backoffLimit": 1}))
    jobs.wait_running("retry", {"retry-worker-0", "retry-worker-1"})
    first = jobs.pod("retry-worker-0").metadata.uid

    jobs.end_pod("retry-worker-0", code=1)
    status = jobs.wait_status("retry", lambda s: backoff_count(s) == 1, "backoffCount 1")
    pods = jobs.wait_pods(
        "retry",
        lambda ps: "retry-worker-0" in ps
        and ps["retry-worker-0"].metadata.uid != first
        and ps["retry-worker-0"].status.phase == "Running",
        "worker-0 recreated and running",
    )
    assert status["phase"] == "Running"
    assert jobs.history.uids("retry-worker-0")[0] == first
    assert pods["retry-worker-0"].spec.containers[0].command[:3] == [*LAUNCH, "deepspeed"]

    jobs.end_pod("retry-worker-0", code=0)
    status = jobs.wait_phase("retry", "Succeeded")
    assert backoff_count(status) == 1
    assert len(jobs.history.uids("retry-worker-0")) == 2
    jobs.wait_event("retry", "RestartingPod")  # Events of child actions may come 1 s late


def test_active_deadline_seconds_stops_a_job_that_runs_too_long_and_deletes_its_pods(
    jobs: Jobs,
) -> None:
    jobs.create(
        deepspeed_job("slow", 2, runPolicy={"activeDeadlineSeconds": 3, "cleanUpPolicy": "None"})
    )
    jobs.wait_running("slow", {"slow-worker-0", "slow-worker-1"})
    status = jobs.wait_phase("slow", "Failed", timeout=15)
    failed = condition(status, "Failed")
    started = condition(status, "Initialized")["lastTransitionTime"]
    assert (failed["reason"], failed["message"]) == (
        "DeadlineExceeded",
        f"The job ran longer than runPolicy.activeDeadlineSeconds (3s, counted from {started}):"
        " its unfinished pods are deleted.",
    )
    # a deadline is a hard stop: the running workers are deleted although cleanUpPolicy is None
    jobs.wait_pods("slow", lambda ps: not ps, "the running workers deleted")
    # one Event for both (similar Events are combined), naming each worker and why
    wanted = [
        f"Deleted pod slow-worker-{i}: the job ran past runPolicy.activeDeadlineSeconds"
        for i in (0, 1)
    ]
    wait_for(
        lambda: "; ".join(m for _, reason, m in jobs.events("slow") if reason == "CleanUpPod"),
        lambda cleaned: all(w in cleaned for w in wanted),
        "a CleanUpPod Event naming each running worker",
        10,
    )
    assert jobs.event_count("slow", "CleanUpPod") == 2


def test_an_elastic_resize_rewrites_the_hostfile_and_relaunches_worker_0(jobs: Jobs) -> None:
    elastic = {"enabled": True, "minReplicas": 1, "maxReplicas": 4, "expectedReplicas": 2}
    jobs.create(deepspeed_job("gpt", 2, elastic=elastic))
    pods = jobs.wait_running("gpt", {"gpt-worker-0", "gpt-worker-1"})
    before = {n: p.metadata.uid for n, p in pods.items()}
    assert hostfile(jobs, "gpt").count("slots=1") == 2
    jobs.wait_phase("gpt", "Running")

    jobs.patch("gpt", {"spec": {"elastic": {"expectedReplicas": 3}}})
    names = {"gpt-worker-0", "gpt-worker-1", "gpt-worker-2"}
    wait_for(
        lambda: hostfile(jobs, "gpt"),
        lambda text: text.endswith("gpt-worker-2.gpt slots=1\n"),
        "the hostfile to list three workers",
    )
    assert hostfile(jobs, "gpt") == "".join(f"gpt-worker-{i}.gpt slots=1\n" for i in range(3))
    pods = jobs.wait_pods(
        "gpt",
        lambda ps: set(ps) == names
        and all(p.status.phase == "Running" for p in ps.values())
        and ps["gpt-worker-0"].metadata.uid != before["gpt-worker-0"],
        "three running workers with worker-0 relaunched",
    )
    assert pods["gpt-worker-1"].metadata.uid == before["gpt-worker-1"]  # only the launcher
    status = jobs.wait_phase("gpt", "Running")
    assert backoff_count(status) == 0  # a resize is not a restart
    assert set(replicas_of(status)) == names
    jobs.wait_event("gpt", "Relaunching")  # Events of child actions may come 1 s late


def test_a_deepspeed_job_pauses_and_resumes(jobs: Jobs) -> None:
    jobs.create(deepspeed_job("ds-pause", 2))
    names = {"ds-pause-worker-0", "ds-pause-worker-1"}
    before = {n: p.metadata.uid for n, p in jobs.wait_running("ds-pause", names).items()}

    jobs.patch("ds-pause", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    jobs.wait_status(
        "ds-pause",
        lambda s: s.get("phase") == "Paused" and condition(s, "Paused").get("status") == "True",
        "Paused with Paused=True",
    )
    assert jobs.pods("ds-pause") == {}
    # the keys, hostfile and service stay for the resume
    jobs.core_v1.read_namespaced_secret("ds-pause-ssh", jobs.namespace)
    jobs.core_v1.read_namespaced_config_map("ds-pause-config", jobs.namespace)
    jobs.core_v1.read_namespaced_service("ds-pause", jobs.namespace)

    jobs.patch("ds-pause", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    pods = jobs.wait_running("ds-pause", names)
    status = jobs.wait_phase("ds-pause", "Running")
    assert all(pods[n].metadata.uid != before[n] for n in names)
    assert pods["ds-pause-worker-0"].spec.containers[0].command[:3] == [*LAUNCH, "deepspeed"]
    assert backoff_count(status) == 0
    assert condition(status, "Paused")["reason"] == "Resumed"
    assert "Resuming" in jobs.reasons("ds-pause")


def test_debug_mode_runs_the_jobs_sshd_on_every_deepspeed_worker(jobs: Jobs) -> None:
    jobs.create(deepspeed_job("ds-debug", 2, runMode={"debug": {"enabled": True}}))
    pods = jobs.wait_running("ds-debug", {"ds-debug-worker-0", "ds-debug-worker-1"})
    for name, pod in pods.items():
        assert pod.spec.containers[0].command == SSHD, name  # not a bare /usr/sbin/sshd -D
        assert pod.spec.containers[0].args is None
        assert mounts_of(pod)["/root/.ssh"] == "t9k-ssh"  # keys stay to launch by hand
        assert env_of(pod)["T9K_FORWARD_ENV"] == "1"
    status = jobs.wait_phase("ds-debug", "Running")
    assert condition(status, "Completed")["reason"] == "Debug"


# --- ColossalAIJob ---------------------------------------------------------------------------


def test_a_colossalai_launcher_decides_success_and_clean_up_workers_keeps_only_it(
    jobs: Jobs,
) -> None:
    jobs.create(
        colossalai_job(
            "palm",
            2,
            launcher_annotations=finish(0, after="2s"),
            runPolicy={"cleanUpWorkers": True},
        )
    )
    names = {"palm-launcher", "palm-worker-0", "palm-worker-1"}
    pods = jobs.wait_pods("palm", lambda ps: set(ps) == names, "launcher and two workers")
    launcher = pods["palm-launcher"]
    assert launcher.spec.containers[0].command == [
        *LAUNCH,
        "colossalai",
        "run",
        "--nproc_per_node",
        "2",
        "--hostfile",
        "/t9k/hostfile",
        "--master_addr",
        "palm-worker-0.palm",
        "--",
        "train.py",
        "--epochs=1",
    ]
    assert launcher.metadata.labels["job-role"] == "master"
    for name in ("palm-worker-0", "palm-worker-1"):
        assert pods[name].spec.containers[0].command == SSHD
        assert env_of(pods[name])["T9K_SSHD"] == "/usr/sbin/sshd"
        assert (pods[name].spec.hostname, pods[name].spec.subdomain) == (name, "palm")
    assert hostfile(jobs, "palm") == "palm-worker-0.palm\npalm-worker-1.palm\n"
    jobs.core_v1.read_namespaced_secret("palm-ssh", jobs.namespace)
    assert jobs.core_v1.read_namespaced_service("palm", jobs.namespace).spec.cluster_ip == "None"

    status = jobs.wait_phase("palm", "Succeeded")
    assert condition(status, "Completed")["reason"] == "Succeeded"
    pods = jobs.wait_pods("palm", lambda ps: set(ps) == {"palm-launcher"}, "workers deleted")
    assert pods["palm-launcher"].status.phase == "Succeeded"  # kept for its logs


def test_a_colossalai_worker_is_never_restarted_and_the_launcher_decides_failure(
    jobs: Jobs,
) -> None:
    jobs.create(colossalai_job("cai", 2, worker_restart=("OnFailure", 3)))
    jobs.wait_running("cai", {"cai-launcher", "cai-worker-0", "cai-worker-1"})
    worker_uid = jobs.pod("cai-worker-1").metadata.uid

    jobs.end_pod("cai-worker-1", code=137)
    status = jobs.wait_status(
        "cai",
        lambda s: replicas_of(s).get("cai-worker-1", {}).get("phase") == "Failed",
        "worker-1 Failed in the status",
    )
    assert status["phase"] == "Running"  # only the launcher decides
    assert condition(status, "ReplicaFailure")["status"] == "True"
    assert jobs.pod("cai-worker-1").metadata.uid == worker_uid  # not deleted, not recreated
    assert "RestartingPod" not in jobs.reasons("cai")

    jobs.end_pod("cai-launcher", code=1)
    status = jobs.wait_phase("cai", "Failed")
    assert condition(status, "Failed")["message"] == (
        "ColossalAIJob cai has failed: cai-launcher failed with exit code 1"
    )
    assert jobs.history.uids("cai-worker-1") == [worker_uid]
    assert all(v == 0 for v in (t.get("restartCount", 0) for t in status["tasks"]))


# --- issue 10: what the API server would refuse, and what the launchers get ------------------


def test_a_volume_at_a_reserved_path_fails_the_job_instead_of_every_pod_creation(
    jobs: Jobs,
) -> None:
    """Issue 10 item 6: a user volume at /root/.ssh passed validation, then the API server
    refused every pod (HTTP 422: mountPath must be unique) and the job stayed Pending. Now the
    API server refuses the job where its CEL budget allows (the first container), and the
    operator fails the job with InvalidSpec, naming the field, and creates no pod otherwise."""
    simple = deepspeed_job("ds-mount-0", 2)
    worker = simple["spec"]["worker"]["template"]["spec"]
    worker["containers"][0]["volumeMounts"] = [{"name": "keys", "mountPath": "/root/.ssh"}]
    worker["volumes"] = [{"name": "keys", "emptyDir": {}}]
    with pytest.raises(ApiException) as refused:
        jobs.create(simple)
    assert "must not mount a volume at /, /t9k, /root/.ssh" in refused.value.body

    manifest = deepspeed_job("ds-mount", 2)
    worker = manifest["spec"]["worker"]["template"]["spec"]
    mount = {"name": "keys", "mountPath": "/root/.ssh"}
    worker["containers"] = [
        {"name": "proxy", "image": "busybox"},  # a sidecar first: beyond the CRD's rule
        {**worker["containers"][0], "volumeMounts": [mount]},
    ]
    worker["volumes"] = [{"name": "keys", "emptyDir": {}}]
    jobs.create(manifest)
    status = jobs.wait_phase("ds-mount", "Failed")
    failed = condition(status, "Failed")
    assert failed["reason"] == "InvalidSpec"
    assert failed["message"].startswith(
        "spec.worker.template.spec.containers[1].volumeMounts[0].mountPath:"
        " the training container must not mount a volume at /, /t9k, /root/.ssh"
    )
    assert "mountPath '/root/.ssh': /root/.ssh is reserved" in failed["message"]
    assert jobs.pods("ds-mount") == {}


def test_a_deepspeed_job_forwards_its_environment_by_reference(jobs: Jobs) -> None:
    """Issue 10 item 8: the secret stays a reference in every pod (the kubelet resolves it in
    each worker), no env file is written, and the session environment lives in memory."""
    manifest = deepspeed_job("ds-env", 2)
    c = manifest["spec"]["worker"]["template"]["spec"]["containers"][0]
    c["env"] = [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "t"}}}]
    c["envFrom"] = [{"configMapRef": {"name": "settings", "optional": True}}]
    jobs.create(manifest)
    pods = jobs.wait_pods("ds-env", lambda ps: len(ps) == 2, "two worker pods")
    for name, pod in pods.items():
        container = pod.spec.containers[0]
        env = {e.name: e for e in container.env}
        assert env["HF_TOKEN"].value_from.secret_key_ref.name == "hf", name
        assert env["T9K_FORWARD_ENV"].value == "1"
        assert not any(n.startswith("T9K_ENV") for n in env)
        assert container.env_from[0].config_map_ref.name == "settings"
        (run,) = [v for v in pod.spec.volumes if v.name == "t9k-run"]
        assert run.empty_dir.medium == "Memory"
        assert mounts_of(pod)["/t9k/run"] == "t9k-run"


def test_colossalai_extra_args_go_to_torchrun_and_debug_specs_reach_workers(jobs: Jobs) -> None:
    """Issue 10 items 3 and 4, as the API server stores the pods."""
    jobs.create(
        colossalai_job(
            "caij-args",
            2,
            torchConfig={
                "procPerWorker": 2,
                "script": ["train.py", "a b"],
                "extraArgs": ["--max_restarts=3"],
            },
        )
    )
    pods = jobs.wait_pods("caij-args", lambda ps: len(ps) == 3, "the launcher and two workers")
    command = pods["caij-args-launcher"].spec.containers[0].command
    assert command[command.index("--extra_launch_args") :] == [
        "--extra_launch_args",
        "max_restarts=3",
        "--",
        "train.py",
        "'a b'",
    ]
    assert env_of(pods["caij-args-launcher"])["T9K_SCRIPT"] == "train.py"

    debug = {"enabled": True, "replicaSpecs": [{"type": "worker", "command": ["sleep", "1d"]}]}
    jobs.create(colossalai_job("caij-debug", 2, runMode={"debug": debug}))
    pods = jobs.wait_pods("caij-debug", lambda ps: len(ps) == 3, "the launcher and two workers")
    assert pods["caij-debug-worker-0"].spec.containers[0].command == ["sleep", "1d"]
    assert pods["caij-debug-worker-1"].spec.containers[0].command == ["sleep", "1d"]
    assert pods["caij-debug-launcher"].spec.containers[0].command == ["sleep", "inf"]
