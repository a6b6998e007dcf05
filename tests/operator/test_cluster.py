"""The API layer, against a recording stand-in for `kubernetes.client.ApiClient`.

Also checks the install's ClusterRole against the requests the operator really makes: every rule
is used, and every request is allowed.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from t9k_operator.cluster import Cluster
from t9k_operator.controller import Controller
from t9k_operator.leader import LeaderElector, LeaseSettings
from t9k_sdk._kube.api_error import ApiError
from t9k_sdk._kube.resources import CHILD_RESOURCES, JOB_RESOURCES, PODS
from t9k_sdk.install import cluster_role_rules, install_manifests, lease_role_rules
from t9k_sdk.reconcile import Deletion, Event, Plan, Update
from tests.operator.fakes import job


class Response:
    def __init__(self, data: Any, chunks: list[bytes] | None = None) -> None:
        self.data = json.dumps(data).encode()
        self.status = 200
        self.reason = "OK"
        self._chunks = chunks or []

    def stream(self, amt: Any = None, decode_content: bool = False) -> Iterator[bytes]:
        yield from self._chunks

    def release_conn(self) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def getheaders(self) -> dict[str, str]:
        return {}


def status_error(code: int, reason: str, message: str = "") -> ApiException:
    # Built field by field: `ApiException(http_resp=...)` reads other response attributes in
    # each kubernetes release.
    error = ApiException(status=code, reason=reason)
    error.body = json.dumps({"kind": "Status", "code": code, "reason": reason, "message": message})
    return error


class FakeApiClient:
    """Answers like the API server for the calls `Cluster` makes; records (method, path, query)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str], Any]] = []
        self.errors: dict[tuple[str, str], ApiException] = {}
        self.objects: dict[str, dict[str, Any]] = {}
        self.watch_chunks: list[bytes] = []

    def call_api(
        self,
        path: str,
        method: str,
        *,
        query_params: list[tuple[str, str]],
        body: Any = None,
        **_: Any,
    ) -> Response:
        query = dict(query_params)
        self.requests.append((method, path, query, body))
        error = self.errors.get((method, path))
        if error is not None:
            raise error
        if method == "GET" and query.get("watch") == "true":
            return Response({}, self.watch_chunks)
        if method == "GET":
            if path in self.objects:
                return Response(self.objects[path])
            if "/leases/" in path:
                raise status_error(404, "NotFound")
            return Response(
                {
                    "items": [{"metadata": {"name": "x", "namespace": "ns"}}],
                    "metadata": {"resourceVersion": "42"},
                }
            )
        if method == "POST" and f"{path}/{body['metadata'].get('name', '')}" in self.objects:
            raise status_error(409, "AlreadyExists", "already exists")
        if method in ("POST", "PUT"):
            stored = {
                **body,
                "metadata": {**body["metadata"], "resourceVersion": str(len(self.requests))},
            }
            name = stored["metadata"].get("name", "")
            key = path if method == "PUT" else f"{path}/{name}"
            self.objects[key.removesuffix("/status")] = stored
            return Response(stored)
        return Response(body or {})


@pytest.fixture
def api() -> FakeApiClient:
    return FakeApiClient()


@pytest.fixture
def cluster(api: FakeApiClient) -> Cluster:
    return Cluster(api, identity="op-1")


def test_list_items_come_back_as_whole_objects_with_the_collection_version(
    api: FakeApiClient, cluster: Cluster
) -> None:
    result = cluster.list(PODS, "ns", "a=b")
    assert result.resource_version == "42"
    assert result.items == [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "ns"}}
    ]
    method, path, query, _ = api.requests[0]
    assert (method, path, query["labelSelector"]) == ("GET", "/api/v1/namespaces/ns/pods", "a=b")


