"""Render and parse throughput, t9k-sdk against kubeflow-training: typed job object -> YAML and
-> dict, and back (a YAML stream of many jobs -> typed objects, dicts -> typed objects).

    python bench/render.py [--seconds 0.1] [--repeat 10] [--sizes 4 64] [--jobs 100] [--json FILE]

Both sides describe the same job: a master and N-1 workers (a 4-replica and a 64-replica job),
each pod with one container of the same image, command, 6 env vars, a port, CPU/memory/GPU
requests and limits, and two volumes (a PVC and a memory-backed /dev/shm):

* t9k-sdk: a `GenericJob` with replica types `master` and `worker`, as (a) a prebuilt wire model
  serialized with `dump_all_yaml` / `to_manifest`, and (b) the builder constructed and rendered
  with `to_yaml()` / `to_dict()` (construction and validation included).
* kubeflow-training 1.9.4: a `KubeflowOrgV1PyTorchJob` with `Master` and `Worker` replica specs
  made of `kubernetes.client` models, serialized the way its users do:
  `ApiClient().sanitize_for_serialization(job)` then `yaml.safe_dump(...)` (PyYAML's default
  pure-Python emitter) or `yaml.dump(..., Dumper=yaml.CSafeDumper)` (libyaml), as (c) a prebuilt
  object, and (d) constructed and rendered.

The parse direction reads `--jobs` such jobs (distinct names) back:

* t9k-sdk: (e) a YAML stream of them with `load_all_yaml` (libyaml's parser under the SDK's own
  composer, which enforces the size, depth, alias and tag limits), and (f) their dicts with
  `from_manifest`, each to a validated wire model.
* kubeflow-training: what its `TrainingClient.list_jobs` does with each item the API returns,
  `ApiClient().deserialize(FakeResponse(item), "KubeflowOrgV1PyTorchJob")` (a JSON round trip,
  then the models built recursively), (g) after `yaml.safe_load_all` or `yaml.load_all(...,
  Loader=yaml.CSafeLoader)` of the stream, and (h) on the dicts alone.

Timing (time.perf_counter): the calls per run are calibrated so that one run of a case takes
about `--seconds`; then `--repeat` rounds run every case once, each t9k case right before the
kubeflow cases it is compared with (so about `seconds * repeat`, 1 s by default, per case).
Throughput is reported as jobs per second of the best and the median run; a speed-up is the
median over the rounds of the ratio of two back-to-back runs, which a busy machine disturbs
much less than it disturbs absolute figures. Before timing, the script checks that both sides
produce the same shape (replicas, containers, env vars, ports, mounts, volumes, resources),
that each YAML loads back to its dict and that each side's parse gives back every job it was
given; it stops if they do not. Parse figures are jobs per second too (a call parses `--jobs`).
"""

from __future__ import annotations

import sys

# Run as a script, this file's directory comes first on sys.path, where bench/operator.py would
# shadow the standard library's `operator` module (which argparse, collections, ... import).
if __name__ == "__main__" and sys.path and sys.path[0].rstrip("/").endswith("bench"):
    del sys.path[0]

import argparse
import importlib.metadata
import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pydantic
import yaml
from kubeflow.training import (
    ApiClient,
    KubeflowOrgV1PyTorchJob,
    KubeflowOrgV1PyTorchJobSpec,
    KubeflowOrgV1ReplicaSpec,
    KubeflowOrgV1RunPolicy,
)
from kubeflow.training.utils.utils import FakeResponse
from kubernetes import client as k8s

from t9k_sdk import (
    PVC,
    EmptyDir,
    GenericJob,
    Replica,
    Resources,
    dump_all_yaml,
    from_manifest,
    load_all_yaml,
    models,
    to_manifest,
)

TARGET = 10.0
"""t9k-sdk must render YAML at least this many times as fast as kubeflow's yaml.safe_dump path."""

# -- the job shape, shared by both sides ----------------------------------------------------

IMAGE = "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime"
ENV = {
    "NCCL_DEBUG": "INFO",
    "NCCL_IB_DISABLE": "0",
    "NCCL_SOCKET_IFNAME": "eth0",
    "OMP_NUM_THREADS": "4",
    "PYTHONUNBUFFERED": "1",
    "HF_HOME": "/workspace/.cache/huggingface",
}
CPU, MEMORY, GPUS = 16, "64Gi", 8
PORT_NAME, PORT = "pytorchjob-port", 23456
CLAIM, WORKSPACE = "bert-workspace", "/workspace"
SHM_NAME, SHM_SIZE = "dshm", "32Gi"
LABELS = {"team": "nlp", "project": "bert"}


