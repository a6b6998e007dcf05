#!/usr/bin/env python3
"""Kueue, the real one, in the local cluster, on demand (`make cluster-up` does not start it).

    python tools/cluster.py kueue up      # start (or reuse) Kueue in the running cluster
    python tools/cluster.py kueue down    # stop it, remove its webhooks and CRDs
    python tools/cluster.py kueue status  # exit 1 unless it runs and is ready

Kueue's manager (`tools/ensure-kueue-binaries.sh` builds it from the Go module proxy) runs on the
host as a process of the cluster (`.cluster/state.json`, so `make cluster-down` stops it), with
the admin kubeconfig, leader election off and every port on 127.0.0.1. Its CRDs come from the
module it was built from. Its webhooks are served on loopback and registered with the API server
by URL (`clientConfig.url`, as Kueue's docs describe for a manager outside the cluster), with
Kueue's internal certificate management off and a serving certificate for IP 127.0.0.1 signed by
the cluster's CA, the way its docs describe bringing your own (cert-manager's role here).

The configuration names the operator's three kinds in `integrations.externalFrameworks`, turns
`waitForPodsReady` on, and turns the on-demand visibility API off (it would need an aggregated
API server). Only the standard library and PyYAML are used, as in tools/cluster.py.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import yaml

if __package__:  # imported as tools.kueue (tests)
    from . import cluster, procs
else:  # run as a script: tools/ is sys.path[0]
    import cluster  # type: ignore[no-redef]
    import procs  # type: ignore[no-redef]

NAME: Final = "kueue"
NAMESPACE: Final = "kueue-system"
KUEUE_DIR: Final = cluster.STATE_DIR / "kueue"
CONFIG_FILE: Final = KUEUE_DIR / "config.yaml"
CERT_DIR: Final = KUEUE_DIR / "certs"
ENSURE: Final = cluster.REPO_ROOT / "tools" / "ensure-kueue-binaries.sh"
FIELD_MANAGER: Final = "t9k-cluster-kueue"
GROUP: Final = "kueue.x-k8s.io"
EXTERNAL_FRAMEWORKS: Final = tuple(
    f"{kind}.v1beta1.batch.tensorstack.dev"
    for kind in ("GenericJob", "DeepSpeedJob", "ColossalAIJob")
)
PODS_READY_TIMEOUT: Final = "60s"
"""waitForPodsReady's timeout: an admitted job whose pods are not all running by then is evicted
and queued again (a kwok pod runs within a second; the real node's within seconds)."""
WEBHOOK_KINDS: Final = {
    "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
    "ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
}


def _say(msg: str) -> None:
    print(f"[kueue] {msg}", file=sys.stderr, flush=True)


def bin_dir(build: bool = True) -> Path:
    """The directory of Kueue's manager, CRDs and webhook manifests (built if missing)."""
    argv = [str(ENSURE)] if build else [str(ENSURE), "--print-dir"]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise cluster.ClusterError(f"{ENSURE.name} failed:\n{proc.stderr.strip()}")
    path = Path(proc.stdout.strip().splitlines()[-1])
    if not (path / NAME).is_file():
        raise cluster.ClusterError(f"Kueue is not built in {path}: run `make kueue-binaries`")
    return path


# --------------------------------------------------------------------------------------------
# what is applied to the API server


def _apply(api: cluster.Api, path: str, body: dict[str, Any]) -> None:
    status, response = api.request(
        "PATCH",
        f"{path}?fieldManager={FIELD_MANAGER}&force=true",
        body,
        content_type="application/apply-patch+yaml",
        timeout=60,
    )
    if status not in (200, 201):
        message = response.get("message") if isinstance(response, dict) else response
        kind, name = body.get("kind"), body["metadata"]["name"]
        raise cluster.ClusterError(f"applying {kind} {name} failed (HTTP {status}): {message}")


def _crds(directory: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted((directory / "crds").glob("*.yaml")):
        out.extend(d for d in yaml.load_all(path.read_text(), cluster._YamlLoader) if d)
    return out


def install_crds(api: cluster.Api, directory: Path) -> bool:
    """Apply Kueue's CRDs and wait until they are Established; True if one was new."""
    base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    new = False
    names = []
    for crd in _crds(directory):
        name = crd["metadata"]["name"]
        names.append(name)
        new |= api.request("GET", f"{base}/{name}")[0] == 404
        _apply(api, f"{base}/{name}", crd)

    def established() -> bool:
        for name in names:
            status, body = api.request("GET", f"{base}/{name}")
            if status != 200 or not cluster._condition_true(body, "Established"):
                return False
        return True

    _poll(established, 30, "Kueue's CRDs to be Established")
    return new


def webhook_configurations(directory: Path, port: int, ca: bytes) -> list[dict[str, Any]]:
    """Kueue's own webhooks (those of the kueue.x-k8s.io group: its Workloads, ClusterQueues,
    ResourceFlavors, Cohorts), pointed at the manager on loopback by URL."""
    out = []
    for doc in yaml.safe_load_all((directory / "webhooks.yaml").read_text()):
        if not doc or doc.get("kind") not in WEBHOOK_KINDS:
            continue
        hooks = []
        for hook in doc.get("webhooks") or ():
            if not any(GROUP in (r.get("apiGroups") or ()) for r in hook.get("rules") or ()):
                continue
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {
                "url": f"https://127.0.0.1:{port}{path}",
                "caBundle": base64.b64encode(ca).decode(),
            }
            hook.pop("namespaceSelector", None)
            hooks.append(hook)
        doc["metadata"] = {"name": f"t9k-local-kueue-{doc['kind'].lower()}"}
        doc["webhooks"] = hooks
        out.append(doc)
    return out


def _webhook_path(doc: dict[str, Any]) -> str:
    plural = WEBHOOK_KINDS[doc["kind"]]
    return f"/apis/admissionregistration.k8s.io/v1/{plural}/{doc['metadata']['name']}"


def configuration(ports: dict[str, int]) -> dict[str, Any]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2) for the local cluster."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{ports['kueue-health']}"},
        "metrics": {"bindAddress": f"127.0.0.1:{ports['kueue-metrics']}"},
        "webhook": {"host": "127.0.0.1", "port": ports["kueue-webhook"], "certDir": str(CERT_DIR)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "clientConnection": {"qps": 100, "burst": 200},
        "manageJobsWithoutQueueName": False,
        "waitForPodsReady": {
            "timeout": PODS_READY_TIMEOUT,
            "blockAdmission": False,
            "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 1},
        },
        "integrations": {
            "frameworks": ["batch/job"],
            "externalFrameworks": list(EXTERNAL_FRAMEWORKS),
        },
        "featureGates": {"VisibilityOnDemand": False},
    }


