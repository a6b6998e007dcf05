"""The one layer that talks to the Kubernetes API server, shared by `t9k_sdk.client` and the
operator (`t9k_operator.cluster`, `t9k_operator.informer`).

    api_error   ApiError: one failed request (status, reason, message, causes, what)
    resources   Resource: group, version, plural, kind -> REST paths; the core and job resources
    transport   Transport: JSON requests and streamed responses over `kubernetes.client.ApiClient`
    config      connect(): ONE kubeconfig / in-cluster loader
    listwatch   paginated list, watch from a version, and the list-then-watch loop
    _lazy       imports the client without its generated API and model classes

Only this package imports `kubernetes` and `urllib3` (an import-linter contract says so), and
only `transport` and `config` do at import time: `api_error`, `resources` and `listwatch` import
without the `client` extra. Policy stays with the callers: the client gives up and explains
(`t9k_sdk.client.errors`), the operator retries for ever and caches (`t9k_operator.informer`).
"""

from t9k_sdk._kube import _lazy

# Before `transport` or `config` imports the client: leave its generated classes unimported
# (about 50 MiB; see `_lazy`).
_lazy.install()