def command(replicas: int) -> list[str]:
    return [
        "torchrun",
        f"--nnodes={replicas}",
        f"--nproc_per_node={GPUS}",
        "train.py",
        "--epochs=3",
        "--deepspeed_config=ds_config.json",
    ]


def t9k_builder(replicas: int) -> GenericJob:
    """The t9k-sdk builder of the job."""

    def replica(role: str, count: int) -> Replica:
        return Replica(
            type=role,
            count=count,
            container_name="pytorch",
            image=IMAGE,
            command=command(replicas),
            env=ENV,
            ports={PORT_NAME: PORT},
            resources=Resources(cpu=CPU, memory=MEMORY, gpus=GPUS),
            volumes=[
                PVC(claim=CLAIM, mount_path=WORKSPACE),
                EmptyDir(
                    name=SHM_NAME, mount_path="/dev/shm", medium="Memory", size_limit=SHM_SIZE
                ),
            ],
            restart_policy=models.RestartPolicyType.ON_FAILURE,
        )

    return GenericJob(
        name="bert",
        namespace="default",
        labels=LABELS,
        replicas=[replica("master", 1), replica("worker", replicas - 1)],
        clean_up_policy=models.CleanUpPolicy.NONE,
    )


def kubeflow_job(replicas: int) -> Any:
    """The kubeflow-training PyTorchJob of the job (kubernetes.client models inside)."""

    def template() -> Any:
        resources = {"cpu": CPU, "memory": MEMORY, "nvidia.com/gpu": GPUS}
        container = k8s.V1Container(
            name="pytorch",
            image=IMAGE,
            command=command(replicas),
            env=[k8s.V1EnvVar(name=n, value=v) for n, v in ENV.items()],
            ports=[k8s.V1ContainerPort(name=PORT_NAME, container_port=PORT)],
            resources=k8s.V1ResourceRequirements(requests=dict(resources), limits=dict(resources)),
            volume_mounts=[
                k8s.V1VolumeMount(name=CLAIM, mount_path=WORKSPACE),
                k8s.V1VolumeMount(name=SHM_NAME, mount_path="/dev/shm"),
            ],
        )
        volumes = [
            k8s.V1Volume(
                name=CLAIM,
                persistent_volume_claim=k8s.V1PersistentVolumeClaimVolumeSource(claim_name=CLAIM),
            ),
            k8s.V1Volume(
                name=SHM_NAME,
                empty_dir=k8s.V1EmptyDirVolumeSource(medium="Memory", size_limit=SHM_SIZE),
            ),
        ]
        return k8s.V1PodTemplateSpec(spec=k8s.V1PodSpec(containers=[container], volumes=volumes))

    def replica(count: int) -> Any:
        return KubeflowOrgV1ReplicaSpec(
            replicas=count, restart_policy="OnFailure", template=template()
        )

    return KubeflowOrgV1PyTorchJob(
        api_version="kubeflow.org/v1",
        kind="PyTorchJob",
        metadata=k8s.V1ObjectMeta(name="bert", namespace="default", labels=dict(LABELS)),
        spec=KubeflowOrgV1PyTorchJobSpec(
            run_policy=KubeflowOrgV1RunPolicy(clean_pod_policy="None"),
            pytorch_replica_specs={"Master": replica(1), "Worker": replica(replicas - 1)},
        ),
    )


# -- fairness checks ----------------------------------------------------------------------


def shape(manifest: Mapping[str, Any]) -> dict[str, int]:
    """What a manifest describes, counted: the two sides must agree on every number."""
    spec = manifest["spec"]
    specs = spec.get("replicaSpecs") or list((spec.get("pytorchReplicaSpecs") or {}).values())
    counts = dict.fromkeys(
        (
            "replica_specs",
            "replicas",
            "containers",
            "env_vars",
            "ports",
            "volume_mounts",
            "volumes",
            "resource_entries",
            "command_args",
        ),
        0,
    )
    counts["replica_specs"] = len(specs)
    for replica_spec in specs:
        counts["replicas"] += replica_spec["replicas"]
        pod = replica_spec["template"]["spec"]
        counts["volumes"] += len(pod.get("volumes", []))
        for container in pod["containers"]:
            counts["containers"] += 1
            counts["env_vars"] += len(container.get("env", []))
            counts["ports"] += len(container.get("ports", []))
            counts["volume_mounts"] += len(container.get("volumeMounts", []))
            counts["command_args"] += len(container.get("command", []))
            resources = container.get("resources", {})
            counts["resource_entries"] += sum(len(v) for v in resources.values())
    return counts


