"""ColossalAIJob: `<job>-launcher` runs `colossalai run` over the workers and decides the
outcome; workers are never restarted."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from t9k_sdk import _conventions as conventions
from t9k_sdk import codecs, models
from t9k_sdk._conventions import Slot
from t9k_sdk.reconcile import bootstrap
from t9k_sdk.reconcile.kinds._base import ReplicaGroup
from t9k_sdk.reconcile.kinds._ssh import SSHRules

__all__ = ["ColossalAIJobRules"]


class ColossalAIJobRules(SSHRules):
    """ColossalAIJob: `<job>-launcher` decides the outcome; workers are never restarted."""

    kind_label = "colossalaijob"
    job: models.ColossalAIJob

    def groups(self) -> list[ReplicaGroup]:
        out = []
        for r in self.job.spec.replica_specs:
            template = codecs.to_wire(r.template) if r.template else {}
            out.append(
                ReplicaGroup(
                    type=r.type.value,
                    count=r.replica_count,
                    template=template,
                    # ColossalAI cannot take a restarted worker back into a running training:
                    # the restart policy is accepted for compatibility and never applied.
                    policy=models.RestartPolicyType.NEVER,
                    limit=0,
                    training_container=r.type.value,
                )
            )
        return out

    def is_master(self, slot: Slot) -> bool:
        return slot.replica_type == models.ColossalAIReplicaType.LAUNCHER

    # -- bootstrap --------------------------------------------------------------------------------

    @property
    def ssh_dir(self) -> str:
        ssh = self.job.spec.ssh or models.SSHConfig()
        return ssh.auth_mount_path or str(models.SSHConfig.default_of("auth_mount_path"))

    @property
    def sshd(self) -> str:
        ssh = self.job.spec.ssh or models.SSHConfig()
        return ssh.sshd_path or str(models.SSHConfig.default_of("sshd_path"))

    def worker_count(self) -> int:
        worker = self.job.spec.replica(models.ColossalAIReplicaType.WORKER)
        return worker.replica_count if worker else 0

    def hostfile(self) -> str:
        return "".join(f"{self.host(i)}\n" for i in range(self.worker_count()))

    def launcher_argv(self) -> list[str]:
        """`colossalai run` as the launcher runs it after the barrier (an argv list).

        `colossalai run` joins the torchrun command into one string that a shell runs on each
        worker, so the script's arguments are shell-quoted here to arrive there intact.
        torchConfig.extraArgs become `--extra_launch_args name=value,...`, which colossalai
        turns back into `--name=value` torchrun options; `--` ends colossalai's own options, so
        neither a script argument nor an unknown option can be taken for one of them.
        """
        torch = self.job.spec.torch_config
        procs = torch.proc_per_worker or int(models.TorchConfig.default_of("proc_per_worker"))
        argv = [
            "colossalai",
            "run",
            "--nproc_per_node",
            str(procs),
            "--hostfile",
            bootstrap.HOSTFILE,
            "--master_addr",
            self.host(0),
        ]
        if torch.extra_args:
            argv += ["--extra_launch_args", ",".join(a[2:] for a in torch.extra_args)]
        script, *args = torch.script
        return [*argv, "--", script, *(shlex.quote(a) for a in args)]

    def debug_default(self, slot: Slot) -> list[str]:
        """The launcher sleeps; the workers keep sshd, so `colossalai run` can be run by hand."""
        if slot.replica_type == models.ColossalAIReplicaType.WORKER:
            return bootstrap.sshd_command()
        return list(self.debug_command)

    def customize(self, spec: dict[str, Any], slot: Slot) -> None:
        launcher = slot.replica_type == models.ColossalAIReplicaType.LAUNCHER
        if not spec.get("containers"):
            worker = self.group(models.ColossalAIReplicaType.WORKER.value).template
            containers = (worker.get("spec") or {}).get("containers") or [{}]
            base = next((c for c in containers if c.get("name") == "worker"), containers[0])
            spec["containers"] = [{"name": "launcher", "image": base.get("image")}]
        index = self._training_index(spec, self.group(slot.replica_type)) or 0
        container = spec["containers"][index]
        settings = {"T9K_SSH_DIR": self.ssh_dir, "T9K_HOSTFILE": bootstrap.HOSTFILE}
        if launcher:
            settings[bootstrap.BARRIER_TIMEOUT_ENV] = bootstrap.barrier_timeout(container)
            settings["T9K_SCRIPT"] = self.job.spec.torch_config.script[0]
            container["command"] = bootstrap.launch_command(self.launcher_argv())
        else:
            settings["T9K_SSHD"] = self.sshd
            container["command"] = bootstrap.sshd_command()
        self.mount_bootstrap(spec, container, slot, settings)

    def launch_waits_for(self, slot: Slot) -> list[str]:
        """The launcher runs `colossalai run`, which reaches every worker over ssh at once."""
        if not self.is_master(slot):
            return []
        return self._not_running(
            [conventions.pod_name(self.job.name, "worker", i) for i in range(self.worker_count())]
        )

    def outcome(
        self, final: Mapping[str, str], failed_codes: Mapping[str, int | None]
    ) -> tuple[str, str] | None:
        launcher = conventions.pod_name(self.job.name, "launcher", None)
        state = final.get(launcher)
        if state == "Succeeded":
            return "Succeeded", "The job has finished successfully."
        if state == "Failed":
            code = failed_codes.get(launcher)
            detail = f"failed with exit code {code}" if code is not None else "failed"
            return "Failed", f"ColossalAIJob {self.job.name} has failed: {launcher} {detail}"
        return None

    def to_clean_up(self, finished: Mapping[str, bool]) -> list[str]:
        """runPolicy.cleanUpWorkers deletes the workers; the launcher stays for its logs."""
        policy = self.job.spec.run_policy
        if not (policy and policy.clean_up_workers):
            return []
        launcher = conventions.pod_name(self.job.name, "launcher", None)
        return [name for name in finished if name != launcher]