def test_watch_decodes_events_split_across_chunks(api: FakeApiClient, cluster: Cluster) -> None:
    lines = b'{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}\n'
    api.watch_chunks = [lines[:10], lines[10:60], lines[60:]]
    events = list(cluster.watch(PODS, None, "5"))
    assert [(e.type, e.object["metadata"]) for e in events] == [
        ("ADDED", {"name": "a"}),
        ("BOOKMARK", {"resourceVersion": "9"}),
    ]
    _, path, query, _ = api.requests[0]
    assert path == "/api/v1/pods"
    assert (query["resourceVersion"], query["allowWatchBookmarks"]) == ("5", "true")


def test_create_of_an_existing_object_is_not_an_error(api: FakeApiClient, cluster: Cluster) -> None:
    api.errors[("POST", "/api/v1/namespaces/ns/pods")] = status_error(
        409, "AlreadyExists", 'pods "p" already exists'
    )
    assert (
        cluster.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, "ns") is None
    )


def test_a_stale_replace_raises_a_conflict(api: FakeApiClient, cluster: Cluster) -> None:
    api.errors[("PUT", "/api/v1/namespaces/ns/services/s")] = status_error(
        409, "Conflict", "the object has been modified"
    )
    with pytest.raises(ApiError) as info:
        cluster.replace(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "s", "resourceVersion": "3"},
            },
            "ns",
        )
    assert info.value.conflict
    assert "the object has been modified" in str(info.value)


def test_delete_sends_the_uid_precondition_and_grace_period_and_tolerates_gone_objects(
    api: FakeApiClient, cluster: Cluster
) -> None:
    assert cluster.delete(PODS, "ns", "p", uid="u1", grace_period_seconds=0)
    body = api.requests[0][3]
    assert body["preconditions"] == {"uid": "u1"}
    assert body["gracePeriodSeconds"] == 0
    api.errors[("DELETE", "/api/v1/namespaces/ns/pods/gone")] = status_error(404, "NotFound")
    assert cluster.delete(PODS, "ns", "gone", uid="u1") is False
    api.errors[("DELETE", "/api/v1/namespaces/ns/pods/reborn")] = status_error(
        409, "Conflict", "Precondition failed: UID in precondition"
    )
    assert cluster.delete(PODS, "ns", "reborn", uid="u1") is False


def test_status_is_written_to_the_subresource_with_the_jobs_resource_version(
    api: FakeApiClient, cluster: Cluster
) -> None:
    cluster.replace_status(job(rv="77"), {"phase": "Running"})
    method, path, _, body = api.requests[0]
    assert (method, path) == (
        "PUT",
        "/apis/batch.tensorstack.dev/v1beta1/namespaces/ns/genericjobs/demo/status",
    )
    assert body["metadata"]["resourceVersion"] == "77"
    assert body["status"] == {"phase": "Running"}


def test_connection_failures_become_api_errors_with_status_0(
    api: FakeApiClient, cluster: Cluster
) -> None:
    api.errors[("GET", "/api/v1/pods")] = ApiException(status=0, reason="ConnectionRefused")
    with pytest.raises(ApiError) as info:
        cluster.list(PODS)
    assert info.value.status == 0


def test_identical_consecutive_events_are_recorded_once_with_their_count(
    api: FakeApiClient, cluster: Cluster
) -> None:
    created = Event("Normal", "SuccessfulCreatePod", "Created pod: demo-worker-0")
    running = Event("Normal", "Running", "The job is running.")
    writes = cluster.record_events(
        job(uid="u-1"), [created, created, running], now=datetime(2025, 1, 1, tzinfo=UTC)
    )
    assert writes == 2
    first = api.requests[0][3]
    assert (first["reason"], first["count"], first["type"]) == ("SuccessfulCreatePod", 2, "Normal")
    assert first["involvedObject"]["uid"] == "u-1"
    assert first["involvedObject"]["kind"] == "GenericJob"
    assert (first["reportingComponent"], first["reportingInstance"]) == ("t9k-operator", "op-1")
    assert first["source"] == {"component": "t9k-operator"}


