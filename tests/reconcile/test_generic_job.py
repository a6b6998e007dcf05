"""GenericJob semantics of the pure reconcile core, pass by pass."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from t9k_sdk import codecs, models
from t9k_sdk._conventions import child_selector
from t9k_sdk.reconcile import Observed, reconcile
from t9k_sdk.reconcile.kinds.generic_job import GenericJobRules
from tests.sdk.manifests import generic_job, pod

from .sim import Sim


def gj(workers: int = 2, **spec: Any) -> dict[str, Any]:
    replica: dict[str, Any] = {"type": "worker", "replicas": workers, "template": pod("w")}
    policy = spec.pop("restart", None)
    if policy:
        replica["restartPolicy"] = policy
    return generic_job(replicaSpecs=[replica], **spec)


def test_new_job_creates_its_pods_with_names_labels_owner_and_never_restart() -> None:
    sim = Sim(gj(workers=2))
    plan = sim.step()
    assert [m["metadata"]["name"] for m in plan.create] == ["demo-worker-0", "demo-worker-1"]
    p = plan.create[1]
    assert p["spec"]["restartPolicy"] == "Never"
    labels = p["metadata"]["labels"]
    assert labels["genericjob"] == "demo"
    assert labels["genericjob-replica"] == "demo-worker-1"
    assert labels["tensorstack.dev/component"] == "genericjob"
    assert labels["tensorstack.dev/component-type"] == "user"
    assert labels["tensorstack.dev/owner-name"] == "demo"
    assert (labels["job-name"], labels["replica-type"], labels["replica-index"]) == (
        "demo",
        "worker",
        "1",
    )
    assert labels["replica-name"] == "demo-worker-1"
    assert labels["group-name"] == "batch.tensorstack.dev"
    assert plan.create[0]["metadata"]["labels"]["job-role"] == "master"
    assert "job-role" not in labels
    (owner,) = p["metadata"]["ownerReferences"]
    assert owner == {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "GenericJob",
        "name": "demo",
        "uid": "job-uid",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert p["metadata"]["namespace"] == "ns"
    assert (
        child_selector("GenericJob", "demo")
        == "tensorstack.dev/component=genericjob,tensorstack.dev/owner-name=demo"
    )
    assert sim.phase == "Pending"
    assert sim.condition("Initialized")["status"] == "True"
    assert sim.replica("demo-worker-0")["phase"] == "Creating"
    assert "SuccessfulCreatePod" in sim.reasons()


def test_passes_are_idempotent_and_status_written_only_on_change() -> None:
    sim = Sim(gj())
    sim.step()
    again = sim.step()  # pods exist now: nothing to create
    assert again.create == ()
    steady = sim.settle()
    assert steady.status is None  # unchanged: no write
    # the same inputs always give the same plan
    assert reconcile(sim.job, sim.observed(), now=sim.now) == reconcile(
        sim.job, sim.observed(), now=sim.now
    )


def test_running_then_default_success_when_all_replicas_succeed() -> None:
    sim = Sim(gj())
    sim.step()
    sim.run()
    sim.step()
    assert sim.phase == "Running"
    assert sim.condition("Running") == {
        "type": "Running",
        "status": "True",
        "lastTransitionTime": "2026-01-01T00:00:02Z",
        "reason": "-",
        "message": "All pods are running normally.",
    }
    sim.finish("demo-worker-0")
    sim.step()
    assert sim.phase == "Running"  # worker-1 still running
    sim.finish("demo-worker-1")
    plan = sim.step()
    assert plan.finished
    assert sim.phase == "Succeeded"
    assert sim.condition("Completed")["status"] == "True"
    assert sim.condition("Failed")["status"] == "False"
    assert sim.condition("Running")["reason"] == "Succeeded"
    assert sim.status["aggregate"]["succeeded"] == 2
    assert "Succeeded" in sim.reasons()


def test_success_rule_and_failure_rule_messages() -> None:
    sim = Sim(
        gj(
            workers=4,
            successRules=[{"worker": [0]}],
            failureRules=[{"worker": [0]}, {"worker": [1]}],
        )
    )
    sim.step()
    sim.run()
    sim.finish("demo-worker-1", code=127)
    sim.step()
    assert sim.phase == "Failed"
    failed = sim.condition("Failed")
    assert failed["status"] == "True"
    assert failed["message"] == 'The job is failed with rule: {"worker":["1"]}'
    assert (
        sim.condition("ReplicaFailure")["message"]
        == "Pod[demo-worker-1] exited with error code 127"
    )

    ok = Sim(gj(workers=4, successRules=[{"worker": [0]}]))
    ok.step()
    ok.run()
    ok.finish("demo-worker-0")
    ok.step()
    assert ok.phase == "Succeeded"  # the other three still run: the rule names worker-0 only


def test_default_failure_is_any_replica_failing_for_good() -> None:
    sim = Sim(gj())
    sim.step()
    sim.run()
    sim.finish("demo-worker-1", code=3)
    sim.step()
    assert sim.phase == "Failed"
    assert (
        sim.condition("Failed")["message"]
        == "The job is failed: Pod[demo-worker-1] exited with error code 3"
    )


def test_job_fails_when_no_success_rule_can_be_met() -> None:
    sim = Sim(gj(successRules=[{"worker": [0, 1]}], failureRules=[{"worker": [0, 1]}]))
    sim.step()
    sim.run()
    sim.finish("demo-worker-0", code=1)
    sim.step()
    assert sim.phase == "Failed"
    assert sim.condition("Failed")["message"] == (
        "The job is failed: no success rule can be met any more:"
        " Pod[demo-worker-0] exited with error code 1"
    )


# (id, spec rules, pods that finish with their exit codes, expected phase, Failed message)
FINISHES: list[tuple[str, dict[str, Any], dict[str, int], str, str | None]] = [
    (
        "failure-rules-only-an-unnamed-replica-fails-the-rest-succeed",
        {"failureRules": [{"worker": [0]}]},
        {"demo-worker-0": 0, "demo-worker-1": 2, "demo-worker-2": 0},
        "Failed",
        "The job is failed: without successRules every replica must succeed,"
        " but Pod[demo-worker-1] exited with error code 2",
    ),
    (
        "failure-rules-only-fails-as-soon-as-success-is-impossible",
        {"failureRules": [{"worker": [0, 1]}]},
        {"demo-worker-2": 137},
        "Failed",
        "The job is failed: without successRules every replica must succeed,"
        " but Pod[demo-worker-2] exited with error code 137",
    ),
    (
        "failure-rules-only-all-succeed",
        {"failureRules": [{"worker": [0]}]},
        {"demo-worker-0": 0, "demo-worker-1": 0, "demo-worker-2": 0},
        "Succeeded",
        None,
    ),
    (
        "failure-rule-met-first",
        {"failureRules": [{"worker": [0]}]},
        {"demo-worker-0": 1, "demo-worker-1": 1},
        "Failed",
        'The job is failed with rule: {"worker":["0"]}',
    ),
    (
        "success-rule-still-possible-keeps-running",
        {
            "successRules": [{"worker": [0]}, {"worker": [1]}],
            "failureRules": [{"worker": [0, 1, 2]}],
        },
        {"demo-worker-0": 1, "demo-worker-2": 1},
        "Running",
        None,
    ),
    (
        "every-success-rule-broken-names-the-failed-replicas",
        {
            "successRules": [{"worker": [0]}, {"worker": [1, 2]}],
            "failureRules": [{"worker": [0, 1]}],
        },
        {"demo-worker-0": 1, "demo-worker-2": 143},
        "Failed",
        "The job is failed: no success rule can be met any more:"
        " Pod[demo-worker-0] exited with error code 1, Pod[demo-worker-2] exited with error code 143",
    ),
    (
        "success-rule-met-while-an-unnamed-replica-failed",
        {"successRules": [{"worker": [0]}], "failureRules": [{"worker": [1, 2]}]},
        {"demo-worker-2": 1, "demo-worker-0": 0},
        "Succeeded",
        None,
    ),
]


@pytest.mark.parametrize(
    ("rules", "finishes", "phase", "message"),
    [c[1:] for c in FINISHES],
    ids=[c[0] for c in FINISHES],
)
def test_generic_job_finishes_as_soon_as_its_outcome_is_decided(
    rules: dict[str, Any], finishes: dict[str, int], phase: str, message: str | None
) -> None:
    sim = Sim(gj(workers=3, **rules))
    sim.step()
    sim.run()
    sim.step()
    for name, code in finishes.items():
        sim.finish(name, code=code)
    plan = sim.step()
    assert sim.phase == phase
    assert plan.finished is (phase != "Running")
    if message is not None:
        assert sim.condition("Failed") is not None
        assert sim.condition("Failed")["message"] == message
        assert sim.condition("Completed")["status"] == "True"


def test_the_failure_message_lists_a_few_failed_replicas_and_counts_the_rest() -> None:
    sim = Sim(
        gj(workers=9, successRules=[{"worker": list(range(8))}], failureRules=[{"worker": [8]}])
    )
    sim.step()
    sim.run()
    for i in range(8):
        sim.finish(f"demo-worker-{i}", code=1)
    sim.step()
    assert sim.condition("Failed")["message"] == (
        "The job is failed: no success rule can be met any more:"
        + "".join(
            f"{',' if i else ''} Pod[demo-worker-{i}] exited with error code 1" for i in range(3)
        )
        + ", and 5 more"
    )


def test_a_job_ends_once_every_replica_finished_even_if_its_rules_cannot_decide() -> None:
    # a rule naming a replica that does not exist (the SDK and the CRD reject it) can never be
    # met; once every replica has finished for good the job must still end
    rules = _rules_unchecked(gj(), success_rules=[{"worker": [5]}])
    done = {"demo-worker-0": "Succeeded", "demo-worker-1": "Succeeded"}
    assert rules.outcome({"demo-worker-0": "Succeeded"}, {}) is None
    assert rules.outcome(done, {}) == (
        "Failed",
        "The job is failed: every replica has finished, but no success rule was met",
    )


@pytest.mark.parametrize("rules", [{"successRules": [{}]}, {"successRules": [{"worker": []}]}])
def test_an_empty_success_rule_never_finishes_a_job_before_its_replicas_run(
    rules: dict[str, Any],
) -> None:
    # the API server rejects such a job (CEL); one created before that rule is refused whole
    sim = Sim(gj(**rules))
    plan = sim.step()
    assert plan.create == ()
    assert sim.phase == "Failed"
    assert sim.condition("Failed")["reason"] == "InvalidSpec"
    assert "spec.successRules[0]" in sim.condition("Failed")["message"]


def _rules_unchecked(job: dict[str, Any], **rules: Any) -> GenericJobRules:
    """The kind rules of a job whose finish rules bypass validation (as if the SDK had no
    rule against them): what the core itself makes of such rules."""
    model = codecs.from_manifest(job)
    assert isinstance(model, models.GenericJob)
    spec = model.spec.model_copy(update=rules)
    return GenericJobRules(model.model_copy(update={"spec": spec}))


def test_the_core_itself_never_counts_an_empty_rule_as_met() -> None:
    rules = _rules_unchecked(gj(), success_rules=[{}, {"worker": []}], failure_rules=[{}])
    assert rules.outcome({}, {}) is None  # nothing has run: nothing is decided
    one_done = {"demo-worker-0": "Succeeded"}
    assert rules.outcome(one_done, {}) is None  # empty rules fall back to: every replica
    all_done = {"demo-worker-0": "Succeeded", "demo-worker-1": "Succeeded"}
    assert rules.outcome(all_done, {}) == ("Succeeded", "The job has finished successfully.")


def test_on_failure_restarts_within_limit_and_counts_per_type() -> None:
    sim = Sim(gj(workers=1, restart={"policy": "OnFailure", "limit": 2}))
    sim.step()
    for n in (1, 2):
        sim.run()
        sim.finish("demo-worker-0", code=1)
        plan = sim.step()  # deletes the failed pod
        assert [d.name for d in plan.delete] == ["demo-worker-0"]
        assert sim.phase != "Failed"
        plan = sim.step()  # recreates it and counts the restart
        assert [m["metadata"]["name"] for m in plan.create] == ["demo-worker-0"]
        assert sim.task("worker")["restartCount"] == n
    sim.run()
    sim.finish("demo-worker-0", code=1)
    sim.step()
    assert sim.phase == "Failed"  # budget spent
    assert sim.task("worker")["restartCount"] == 2
    assert "RestartingPod" in sim.reasons()


@pytest.mark.parametrize(
    ("policy", "code", "restarted"),
    [
        ("ExitCode", 137, True),  # 128-255: retryable
        ("ExitCode", 255, True),
        ("ExitCode", 127, False),  # 1-127: permanent
        ("ExitCode", 1, False),
        ("Never", 137, False),
        ("OnFailure", 1, True),
        ("Always", 1, True),
    ],
)
def test_restart_policies_on_failure(policy: str, code: int, restarted: bool) -> None:
    sim = Sim(gj(workers=1, restart={"policy": policy, "limit": 3}))
    sim.step()
    sim.run()
    sim.finish("demo-worker-0", code=code)
    plan = sim.step()
    assert bool(plan.delete) is restarted
    assert (sim.phase == "Failed") is not restarted


def test_always_restarts_succeeded_replicas_until_the_budget_is_spent() -> None:
    sim = Sim(gj(workers=1, restart={"policy": "Always", "limit": 1}))
    sim.step()
    sim.run()
    sim.finish("demo-worker-0")
    assert sim.step().delete
    sim.step()
    assert sim.task("worker")["restartCount"] == 1
    sim.run()
    sim.finish("demo-worker-0")
    sim.step()
    assert sim.phase == "Succeeded"


def test_default_limit_zero_means_no_restart() -> None:
    sim = Sim(gj(workers=1))  # restartPolicy absent: OnFailure with limit 0
    sim.step()
    sim.run()
    sim.finish("demo-worker-0", code=1)
    plan = sim.step()
    assert not plan.delete
    assert sim.phase == "Failed"


def test_the_restart_limit_is_each_replicas_own_and_restart_count_is_the_types_sum() -> None:
    """T9k: restartPolicy.limit is "the maximum restarts of the replica" (当前副本的最大重启次数),
    tasks[].restartCount the sum over the type. One worker's restarts never use up another's."""
    sim = Sim(gj(workers=2, restart={"policy": "OnFailure", "limit": 1}))
    sim.step()
    sim.run()
    sim.finish("demo-worker-0", code=1)
    sim.finish("demo-worker-1", code=1)
    plan = sim.step()
    assert sorted(d.name for d in plan.delete) == ["demo-worker-0", "demo-worker-1"]
    sim.step()
    assert sim.task("worker")["restartCount"] == 2
    assert [sim.replica(f"demo-worker-{i}")["restartCount"] for i in (0, 1)] == [1, 1]
    sim.run()
    sim.step()
    assert sim.phase == "Running"
    # worker-0's one restart is spent: its next failure is for good; worker-1 is untouched
    sim.finish("demo-worker-0", code=1)
    plan = sim.step()
    assert not plan.delete
    assert sim.phase == "Failed"


def test_a_replicas_restart_count_survives_each_of_its_restarts() -> None:
    sim = Sim(gj(workers=2, restart={"policy": "OnFailure", "limit": 2}))
    sim.step()
    sim.run()
    for round in (1, 2):
        sim.finish("demo-worker-1", code=1)
        sim.step()  # deleted
        sim.step()  # recreated
        sim.run()
        sim.step()
        assert sim.replica("demo-worker-1")["restartCount"] == round
        assert "restartCount" not in sim.replica("demo-worker-0")
    sim.finish("demo-worker-1", code=1)
    plan = sim.step()
    assert not plan.delete  # its limit of 2 is spent
    assert sim.phase == "Failed"
    assert sim.task("worker")["restartCount"] == 2


def test_interrupted_pass_never_counts_a_restart_twice() -> None:
    sim = Sim(gj(workers=1, restart={"policy": "OnFailure", "limit": 3}))
    sim.step()
    sim.run()
    sim.finish("demo-worker-0", code=1)
    sim.step()  # delete
    plan = sim.step(apply=False)  # plans the re-creation and the count...
    sim.apply(plan, stop_after="status")  # ...but the operator dies after writing status
    assert sim.task("worker")["restartCount"] == 1
    assert "demo-worker-0" not in sim.pods
    plan = sim.step()  # the next pass creates the pod without counting again
    assert [m["metadata"]["name"] for m in plan.create] == ["demo-worker-0"]
    sim.settle()
    assert sim.task("worker")["restartCount"] == 1


def test_pod_deleted_by_someone_else_while_running_is_recreated_without_counting() -> None:
    sim = Sim(gj(workers=1, restart={"policy": "OnFailure", "limit": 3}))
    sim.step()
    sim.run()
    sim.step()
    sim.vanish("demo-worker-0")  # e.g. preempted
    plan = sim.step()
    assert [m["metadata"]["name"] for m in plan.create] == ["demo-worker-0"]
    assert sim.task("worker")["restartCount"] == 0


@pytest.mark.parametrize(
    ("policy", "deleted"),
    [
        ("All", {"demo-worker-0", "demo-worker-1"}),
        ("Unfinished", {"demo-worker-1"}),
        ("None", set()),
    ],
)
def test_clean_up_policy(policy: str, deleted: set[str]) -> None:
    sim = Sim(gj(successRules=[{"worker": [0]}], cleanUpPolicy=policy))
    sim.step()
    sim.run()
    sim.finish("demo-worker-0")
    plan = sim.step()
    assert sim.phase == "Succeeded"
    assert {d.name for d in plan.delete} == deleted
    sim.drain_deletions()
    sim.settle()
    assert sim.status["aggregate"]["deleted"] == len(deleted)


def test_variables_are_substituted_in_command_args_and_env() -> None:
    template = pod(
        "w",
        command=["python", "train.py", "--type=$(type)", "--rank=$(rank)"],
        args=["--workers=$(replicas[worker])", "--ps=$(replicas[ps])", "$(HOME)/x"],
        env=[
            {"name": "PEER", "value": "$(service.worker[1].host):$(service.port[http])"},
            {"name": "FROM", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
    )
    job = generic_job(
        service={"ports": [{"name": "http", "port": 2222}]},
        replicaSpecs=[
            {"type": "ps", "template": pod()},
            {"type": "worker", "replicas": 2, "template": template},
        ],
    )
    plan = Sim(job).step()
    pods = {m["metadata"]["name"]: m for m in plan.create if m["kind"] == "Pod"}
    c = pods["demo-worker-1"]["spec"]["containers"][0]
    assert c["command"] == ["python", "train.py", "--type=worker", "--rank=1"]
    assert c["args"] == ["--workers=2", "--ps=1", "$(HOME)/x"]  # unknown variables are kept
    assert c["env"][0] == {"name": "PEER", "value": "demo-worker-1:2222"}
    assert c["env"][1] == {
        "name": "FROM",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
    }


def _kubelet_expand(text: str, env: dict[str, str]) -> str:
    """What the kubelet makes of a command, arg or env value: a port of Kubernetes'
    third_party/forked/golang/expansion.Expand (one left-to-right pass; `$$` is a literal `$`;
    an unknown `$(x)` stays as written)."""
    out: list[str] = []
    checkpoint = cursor = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            rest = text[cursor + 1 :]
            if rest[0] == "$":
                out.append("$")
                advance = 1
            elif rest[0] == "(":
                close = rest.find(")")
                if close == -1:
                    out.append("$(")
                    advance = 1
                else:
                    name = rest[1:close]
                    out.append(env.get(name, f"$({name})"))
                    advance = close + 1
            else:
                out.append("$" + rest[0])
                advance = 1
            cursor += advance
            checkpoint = cursor + 1
        cursor += 1
    return "".join(out) + text[checkpoint:]


# (written in the job, what the process of demo-worker-1 sees; HOME=/root is in its environment)
EXPANSIONS = [
    ("--rank=$(rank)", "--rank=1"),
    ("$(type)-$(rank)/$(replicas[worker])", "worker-1/2"),
    ("$$(rank)", "$(rank)"),  # the Kubernetes escape: a literal $(rank)
    ("$$$(rank)", "$1"),
    ("$$$$(rank)", "$$(rank)"),
    ("$$(HOME)", "$(HOME)"),
    ("$(HOME)/ckpt", "/root/ckpt"),  # left for the kubelet
    ("$(nope)", "$(nope)"),
    ("$(rank", "$(rank"),
    ("cost: 5$, $rank", "cost: 5$, $rank"),
    ("$((1+2))", "$((1+2))"),
    ("$", "$"),
    ("$(rank)$(", "1$("),
    ("$($(rank)", "$($(rank)"),  # a variable runs to the first `)`: its name is `$(rank`
    ("a$(b$(rank)c", "a$(b$(rank)c"),
    ("$(rank) $( $(", "1 $( $("),
]


@pytest.mark.parametrize(("written", "seen"), EXPANSIONS)
def test_variables_follow_the_kubernetes_expansion_rules_and_escape(
    written: str, seen: str
) -> None:
    template = pod("w", command=[written], args=[written], env=[{"name": "X", "value": written}])
    plan = Sim(
        generic_job(replicaSpecs=[{"type": "worker", "replicas": 2, "template": template}])
    ).step()
    c = next(m for m in plan.create if m["metadata"]["name"] == "demo-worker-1")["spec"][
        "containers"
    ][0]
    home = {"HOME": "/root"}
    assert [_kubelet_expand(a, home) for a in (*c["command"], *c["args"])] == [seen, seen]
    assert _kubelet_expand(c["env"][0]["value"], home) == seen


class _CountingStr(str):
    """A string that counts the characters its `find` calls read."""

    read = 0

    def find(self, sub: str, start: Any = None, end: Any = None) -> int:  # type: ignore[override]
        begin = 0 if start is None else start
        found = super().find(sub, begin)
        _CountingStr.read += (len(self) if found == -1 else found + len(sub)) - begin
        return found


@pytest.mark.parametrize(
    "unit",
    ["$(", "$(rank) $(", "$$(", "x$(nope", "$(replicas[worker]"],
    ids=["open", "closed-then-open", "escape", "unknown-unclosed", "unclosed-variable"],
)
def test_substitution_reads_a_string_once_however_many_unclosed_variables(unit: str) -> None:
    """A `$(` with no `)` after it used to rescan to the end for every occurrence: a 1.2 MB
    argument took 18 s per pod. The work is now linear: 4x the text reads at most 4x as much."""
    rules = GenericJobRules(codecs.from_manifest(gj()))  # type: ignore[arg-type]
    slot = rules.slots()[1]

    def work(n: int) -> int:
        _CountingStr.read = 0
        rules.substitute(_CountingStr(unit * n), slot)
        return _CountingStr.read

    # what the process sees is what the kubelet alone would make of the text
    text = unit * 50
    seen = _kubelet_expand(text, {"rank": "1", "replicas[worker]": "2"})
    assert _kubelet_expand(rules.substitute(text, slot), {}) == seen

    n = 2_000
    small, double, quadruple = work(n), work(2 * n), work(4 * n)
    assert small <= 2 * len(unit) * n  # every character read at most twice
    assert double <= 2.05 * small, (small, double)
    assert quadruple <= 4.1 * small, (small, quadruple)


def test_variables_are_substituted_in_debug_and_resume_commands() -> None:
    job = gj(
        runMode={
            "debug": {
                "enabled": True,
                "replicaSpecs": [
                    {"type": "worker", "command": ["sh", "-c", "echo $(type) $(rank)"]}
                ],
            },
            "pause": {
                "resumeSpecs": [
                    {
                        "type": "worker",
                        "command": ["resume.sh", "--rank=$(rank)"],
                        "args": ["--of=$(replicas[worker])", "$$(rank)"],
                    }
                ]
            },
        }
    )
    sim = Sim(job)
    plan = sim.step()
    debug = {m["metadata"]["name"]: m["spec"]["containers"][0] for m in plan.create}
    assert debug["demo-worker-1"]["command"] == ["sh", "-c", "echo worker 1"]

    sim.job["spec"]["runMode"]["debug"]["enabled"] = False
    sim.job["spec"]["runMode"]["pause"]["enabled"] = True
    sim.step()
    sim.drain_deletions()
    sim.step()
    sim.job["spec"]["runMode"]["pause"]["enabled"] = False
    plan = sim.step()
    resumed = {m["metadata"]["name"]: m["spec"]["containers"][0] for m in plan.create}
    assert resumed["demo-worker-1"]["command"] == ["resume.sh", "--rank=1"]
    assert resumed["demo-worker-1"]["args"] == ["--of=2", "$$(rank)"]


def test_service_variables_stay_without_spec_service() -> None:
    template = pod("w", command=["echo", "$(service.worker[0].host)", "$(service.port[http])"])
    plan = Sim(generic_job(replicaSpecs=[{"type": "worker", "template": template}])).step()
    assert plan.create[0]["spec"]["containers"][0]["command"][1:] == [
        "$(service.worker[0].host)",
        "$(service.port[http])",
    ]


def test_a_headless_service_per_replica_when_asked() -> None:
    sim = Sim(gj(service={"ports": [{"name": "http", "port": 2222}]}))
    plan = sim.step()
    services = [m for m in plan.create if m["kind"] == "Service"]
    assert [s["metadata"]["name"] for s in services] == ["demo-worker-0", "demo-worker-1"]
    assert services[0]["spec"] == {
        "clusterIP": "None",
        "publishNotReadyAddresses": True,
        "selector": {"genericjob-replica": "demo-worker-0"},
        "ports": [{"port": 2222, "name": "http"}],
    }
    kinds = [m["kind"] for m in plan.create]
    assert kinds == ["Pod", "Pod", "Service", "Service"]  # the pods first, as Kubeflow's operator
    sim.settle()
    assert not sim.step().create  # and not created twice


def test_debug_mode_replaces_the_command_and_never_finishes() -> None:
    template = {
        "spec": {
            "initContainers": [{"name": "init", "image": "busybox"}],
            "containers": [{"name": "w", "image": "i", "command": ["train"], "args": ["--x"]}],
        }
    }
    job = generic_job(
        replicaSpecs=[
            {"type": "worker", "template": template},
            {"type": "ps", "template": template},
        ],
        runMode={
            "debug": {
                "enabled": True,
                "replicaSpecs": [
                    {"type": "ps", "skipInitContainer": True, "command": ["/usr/bin/sshd"]}
                ],
            }
        },
    )
    sim = Sim(job)
    plan = sim.step()
    worker, ps = (m["spec"] for m in plan.create)
    assert worker["containers"][0]["command"] == ["sleep", "inf"]
    assert "args" not in worker["containers"][0]
    assert "initContainers" in worker
    assert ps["containers"][0]["command"] == ["/usr/bin/sshd"]
    assert "initContainers" not in ps
    sim.run()
    sim.finish("demo-worker-0")
    sim.finish("demo-ps-0")
    sim.step()
    assert sim.phase not in ("Succeeded", "Failed")
    assert sim.condition("Completed")["reason"] == "Debug"


def test_pause_deletes_pods_gracefully_and_resume_applies_resume_specs() -> None:
    job = gj(
        runMode={
            "pause": {
                "resumeSpecs": [
                    {"type": "worker", "command": ["resume.sh"], "args": ["--from-checkpoint"]}
                ]
            }
        }
    )
    sim = Sim(job)
    sim.step()
    sim.run()
    sim.step()
    sim.job["spec"]["runMode"]["pause"]["enabled"] = True
    plan = sim.step()
    assert {(d.name, d.grace_period_seconds) for d in plan.delete} == {
        ("demo-worker-0", None),
        ("demo-worker-1", None),
    }
    assert sim.phase == "Paused"
    assert sim.condition("Paused") is None  # pausing: the pods are not yet being deleted
    assert sim.condition("Running")["reason"] == "Pausing"
    sim.step()
    # T9k: Paused once all replicas are deleted or being deleted (here: terminating)
    assert all(p["metadata"].get("deletionTimestamp") for p in sim.pods.values())
    assert sim.condition("Paused")["status"] == "True"
    assert sim.condition("Running")["reason"] == "Paused"
    sim.drain_deletions()
    sim.step()
    assert sim.condition("Paused")["status"] == "True"
    assert sim.status["aggregate"]["deleted"] == 2
    assert not sim.step().create  # no pods while paused

    sim.job["spec"]["runMode"]["pause"]["enabled"] = False
    plan = sim.step()
    assert sim.phase == "Resuming"
    c = plan.create[0]["spec"]["containers"][0]
    assert (c["command"], c["args"]) == (["resume.sh"], ["--from-checkpoint"])
    sim.run()
    sim.step()
    assert sim.phase == "Running"
    assert sim.condition("Paused")["reason"] == "Resumed"


def test_t9k_scheduler_gets_a_pod_group_and_scheduler_labels() -> None:
    job = generic_job(
        scheduler={"t9kScheduler": {"queue": "default", "priority": 50}},
        replicaSpecs=[
            {"type": "ps", "template": pod()},
            {"type": "worker", "replicas": 4, "template": pod()},
        ],
    )
    plan = Sim(job).step()
    group = plan.create[0]
    assert group["apiVersion"] == "scheduler.tensorstack.dev/v1beta1"
    assert group["kind"] == "PodGroup"
    assert group["metadata"]["name"] == "demo"
    assert group["spec"] == {"minMember": 5, "queue": "default", "priority": 50}
    assert group["metadata"]["ownerReferences"][0]["uid"] == "job-uid"
    pod_ = plan.create[-1]
    assert pod_["spec"]["schedulerName"] == "t9k-scheduler"
    labels = pod_["metadata"]["labels"]
    assert labels["scheduler.tensorstack.dev/group-name"] == "demo"
    assert labels["scheduler.tensorstack.dev/queue"] == "default"
    assert labels["scheduler.tensorstack.dev/role"] == "worker"


def test_unschedulable_pods_show_in_the_running_condition_with_the_scheduler_message() -> None:
    sim = Sim(gj(workers=1))
    sim.step()
    message = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    sim.unschedulable("demo-worker-0", message)
    sim.step()
    running = sim.condition("Running")
    assert (running["status"], running["reason"]) == ("False", "Unschedulable")
    assert running["message"] == f"Pod[demo-worker-0] cannot be scheduled: {message}"
    assert sim.events[-1].type == "Warning"
    assert sim.events[-1].reason == "Unschedulable"
    sim.step()
    assert [e.reason for e in sim.events].count("Unschedulable") == 1  # once per transition


def test_image_pull_errors_show_in_the_running_condition() -> None:
    sim = Sim(gj(workers=1))
    sim.step()
    sim.waiting("demo-worker-0", "ImagePullBackOff", 'Back-off pulling image "nope"')
    sim.step()
    running = sim.condition("Running")
    assert running["reason"] == "ImagePullBackOff"
    assert "Pod[demo-worker-0] container w is waiting" in running["message"]


def test_invalid_spec_fails_the_job_once_naming_the_field() -> None:
    job = gj()
    job["spec"]["replicaSpecs"][0]["replicas"] = -1
    sim = Sim(job)
    plan = sim.step()
    assert plan.create == ()
    assert plan.finished
    assert plan.requeue_after is None
    assert sim.phase == "Failed"
    failed = sim.condition("Failed")
    assert failed["reason"] == "InvalidSpec"
    assert "spec.replicaSpecs[0].replicas" in failed["message"]
    assert sim.step().status is None  # no retry storm, no rewrite


def test_pods_not_in_the_spec_are_deleted() -> None:
    sim = Sim(gj(workers=3))
    sim.step()
    sim.run()
    sim.step()
    sim.job["spec"]["replicaSpecs"][0]["replicas"] = 1
    plan = sim.step()
    assert {d.name for d in plan.delete} == {"demo-worker-1", "demo-worker-2"}


def test_finished_job_creates_nothing_more() -> None:
    sim = Sim(gj(workers=1))
    sim.step()
    sim.run()
    sim.finish("demo-worker-0")
    sim.step()
    sim.vanish("demo-worker-0")
    plan = sim.step()
    assert plan.create == ()
    assert sim.phase == "Succeeded"
    assert sim.replica("demo-worker-0")["phase"] == "Deleted"


def test_status_records_pod_uids_container_states_and_exit_codes() -> None:
    sim = Sim(gj(workers=1, restart={"policy": "Never"}))
    sim.step()
    sim.run()
    sim.finish("demo-worker-0", code=2)
    sim.step()
    entry = sim.replica("demo-worker-0")
    assert entry["uid"].startswith("uid-")
    assert entry["phase"] == "Failed"
    assert entry["containers"] == [
        {"name": "w", "state": "Terminated", "exitCode": 2, "reason": "Error"}
    ]


def test_observed_input_order_does_not_matter() -> None:
    sim = Sim(gj(workers=3))
    sim.step()
    sim.run()
    obs = sim.observed()
    reverse = Observed(pods=tuple(reversed(obs.pods)))
    assert reconcile(sim.job, obs, now=sim.now) == reconcile(sim.job, reverse, now=sim.now)


def test_a_replica_count_edited_mid_create_ends_with_the_pods_of_the_new_count() -> None:
    sim = Sim(gj(workers=3, service={"ports": [{"name": "http", "port": 8080}]}))
    first = sim.step(apply=False)
    assert [m["metadata"]["name"] for m in first.create if m["kind"] == "Pod"] == [
        "demo-worker-0",
        "demo-worker-1",
        "demo-worker-2",
    ]
    # The pass is cut short after two pods and their Services; then the job is scaled down.
    cut = ("demo-worker-2",)
    partial = replace(
        first,
        create=tuple(
            m
            for m in first.create
            if not (m["metadata"]["name"] in cut and m["kind"] in ("Pod", "Service"))
        ),
    )
    sim.apply(partial)
    sim.job["spec"]["replicaSpecs"][0]["replicas"] = 1
    plan = sim.step()
    assert [m["metadata"]["name"] for m in plan.create if m["kind"] == "Pod"] == []
    assert sorted((d.kind, d.name) for d in plan.delete) == [
        ("Pod", "demo-worker-1"),
        ("Service", "demo-worker-1"),
    ]
    sim.drain_deletions()
    sim.run("demo-worker-0")
    sim.settle()
    assert set(sim.pods) == {"demo-worker-0"}
    assert {name for kind, name in sim.others if kind == "Service"} == {"demo-worker-0"}
    kept = sim.pods["demo-worker-0"]["metadata"]["uid"]
    assert sim.phase == "Running"

    # Scaled up again: the new indices are created, the pod that stays is not.
    sim.job["spec"]["replicaSpecs"][0]["replicas"] = 3
    plan = sim.step()
    assert [m["metadata"]["name"] for m in plan.create if m["kind"] == "Pod"] == [
        "demo-worker-1",
        "demo-worker-2",
    ]
    sim.run()
    sim.settle()
    assert set(sim.pods) == {"demo-worker-0", "demo-worker-1", "demo-worker-2"}
    assert sim.pods["demo-worker-0"]["metadata"]["uid"] == kept
    assert sim.task("worker").get("restartCount", 0) == 0  # an edit is not a restart
    for name in ("demo-worker-0", "demo-worker-1", "demo-worker-2"):
        sim.finish(name)
    sim.settle()
    assert sim.phase == "Succeeded"


def _nodes(value: Any) -> set[int]:
    """The ids of every dict and list inside `value`."""
    if isinstance(value, dict):
        return {id(value)}.union(*(_nodes(v) for v in value.values()))
    if isinstance(value, list):
        return {id(value)}.union(*(_nodes(v) for v in value))
    return set()


def test_pods_of_one_replica_type_share_no_objects_with_each_other() -> None:
    template = pod(
        "w",
        env=[{"name": "A", "value": "1"}],
        resources={"limits": {"cpu": "1"}},
        volumeMounts=[{"name": "data", "mountPath": "/data"}],
    )
    template["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    job = generic_job(replicaSpecs=[{"type": "worker", "replicas": 2, "template": template}])
    plan = Sim(job).step()
    w0, w1 = (m for m in plan.create if m["kind"] == "Pod")
    assert not _nodes(w0) & _nodes(w1)  # editing one pod's manifest never changes the other
