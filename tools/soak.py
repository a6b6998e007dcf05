"""Run one test (or a few) again and again on the local cluster, to measure how often it fails.

    make soak TEST=tests/cluster/test_real_faults.py::test_the_operator_restarted_mid_launch_finishes_the_job_once N=50
    make soak TEST="-m realnode tests/cluster" N=5
    .venv/bin/python tools/soak.py -n 50 --churn -- tests/cluster/test_real_faults.py

Each run is a fresh pytest process against the one cluster that `tools/cluster.py up` started
(or that was already up), with T9K_REQUIRE_CLUSTER=1 so that nothing is skipped. Every run is
counted, failed or not (a flaky test is measured, not stopped at its first failure, unless
--until-failed); the output of each failed run is kept in build/soak/<stamp>/run-<i>.log beside
the followed pod logs the cluster tests keep in build/test-logs/<namespace>/. The last line reads
"N passed, N failed", and the exit status is 1 when any run failed.

--churn keeps pods coming and going on the real node beside the test (a pod created every 2 s,
each deleted 6 s later, in a namespace of their own), as the namespaces of the tests before it
are torn down while it runs in `make test`: a test alone in a quiet cluster sees none of that.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
CHURN_EVERY = 2.0  # seconds between two pods of --churn
CHURN_LIFE = 6.0  # seconds a pod of --churn lives


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="soak", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "tests", nargs="+", help="pytest arguments (after --): node ids, files, -m, -k ..."
    )
    parser.add_argument("-n", "--runs", type=int, default=20, help="how many runs (default 20)")
    parser.add_argument("--until-failed", action="store_true", help="stop at the first failed run")
    parser.add_argument(
        "--churn", action="store_true", help="pods come and go on the real node meanwhile"
    )
    args = parser.parse_args(argv)
    if not 1 <= args.runs <= 10_000:
        parser.error(f"--runs {args.runs}: give 1 to 10000 runs")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    subprocess.run([sys.executable, str(REPO / "tools" / "cluster.py"), "up"], check=True)
    out_dir = REPO / "build" / "soak" / time.strftime("%Y%m%d-%H%M%S")
    out_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "T9K_REQUIRE_CLUSTER": "1"}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE", *args.tests]
    with churning() if args.churn else contextlib.nullcontext():
        passed, failed = soak(args, command, env, out_dir)
    print(f"soak of {' '.join(args.tests)}{' with --churn' if args.churn else ''}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def soak(
    args: argparse.Namespace, command: list[str], env: dict[str, str], out_dir: Path
) -> tuple[int, int]:
    """Run the tests args.runs times; (passed, failed)."""
    passed = failed = 0
    for i in range(1, args.runs + 1):
        start = time.monotonic()
        run = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
        took = time.monotonic() - start
        if run.returncode == 0:
            passed += 1
            print(f"run {i}/{args.runs}: passed ({took:.0f} s)", flush=True)
            continue
        failed += 1
        kept = out_dir / f"run-{i}.log"
        kept.write_text(run.stdout + run.stderr)
        summary = (run.stdout.strip().splitlines() or ["(no output)"])[-1]
        print(f"run {i}/{args.runs}: FAILED ({took:.0f} s): {summary}; kept {kept}", flush=True)
        if args.until_failed:
            break
    return passed, failed


@contextlib.contextmanager
def churning() -> Iterator[None]:
    """Pods of the base image created and deleted on the real node until the block ends."""
    from kubernetes import client, config

    from tools import realnode
    from tools.images import IMAGES
    from tools.kit import ControlPlane, fresh_namespace

    config.load_kube_config(str(ControlPlane.running().kubeconfig))
    core = client.CoreV1Api()
    stop = threading.Event()

    def body(name: str) -> dict[str, object]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {
                "nodeSelector": {realnode.NODE_LABEL[0]: realnode.NODE_LABEL[1]},
                "tolerations": [{"key": realnode.TAINT_KEY, "operator": "Exists"}],
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {
                        "name": "c",
                        "image": IMAGES["base"].ref,
                        "imagePullPolicy": "Never",
                        "command": ["sleep", "3600"],
                    }
                ],
            },
        }

    def loop(namespace: str) -> None:
        alive: list[tuple[float, str]] = []
        n = 0
        while not stop.wait(CHURN_EVERY):
            n += 1
            with contextlib.suppress(client.ApiException):
                core.create_namespaced_pod(namespace, body(f"churn-{n}"))
                alive.append((time.monotonic(), f"churn-{n}"))
            while alive and time.monotonic() - alive[0][0] >= CHURN_LIFE:
                with contextlib.suppress(client.ApiException):
                    core.delete_namespaced_pod(alive.pop(0)[1], namespace, grace_period_seconds=0)

    with fresh_namespace(core, "soak-churn") as namespace:
        thread = threading.Thread(target=loop, args=(namespace,), daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


if __name__ == "__main__":
    sys.exit(main())