def test_a_repeated_event_bumps_the_existing_events_count(
    api: FakeApiClient, cluster: Cluster
) -> None:
    pending = Event("Warning", "Unschedulable", "0/4 nodes are available")
    cluster.record_events(job(), [pending])
    cluster.record_events(job(), [pending])
    (m1, _, _, _), (m2, path, _, patch) = api.requests
    assert (m1, m2) == ("POST", "PATCH")
    assert path.startswith("/api/v1/namespaces/ns/events/demo.")
    assert patch["count"] == 2


def test_events_and_status_writes_take_their_tokens_from_buckets_of_their_own(
    api: FakeApiClient,
) -> None:
    """A burst of Events (one per pod created) must not use up the tokens of the creates, nor
    may a job's status write wait behind other jobs' creates (client-go: a bucket per client)."""
    taken: list[str] = []

    class Bucket:
        def __init__(self, name: str) -> None:
            self.name = name

        def take(self) -> None:
            taken.append(self.name)

    cluster = Cluster(
        api,
        limiter=Bucket("jobs"),  # type: ignore[arg-type]
        event_limiter=Bucket("events"),  # type: ignore[arg-type]
        status_limiter=Bucket("status"),  # type: ignore[arg-type]
    )
    cluster.record_events(job(), [Event("Normal", "Running", "The job is running.")])
    cluster.replace_status(job(), {"phase": "Running"})
    cluster.list(PODS)
    assert taken == ["events", "status", "jobs"]


def test_qps_zero_connects_without_a_client_side_limit(
    monkeypatch: pytest.MonkeyPatch, api: FakeApiClient
) -> None:
    """`--qps 0 --burst 1`: hundreds of requests go out at once. With a bucket of burst 1, the
    201st list would wait 200/qps seconds (2 s even at 100 per second), and so would the 201st
    status write."""
    from t9k_sdk._kube import config as config_module

    connection = config_module.Connection(api_client=api, namespace=None, in_cluster=False)
    monkeypatch.setattr(config_module, "connect", lambda *_, **__: connection)
    unlimited = Cluster.connect(kubeconfig="/k", qps=0, burst=1)
    started = time.monotonic()
    for _ in range(201):
        unlimited.list(PODS)
        unlimited.replace_status(job(), {"phase": "Running"})
    assert time.monotonic() - started < 1.5
    assert len(api.requests) == 402


# --- the ClusterRole against the requests made --------------------------------------------------

_PATH = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/[^/]+)?/(?P<resource>[^/]+)(?:/(?P<name>[^/]+)(?:/(?P<sub>[^/]+))?)?$"
)


def permission(method: str, path: str, query: dict[str, str]) -> tuple[str, str, str, str]:
    """(group, resource, verb, name) as RBAC sees a request ("" name for lists and creates)."""
    match = _PATH.match(path)
    assert match, path
    group = match["group"] or ""
    resource = match["resource"] + (f"/{match['sub']}" if match["sub"] else "")
    verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method)
    if verb is None:
        verb = "watch" if query.get("watch") == "true" else ("get" if match["name"] else "list")
    return group, resource, verb, match["name"] or ""


def granted() -> set[tuple[str, str, str, str]]:
    """(group, resource, verb, name): name "*" where a rule has no resourceNames."""
    return {
        (group, resource, verb, name)
        for rule in [*cluster_role_rules(), *lease_role_rules()]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
        for name in rule.get("resourceNames") or ["*"]
    }


def allowed(request: tuple[str, str, str, str], rules: set[tuple[str, str, str, str]]) -> bool:
    group, resource, verb, name = request
    return (group, resource, verb, "*") in rules or (group, resource, verb, name) in rules


IMPLIED = {
    ("batch.tensorstack.dev", f"{r.plural}/finalizers", "update", "*") for r in JOB_RESOURCES
}
"""Not a request of ours: the OwnerReferencesPermissionEnforcement admission plugin requires it
to create children whose owner reference sets blockOwnerDeletion (the core sets it)."""