KUBEFLOW_MODEL = "KubeflowOrgV1PyTorchJob"


def numbered(manifest: Mapping[str, Any], count: int) -> list[dict[str, Any]]:
    """`count` copies of a job manifest named bert-0, bert-1, ... as the API server returns
    them: deep copies (no YAML anchors, no shared objects), resource quantities as strings."""
    out = []
    for n in range(count):
        copy = json.loads(json.dumps(manifest))
        copy["metadata"]["name"] = f"bert-{n}"
        spec = copy["spec"]
        for replica_spec in (
            spec.get("replicaSpecs") or (spec.get("pytorchReplicaSpecs") or {}).values()
        ):
            for container in replica_spec["template"]["spec"]["containers"]:
                for amounts in (container.get("resources") or {}).values():
                    amounts.update((k, str(v)) for k, v in amounts.items())
        out.append(copy)
    return out


@dataclass(frozen=True)
class ParseInput:
    """What the parse cases read, for one job size."""

    t9k_dicts: list[dict[str, Any]]
    t9k_yaml: str
    kubeflow_dicts: list[dict[str, Any]]
    kubeflow_yaml: str


def parse_input(replicas: int, jobs: int, api: Any) -> ParseInput:
    ours = numbered(t9k_builder(replicas).to_dict(), jobs)
    theirs = numbered(api.sanitize_for_serialization(kubeflow_job(replicas)), jobs)
    return ParseInput(
        t9k_dicts=ours,
        t9k_yaml=dump_all_yaml([from_manifest(d) for d in ours]),
        kubeflow_dicts=theirs,
        kubeflow_yaml=yaml.dump_all(theirs, Dumper=yaml.CSafeDumper),
    )


def kubeflow_deserialize(api: Any, items: Sequence[Mapping[str, Any]]) -> list[Any]:
    """As `TrainingClient.list_jobs` turns the items of a list into PyTorchJob objects."""
    return [api.deserialize(FakeResponse(item), KUBEFLOW_MODEL) for item in items]


def check_parse_fair(data: ParseInput, api: Any) -> dict[str, Any]:
    """Stop unless each side's parse gives back every job it was given, of the same shape."""
    ours = [to_manifest(job) for job in load_all_yaml(data.t9k_yaml)]
    if ours != data.t9k_dicts or [to_manifest(from_manifest(d)) for d in data.t9k_dicts] != ours:
        sys.exit("t9k load_all_yaml / from_manifest do not give back the jobs")
    for loader in (yaml.SafeLoader, yaml.CSafeLoader):
        docs = list(yaml.load_all(data.kubeflow_yaml, Loader=loader))
        if docs != data.kubeflow_dicts:
            sys.exit(f"kubeflow YAML stream does not load back with {loader.__name__}")
    theirs = [api.sanitize_for_serialization(j) for j in kubeflow_deserialize(api, docs)]
    if theirs != data.kubeflow_dicts:
        sys.exit("kubeflow deserialize does not give back the jobs")
    if {json.dumps(shape(d)) for d in ours} != {json.dumps(shape(d)) for d in theirs}:
        sys.exit("unfair parse comparison: the two sides' jobs differ in shape")
    return {
        "jobs": len(ours),
        "yaml_bytes": {
            "t9k": len(data.t9k_yaml.encode()),
            "kubeflow": len(data.kubeflow_yaml.encode()),
        },
    }


