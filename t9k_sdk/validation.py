"""Offline validation of manifests, as strict as the API server and `kubectl --validate=strict`.

`validate_manifest(data)` returns every problem of one manifest document (an empty list means it
is valid): a wrong `kind` or `apiVersion`, schema errors and the cross-field rules of the models
(the same rules the CRDs enforce with CEL), and, inside the core/v1 parts the models keep open
(pod templates, service ports, metadata), fields that are unknown or of the wrong type according
to the upstream Kubernetes schema. The SDK keeps such fields through a round-trip; the API server
would drop them (pruning) or reject the object, so validation reports them.
"""

from __future__ import annotations

import difflib
import json
import warnings
from collections.abc import Mapping
from functools import cache
from typing import Any

from t9k_sdk import _kinds, codecs, crds, models
from t9k_sdk.errors import InvalidManifestError, LegacyManifestWarning, Problem
from t9k_sdk.models.batch_v1beta1 import _legacy_colossalai
from t9k_sdk.reconcile import bootstrap

__all__ = ["manifest_warnings", "validate_manifest"]

DEEPSPEED_EXPORTED_PREFIXES = ("MLFLOW", "NCCL", "PYTHON", "MV2", "UCX")
"""DeepSpeed's pdsh runner (deepspeed/launcher/multinode_runner.py, EXPORT_ENVS) copies the
launcher's variables with these prefixes into the command line it runs on every worker."""


def validate_manifest(data: Mapping[str, Any]) -> list[Problem]:
    """Every problem of one job manifest; an empty list when the manifest is valid.

    A legacy form (ColossalAIJob `launcher`/`worker`, `enable` for `enabled`) is checked as the
    SDK converts it, and its problems name the fields as the user wrote them."""
    moved = _legacy_paths(data)
    problems = _problems(data)
    if not moved:
        return problems
    return [Problem(_written_path(p.path, moved), p.message) for p in problems]


