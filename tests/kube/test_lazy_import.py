"""The operator and the client import the Kubernetes client without its generated classes.

Each case runs in a fresh interpreter: what is imported is a property of the whole process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: t}
contexts:
- name: x
  context: {cluster: c, user: u, namespace: team-a}
current-context: x
"""


def run(code: str, tmp_path: Path) -> dict[str, object]:
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    script = textwrap.dedent(code).replace("KUBECONFIG_PATH", str(tmp_path / "kubeconfig"))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_connecting_loads_no_generated_api_or_model_class(tmp_path: Path) -> None:
    """About 50 MiB of an operator's memory went to ~1,000 classes it never uses."""
    result = run(
        """
        import json, sys
        from t9k_sdk._kube import config
        from t9k_sdk._kube.transport import Transport
        connection = config.connect("KUBECONFIG_PATH")
        transport = Transport(connection.api_client)
        from importlib.util import find_spec
        loaded = [m for m in sys.modules if m.startswith("kubernetes.client.")]
        print(json.dumps({
            "namespace": connection.namespace,
            "server": transport.server,
            "found": [find_spec(m) is not None for m in ("kubernetes", "kubernetes.client")],
            "models": [m for m in loaded if m.startswith("kubernetes.client.models.")],
            "apis": [m for m in loaded if m.startswith("kubernetes.client.api.")],
        }))
        """,
        tmp_path,
    )
    assert (result["namespace"], result["server"]) == ("team-a", "https://127.0.0.1:1")
    assert result["found"] == [True, True]  # `pip install t9k-sdk[operator]` checks still work
    assert result["models"] == []
    assert result["apis"] == []


def test_a_program_that_also_uses_the_full_client_gets_all_of_it(tmp_path: Path) -> None:
    """Imported after t9k_sdk, `kubernetes` is complete: models, APIs, watch, its version.

    Names are read as attributes first (as the client's own deserializer and the tests' fixtures
    do), then with `from ... import`; kubernetes >= 37 makes its own packages lazy too."""
    result = run(
        """
        import json
        import t9k_sdk.client, t9k_sdk._kube.transport, t9k_sdk._kube.config
        import kubernetes
        api_class = kubernetes.client.CoreV1Api
        namespace_class = getattr(kubernetes.client.models, "V1Namespace")
        from kubernetes import client, config, watch
        from kubernetes.client import V1Pod
        from kubernetes.client.models import V1Service
        from importlib.metadata import version
        config.load_kube_config("KUBECONFIG_PATH")
        pod = client.ApiClient().sanitize_for_serialization(V1Pod(metadata={"name": "p"}))
        print(json.dumps({
            "version": kubernetes.__version__ == version("kubernetes"),
            "pod": pod,
            "names": [api_class.__name__, namespace_class.__name__, V1Service.__name__,
                      watch.Watch.__name__],
            "models": hasattr(client.models, "V1Deployment"),
        }))
        """,
        tmp_path,
    )
    assert result == {
        "version": True,
        "pod": {"metadata": {"name": "p"}},
        "names": ["CoreV1Api", "V1Namespace", "V1Service", "Watch"],
        "models": True,
    }


def test_a_program_that_imported_the_client_first_keeps_it(tmp_path: Path) -> None:
    result = run(
        """
        import json, sys
        import kubernetes.client
        before = sys.modules["kubernetes.client"]
        from t9k_sdk._kube import config
        connection = config.connect("KUBECONFIG_PATH")
        print(json.dumps({
            "same": sys.modules["kubernetes.client"] is before,
            "type": type(before).__name__,
            "namespace": connection.namespace,
        }))
        """,
        tmp_path,
    )
    assert result == {"same": True, "type": "module", "namespace": "team-a"}
