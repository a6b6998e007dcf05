"""ONE way to load the cluster configuration: a kubeconfig file, or the pod's service account.

`connect()` is used by `t9k_sdk.client.Client` and by the operator (`Cluster.connect`); each
says when the in-cluster configuration applies (`in_cluster`), everything else is shared: the
kubeconfig path ($KUBECONFIG, then ~/.kube/config), the context, the user agent, the size of the
connection pool, and errors a newcomer can act on.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException

__all__ = ["SERVICE_ACCOUNT_DIR", "ConfigError", "Connection", "connect", "in_a_pod"]

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
DEFAULT_KUBECONFIG = "~/.kube/config"


class ConfigError(Exception):
    """No usable configuration: the message says what was tried and what to do."""


@dataclass(frozen=True)
class Connection:
    """A configured `kubernetes.client.ApiClient` and the namespace of the context (or pod)."""

    api_client: Any
    namespace: str | None
    in_cluster: bool


def in_a_pod() -> bool:
    """True inside a pod (the kubelet sets KUBERNETES_SERVICE_HOST)."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def connect(
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str | None = None,
    *,
    in_cluster: bool | None = None,
    user_agent: str | None = None,
    pool_size: int = 32,
    retries: bool = False,
) -> Connection:
    """Load the configuration and build an `ApiClient`.

    `in_cluster`: True uses the pod's service account; False a kubeconfig; None (the default)
    the service account only in a pod when no kubeconfig is given or found ($KUBECONFIG, then
    ~/.kube/config). `retries`: False sends every request once (the operator backs off itself);
    True keeps urllib3's few retries of a failed connection (the client, which explains a
    failure instead of retrying). Raises `ConfigError` with what to do next.
    """
    explicit = kubeconfig is not None or bool(os.environ.get("KUBECONFIG"))
    default_file = Path(DEFAULT_KUBECONFIG).expanduser()
    if in_cluster is None:
        in_cluster = not explicit and not default_file.exists() and in_a_pod()
    configuration = k8s_client.Configuration()
    namespace: str | None = None
    if in_cluster:
        try:
            k8s_config.load_incluster_config(client_configuration=configuration)
        except ConfigException as exc:
            raise ConfigError(
                "cannot use the in-cluster configuration (is this a pod with a service"
                f" account?): {exc}"
            ) from None
        with contextlib.suppress(OSError):
            namespace = (SERVICE_ACCOUNT_DIR / "namespace").read_text().strip() or None
    else:
        config_file = os.fspath(kubeconfig) if kubeconfig is not None else None
        where = config_file or os.environ.get("KUBECONFIG") or str(default_file)
        try:
            k8s_config.load_kube_config(
                config_file=config_file,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        except Exception as exc:  # the client raises assorted errors (YAML, keys, files)
            if config_file is not None and not Path(config_file).is_file():
                raise ConfigError(
                    f"kubeconfig {config_file}: no such file; give the path of your cluster's"
                    " kubeconfig (--kubeconfig FILE, kubeconfig= in Python)"
                ) from None
            listed = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
            if config_file is None and listed and not any(Path(p).is_file() for p in listed):
                missing = ", ".join(listed)
                raise ConfigError(
                    f"KUBECONFIG names no file that exists ({missing}); set it to your cluster's"
                    " kubeconfig, unset it to use ~/.kube/config, or pass --kubeconfig FILE"
                ) from None
            hint = (
                ""
                if explicit or default_file.exists()
                else "; pass --kubeconfig FILE (kubeconfig= in Python), set KUBECONFIG,"
                " or run in a pod"
            )
            raise ConfigError(f"cannot load the kubeconfig {where}: {exc}{hint}") from None
        namespace = _context_namespace(config_file, context)
    configuration.connection_pool_maxsize = pool_size  # watches and streams each hold one
    if not retries:
        configuration.retries = False  # failures surface at once; the caller backs off
    api_client = k8s_client.ApiClient(configuration)
    if user_agent:
        api_client.user_agent = user_agent
    return Connection(api_client, namespace, in_cluster)


def _context_namespace(config_file: str | None, context: str | None) -> str | None:
    """The namespace of the chosen (or current) context, if it names one."""
    try:
        contexts, active = k8s_config.list_kube_config_contexts(config_file)
    except (ConfigException, OSError, ValueError, TypeError):
        return None
    chosen = next((c for c in contexts if c.get("name") == context), None) if context else active
    found = ((chosen or {}).get("context") or {}).get("namespace")
    return str(found) if found else None