def _legacy_paths(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(path after conversion, path as written) for the legacy fields of `data`, most specific
    first."""
    spec = data.get("spec") if isinstance(data, Mapping) else None
    if not isinstance(spec, Mapping):
        return []
    out: list[tuple[str, str]] = []
    if data.get("kind") == "ColossalAIJob" and ({"launcher", "worker"} & spec.keys()):
        out += [
            ("spec.replicaSpecs[0].template.spec.containers[0]", "spec.launcher"),
            ("spec.replicaSpecs[0]", "spec.launcher"),
            ("spec.replicaSpecs[1].replicas", "spec.worker.replicas"),
            ("spec.replicaSpecs[1].template", "spec.worker.template"),
            ("spec.replicaSpecs[1]", "spec.worker"),
            ("spec.torchConfig.procPerWorker", "spec.worker.procPerWorker"),
            ("spec.torchConfig.script", "spec.worker.command"),
            ("spec.torchConfig.extraArgs", "spec.worker.torchArgs"),
            ("spec.torchConfig", "spec.worker"),
        ]
    for where, block in _enable_blocks(spec):
        if "enable" in block:
            out.append((f"spec.{where}.enabled", f"spec.{where}.enable"))
    return out


def _enable_blocks(spec: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(path under spec, block) of the blocks that may carry the legacy `enable`."""
    run_mode = spec.get("runMode")
    found = [
        (f"runMode.{mode}", run_mode.get(mode) if isinstance(run_mode, Mapping) else None)
        for mode in ("debug", "pause")
    ]
    found.append(("elastic", spec.get("elastic")))
    return [(where, block) for where, block in found if isinstance(block, Mapping)]


def _converted(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """`data` with its legacy fields moved where the SDK moves them, without checking anything
    else (for the schema check of a manifest the models refused)."""
    spec = data.get("spec")
    if not isinstance(spec, Mapping):
        return data
    new_spec: dict[str, Any] = dict(spec)
    if data.get("kind") == "ColossalAIJob" and ({"launcher", "worker"} & spec.keys()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LegacyManifestWarning)
            try:
                new_spec = dict(_legacy_colossalai(new_spec))
            except (InvalidManifestError, ValueError):
                return data
    for where, block in _enable_blocks(new_spec):
        if "enable" in block and "enabled" not in block:
            renamed = {("enabled" if k == "enable" else k): v for k, v in block.items()}
            if where.startswith("runMode."):
                mode = where.split(".", 1)[1]
                new_spec["runMode"] = {**new_spec["runMode"], mode: renamed}
            else:
                new_spec[where] = renamed
    return {**data, "spec": new_spec}


def _written_path(path: str, moved: list[tuple[str, str]]) -> str:
    for converted, written in moved:
        if path == converted or path.startswith((converted + ".", converted + "[")):
            return written + path[len(converted) :]
    return path


def _problems(data: Mapping[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    checked: Mapping[str, Any] = data
    try:
        # legacy spellings are converted (with a LegacyManifestWarning): check the result
        checked = codecs.to_manifest(codecs.from_manifest(data))
    except InvalidManifestError as exc:
        problems.extend(exc.problems)
        checked = _converted(data)
    kind = data.get("kind") if isinstance(data, Mapping) else None
    cls = _kinds.by_kind(kind).model if kind in _kinds.KIND_NAMES else None
    if cls is not None:
        known = {p.path for p in problems}
        for problem in _schema_problems(cls, checked):
            if problem.path not in known and not any(
                problem.path.startswith(k + ".") or problem.path.startswith(k + "[") for k in known
            ):
                problems.append(problem)
    return problems


@cache
def _schema(kind: str) -> dict[str, Any]:
    schema = crds.structural_schema(_kinds.by_kind(kind).model)
    meta = crds.core_definitions()["meta.ObjectMeta"]
    return {**schema, "properties": {**schema["properties"], "metadata": meta}}


def _schema_problems(cls: type[models.K8sModel], data: Mapping[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    _check(data, _schema(cls.__name__), "", problems)
    return problems


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _check(value: Any, schema: Mapping[str, Any], path: str, out: list[Problem]) -> None:
    ref = schema.get("$ref")
    if ref is not None:
        schema = {
            **crds.core_definitions()[ref],
            **{k: v for k, v in schema.items() if k != "$ref"},
        }
    if value is None:
        return  # absent; "required" is checked by the parent
    if schema.get("x-kubernetes-int-or-string"):
        if isinstance(value, bool) or not isinstance(value, int | str):
            out.append(Problem(path, f"expected an integer or a string; got {value!r}"))
        return
    expected = schema.get("type")
    if expected is not None:
        types = _TYPES.get(expected, ())
        if not isinstance(value, types) or (expected != "boolean" and isinstance(value, bool)):
            out.append(Problem(path, f"expected {_article(expected)}; got {_show(value)}"))
            return
    if isinstance(value, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return
        props: Mapping[str, Any] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for name in schema.get("required") or ():
            if name not in value:
                out.append(Problem(_join(path, name), "required field is missing"))
        for key, item in value.items():
            if key in props:
                _check(item, props[key], _join(path, key), out)
            elif isinstance(extra, Mapping):
                _check(item, extra, _join(path, key), out)
            elif props:
                close = difflib.get_close_matches(str(key), list(props), n=1, cutoff=0.6)
                hint = f"did you mean {close[0]!r}? " if close else ""
                message = f"unknown field {key!r}; {hint}allowed: {', '.join(props)}"
                out.append(Problem(_join(path, key), message))
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                _check(item, items, _join(path, i), out)
    elif "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(repr(v) for v in schema["enum"])
        out.append(Problem(path, f"must be one of {allowed}; got {value!r}"))


def _article(type_name: str) -> str:
    return {"object": "a mapping", "array": "a list", "integer": "an integer"}.get(
        type_name, f"a {type_name}"
    )


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def manifest_warnings(data: Mapping[str, Any]) -> list[Problem]:
    """What is valid but probably not meant, for `t9k-sdk validate` to warn about (an empty
    list for most jobs):

    * a DeepSpeedJob's Secret-sourced variables that DeepSpeed's pdsh runner writes into the
      command line of every worker, where any process there can read them (`ps`);
    * a GenericJob or ColossalAIJob replica with `restartPolicy.policy: Always` and no `limit`
      (0): it is never restarted, which is probably not what `Always` meant;
    * a GenericJob that uses `$(service...)` variables without `spec.service`: its pods get the
      text as written, not a host name or port;
    * a `T9K_*` variable of a kind that launches over SSH (DeepSpeedJob, ColossalAIJob): the
      operator sets these itself, and takes only `T9K_BARRIER_TIMEOUT` from the user (whole
      seconds, 1 to 86400);
    * what the API reference allows and T9k's manuals do not: `restartPolicy.policy: ExitCode`
      on a GenericJob or ColossalAIJob replica, a DeepSpeed `--launcher` other than pdsh;
    * a ColossalAIJob script argument with shell syntax (`--flag='two words'`), which reaches the
      script as written here and through a shell in T9k."""
    kind = data.get("kind")
    out = _t9k_env_warnings(data) if kind in _kinds.SSH_KINDS else []
    if kind == "ColossalAIJob":
        out += _shell_syntax_warnings(data)
    if kind in ("GenericJob", "ColossalAIJob"):
        return out + _replica_warnings(data)
    if kind != "DeepSpeedJob":
        return out
    return out + _launcher_warnings(data) + _secret_env_warnings(data)


_SHELL_SYNTAX = ("'", '"', "\\", "$", "`")


def _shell_syntax_warnings(data: Mapping[str, Any]) -> list[Problem]:
    """ColossalAIJob script arguments written for a shell: T9k's `colossalai run` joins them
    into one command line for the workers' shell, which removes quotes and expands `$`; this
    operator quotes each argument so that the script receives it as written."""
    torch = (data.get("spec") or {}).get("torchConfig")
    script = torch.get("script") if isinstance(torch, Mapping) else None
    if not isinstance(script, list):
        return []
    out: list[Problem] = []
    for i, arg in enumerate(script[1:], start=1):
        text = str(arg)
        if any(c in text for c in _SHELL_SYNTAX):
            unquoted = text.replace("'", "").replace('"', "")
            out.append(
                Problem(
                    f"spec.torchConfig.script[{i}]",
                    f"{text!r} has shell syntax (quotes, $, `, \\): the script receives it"
                    " exactly as written here, while T9k's colossalai run hands it to the"
                    " workers' shell, which would remove the quotes and expand $"
                    + (f"; for the same result write {unquoted!r}" if unquoted != text else ""),
                )
            )
    return out


def _launcher_warnings(data: Mapping[str, Any]) -> list[Problem]:
    """DeepSpeed launchers other than pdsh: T9k's DeepSpeedJob supports pdsh only."""
    config = (data.get("spec") or {}).get("config")
    args = config.get("otherArgs") if isinstance(config, Mapping) else None
    if not isinstance(args, list):
        return []
    out: list[Problem] = []
    for i, arg in enumerate(args):
        text = str(arg)
        if text.startswith("--launcher="):
            launcher: str | None = text.split("=", 1)[1]
        elif text == "--launcher":
            launcher = str(args[i + 1]) if i + 1 < len(args) else None
        else:
            continue
        if launcher is not None and launcher.lower() != "pdsh":
            out.append(
                Problem(
                    f"spec.config.otherArgs[{i}]",
                    f"--launcher {launcher}: T9k's DeepSpeedJob supports the pdsh launcher only;"
                    " the operator sets up ssh keys, a hostfile and sshd for pdsh, nothing for"
                    f" {launcher}, so the launch depends on what the image brings",
                )
            )
    return out


def _templates(data: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(path, pod template) of each replica of a job, as far as they are mappings."""
    spec = data.get("spec")
    if not isinstance(spec, Mapping):
        return []
    found: list[tuple[str, Any]] = []
    if data.get("kind") == "DeepSpeedJob":
        worker = spec.get("worker")
        if isinstance(worker, Mapping):
            found.append(("spec.worker.template", worker.get("template")))
    specs = spec.get("replicaSpecs")
    for i, r in enumerate(specs if isinstance(specs, list) else ()):
        if isinstance(r, Mapping):
            found.append((f"spec.replicaSpecs[{i}].template", r.get("template")))
    return [(path, t) for path, t in found if isinstance(t, Mapping)]


def _t9k_env_warnings(data: Mapping[str, Any]) -> list[Problem]:
    out: list[Problem] = []
    for path, template in _templates(data):
        spec = template.get("spec")
        containers = spec.get("containers") if isinstance(spec, Mapping) else None
        for i, c in enumerate(containers if isinstance(containers, list) else ()):
            env = c.get("env") if isinstance(c, Mapping) else None
            for j, e in enumerate(env if isinstance(env, list) else ()):
                name = e.get("name") if isinstance(e, Mapping) else None
                if not isinstance(name, str) or not name.startswith("T9K_"):
                    continue
                where = f"{path}.spec.containers[{i}].env[{j}]"
                if name != bootstrap.BARRIER_TIMEOUT_ENV:
                    out.append(
                        Problem(
                            where,
                            f"{name} is set by the operator in the launcher and worker"
                            " containers, which replaces this value; of the T9K_* variables,"
                            f" only {bootstrap.BARRIER_TIMEOUT_ENV} is taken from the job",
                        )
                    )
                elif not bootstrap.valid_barrier_timeout(e.get("value")):
                    out.append(
                        Problem(
                            f"{where}.value",
                            f"{name}={e.get('value')!r} is not whole seconds from 1 to"
                            f" {bootstrap.BARRIER_TIMEOUT_MAX} (a literal value, not"
                            " valueFrom): the launcher waits the default"
                            f" {bootstrap.BARRIER_TIMEOUT_SECONDS}s for its workers' DNS names"
                            " and sshd",
                        )
                    )
    return out


def _secret_env_warnings(data: Mapping[str, Any]) -> list[Problem]:
    worker = (data.get("spec") or {}).get("worker") or {}
    spec = ((worker.get("template") or {}).get("spec")) or {}
    out: list[Problem] = []
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    for i, c in enumerate(containers if isinstance(containers, list) else ()):
        if not isinstance(c, Mapping):
            continue
        path = f"spec.worker.template.spec.containers[{i}]"
        env = c.get("env")
        for j, e in enumerate(env if isinstance(env, list) else ()):
            name = str(e.get("name", "")) if isinstance(e, Mapping) else ""
            source = (e.get("valueFrom") or {}) if isinstance(e, Mapping) else {}
            if "secretKeyRef" in source and name.startswith(DEEPSPEED_EXPORTED_PREFIXES):
                out.append(
                    Problem(
                        f"{path}.env[{j}]",
                        f"{name} comes from a Secret, and DeepSpeed's pdsh runner copies"
                        f" {'/'.join(DEEPSPEED_EXPORTED_PREFIXES)}* variables into the command"
                        " line it starts on every worker, where other processes can read it"
                        " (ps); mount the Secret as a file, or give it a name without these"
                        " prefixes and set it in the training script",
                    )
                )
        env_from = c.get("envFrom")
        for j, e in enumerate(env_from if isinstance(env_from, list) else ()):
            if isinstance(e, Mapping) and "secretRef" in e:
                out.append(
                    Problem(
                        f"{path}.envFrom[{j}]",
                        "variables from a Secret whose names start with"
                        f" {'/'.join(DEEPSPEED_EXPORTED_PREFIXES)} are copied by DeepSpeed's"
                        " pdsh runner into the command line of every worker, where other"
                        " processes can read them (ps)",
                    )
                )
    return out


def _replica_warnings(data: Mapping[str, Any]) -> list[Problem]:
    spec = data.get("spec")
    if not isinstance(spec, Mapping):
        return []
    out: list[Problem] = []
    specs = spec.get("replicaSpecs")
    for i, r in enumerate(specs if isinstance(specs, list) else ()):
        if not isinstance(r, Mapping):
            continue
        policy = r.get("restartPolicy")
        policy = policy if isinstance(policy, Mapping) else {}
        if policy.get("policy") == "ExitCode":
            out.append(
                Problem(
                    f"spec.replicaSpecs[{i}].restartPolicy.policy",
                    "ExitCode is in the API reference but not among the policies T9k's manual"
                    f" lists for a {data.get('kind')} (Never, OnFailure, Always); this operator"
                    " applies the KubeDL rule: exit codes 1-127 are permanent, 128-255 (signals,"
                    " such as 137 for a kill) are retried"
                    + (
                        ", and ColossalAIJob replicas are never restarted at all"
                        if data.get("kind") == "ColossalAIJob"
                        else ""
                    ),
                )
            )
        if policy.get("policy") == "Always" and not policy.get("limit"):
            out.append(
                Problem(
                    f"spec.replicaSpecs[{i}].restartPolicy.limit",
                    "policy Always with limit 0 (the default) never restarts the replica:"
                    " the limit is how many restarts the replica type may use; set it (and"
                    " note that Always also restarts a replica that succeeded, so a job may"
                    " never finish by itself)",
                )
            )
        if data.get("kind") == "GenericJob" and spec.get("service") is None:
            text = json.dumps(r.get("template") or {})
            if "$(service." in text:
                out.append(
                    Problem(
                        f"spec.replicaSpecs[{i}].template",
                        "uses $(service...) variables, but the job has no spec.service: no"
                        " Service is created and the pods get the text as written; add"
                        " spec.service with the ports the variables name",
                    )
                )
    return out
