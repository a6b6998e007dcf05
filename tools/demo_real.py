"""`make demo`: real training on the local cluster's real node, run by the real operator.

    python tools/demo.py               # this (inside .venv; `make demo`)
    python tools/demo.py --simulated   # the fast demo of examples/ on kwok's simulated pods

1. build the real node's images (tools/images.py; the first run only, with its progress);
2. start the local cluster with its real node (`tools/cluster.py up`; reused when it runs);
3. install the operator in the cluster, as users do (`t9k-sdk install --namespace t9k-system
   --watch-namespace t9k-demo | kubectl apply --server-side -f -`): its own image, built by
   `make operator-image`, runs as a pod on the real node (reused by the next run);
4. apply the jobs and stream the logs of the two training jobs, every rank's lines prefixed,
   while their loss falls; then show every job live until those that can finish have;
5. print a summary and how to explore what is left running.

The training scripts are training/*.py, mounted from a ConfigMap; the jobs are built
with the SDK's builders, placed on the real node, and applied and followed with
`t9k_sdk.client.Client`, as a user's program would.
"""

from __future__ import annotations

import queue
import re
import subprocess
import threading
import time
import warnings
from collections.abc import Sequence
from typing import Any, Final

from t9k_sdk import DeepSpeedJob, TorchrunJob, codecs, install, models
from t9k_sdk.client import Client
from t9k_sdk.client.logs import LogLine
from t9k_sdk.reconcile.kinds import rules_for
from tools import cluster as cluster_tool
from tools import demo
from tools import images as image_tool

TRAINING: Final = demo.REPO_ROOT / "training"
SCRIPTS: Final = "training-scripts"
WORKSPACE: Final = "/workspace"
STREAMED: Final = ("torchrun-ddp", "deepspeed-zero")
"""The training jobs whose logs the demo streams."""
# sshd's and pdsh's bookkeeping in the DeepSpeed launcher's log: not what a user watches
NOISE: Final = re.compile(
    r"Accepted publickey|Received disconnect|Disconnected from user|Server listening"
    r"|Connection from|Accepted key|Postponed publickey|Starting session|Close session"
    r"|launch\.py:\d+:main\]|runner\.py:\d+:main\]|multinode_runner"
)