def _serving_cert() -> bytes:
    """A serving certificate for 127.0.0.1 signed by the cluster's CA; returns the CA."""
    CERT_DIR.mkdir(parents=True, exist_ok=True)
    pki = cluster.PKI_DIR
    ext = KUEUE_DIR / "server.ext"
    ext.write_text(
        "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
    )
    for argv in (
        ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(CERT_DIR / "tls.key"),
         "-out", str(KUEUE_DIR / "tls.csr"), "-subj", "/CN=kueue-webhook"],
        ["x509", "-req", "-in", str(KUEUE_DIR / "tls.csr"), "-CA", str(pki / "ca.crt"),
         "-CAkey", str(pki / "ca.key"), "-CAcreateserial", "-out", str(CERT_DIR / "tls.crt"),
         "-days", "3650", "-extfile", str(ext)],
    ):  # fmt: skip
        cluster._openssl(*argv)
    (CERT_DIR / "tls.key").chmod(0o600)
    return (pki / "ca.crt").read_bytes()


# --------------------------------------------------------------------------------------------
# the process


def _with_metrics_cert(argv: list[str]) -> list[str]:
    """`argv` run where /etc/kueue/metrics/certs holds the serving certificate.

    With its internal certificate management off, Kueue's manager reads its metrics certificate
    from that fixed path, and no flag moves it. The host's /etc is not touched: the manager runs
    in a mount namespace of its own, where an overlay on /etc adds that directory; the namespace
    and the overlay end with the process."""
    upper, work = KUEUE_DIR / "etc-upper", KUEUE_DIR / "etc-work"
    certs = upper / "kueue" / "metrics" / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    work.mkdir(exist_ok=True)
    for name in ("tls.crt", "tls.key"):
        shutil.copyfile(CERT_DIR / name, certs / name)
    script = (
        'mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1,workdir=$2" /etc'
        ' && shift 2 && exec "$@"'
    )
    return [
        "unshare", "--mount", "--propagation", "private",
        "sh", "-c", script, "kueue", str(upper), str(work), *argv,
    ]  # fmt: skip


def _record(state: cluster.State) -> procs.ProcessRecord | None:
    return next((r for r in state.processes if r.name == NAME), None)


def _ready(state: cluster.State) -> bool:
    record = _record(state)
    port = state.ports.get("kueue-health")
    if record is None or port is None or not cluster.process_alive(record):
        return False
    return procs.http_get(f"http://127.0.0.1:{port}/readyz")[0] == 200


def _poll(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise cluster.ClusterError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.2)


def _running_state() -> cluster.State:
    state = cluster.read_state()
    if state is not None:
        _forget_dead(state)
    if state is None or not cluster.healthy(state):
        raise cluster.ClusterError("the local cluster is not running: run `make cluster-up`")
    return state