def operator_requests(api: FakeApiClient) -> set[tuple[str, str, str, str]]:
    """Drive the real code paths: the controller's informers and a pass with every kind of
    action the core plans on every child kind (the second time every create finds the object),
    events twice, and leader election twice."""
    cluster = Cluster(api, identity="op-1")
    controller = Controller(cluster, lambda *a, **k: Plan())
    for informer in controller.informers:
        informer._list()
        informer._watch("1").close()
    the_job = job()
    children = [
        {
            "apiVersion": r.api_version,
            "kind": r.kind,
            "metadata": {
                "name": f"demo-{r.plural}",
                "resourceVersion": "1",
                "ownerReferences": [{"uid": the_job["metadata"]["uid"], "controller": True}],
            },
        }
        for r in CHILD_RESOURCES
    ]
    # The core replaces pods and never changes a Secret's key pair: it updates only these, and
    # a Kueue Workload's status too (finished, evicted, pods ready).
    updated = {"Service", "ConfigMap", "PodGroup", "Workload"}
    plan = Plan(
        status={"phase": "Running"},
        delete=tuple(
            Deletion(c["apiVersion"], c["kind"], c["metadata"]["name"], "uid", "test")
            for c in children
        ),
        update=tuple(Update(c, "test") for c in children if c["kind"] in updated)
        + tuple(Update(c, "test", "status") for c in children if c["kind"] == "Workload"),
        create=tuple(children),
        events=(Event("Normal", "Running", "The job is running."),),
    )
    for kind in ("GenericJob", "DeepSpeedJob", "ColossalAIJob"):
        controller.executor.execute((kind, "ns", "demo"), {**the_job, "kind": kind}, plan)
        controller.executor.execute((kind, "ns", "demo"), {**the_job, "kind": kind}, plan)
    # a pod bound to a node the cache does not hold: the node is asked of the API server
    controller._nodes_of(({"spec": {"nodeName": "node-new"}},))
    elector = LeaderElector(cluster, LeaseSettings(namespace="ns", identity="op-1"))
    assert elector.try_acquire_or_renew()
    assert elector.try_acquire_or_renew()
    return {permission(m, p, q) for m, p, q, _ in api.requests}


def test_the_roles_grant_exactly_what_the_operator_requests(api: FakeApiClient) -> None:
    used = operator_requests(api)
    rules = granted()
    assert {r for r in used if not allowed(r, rules)} == set(), "requests the roles do not allow"
    unused = {
        (g, res, verb, name)
        for g, res, verb, name in rules - IMPLIED
        if not any((u[0], u[1], u[2]) == (g, res, verb) and name in ("*", u[3]) for u in used)
    }
    assert unused == set(), "permissions the operator never uses"
    lease_requests = {r for r in used if r[1] == "leases" and r[2] != "create"}
    assert {r[3] for r in lease_requests} == {"t9k-operator"}


def test_the_cluster_role_has_no_wildcards() -> None:
    role = next(m for m in install_manifests() if m["kind"] == "ClusterRole")
    for rule in role["rules"]:
        for key in ("apiGroups", "resources", "verbs"):
            assert all("*" not in value for value in rule[key]), rule
        assert "resourceNames" not in rule
        assert "nonResourceURLs" not in rule


def test_connect_uses_the_in_cluster_config_in_a_pod_unless_given_a_kubeconfig(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from t9k_sdk._kube import config as config_module

    loaded: list[str] = []

    def in_cluster(client_configuration: Any) -> None:
        loaded.append("in-cluster")
        client_configuration.host = "https://10.0.0.1:443"

    def from_file(
        config_file: str | None, context: str | None, client_configuration: Any, **_: Any
    ) -> None:
        loaded.append(f"kubeconfig {config_file} {context}")
        client_configuration.host = "https://127.0.0.1:6443"

    monkeypatch.setattr(config_module.k8s_config, "load_incluster_config", in_cluster)
    monkeypatch.setattr(config_module.k8s_config, "load_kube_config", from_file)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    in_pod = Cluster.connect()
    assert in_pod.server == "https://10.0.0.1:443"
    in_pod.close()
    Cluster.connect(kubeconfig="/k", context="dev").close()
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    Cluster.connect().close()
    assert loaded == ["in-cluster", "kubeconfig /k dev", "kubeconfig None None"]