def _placed(manifest: dict[str, Any], train_image: str) -> dict[str, Any]:
    """Every pod template on the real node, with the scripts mounted at /workspace."""
    spec = manifest["spec"]
    templates = [rs["template"] for rs in spec.get("replicaSpecs") or []]
    if "worker" in spec and "template" in spec["worker"]:
        templates.append(spec["worker"]["template"])
    for tpl in templates:
        pod = tpl.setdefault("spec", {})
        pod["nodeSelector"] = {
            cluster_tool.realnode.NODE_LABEL[0]: cluster_tool.realnode.NODE_LABEL[1]
        }
        pod["tolerations"] = [
            {"key": cluster_tool.realnode.TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
        ]
        pod["terminationGracePeriodSeconds"] = 5
        pod.setdefault("volumes", []).append({"name": SCRIPTS, "configMap": {"name": SCRIPTS}})
        for c in pod["containers"]:
            c["image"] = c.get("image") or train_image
            c["imagePullPolicy"] = "Never"
            c["workingDir"] = WORKSPACE
            c.setdefault("env", []).append({"name": "OMP_NUM_THREADS", "value": "1"})
            c.setdefault("volumeMounts", []).append({"name": SCRIPTS, "mountPath": WORKSPACE})
    return manifest


def _generic(name: str, replicas: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": models.API_VERSION,
        "kind": "GenericJob",
        "metadata": {"name": name},
        "spec": {**spec, "replicaSpecs": replicas},
    }


def _shell(type_: str, script: str, image: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": type_,
        "replicas": 1,
        "template": {
            "spec": {
                "containers": [{"name": "worker", "image": image, "command": ["sh", "-c", script]}]
            }
        },
        **extra,
    }


# A training process killed by SIGKILL, as the OOM killer does: its shell exits 137.
KILLED: Final = (
    "echo 'allocating...'; python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGKILL)';"
    " exit $?"
)


def _job(manifest: dict[str, Any], image: str, **fields: Any) -> demo.DemoJob:
    placed = _placed(manifest, image)
    placed["metadata"]["namespace"] = demo.NAMESPACE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = codecs.from_manifest(placed)
    return demo.DemoJob(placed, total=len(rules_for(model).slots()), **fields)


def demo_jobs(train: str, base: str) -> list[demo.DemoJob]:
    torchrun = TorchrunJob(
        name="torchrun-ddp",
        image=train,
        workers=2,
        nproc_per_node=2,
        run=["torchrun_train.py", "--steps=60"],
        # a rendezvous that breaks on a loaded machine fails the workers; they meet again
        restart_limit=3,
    ).to_dict()
    deepspeed = DeepSpeedJob(
        name="deepspeed-zero",
        image=train,
        workers=2,
        slots_per_worker=2,
        run=["deepspeed_train.py", "--steps=40", "--zero-stage=1"],
    ).to_dict()
    debug = DeepSpeedJob(name="deepspeed-debug", image=train, workers=2, debug=True).to_dict()
    fails = _generic(
        "exits-1",
        [
            _shell(
                "worker",
                "echo 'reading the data set...'; echo 'no data found' >&2; exit 1",
                base,
                restartPolicy={"policy": "ExitCode", "limit": 3},
            )
        ],
    )
    killed = _generic(
        "oom-killed",
        [
            _shell(
                "worker",
                KILLED,
                base,
                restartPolicy={"policy": "ExitCode", "limit": 2},
            )
        ],
    )
    paused = _generic(
        "paused",
        [_shell("worker", "echo 'this command is replaced on resume'; sleep 3600", base)],
        runMode={
            "pause": {
                "enabled": True,
                "resumeSpecs": [
                    {"type": "worker", "command": ["sh", "-c", "echo resumed with resumeSpecs"]}
                ],
            }
        },
    )
    return [
        _job(torchrun, train, note="torchrun, 2 pods x 2 processes, gloo"),
        _job(deepspeed, train, note="deepspeed over pdsh/ssh, 2 workers x 2 slots, ZeRO stage 1"),
        _job(fails, base, note="exits 1: a permanent error under ExitCode, not restarted"),
        _job(killed, base, note="SIGKILLed (exit 137): restarted twice under ExitCode"),
        _job(paused, base, note="created paused; the demo resumes it", resume=True),
        _job(
            debug,
            train,
            awaited=False,
            note="debug mode: the workers serve sshd; start deepspeed by hand (below)",
        ),
    ]


def build_images(out: demo.Out) -> tuple[str, str, bool]:
    """The training and base images' names, and whether the operator's image was rebuilt
    (the sources changed since the last run: its pod is restarted on the new one)."""
    missing = [n for n in image_tool.ORDER if not image_tool.IMAGES[n].built()]
    if missing:
        out.line(
            f"  building {', '.join(missing)} (the first run only: about 5 to 15 minutes, most"
            " of it downloading torch's 3 GB of wheels; later runs reuse the images)"
        )
    image_tool.build(list(image_tool.ORDER), say=lambda msg: out.line(f"    {msg}"))
    for name in image_tool.ORDER:
        image = image_tool.IMAGES[name]
        out.line(f"  {name:<8} {image.ref}")
    out.line(f"  {'':<8} (the operator's is also named {image_tool.release_ref()}, as released)")
    train, base = image_tool.IMAGES["train"].ref, image_tool.IMAGES["base"].ref
    return train, base, "operator" in missing


OPERATOR_NAMESPACE: Final = "t9k-system"
# The demo's cluster keeps its real node for pods that ask for it (a taint); these annotations
# of the operator's namespace ask for it on the operator's behalf (the API server's
# PodNodeSelector and PodTolerationRestriction plugins), so the install is applied unmodified.
# A cluster of your own needs neither.
PLACEMENT: Final = {
    "scheduler.alpha.kubernetes.io/node-selector": "=".join(cluster_tool.realnode.NODE_LABEL),
    "scheduler.alpha.kubernetes.io/defaultTolerations": (
        f'[{{"key":"{cluster_tool.realnode.TAINT_KEY}","operator":"Exists","effect":"NoSchedule"}}]'
    ),
}


def _kubectl(*args: str, stdin: str | None = None, timeout: float = 120) -> str:
    kubectl = cluster_tool.binary_dir(build=False) / "kubectl"
    proc = subprocess.run(
        [str(kubectl), "--kubeconfig", str(cluster_tool.KUBECONFIG), *args],
        input=stdin, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise demo.DemoError(f"kubectl {' '.join(args[:3])} failed:\n{proc.stderr.strip()}")
    return proc.stdout


def install_operator(out: demo.Out, kube: demo.DemoCluster, restart: bool) -> None:
    """The operator as users run it: its image in the cluster, installed by `t9k-sdk install`."""
    if demo.running_operator() is not None:  # a host operator an older `make demo` started
        out.line("  stopping the host operator an older make demo started")
        demo.stop_operator()
    body = {"metadata": {"name": OPERATOR_NAMESPACE, "annotations": PLACEMENT}}
    try:
        kube.raw.request("POST", "/api/v1/namespaces", body=body, what="create t9k-system")
    except demo.ApiError as err:
        if not err.already_exists:
            raise
    command = (
        f"t9k-sdk install --namespace {OPERATOR_NAMESPACE} --watch-namespace {demo.NAMESPACE}"
        " | kubectl apply --server-side -f -"
    )
    out.line(f"  {command}")
    printed = subprocess.run(
        [str(demo.BIN / "t9k-sdk"), "install", "--namespace", OPERATOR_NAMESPACE,
         "--watch-namespace", demo.NAMESPACE],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    out.line(f"  {printed.stderr.strip()}")
    _kubectl("apply", "--server-side", "-f", "-", stdin=printed.stdout)
    deployment = f"deployment/{install.NAME}"
    if restart:
        _kubectl("-n", OPERATOR_NAMESPACE, "rollout", "restart", deployment)
    _kubectl("-n", OPERATOR_NAMESPACE, "rollout", "status", deployment, "--timeout=180s",
             timeout=200)  # fmt: skip
    pod = _kubectl(
        "-n", OPERATOR_NAMESPACE, "get", "pods", "-l", f"app.kubernetes.io/name={install.NAME}",
        "--field-selector=status.phase=Running", "-o", "jsonpath={.items[0].metadata.name}",
    )  # fmt: skip
    out.line(f"  the operator runs as pod {OPERATOR_NAMESPACE}/{pod} on the real node,")
    out.line(f"  with its ServiceAccount's token; it reconciles the jobs of {demo.NAMESPACE}")


def scripts_configmap(kube: demo.DemoCluster) -> None:
    data = {p.name: p.read_text() for p in sorted(TRAINING.glob("*.py"))}
    body = {"metadata": {"name": SCRIPTS}, "data": data}
    path = f"/api/v1/namespaces/{demo.NAMESPACE}/configmaps"
    try:
        kube.raw.request("POST", path, body=body, what="create the scripts' ConfigMap")
    except demo.ApiError as err:
        if not err.already_exists:
            raise
        kube.raw.request("PUT", f"{path}/{SCRIPTS}", body=body, what="update it")


def stream_training(out: demo.Out, client: Client, timeout: float) -> None:
    """Print the training jobs' log lines as they come, `[job/replica] text`, until both end."""
    lines: queue.Queue[tuple[str, LogLine | None]] = queue.Queue()

    def follow(name: str) -> None:
        kind = "GenericJob" if name == "torchrun-ddp" else "DeepSpeedJob"
        try:
            for line in client.logs(kind, name, follow=True):
                lines.put((name, line))
        finally:
            lines.put((name, None))

    for name in STREAMED:
        threading.Thread(target=follow, args=(name,), daemon=True).start()
    open_streams, deadline = set(STREAMED), time.monotonic() + timeout
    width = max(len(n) for n in STREAMED) + 10
    while open_streams:
        try:
            name, line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            raise demo.DemoError(
                f"{', '.join(sorted(open_streams))} still running after {timeout:.0f}s;"
                f" read the operator's log: kubectl -n {OPERATOR_NAMESPACE} logs"
                f" deployment/{install.NAME}"
            ) from None
        if line is None:
            open_streams.discard(name)
            continue
        if NOISE.search(line.text):
            continue
        tag = f"[{name}/{line.replica}]"
        text = line.text
        if "loss" in text:
            text = out.paint(text, "1")
        out.line(f"  {tag:<{width}} {text}")


def explore(out: demo.Out) -> None:
    sdk = demo.rel(demo.BIN / "t9k-sdk")
    kubectl = demo.rel(cluster_tool.binary_dir(build=False) / "kubectl")
    out.line("  The cluster, its real node and the operator keep running. Explore:")
    for line in (
        f"export KUBECONFIG={cluster_tool.KUBECONFIG}",
        f"{sdk} get -n {demo.NAMESPACE}",
        f"{sdk} logs dj deepspeed-zero -n {demo.NAMESPACE}      # every rank, prefixed",
        f"{sdk} describe gj exits-1 -n {demo.NAMESPACE}        # why it failed, its Events",
        f"{kubectl} -n {demo.NAMESPACE} exec deepspeed-debug-worker-0 -- deepspeed --hostfile"
        " /t9k/hostfile --master_addr deepspeed-debug-worker-0.deepspeed-debug"
        " deepspeed_train.py --steps=5",
        f"{kubectl} -n {OPERATOR_NAMESPACE} logs -f deployment/{install.NAME}   # the operator",
        "make cluster-down   # stops the cluster, its real node and the operator's pod; removes"
        " .cluster/",
    ):
        out.line(f"    {line}")


def main(out: demo.Out, restart_operator: bool, timeout: float) -> int:
    t0 = time.monotonic()
    steps = 5
    out.step(1, steps, "Build the real node's images (or reuse them)")
    train, base, rebuilt = build_images(out)
    out.step(2, steps, "Start the local cluster with its real node (or reuse it)")
    demo.cluster_up(out)
    client = Client(kubeconfig=cluster_tool.KUBECONFIG, namespace=demo.NAMESPACE)
    kube = demo.DemoCluster(client)
    out.step(3, steps, "Install the operator in the cluster (or reuse it)")
    kube.ensure_namespace()
    install_operator(out, kube, restart_operator or rebuilt)
    out.step(4, steps, f"Train: apply the jobs to namespace {demo.NAMESPACE} and follow them")
    jobs = demo_jobs(train, base)
    scripts_configmap(kube)
    demo.apply_jobs(out, kube, jobs, seconds=0, simulated=False)
    applied = time.monotonic()
    out.line()
    out.line("  the training jobs' logs, every rank's lines prefixed with its job and replica:")
    stream_training(out, client, timeout)
    out.line()
    final = demo.watch(out, kube, jobs, timeout)
    took = time.monotonic() - applied
    out.step(5, steps, f"Summary: every job that can finish did, {took:.0f}s after applying")
    demo.summary(out, jobs, final)
    out.line()
    explore(out)
    out.line()
    out.line(f"  make demo took {time.monotonic() - t0:.0f}s")
    client.close()
    return 0


def run(argv: Sequence[str] | None = None) -> int:  # pragma: no cover - through tools/demo.py
    return demo.main(argv)
