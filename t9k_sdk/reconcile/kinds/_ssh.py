"""What DeepSpeedJob and ColossalAIJob share: the SSH bootstrap objects (the launch bootstrap
itself is in `reconcile/bootstrap.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from t9k_sdk import _conventions as conventions
from t9k_sdk._conventions import Slot
from t9k_sdk.reconcile import bootstrap
from t9k_sdk.reconcile.kinds._base import KindRules
from t9k_sdk.reconcile.types import Manifest

__all__ = ["SSHRules"]


class SSHRules(KindRules):
    """What DeepSpeedJob and ColossalAIJob share: the SSH bootstrap objects (see bootstrap.py)."""

    @property
    def ssh_dir(self) -> str:
        """Where the job's SSH keys are mounted."""
        raise NotImplementedError

    def hostfile(self) -> str:
        raise NotImplementedError

    def host(self, index: int) -> str:
        """DNS name of worker `index` through the job's headless service: `<pod>.<job>`."""
        return f"{conventions.pod_name(self.job.name, 'worker', index)}.{self.job.name}"

    def services(self) -> list[Manifest]:
        selector = {self.kind_label: self.job.name}
        return [bootstrap.headless_service(self._meta(self.job.name, None), selector)]

    def config_maps(self) -> list[Manifest]:
        meta = self._meta(conventions.config_map_name(self.job.name), None)
        return [bootstrap.config_map(meta, self.hostfile())]

    def secrets(self, ssh_key: tuple[str, str] | None) -> list[Manifest]:
        meta = self._meta(conventions.ssh_secret_name(self.job.name), None)
        return [bootstrap.ssh_secret(meta, ssh_key, self.ssh_dir)]

    def mount_bootstrap(
        self,
        spec: dict[str, Any],
        container: dict[str, Any],
        slot: Slot,
        settings: Mapping[str, str],
        *,
        run_dir: bool = False,
    ) -> None:
        """Drop the container's args (its command is now the launcher's or sshd's) and mount the
        bootstrap into the pod of `slot` (see `bootstrap.mount_bootstrap`)."""
        container.pop("args", None)
        bootstrap.mount_bootstrap(
            spec,
            container,
            job=self.job.name,
            ssh_dir=self.ssh_dir,
            pod_name=slot.name,
            settings=settings,
            run_dir=run_dir,
        )