def up(build: bool = True) -> cluster.State:
    """Start Kueue in the running cluster, or reuse the one that runs."""
    directory = bin_dir(build)
    with cluster._lock():
        state = _running_state()
        if _ready(state):
            return state
        _stop(state)
        t0 = time.monotonic()
        api = cluster.Api(state.server)
        if install_crds(api, directory):
            # so that the garbage collector collects a deleted job's Workload at once
            cluster.restart_controller_manager(state)
        _apply(api, "/api/v1/namespaces/" + NAMESPACE, _namespace())
        state.ports.update(procs.free_ports(["kueue-webhook", "kueue-health", "kueue-metrics"]))
        ca = _serving_cert()
        CONFIG_FILE.write_text(yaml.safe_dump(configuration(state.ports), sort_keys=True))
        env = {**cluster._component_env(), "KUBECONFIG": str(cluster.KUBECONFIG)}
        argv = [str(directory / NAME), f"--config={CONFIG_FILE}", "--zap-log-level=2"]
        cluster._spawn(state, NAME, _with_metrics_cert(argv), env)
        try:
            cluster._wait(state, NAME, lambda: _ready(state), 60)
        except BaseException:
            _stop(state)  # the cluster stays as it was, without Kueue
            raise
        for doc in webhook_configurations(directory, state.ports["kueue-webhook"], ca):
            _apply(api, _webhook_path(doc), doc)
        state.save()
        _say(f"ready in {time.monotonic() - t0:.1f}s; log {cluster.LOG_DIR / (NAME + '.log')}")
        return state


def _namespace() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}


def _forget_dead(state: cluster.State) -> None:
    """Drop the record of a manager that died (the cluster is healthy without Kueue)."""
    dead = [r for r in state.processes if r.name == NAME and not cluster.process_alive(r)]
    if dead:
        cluster.stop_processes(dead)  # reaps what is left of its session
        state.processes = [r for r in state.processes if r not in dead]
        state.save()


def _stop(state: cluster.State) -> None:
    """Stop the manager this cluster started (by its record, never by name)."""
    records = [r for r in state.processes if r.name == NAME]
    cluster.stop_processes(records)
    state.processes = [r for r in state.processes if r.name != NAME]
    state.save()


def down() -> None:
    """Unregister Kueue's webhooks, stop the manager and remove its CRDs (and so its objects)."""
    with cluster._lock():
        state = cluster.read_state()
        if state is None:
            return
        api = cluster.Api(state.server)
        for kind, plural in WEBHOOK_KINDS.items():
            api.request(
                "DELETE",
                f"/apis/admissionregistration.k8s.io/v1/{plural}/t9k-local-kueue-{kind.lower()}",
            )
        _stop(state)
        base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

        def ours() -> list[dict[str, Any]]:
            status, body = api.request("GET", base)
            items = (body or {}).get("items") or () if status == 200 else ()
            return [c for c in items if c["spec"]["group"] == GROUP]

        def gone() -> bool:
            left = ours()
            for crd in left:
                _drop_finalizers(api, crd)
            return not left

        for crd in ours():
            api.request("DELETE", f"{base}/{crd['metadata']['name']}")
        # gone, not just terminating: what starts next finds no Kueue API served
        _poll(gone, 60, "Kueue's CRDs to be deleted")
        _say("stopped")


def _drop_finalizers(api: cluster.Api, crd: dict[str, Any]) -> None:
    """Kueue's finalizers (a ClusterQueue's, a Workload's) are Kueue's to remove; with Kueue
    stopped, `down` removes them, so that its objects and CRDs can go."""
    plural = crd["spec"]["names"]["plural"]
    version = next(v["name"] for v in crd["spec"]["versions"] if v.get("storage"))
    status, body = api.request("GET", f"/apis/{GROUP}/{version}/{plural}")
    for item in (body or {}).get("items") or () if status == 200 else ():
        meta = item["metadata"]
        if not meta.get("finalizers"):
            continue
        where = f"/namespaces/{meta['namespace']}" if meta.get("namespace") else ""
        api.request(
            "PATCH",
            f"/apis/{GROUP}/{version}{where}/{plural}/{meta['name']}",
            {"metadata": {"finalizers": None}},
            content_type="application/merge-patch+json",
        )


def main(argv: Sequence[str]) -> int:
    try:
        return _main(argv)
    except cluster.ClusterError as err:
        print(f"[kueue] error: {err}", file=sys.stderr)
        return 1


def _main(argv: Sequence[str]) -> int:
    action = argv[0] if argv else ""
    if action == "up":
        up()
    elif action == "down":
        down()
    elif action == "status":
        state = cluster.read_state()
        ok = state is not None and _ready(state)
        print(f"[kueue] {'ready' if ok else 'not running'}")
        return 0 if ok else 1
    else:
        print("usage: tools/cluster.py kueue up|down|status", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
