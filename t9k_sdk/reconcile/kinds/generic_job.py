"""GenericJob: free replica types, finish rules, optional per-replica services, and the
`$(...)` variables substituted in commands, arguments and env values."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from t9k_sdk import _conventions as conventions
from t9k_sdk import codecs, models
from t9k_sdk._conventions import Slot
from t9k_sdk.reconcile.kinds._base import KindRules, Mode, ReplicaGroup
from t9k_sdk.reconcile.types import Manifest

__all__ = ["GenericJobRules"]


# Compiled once: `re`'s own pattern cache is shared with everything else in the process, so a
# per-pod re.fullmatch(str) would sometimes compile again (and cost per pod).
_REPLICAS_VAR = re.compile(r"replicas\[([^\]]+)\]")
_SERVICE_HOST_VAR = re.compile(r"service\.([^\[\]]+)\[(\d+)\]\.host")
_SERVICE_PORT_VAR = re.compile(r"service\.port\[([^\]]+)\]")


class GenericJobRules(KindRules):
    """GenericJob: free replica types, finish rules, optional per-replica services, variables."""

    kind_label = "genericjob"
    # T9k: restartPolicy.limit is "the maximum restarts of the replica"; tasks[].restartCount
    # is the sum over its type.
    budget = "replica"
    job: models.GenericJob

    def groups(self) -> list[ReplicaGroup]:
        out = []
        for r in self.job.spec.replica_specs:
            policy = r.restart_policy or models.RestartPolicy()
            out.append(
                ReplicaGroup(
                    type=r.type,
                    count=r.replica_count,
                    template=codecs.to_wire(r.template),
                    policy=models.RestartPolicyType(
                        policy.policy or models.RestartPolicy.default_of("policy")
                    ),
                    limit=policy.limit if policy.limit is not None else 0,
                )
            )
        return out

    def _ports(self) -> dict[str, int]:
        service = self.job.spec.service
        return {p.name: p.port for p in (service.ports if service else None) or () if p.name}

    def substitute(self, text: str, slot: Slot) -> str:
        """Expand `$(type)`, `$(rank)`, `$(replicas[t])`, `$(service.t[i].host)`,
        `$(service.port[name])`; anything else (e.g. `$(HOME)`, for the kubelet) is kept.

        One left-to-right pass with the kubelet's syntax (Kubernetes' `expansion.Expand`): a
        variable runs to the first `)`, and `$$` is the escape. The escape is kept as `$$`, so
        that the kubelet, which expands the same fields next, turns `$$(rank)` into the literal
        `$(rank)` (and `$$(HOME)` into `$(HOME)`, as it would without the operator)."""
        if "$" not in text:  # most strings: nothing to expand (a pass makes one per pod field)
            return text
        counts = {g.type: g.count for g in self.groups()}
        has_service = self.job.spec.service is not None
        ports = self._ports()

        def value(var: str) -> str | None:
            if var == "type":
                return slot.replica_type
            if var == "rank":
                return str(slot.rank)
            m = _REPLICAS_VAR.fullmatch(var)
            if m and m.group(1) in counts:
                return str(counts[m.group(1)])
            m = _SERVICE_HOST_VAR.fullmatch(var)
            if m and has_service and m.group(1) in counts and int(m.group(2)) < counts[m.group(1)]:
                return conventions.pod_name(self.job.name, m.group(1), int(m.group(2)))
            m = _SERVICE_PORT_VAR.fullmatch(var)
            if m and has_service and m.group(1) in ports:
                return str(ports[m.group(1)])
            return None

        # One scan: every search starts where the last one ended, so a string is read once
        # however many `$` or unclosed `$(` it holds (a `$(` with no `)` after it means no later
        # one has one either: the rest is kept as it is, as the kubelet keeps it).
        out: list[str] = []
        i = 0
        while (dollar := text.find("$", i)) != -1:
            out.append(text[i:dollar])
            after = text[dollar + 1 : dollar + 2]
            if after == "$":
                out.append("$$")
                i = dollar + 2
            elif after == "(":
                close = text.find(")", dollar + 2)
                if close == -1:
                    i = dollar
                    break
                expanded = value(text[dollar + 2 : close])
                out.append(text[dollar : close + 1] if expanded is None else expanded)
                i = close + 1
            else:
                out.append("$")
                i = dollar + 1
        out.append(text[i:])
        return "".join(out)

    def pod(self, slot: Slot, mode: Mode) -> Manifest:
        """The pod, with the variables substituted in every command, argument and env value it
        ends up with (run-mode overrides included)."""
        manifest = super().pod(slot, mode)
        spec = manifest["spec"]
        for key in ("containers", "initContainers"):
            containers = []
            for c in spec.get(key) or ():
                c = dict(c)
                for field_ in ("command", "args"):
                    if c.get(field_) is not None:
                        c[field_] = [self.substitute(a, slot) for a in c[field_]]
                if c.get("env") is not None:
                    c["env"] = [
                        {**e, "value": self.substitute(e["value"], slot)} if e.get("value") else e
                        for e in c["env"]
                    ]
                containers.append(c)
            if key in spec:
                spec[key] = containers
        return manifest

    def services(self) -> list[Manifest]:
        service = self.job.spec.service
        if service is None:
            return []
        ports = [codecs.to_wire(p) for p in service.ports or ()]
        return [
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": self._meta(slot.name, slot),
                "spec": {
                    "clusterIP": "None",
                    "publishNotReadyAddresses": True,
                    "selector": {f"{self.kind_label}-replica": slot.name},
                    "ports": ports,
                },
            }
            for slot in self.slots()
        ]

    def outcome(
        self, final: Mapping[str, str], failed_codes: Mapping[str, int | None]
    ) -> tuple[str, str] | None:
        spec = self.job.spec
        slots = self.slots()

        def rule_slots(rule: Mapping[str, list[int]]) -> list[str]:
            return [
                conventions.pod_name(self.job.name, t, i) for t, idx in rule.items() for i in idx
            ]

        # A rule that names no replica would hold before any replica ran. The SDK and the CRD
        # reject it, and so does `reconcile` (InvalidSpec); should one get here, it is ignored.
        failure_rules = [r for r in spec.finish_rules("failure") if rule_slots(r)]
        success_rules = [r for r in spec.finish_rules("success") if rule_slots(r)]
        failed = [s.name for s in slots if final.get(s.name) == "Failed"]

        def failures(pods: list[str]) -> str:
            shown = [f"Pod[{p}] {_failed_how(failed_codes.get(p))}" for p in pods[:3]]
            more = f", and {len(pods) - 3} more" if len(pods) > 3 else ""
            return ", ".join(shown) + more

        for rule in failure_rules:
            if all(final.get(p) == "Failed" for p in rule_slots(rule)):
                return "Failed", f"The job is failed with rule: {_rule_text(rule)}"
        if not failure_rules and failed:
            return "Failed", f"The job is failed: {failures(failed[:1])}"
        if not slots:
            return None
        # Without successRules the job succeeds when every replica succeeded.
        wanted = [rule_slots(r) for r in success_rules] or [[s.name for s in slots]]
        if any(all(final.get(p) == "Succeeded" for p in members) for members in wanted):
            return "Succeeded", "The job has finished successfully."
        if all(any(final.get(p) == "Failed" for p in members) for members in wanted):
            # no success rule can be met any more: waiting for the other replicas is pointless
            blocking = {p for members in wanted for p in members}
            culprits = failures([p for p in failed if p in blocking])
            if success_rules:
                return (
                    "Failed",
                    f"The job is failed: no success rule can be met any more: {culprits}",
                )
            return (
                "Failed",
                f"The job is failed: without successRules every replica must succeed, but {culprits}",
            )
        if all(s.name in final for s in slots):
            return (
                "Failed",
                "The job is failed: every replica has finished, but no success rule was met",
            )
        return None

    def clean_up_policy(self) -> models.CleanUpPolicy:
        return models.CleanUpPolicy(self.job.spec.clean_up_policy or models.CleanUpPolicy.NONE)


def _failed_how(code: int | None) -> str:
    return f"exited with error code {code}" if code is not None else "failed"


def _rule_text(rule: Mapping[str, list[int]]) -> str:
    """As T9k prints rules: compact JSON, sorted keys, indices as strings."""
    return json.dumps(
        {t: [str(i) for i in idx] for t, idx in sorted(rule.items())}, separators=(",", ":")
    )
