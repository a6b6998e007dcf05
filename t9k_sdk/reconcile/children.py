"""Desired children of a job: pods, services, ConfigMaps, Secrets and the PodGroup (pure,
deterministic), built by the job's kind rules (`reconcile.kinds`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from t9k_sdk.codecs import AnyJob
from t9k_sdk.reconcile.kinds import KindRules, Mode, rules_for
from t9k_sdk.reconcile.types import Manifest

__all__ = ["Children", "desired_children", "desired_others", "iter_desired_children"]


@dataclass(frozen=True)
class Children:
    """Everything a job owns, as it should be."""

    pods: tuple[Manifest, ...] = ()
    services: tuple[Manifest, ...] = ()
    config_maps: tuple[Manifest, ...] = ()
    secrets: tuple[Manifest, ...] = ()
    pod_groups: tuple[Manifest, ...] = ()

    def all(self) -> tuple[Manifest, ...]:
        """In creation order."""
        return (*self.pod_groups, *self.secrets, *self.config_maps, *self.services, *self.pods)


def iter_desired_children(
    job: AnyJob, *, ssh_key: tuple[str, str] | None = None
) -> Iterator[Manifest]:
    """What `desired_children(...).all()` holds, one object at a time: each pod is built when
    it is asked for, so a job of 10,000 replicas never has them all in memory at once."""
    rules = rules_for(job)
    run_mode = rules.run_mode()
    mode: Mode = "debug" if run_mode.debug_enabled else "immediate"
    group = rules.pod_group()
    if group:
        yield group
    yield from rules.secrets(ssh_key)
    yield from rules.config_maps()
    yield from rules.services()
    if not run_mode.pause_enabled:
        for slot in rules.slots():
            yield rules.pod(slot, mode)


def desired_children(job: AnyJob, *, ssh_key: tuple[str, str] | None = None) -> Children:
    """Everything a newly created `job` would own, as `t9k-sdk plan` shows it."""
    by_kind: dict[str, list[Manifest]] = {}
    for obj in iter_desired_children(job, ssh_key=ssh_key):
        by_kind.setdefault(str(obj["kind"]), []).append(obj)
    return Children(
        pods=tuple(by_kind.get("Pod", ())),
        services=tuple(by_kind.get("Service", ())),
        config_maps=tuple(by_kind.get("ConfigMap", ())),
        secrets=tuple(by_kind.get("Secret", ())),
        pod_groups=tuple(by_kind.get("PodGroup", ())),
    )


def desired_others(
    rules: KindRules, ssh_key: tuple[str, str] | None, *, services: bool = True
) -> list[Manifest]:
    """The children of a job other than its pods, as its spec asks for them (without its
    services when `services` is False): what a reconcile pass keeps in line."""
    desired: list[Manifest] = [
        *(rules.services() if services else ()),
        *rules.config_maps(),
        *rules.secrets(ssh_key),
    ]
    group = rules.pod_group()
    if group is not None:
        desired.append(group)
    return desired