def check_fair(replicas: int, api: Any) -> dict[str, Any]:
    """Stop unless both sides produce the same shape and their YAML loads back to their dict."""
    ours = t9k_builder(replicas).to_dict()
    theirs = api.sanitize_for_serialization(kubeflow_job(replicas))
    ours_shape, theirs_shape = shape(ours), shape(theirs)
    if ours_shape != theirs_shape:
        sys.exit(
            f"unfair comparison at {replicas} replicas: t9k {ours_shape} != kubeflow {theirs_shape}"
        )
    if ours_shape["replicas"] != replicas:
        sys.exit(f"the t9k job has {ours_shape['replicas']} replicas, not {replicas}")
    ours_yaml = t9k_builder(replicas).to_yaml()
    theirs_yaml = yaml.safe_dump(theirs)
    if to_manifest(load_all_yaml(ours_yaml)[0]) != ours:
        sys.exit("t9k YAML does not load back to its manifest")
    if yaml.safe_load(theirs_yaml) != theirs or yaml.dump(theirs, Dumper=yaml.CSafeDumper) != (
        theirs_yaml
    ):
        sys.exit("kubeflow YAML (safe_dump / CSafeDumper) does not load back to its dict")
    return {
        "shape": ours_shape,
        "yaml_bytes": {"t9k": len(ours_yaml.encode()), "kubeflow": len(theirs_yaml.encode())},
    }


# -- timing -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """The runs of one case at one size."""

    case: str
    replicas: int
    iterations: int
    """Calls per run."""
    rates: tuple[float, ...]
    """Jobs per second of each run (wall clock, time.perf_counter), in round order."""
    cpu_shares: tuple[float, ...]
    """CPU time / wall time of each run: below ~0.9 the machine was busy with other work."""
    jobs_per_call: int = 1
    """Jobs one call renders or parses (a parse case reads a stream of `--jobs`)."""

    @property
    def best(self) -> float:
        return max(self.rates)

    @property
    def median(self) -> float:
        return statistics.median(self.rates)


