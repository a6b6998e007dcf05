"""DeepSpeedJob: workers only; worker-0 runs `deepspeed` over the hostfile, launches the training
and decides the outcome; elastic jobs launch with the workers that run."""

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

__all__ = ["DeepSpeedJobRules", "for_pdsh_runner", "uses_pdsh"]


def uses_pdsh(other_args: list[str], workers: int) -> bool:
    """Whether `deepspeed` with these options starts the script through its pdsh runner: with
    more than one host (or `--force_multi`), unless another launcher (`--launcher openmpi`...),
    `--no_ssh` or `--num_nodes 1` is asked for. Otherwise it runs the script itself, with its
    arguments as they are, and nothing may be escaped."""

    def option(name: str) -> str | None:
        for i, arg in enumerate(other_args):
            if arg == name and i + 1 < len(other_args):
                return other_args[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
        return None

    if (option("--launcher") or "pdsh").lower() != "pdsh" or "--no_ssh" in other_args:
        return False
    if "--force_multi" in other_args:
        return True
    return workers > 1 and option("--num_nodes") != "1"


def for_pdsh_runner(arg: str) -> str:
    """`arg` written so that it reaches the training script unchanged through DeepSpeed's pdsh
    runner, which joins the script's arguments into one command line for `bash -c` on each
    worker. That runner wraps an argument holding a space in double quotes (escaping its `"`)
    and passes every other argument as it is, so the shell would expand `$`, split on `;`, and
    choke on a lone `'`; and pdsh replaces `%n`, `%h` and `%u` everywhere in that line (it is
    how DeepSpeed passes each worker its rank). So `%` is doubled (pdsh's escape), and then an
    argument with a space has `\\`, `$` and `` ` `` (what is special inside double quotes)
    escaped, and any other is single-quoted where the shell would change it.
    """
    arg = arg.replace("%", "%%")
    if " " in arg:
        return arg.replace("\\", "\\\\").replace("$", "\\$").replace("`", "\\`")
    return shlex.quote(arg)


class DeepSpeedJobRules(SSHRules):
    """DeepSpeedJob: workers only; worker-0 launches and decides the outcome."""

    kind_label = "deepspeedjob"
    budget = "job"
    job: models.DeepSpeedJob

    def worker_count(self) -> int:
        """The workers the job has (an elastic job: its expectedReplicas)."""
        return dict(conventions.replica_types(self.job))["worker"]

    def groups(self) -> list[ReplicaGroup]:
        spec = self.job.spec
        policy = spec.run_policy or models.DeepSpeedRunPolicy()
        limit = policy.backoff_limit
        return [
            ReplicaGroup(
                type="worker",
                count=self.worker_count(),
                template=codecs.to_wire(spec.worker.template),
                policy=models.RestartPolicyType(
                    spec.worker.restart_policy or models.Worker.default_of("restart_policy")
                ),
                limit=(
                    limit
                    if limit is not None
                    else int(models.DeepSpeedRunPolicy.default_of("backoff_limit"))
                ),
                training_container="worker",
            )
        ]

    def min_member(self) -> int:
        elastic = self.job.spec.elastic
        if elastic and elastic.enabled and elastic.min_replicas is not None:
            return elastic.min_replicas
        return self.worker_count()

    # -- bootstrap --------------------------------------------------------------------------------

    @property
    def ssh_dir(self) -> str:
        return "/root/.ssh"

    def debug_default(self, slot: Slot) -> list[str]:
        """Every worker runs the job's sshd set-up, so `deepspeed` can be started by hand."""
        return bootstrap.sshd_command()

    def hostfile(self) -> str:
        cfg = self.job.spec.config or models.Config()
        slots = cfg.slots_per_worker or int(models.Config.default_of("slots_per_worker"))
        return "".join(f"{self.host(i)} slots={slots}\n" for i in self.hosts())

    def launcher_argv(self) -> list[str]:
        """The `deepspeed` command worker-0 runs after the barrier (an argv list)."""
        cfg = self.job.spec.config or models.Config()
        if cfg.custom_command:
            return ["/bin/sh", "-c", cfg.custom_command]
        argv = ["deepspeed", "--hostfile", bootstrap.HOSTFILE, "--master_addr", self.host(0)]
        if cfg.local_rank is False:
            argv.append("--no_local_rank")
        if cfg.autotune in (models.AutotuneType.TUNE, models.AutotuneType.RUN):
            argv += ["--autotuning", cfg.autotune.value]
        argv += cfg.other_args or []
        run = cfg.run or models.RunType(python=[])
        if run.module is not None:
            argv.append("--module")
            target = run.module
        elif run.exec is not None:
            argv.append("--no_python")
            target = run.exec
        else:
            target = run.python or []
        if uses_pdsh(cfg.other_args or [], len(self.hosts())):
            # DeepSpeed joins the arguments into one command line for the workers' shell
            target = [*target[:1], *(for_pdsh_runner(a) for a in target[1:])]
        return [*argv, *target]

    def customize(self, spec: dict[str, Any], slot: Slot) -> None:
        index = self._training_index(spec, self.group("worker"))
        if index is None:
            return
        container = spec["containers"][index]
        settings = {"T9K_SSH_DIR": self.ssh_dir, "T9K_HOSTFILE": bootstrap.HOSTFILE}
        settings["T9K_SSHD"] = "/usr/sbin/sshd"
        # disableCustomEnv false: the training processes that DeepSpeed starts over ssh get the
        # environment of their own worker's container (env, valueFrom and envFrom, resolved by
        # the kubelet in that pod), never values copied onto pdsh's command line.
        forward = not self.job.spec.disable_custom_env
        if forward:
            settings["T9K_FORWARD_ENV"] = "1"
            settings["T9K_RUN_DIR"] = bootstrap.RUN_DIR
        if slot.rank == 0:
            settings[bootstrap.BARRIER_TIMEOUT_ENV] = bootstrap.barrier_timeout(container)
            container["command"] = bootstrap.launch_command(self.launcher_argv())
        else:
            container["command"] = bootstrap.sshd_command()
        self.mount_bootstrap(spec, container, slot, settings, run_dir=forward)

    def launch_waits_for(self, slot: Slot) -> list[str]:
        """worker-0 runs `deepspeed`, which reaches every other worker of the hostfile over ssh
        at once: it waits for them to run. An elastic job leaves out of the hostfile the workers
        that will not start by themselves (unschedulable, ...), down to minReplicas."""
        if slot.rank != 0:
            return []
        others = [conventions.pod_name(self.job.name, "worker", i) for i in self.hosts()[1:]]
        waiting = self._not_running(others)
        if self._elastic() and len(self.hosts()) < self.min_member():
            stuck = [
                conventions.pod_name(self.job.name, "worker", i)
                for i in range(1, self.worker_count())
                if i not in self.hosts()
            ]
            waiting = [*waiting, *stuck]
        if not waiting and self.mounted_hostfile not in (None, self.hostfile()):
            # worker-0 would mount the old hostfile: wait for its update
            cm = conventions.config_map_name(self.job.name)
            return [f"the new hostfile in ConfigMap {cm}"]
        return waiting

    def hosts(self) -> list[int]:
        """The indices of the workers in the hostfile: every worker; for an elastic job whose
        pods are known, worker-0 and every other worker that will start by itself (a worker
        that cannot be scheduled, for one, is left out until it can)."""
        count = self.worker_count()
        if not self._elastic() or self.running is None:
            return list(range(count))
        return [0] + [
            i
            for i in range(1, count)
            if conventions.pod_name(self.job.name, "worker", i) not in self.stuck
        ]

    def standby(self) -> frozenset[str]:
        """Elastic, once worker-0 launched: the expected workers beyond its hostfile."""
        if not self._elastic() or self.running is None:
            return frozenset()
        launcher = conventions.pod_name(self.job.name, "worker", 0)
        if launcher not in self.running:
            return frozenset()
        hosts = set(self.hosts())
        return frozenset(
            conventions.pod_name(self.job.name, "worker", i)
            for i in range(self.worker_count())
            if i not in hosts
        )

    def _elastic(self) -> bool:
        elastic = self.job.spec.elastic
        return bool(elastic and elastic.enabled)

    def pod_annotations(self, slot: Slot) -> dict[str, str]:
        if slot.rank != 0:
            return {}
        # what the pod will mount: the ConfigMap as it is, which a refused update leaves old
        mounted = self.mounted_hostfile if self.mounted_hostfile is not None else self.hostfile()
        return {bootstrap.HOSTFILE_HASH: bootstrap.hostfile_hash(mounted)}

    def outdated(self, slot: Slot, annotations: Mapping[str, str]) -> str | None:
        if slot.rank != 0 or self.run_mode().debug_enabled:
            return None
        wanted = self.hostfile()
        if self.mounted_hostfile is not None and self.mounted_hostfile != wanted:
            return None  # relaunch once the ConfigMap holds the new hostfile, not before
        started = annotations.get(bootstrap.HOSTFILE_HASH)
        if started is not None and started != bootstrap.hostfile_hash(wanted):
            return "the set of workers changed (elastic resize): relaunching with the new hostfile"
        return None

    def deadline_seconds(self) -> int | None:
        policy = self.job.spec.run_policy
        return policy.active_deadline_seconds if policy else None

    def outcome(
        self, final: Mapping[str, str], failed_codes: Mapping[str, int | None]
    ) -> tuple[str, str] | None:
        launcher = conventions.pod_name(self.job.name, "worker", 0)
        state = final.get(launcher)
        if state == "Succeeded":
            return "Succeeded", "The job has finished successfully."
        failed = [launcher] if state == "Failed" else [p for p, v in final.items() if v == "Failed"]
        if failed:
            pod = failed[0]
            code = failed_codes.get(pod)
            detail = f"failed with exit code {code}" if code is not None else "failed"
            return "Failed", f"DeepSpeedJob {self.job.name} has failed: {pod} {detail}"
        return None

    def clean_up_policy(self) -> models.CleanUpPolicy:
        policy = (self.job.spec.run_policy or models.DeepSpeedRunPolicy()).clean_up_policy
        return models.CleanUpPolicy(policy or models.CleanUpPolicy.NONE)
