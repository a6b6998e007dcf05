"""Real jobs of the three kinds in every state of the status contract, read back from the cluster.

    from tests.cluster.job_states import STATES, collect_job_states

    @pytest.fixture(scope="module")
    def states(e2e, custom, core_v1, kubeconfig):   # one operator per module (conftest's e2e)
        driver = Jobs(custom, core_v1, e2e)
        with Client(kubeconfig=str(kubeconfig), namespace=e2e.namespace) as sdk:
            yield collect_job_states(driver, sdk)   # {state: {kind: the live job, as a dict}}
            driver.close()

    states["paused"]["DeepSpeedJob"]["status"]["conditions"]

tests/cluster/test_kstatus.py uses it that way.

Each live job is what the API server returned (a GET, or the response of the patch that edited its
spec), with its status as the operator wrote it, for checks that read status the way GitOps
tools do (kstatus, Argo CD health checks). The states, and how each is reached on the local
control plane (kwok runs the pods; the `sim.t9k.dev/*` annotations decide how they end):

| state         | how                                                                          |
|---------------|------------------------------------------------------------------------------|
| created       | the response of the create: nothing written yet (the API server shows the     |
|               | CRDs' default status, `{observedGeneration: 0}`)                              |
| pending       | pods whose nodeSelector matches no node (Running=False, Unschedulable)        |
| pausing       | that job paused (t9k_sdk.client) while an admission policy refuses to delete |
|               | one of its pods (a ValidatingAdmissionPolicy on the pod's label)              |
| paused        | the label removed: every pod gone                                            |
| resuming      | resumed (t9k_sdk.client): the new pods cannot be scheduled either            |
| running       | pods that run until told otherwise                                           |
| spec-edited   | the response of a merge patch of a field that changes no pod: generation ahead |
| spec-observed | the same job once the operator wrote the new observedGeneration              |
| succeeded     | that job's pods told to exit 0                                               |
| failed        | pods that exit 1 with no restart left                                        |
| invalid-spec  | a spec the API server accepts and the operator refuses (DeepSpeedJob and     |
|               | ColossalAIJob only: we know of no GenericJob the CRD admits and the operator  |
|               | refuses)                                                                      |
| blocked       | a pod of someone else's holds the name of the job's first pod (NameConflict)  |

The jobs of one call run in parallel; a call takes about 15 seconds. Names start with `st-`.
The `pausing` state briefly needs a cluster-scoped ValidatingAdmissionPolicy (and its binding),
named after the namespace and deleted before the call returns.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from t9k_sdk import models
from t9k_sdk.client import Client
from tests.cluster.e2e_helpers import Jobs, condition
from tools.kit import (
    colossalai_job,
    container,
    deepspeed_job,
    finish,
    generic_job,
    replica,
    wait_for,
)

__all__ = ["KINDS", "STATES", "collect_job_states"]

KINDS = ("GenericJob", "DeepSpeedJob", "ColossalAIJob")
STATES = (
    "created",
    "pending",
    "pausing",
    "paused",
    "resuming",
    "running",
    "spec-edited",
    "spec-observed",
    "succeeded",
    "failed",
    "invalid-spec",
    "blocked",
)
HOLD = "t9k-sdk.test/hold"
NOWHERE = {"t9k-sdk.test/no-such-node": "true"}
_PREFIX = {"GenericJob": "gj", "DeepSpeedJob": "dj", "ColossalAIJob": "cj"}
_FIRST_POD = {"GenericJob": "worker-0", "DeepSpeedJob": "worker-0", "ColossalAIJob": "launcher"}
# A pod that a pending job has: a launcher (DeepSpeedJob worker-0, the ColossalAIJob launcher)
# is created only once its workers run.
_WORKER_POD = {"GenericJob": "worker-0", "DeepSpeedJob": "worker-1", "ColossalAIJob": "worker-0"}
# A spec edit that changes no pod: what happens after the job finishes.
_EDIT: dict[str, dict[str, Any]] = {
    "GenericJob": {"spec": {"cleanUpPolicy": "Unfinished"}},
    "DeepSpeedJob": {"spec": {"runPolicy": {"cleanUpPolicy": "Unfinished"}}},
    "ColossalAIJob": {"spec": {"runPolicy": {"cleanUpWorkers": True}}},
}
TIMEOUT = 60.0


def _job(kind: str, name: str, *, ending: int | None = None) -> dict[str, Any]:
    """A job of `kind` whose pods run forever (`ending=None`) or exit with `ending` at once."""
    notes = finish(ending, after="1s") if ending is not None else None
    if kind == "GenericJob":
        return generic_job(name, replica("worker", 2, annotations=notes, restart=("Never", 0)))
    if kind == "DeepSpeedJob":
        return deepspeed_job(name, 2, annotations=notes, runPolicy={"backoffLimit": 0})
    return colossalai_job(name, 2, launcher_annotations=notes)


def _templates(manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
    spec = manifest["spec"]
    if manifest["kind"] == "DeepSpeedJob":
        return [spec["worker"]["template"]]
    return [r["template"] for r in spec["replicaSpecs"]]


def _nowhere(manifest: dict[str, Any]) -> dict[str, Any]:
    """`manifest` with pods that no node will take."""
    out = copy.deepcopy(manifest)
    for template in _templates(out):
        template["spec"]["nodeSelector"] = dict(NOWHERE)
    return out


def _invalid(kind: str, name: str) -> dict[str, Any] | None:
    """A job the API server accepts and the operator fails with InvalidSpec."""
    if kind == "ColossalAIJob":
        return colossalai_job(name, 2, worker_container="trainer")  # not named "worker"
    if kind == "DeepSpeedJob":
        manifest = deepspeed_job(name, 2)
        worker = manifest["spec"]["worker"]["template"]["spec"]
        mount = {"name": "keys", "mountPath": "/root/.ssh"}  # the operator's SSH keys go there
        worker["containers"] = [
            container("proxy"),  # a sidecar first: beyond the CRD's rule
            {**worker["containers"][0], "volumeMounts": [mount]},
        ]
        worker["volumes"] = [{"name": "keys", "emptyDir": {}}]
        return manifest
    return None


def collect_job_states(jobs: Jobs, sdk: Client) -> dict[str, dict[str, dict[str, Any]]]:
    """Drive jobs of the three kinds through every state of the table above; return
    {state: {kind: live job}} (`invalid-spec` has no GenericJob)."""
    out: dict[str, dict[str, dict[str, Any]]] = {state: {} for state in STATES}
    ns = jobs.namespace
    names: dict[tuple[str, str], str] = {}
    for kind in KINDS:
        p = _PREFIX[kind]
        names.update(
            {
                (kind, "held"): f"st-{p}-held",
                (kind, "run"): f"st-{p}-run",
                (kind, "fail"): f"st-{p}-fail",
                (kind, "bad"): f"st-{p}-bad",
                (kind, "blocked"): f"st-{p}-blocked",
            }
        )
        # someone else's pod, holding the name of the blocked job's first pod
        held = f"{names[kind, 'blocked']}-{_FIRST_POD[kind]}"
        jobs.core_v1.create_namespaced_pod(
            ns,
            k8s.V1Pod(
                metadata=k8s.V1ObjectMeta(name=held),
                spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="c", image="x")]),
            ),
        )
    for kind in KINDS:
        held = _nowhere(_job(kind, names[kind, "held"]))
        out["created"][kind] = _create(jobs, held)
        jobs.create(
            _job(kind, names[kind, "run"]),
            _job(kind, names[kind, "fail"], ending=1),
            _job(kind, names[kind, "blocked"]),
        )
        bad = _invalid(kind, names[kind, "bad"])
        if bad is not None:
            jobs.create(bad)

    def live(kind: str, role: str, done: Callable[[dict[str, Any]], bool], what: str) -> Any:
        name = names[kind, role]
        return wait_for(
            lambda: jobs.read(name), lambda j: done(j), f"{kind} {name}: {what}", TIMEOUT
        )

    def status(job: Mapping[str, Any]) -> Mapping[str, Any]:
        return job.get("status") or {}

    def observed(job: Mapping[str, Any]) -> bool:
        return status(job).get("observedGeneration") == job["metadata"]["generation"]

    def phase(value: str) -> Callable[[dict[str, Any]], bool]:
        return lambda j: status(j).get("phase") == value and observed(j)

    def running_reason(value: str) -> Callable[[dict[str, Any]], bool]:
        return lambda j: condition(status(j), "Running").get("reason") == value and observed(j)

    for kind in KINDS:
        out["pending"][kind] = live(kind, "held", running_reason("Unschedulable"), "Unschedulable")
        out["running"][kind] = live(kind, "run", phase("Running"), "Running")
        out["failed"][kind] = live(kind, "fail", phase("Failed"), "Failed")
        out["blocked"][kind] = live(kind, "blocked", running_reason("NameConflict"), "NameConflict")
        if _invalid(kind, "x") is not None:
            out["invalid-spec"][kind] = live(kind, "bad", phase("Failed"), "InvalidSpec")

    # pausing: the API server refuses to delete one pod of the pending job
    held_pods = [f"{names[kind, 'held']}-{_WORKER_POD[kind]}" for kind in KINDS]
    for pod in held_pods:
        jobs.core_v1.patch_namespaced_pod(pod, ns, {"metadata": {"labels": {HOLD: "true"}}})
    with _refusing_deletes(jobs, HOLD, held_pods):
        for kind in KINDS:
            sdk.pause(kind, names[kind, "held"], ns)
        for kind in KINDS:
            out["pausing"][kind] = live(
                kind,
                "held",
                lambda j: condition(status(j), "Running").get("reason") == "Pausing"
                and observed(j),
                "Running=False Pausing",
            )
            pod = f"{names[kind, 'held']}-{_WORKER_POD[kind]}"
            jobs.core_v1.patch_namespaced_pod(pod, ns, {"metadata": {"labels": {HOLD: None}}})
    for kind in KINDS:
        out["paused"][kind] = live(
            kind,
            "held",
            lambda j: condition(status(j), "Paused").get("status") == "True" and observed(j),
            "Paused=True",
        )
        sdk.resume(kind, names[kind, "held"], ns)
    for kind in KINDS:
        out["resuming"][kind] = live(
            kind,
            "held",
            lambda j: status(j).get("phase") == "Resuming"
            and condition(status(j), "Running").get("reason") == "Unschedulable"
            and observed(j),
            "Resuming, its pods unschedulable",
        )

    # a spec edit that changes no pod, then the end of the running jobs
    for kind in KINDS:
        out["spec-edited"][kind] = _patch(jobs, kind, names[kind, "run"], _EDIT[kind])
    for kind in KINDS:
        out["spec-observed"][kind] = live(
            kind,
            "run",
            lambda j: phase("Running")(j) and j["metadata"]["generation"] > 1,
            "the edit observed",
        )
        for pod in sorted(jobs.pods(names[kind, "run"])):
            try:
                jobs.end_pod(pod, code=0)
            except ApiException as err:  # already cleaned up (cleanUpPolicy: Unfinished)
                if err.status != 404:
                    raise
    for kind in KINDS:
        out["succeeded"][kind] = live(kind, "run", phase("Succeeded"), "Succeeded")
    return out


@contextlib.contextmanager
def _refusing_deletes(jobs: Jobs, label: str, pods: list[str]) -> Iterator[None]:
    """A ValidatingAdmissionPolicy that refuses to delete the pods of the test's namespace
    labelled `label` (cluster-scoped: named after the namespace, removed afterwards). Entered
    once the API server refuses a dry-run delete of each of `pods` (policies load in a second)."""
    api = k8s.AdmissionregistrationV1Api(jobs.custom.api_client)
    name = f"t9k-test-hold-{jobs.namespace}"
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["DELETE"],
                        "resources": ["pods"],
                    }
                ]
            },
            "matchConditions": [
                {
                    "name": "held",
                    "expression": f"request.namespace == '{jobs.namespace}'"
                    f" && has(oldObject.metadata.labels)"
                    f" && '{label}' in oldObject.metadata.labels",
                }
            ],
            "validations": [{"expression": "false", "message": "held by the test"}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"]},
    }
    api.create_validating_admission_policy(policy)
    api.create_validating_admission_policy_binding(binding)
    try:
        for pod in pods:
            wait_for(
                lambda pod=pod: _refused(jobs, pod),
                bool,
                f"the API server to refuse to delete pod {pod}",
                TIMEOUT,
            )
        yield
    finally:
        api.delete_validating_admission_policy_binding(name)
        api.delete_validating_admission_policy(name)


def _refused(jobs: Jobs, pod: str) -> bool:
    try:
        jobs.core_v1.delete_namespaced_pod(pod, jobs.namespace, dry_run="All")
    except ApiException as err:
        if err.status in (403, 422):
            return True
        raise
    return False


def _create(jobs: Jobs, manifest: dict[str, Any]) -> dict[str, Any]:
    """Create a job; the API server's response (no status yet)."""
    kind = manifest["kind"]
    created = jobs.custom.create_namespaced_custom_object(
        models.GROUP, models.VERSION, jobs.namespace, models.JOB_KINDS[kind].PLURAL, manifest
    )
    jobs.created.append((kind, manifest["metadata"]["name"]))
    return dict(created)


def _patch(jobs: Jobs, kind: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
    """Merge-patch a job; the API server's response (the new spec, the old status)."""
    plural = models.JOB_KINDS[kind].PLURAL
    return dict(
        jobs.custom.patch_namespaced_custom_object(
            models.GROUP, models.VERSION, jobs.namespace, plural, name, body
        )
    )