def _run(fn: Callable[[], object], iterations: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of `iterations` calls."""
    cpu, start = time.process_time(), time.perf_counter()
    for _ in range(iterations):
        fn()
    return time.perf_counter() - start, time.process_time() - cpu


def calibrate(fn: Callable[[], object], seconds: float) -> int:
    """Calls for one run of about `seconds` (after a warm-up call)."""
    fn()  # warm up caches (pydantic validators, kubernetes Configuration)
    iterations, (elapsed, _) = 1, _run(fn, 1)
    while elapsed < seconds / 10:
        iterations *= 10 if elapsed < seconds / 100 else 2
        elapsed, _ = _run(fn, iterations)
    return max(1, round(iterations * seconds / elapsed))


def measure(
    suite: Mapping[tuple[str, int], Callable[[], object]],
    order: Sequence[tuple[str, int]],
    seconds: float,
    rounds: int,
    jobs_per_call: Mapping[tuple[str, int], int] | None = None,
) -> dict[tuple[str, int], Result]:
    """Time every case `rounds` times, round after round over all cases in `order`.

    Interleaving spreads a change of load on a shared machine over every case, and puts each
    t9k case right before the kubeflow cases it is compared with, so that the two runs of a
    pair see the same conditions.
    """
    iterations = {key: calibrate(suite[key], seconds) for key in order}
    runs: dict[tuple[str, int], list[tuple[float, float]]] = {key: [] for key in order}
    for i in range(rounds):
        for key in order:
            runs[key].append(_run(suite[key], iterations[key]))
        print(f"  round {i + 1}/{rounds} done", file=sys.stderr)
    weight = jobs_per_call or {}
    return {
        key: Result(
            case=key[0],
            replicas=key[1],
            iterations=iterations[key],
            rates=tuple(iterations[key] * weight.get(key, 1) / wall for wall, _ in timings),
            cpu_shares=tuple(cpu / wall for wall, cpu in timings),
            jobs_per_call=weight.get(key, 1),
        )
        for key, timings in runs.items()
    }


CASES = (
    "t9k wire model -> YAML (dump_all_yaml)",
    "t9k wire model -> dict (to_manifest)",
    "t9k builder -> YAML (construct + to_yaml)",
    "t9k builder -> dict (construct + to_dict)",
    "kubeflow object -> YAML (sanitize + yaml.safe_dump)",
    "kubeflow object -> YAML (sanitize + CSafeDumper)",
    "kubeflow object -> dict (sanitize_for_serialization)",
    "kubeflow construct -> YAML (+ yaml.safe_dump)",
    "kubeflow construct -> YAML (+ CSafeDumper)",
    "kubeflow construct -> dict (+ sanitize)",
    # the parse direction: each call reads `--jobs` jobs
    "t9k YAML stream -> models (load_all_yaml)",
    "t9k dicts -> models (from_manifest)",
    "kubeflow YAML stream -> objects (safe_load_all + deserialize)",
    "kubeflow YAML stream -> objects (CSafeLoader + deserialize)",
    "kubeflow dicts -> objects (deserialize)",
)
PARSE_CASES = CASES[10:]


def cases(replicas: int, api: Any, parse: ParseInput) -> dict[str, Callable[[], object]]:
    """Each case of `CASES` as a call, for a job of `replicas` replicas."""
    model = t9k_builder(replicas).build()
    job = kubeflow_job(replicas)
    sanitize = api.sanitize_for_serialization
    calls: list[Callable[[], object]] = [
        lambda: dump_all_yaml([model]),
        lambda: to_manifest(model),
        lambda: t9k_builder(replicas).to_yaml(),
        lambda: t9k_builder(replicas).to_dict(),
        lambda: yaml.safe_dump(sanitize(job)),
        lambda: yaml.dump(sanitize(job), Dumper=yaml.CSafeDumper),
        lambda: sanitize(job),
        lambda: yaml.safe_dump(sanitize(kubeflow_job(replicas))),
        lambda: yaml.dump(sanitize(kubeflow_job(replicas)), Dumper=yaml.CSafeDumper),
        lambda: sanitize(kubeflow_job(replicas)),
        lambda: load_all_yaml(parse.t9k_yaml),
        lambda: [from_manifest(d) for d in parse.t9k_dicts],
        lambda: kubeflow_deserialize(api, list(yaml.safe_load_all(parse.kubeflow_yaml))),
        lambda: kubeflow_deserialize(
            api, list(yaml.load_all(parse.kubeflow_yaml, Loader=yaml.CSafeLoader))
        ),
        lambda: kubeflow_deserialize(api, parse.kubeflow_dicts),
    ]
    return dict(zip(CASES, calls, strict=True))


TARGET_RATIO = "YAML, prebuilt object: t9k vs kubeflow yaml.safe_dump (the target)"
RATIOS = {
    TARGET_RATIO: (CASES[0], CASES[4]),
    "YAML, prebuilt object: t9k vs kubeflow CSafeDumper": (CASES[0], CASES[5]),
    "YAML, construct + render: t9k builder vs kubeflow yaml.safe_dump": (CASES[2], CASES[7]),
    "YAML, construct + render: t9k builder vs kubeflow CSafeDumper": (CASES[2], CASES[8]),
    "dict, prebuilt object: t9k to_manifest vs kubeflow sanitize": (CASES[1], CASES[6]),
    "dict, construct + render: t9k builder vs kubeflow": (CASES[3], CASES[9]),
    "parse YAML stream: t9k load_all_yaml vs kubeflow safe_load_all": (CASES[10], CASES[12]),
    "parse YAML stream: t9k load_all_yaml vs kubeflow CSafeLoader": (CASES[10], CASES[13]),
    "parse dicts: t9k from_manifest vs kubeflow deserialize": (CASES[11], CASES[14]),
}
# Each t9k case runs right before the kubeflow cases it is compared with.
RUN_ORDER = tuple(CASES[i] for i in (0, 4, 5, 1, 6, 2, 7, 8, 3, 9, 10, 12, 13, 11, 14))


@dataclass(frozen=True)
class Speedup:
    """t9k / kubeflow throughput of back-to-back runs, one ratio per round."""

    ratios: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.ratios)

    @property
    def quartiles(self) -> tuple[float, float]:
        if len(self.ratios) < 2:
            return self.ratios[0], self.ratios[0]
        q1, _, q3 = statistics.quantiles(self.ratios, n=4, method="inclusive")
        return q1, q3


def speedups(
    results: Mapping[tuple[str, int], Result], sizes: Sequence[int]
) -> dict[str, dict[int, Speedup]]:
    return {
        name: {
            n: Speedup(
                tuple(
                    a / b
                    for a, b in zip(
                        results[(ours, n)].rates, results[(theirs, n)].rates, strict=True
                    )
                )
            )
            for n in sizes
        }
        for name, (ours, theirs) in RATIOS.items()
    }


# -- report -------------------------------------------------------------------------------


def environment() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "pydantic": pydantic.VERSION,
        "pyyaml": yaml.__version__,
        "libyaml": bool(getattr(yaml, "__with_libyaml__", False)),
        "kubeflow-training": importlib.metadata.version("kubeflow-training"),
        "kubernetes": importlib.metadata.version("kubernetes"),
        "t9k-sdk": importlib.metadata.version("t9k-sdk"),
    }


def _columns(sizes: Sequence[int], width: int) -> str:
    return "".join(f"{f'{n} replicas':>{width}}" for n in sizes)


def report(
    results: Mapping[tuple[str, int], Result],
    ups: Mapping[str, Mapping[int, Speedup]],
    sizes: Sequence[int],
) -> str:
    """The tables: throughput (best and median run) and speed-ups (median and quartiles)."""
    width = max(len(c) for c in CASES) + 2
    lines = [f"{'jobs per second: best run (median)':<{width}}{_columns(sizes, 22)}"]
    for case in CASES:
        rates = [
            f"{results[(case, n)].best:,.0f} ({results[(case, n)].median:,.0f})" for n in sizes
        ]
        lines.append(f"{case:<{width}}" + "".join(f"{c:>22}" for c in rates))
    width = max(len(name) for name in ups) + 2
    lines += ["", f"{'speed-up, t9k / kubeflow: median (quartiles)':<{width}}{_columns(sizes, 22)}"]
    for name, row in ups.items():
        cells: list[str] = []
        for n in sizes:
            q1, q3 = row[n].quartiles
            cells.append(f"{row[n].median:.1f}x ({q1:.1f}-{q3:.1f})")
        lines.append(f"{name:<{width}}" + "".join(f"{c:>22}" for c in cells))
    return "\n".join(lines)


DOC_CASES = {
    CASES[0]: "t9k wire model → YAML (`dump_all_yaml`)",
    CASES[1]: "t9k wire model → dict (`to_manifest`)",
    CASES[2]: "t9k builder → YAML (construct + `to_yaml()`)",
    CASES[3]: "t9k builder → dict (construct + `to_dict()`)",
    CASES[4]: "kubeflow object → YAML (`sanitize_for_serialization` + `yaml.safe_dump`)",
    CASES[5]: "kubeflow object → YAML (`sanitize_for_serialization` + `CSafeDumper`)",
    CASES[6]: "kubeflow object → dict (`sanitize_for_serialization`)",
    CASES[7]: "kubeflow construct → YAML (+ `yaml.safe_dump`)",
    CASES[8]: "kubeflow construct → YAML (+ `CSafeDumper`)",
    CASES[9]: "kubeflow construct → dict (+ `sanitize_for_serialization`)",
    CASES[10]: "t9k YAML stream → models (`load_all_yaml`)",
    CASES[11]: "t9k dicts → models (`from_manifest`)",
    CASES[12]: "kubeflow YAML stream → objects (`yaml.safe_load_all` + `deserialize`)",
    CASES[13]: "kubeflow YAML stream → objects (`CSafeLoader` + `deserialize`)",
    CASES[14]: "kubeflow dicts → objects (`deserialize`)",
}
DOC_RATIOS = dict(
    zip(
        RATIOS,
        (
            "**YAML, prebuilt object, vs `yaml.safe_dump` (the target)**",
            "YAML, prebuilt object, vs `CSafeDumper`",
            "YAML, construct + render, vs `yaml.safe_dump`",
            "YAML, construct + render, vs `CSafeDumper`",
            "dict, prebuilt object",
            "dict, construct + render",
            "parse a YAML stream, vs `yaml.safe_load_all` + `deserialize`",
            "parse a YAML stream, vs `CSafeLoader` + `deserialize`",
            "parse dicts, `from_manifest` vs `deserialize`",
        ),
        strict=True,
    )
)


def markdown(data: Mapping[str, Any]) -> str:
    """The tables of docs/performance.md from a `--json` result."""
    sizes = [int(n) for n in data["settings"]["sizes"]]
    head = "| Case | " + " | ".join(f"{n} replicas" for n in sizes) + " |"
    rule = "| --- |" + " ---: |" * len(sizes)
    by_key = {(r["case"], int(r["replicas"])): r for r in data["results"]}
    lines = [head, rule]
    for case in CASES:
        cells = [
            f"{by_key[(case, n)]['best']:,.0f} ({by_key[(case, n)]['median']:,.0f})" for n in sizes
        ]
        lines.append(f"| {DOC_CASES[case]} | " + " | ".join(cells) + " |")
    lines += ["", head.replace("| Case |", "| Comparison |"), rule]
    for name, label in DOC_RATIOS.items():
        cells = []
        for n in sizes:
            s = data["speedups"][name][str(n)]
            q1, q3 = s["quartiles"]
            cell = f"{s['median']:.1f}x ({q1:.1f}-{q3:.1f})"
            cells.append(
                f"**{cell.split(' ')[0]}** {cell.split(' ')[1]}" if "**" in label else cell
            )
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--seconds", type=float, default=0.1, help="time per run of a case (default 0.1)"
    )
    parser.add_argument("--repeat", type=int, default=10, help="rounds: runs per case (default 10)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 64], help="replicas (4 64)")
    parser.add_argument(
        "--jobs", type=int, default=100, help="jobs per stream in the parse cases (default 100)"
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the results here")
    parser.add_argument(
        "--markdown",
        type=Path,
        metavar="FILE",
        help="measure nothing: print the tables of docs/performance.md from a --json result",
    )
    args = parser.parse_args(argv)
    if args.markdown is not None:
        print(markdown(json.loads(args.markdown.read_text(encoding="utf-8"))))
        return 0
    if args.jobs < 1:
        parser.error("--jobs: at least 1")
    if any(n < 2 for n in args.sizes):
        parser.error("--sizes: a job has a master and at least one worker (2 or more replicas)")

    api = ApiClient()  # made once, as a user would; its thread pool is never started
    env = environment()
    print(
        f"t9k-sdk {env['t9k-sdk']} vs kubeflow-training {env['kubeflow-training']}"
        f" (kubernetes {env['kubernetes']}); Python {env['python']}, pydantic {env['pydantic']},"
        f" PyYAML {env['pyyaml']} (libyaml: {'yes' if env['libyaml'] else 'no'}),"
        f" {env['cpus']} CPUs"
    )
    fairness = {}
    parse = {}
    for n in args.sizes:
        fairness[n] = check_fair(n, api)
        f = fairness[n]
        print(
            f"shape check, {n} replicas: same on both sides {f['shape']};"
            f" YAML bytes t9k {f['yaml_bytes']['t9k']}, kubeflow {f['yaml_bytes']['kubeflow']}"
        )
        parse[n] = parse_input(n, args.jobs, api)
        f["parse"] = p = check_parse_fair(parse[n], api)
        print(
            f"parse check, {n} replicas: {p['jobs']} jobs read back on both sides;"
            f" stream bytes t9k {p['yaml_bytes']['t9k']}, kubeflow {p['yaml_bytes']['kubeflow']}"
        )
    print(
        f"{args.repeat} rounds; in each, every case runs for ~{args.seconds:g} s, each t9k case"
        " right before the kubeflow cases it is compared with\n"
    )

    suite = {(case, n): fn for n in args.sizes for case, fn in cases(n, api, parse[n]).items()}
    order = [(case, n) for n in args.sizes for case in RUN_ORDER]
    weights = {(case, n): args.jobs for n in args.sizes for case in PARSE_CASES}
    results = measure(suite, order, args.seconds, args.repeat, weights)
    ups = speedups(results, args.sizes)
    print(report(results, ups, args.sizes))

    worst = min(s.median for s in ups[TARGET_RATIO].values())
    verdict = "met" if worst >= TARGET else "MISSED"
    print(
        f"\ntarget: t9k YAML >= {TARGET:g}x kubeflow's yaml.safe_dump path: {verdict}"
        f" (worst median {worst:.1f}x)"
    )
    shares = [share for r in results.values() for share in r.cpu_shares]
    cpu_share = statistics.median(shares)
    if cpu_share < 0.9:
        print(
            f"warning: the runs got {cpu_share:.0%} of a CPU (median): the machine was busy, so"
            " the throughput figures are low and noisy; the speed-ups, measured back to back,"
            " suffer less. Rerun on a quiet machine (or under `nice -n -10`)."
        )

    if args.json is not None:
        data = {
            "environment": env,
            "settings": {
                "seconds": args.seconds,
                "rounds": args.repeat,
                "sizes": args.sizes,
                "jobs": args.jobs,
            },
            "fairness": {str(n): f for n, f in fairness.items()},
            "median_cpu_share": cpu_share,
            "results": [
                {**asdict(r), "best": r.best, "median": r.median}
                for r in (results[(case, n)] for n in args.sizes for case in CASES)
            ],
            "speedups": {
                name: {
                    str(n): {"median": s.median, "quartiles": s.quartiles, "ratios": s.ratios}
                    for n, s in row.items()
                }
                for name, row in ups.items()
            },
            "target": {"ratio": TARGET, "case": TARGET_RATIO, "worst_median": worst},
        }
        args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
