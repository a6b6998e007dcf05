"""The Argo CD health check of the three job kinds (t9k_sdk/argocd/health.lua), run as Argo CD
runs it (tests/argocd/runner.py): its test cases in Argo CD's format, the runner's fidelity to
Argo CD, and hostile input. The same script on live jobs: tests/cluster/test_argocd_health.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from t9k_sdk import argocd
from tests.argocd.runner import HEALTH_STATUSES, REPO, SCRIPT, ArgoLua, LuaError
from tools import argocd_testdata

DEPLOY = REPO / "deploy" / "argocd"


def _cases(kind: str) -> list[dict[str, Any]]:
    path = DEPLOY / Path(argocd.script_path(kind)).parent / "health_test.yaml"
    tests: list[dict[str, Any]] = yaml.safe_load(path.read_text())["tests"]
    return tests


def _load(kind: str, input_path: str) -> Any:
    return yaml.safe_load((DEPLOY / Path(argocd.script_path(kind)).parent / input_path).read_text())


# -- the test cases, in Argo CD's format ------------------------------------------------------


@pytest.mark.parametrize("kind", argocd.KINDS)
@pytest.mark.parametrize("open_libs", [False, True], ids=["argocd-sandbox", "open-libs"])
def test_every_health_test_case_passes(lua: ArgoLua, kind: str, open_libs: bool) -> None:
    """As Argo CD's TestLuaHealthScript: each inputPath gives exactly its healthStatus, with the
    kind's generated health.lua; in Argo CD's sandbox (what the controller runs) and with the
    standard libraries open (what Argo CD's own unit test runs)."""
    script = DEPLOY / argocd.script_path(kind)
    failures = []
    for case in _cases(kind):
        got = lua.health(_load(kind, case["inputPath"]), script, open_libs=open_libs)
        if got != case["healthStatus"]:
            failures.append(f"{case['inputPath']}: got {got}, want {case['healthStatus']}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("kind", argocd.KINDS)
def test_the_cases_cover_every_health_and_both_status_shapes(kind: str) -> None:
    cases = _cases(kind)
    assert {c["healthStatus"]["status"] for c in cases} >= {
        "Progressing",
        "Healthy",
        "Degraded",
        "Suspended",
        "Unknown",
    }
    objects = [_load(kind, c["inputPath"]) for c in cases]
    assert all(o["kind"] == kind for o in objects)
    statuses = [o.get("status") for o in objects if isinstance(o.get("status"), dict)]
    assert any("observedGeneration" in s for s in statuses)
    assert any("observedGeneration" not in s and s.get("phase") for s in statuses)


@pytest.mark.parametrize("kind", argocd.KINDS)
def test_every_testdata_file_has_a_case(kind: str) -> None:
    directory = DEPLOY / Path(argocd.script_path(kind)).parent
    listed = {c["inputPath"] for c in _cases(kind)}
    present = {f"testdata/{p.name}" for p in (directory / "testdata").iterdir()}
    assert present == listed


# -- generated files --------------------------------------------------------------------------


def test_deploy_argocd_is_what_the_generator_writes() -> None:
    """The committed copies of the script, the argocd-cm patch and the test cases are what
    `make argocd-health` writes from t9k_sdk/argocd and tools/argocd_testdata.py."""
    stale = [
        path
        for path, text in argocd.deploy_files().items()
        if not (DEPLOY / path).is_file() or (DEPLOY / path).read_text(encoding="utf-8") != text
    ]
    stale += [
        str(path.relative_to(DEPLOY))
        for path, text in argocd_testdata.files().items()
        if not path.is_file() or path.read_text(encoding="utf-8") != text
    ]
    assert not stale, f"out of date (run `make argocd-health`): {stale}"


def test_the_three_kinds_run_the_one_script() -> None:
    for kind in argocd.KINDS:
        assert (DEPLOY / argocd.script_path(kind)).read_text() == SCRIPT.read_text()


def test_the_patch_uses_argo_cds_documented_keys_and_carries_the_script() -> None:
    patch = argocd.argocd_cm_patch()
    assert (patch["apiVersion"], patch["kind"], patch["metadata"]["name"]) == (
        "v1",
        "ConfigMap",
        "argocd-cm",
    )
    assert "namespace" not in patch["metadata"]  # kustomize and kubectl supply it
    assert patch["data"] == {
        "resource.customizations.health.batch.tensorstack.dev_GenericJob": argocd.health_lua(),
        "resource.customizations.health.batch.tensorstack.dev_DeepSpeedJob": argocd.health_lua(),
        "resource.customizations.health.batch.tensorstack.dev_ColossalAIJob": argocd.health_lua(),
    }
    written = yaml.safe_load((DEPLOY / argocd.PATCH_FILE).read_text())
    assert written == patch


def test_config_map_key_names_the_kinds_it_knows() -> None:
    with pytest.raises(ValueError, match="'TFJob' is not one of GenericJob, DeepSpeedJob"):
        argocd.config_map_key("TFJob")


def test_the_script_calls_no_library_argo_cd_leaves_closed() -> None:
    """Argo CD opens only base, table, package and a safe os: string.find, math.floor or
    s:sub() would raise on the controller (even where its own unit tests, which open every
    library, pass)."""
    code = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', SCRIPT.read_text())  # string literals
    code = re.sub(r"--[^\n]*", "", code)  # comments
    assert "'" not in code, "the check reads only double-quoted strings"
    assert "[[" not in code, "the check reads only double-quoted strings"
    assert not re.search(r"\b(string|math|io|debug|coroutine|channel|utf8|os)\s*\.", code)
    assert not re.search(r"[\w)\]]:\w+\s*\(", code), "a method call on a string uses `string`"
    assert not re.search(r"\b(require|load|loadstring|dofile|setmetatable|rawset)\b", code)


# -- the runner behaves as Argo CD ------------------------------------------------------------


JOB = {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "GenericJob", "metadata": {}}


def test_the_runner_keeps_argo_cds_sandbox(lua: ArgoLua) -> None:
    uses_string = 'return {status = "Healthy", message = string.upper("x")}'
    with pytest.raises(LuaError, match="string"):
        lua.health(JOB, uses_string)
    assert lua.health(JOB, uses_string, open_libs=True) == {"status": "Healthy", "message": "X"}
    for closed in ("io.open('/etc/passwd')", "os.exit(3)", "os.getenv('HOME')", "math.floor(1)"):
        with pytest.raises(LuaError):
            lua.health(JOB, f"local x = {closed}\nreturn {{status = 'Healthy'}}")
    # What Argo CD does open: table, the safe os.time, and `require("os")`.
    ok = 'local os = require("os")\nlocal t = {}\ntable.insert(t, os.time())\nreturn {status = "Healthy"}'
    assert lua.health(JOB, ok) == {"status": "Healthy"}


def test_the_runner_judges_results_as_argo_cd(lua: ArgoLua) -> None:
    assert lua.health(JOB, 'return {status = "Sleeping"}') == {
        "status": "Unknown",
        "message": "Lua returned an invalid health status",
    }
    assert lua.health(JOB, "return nil") is None
    assert lua.health(JOB, "return {}") == {}
    with pytest.raises(LuaError, match="expect table output from Lua script, not string"):
        lua.health(JOB, 'return "Healthy"')
    with pytest.raises(LuaError, match="context deadline exceeded"):  # after 1 second
        lua.health(JOB, "while true do end")


def test_the_runner_converts_the_object_as_argo_cd(lua: ArgoLua) -> None:
    probe = (
        'return {status = "Healthy", message = type(obj.a) .. " " .. tostring(obj.a) .. " "'
        ' .. type(obj.n) .. " " .. tostring(#obj.l) .. " " .. tostring(obj.z)}'
    )
    got = lua.health({"a": 9007199254740993, "n": None, "l": [1, None, 3], "z": 0.5}, probe)
    # Numbers are Lua numbers (float64: 2**53 + 1 rounds); JSON null is nil, and drops out of a
    # list.
    assert got == {"status": "Healthy", "message": "number 9007199254740992 nil 2 0.5"}


# -- hostile input ----------------------------------------------------------------------------

LUA_SPECIAL = st.sampled_from(
    [
        "]]",
        "--[[",
        "\\",
        "%s%d",
        "\x00",
        "os.exit(1)",
        "'",
        '"',
        "\n",
        "..",
        "nil",
        "true",
        "Failed",
        "Stalled",
        "True",
        "Running",
        "Paused",
    ]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    LUA_SPECIAL,
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8) | LUA_SPECIAL, inner, max_size=4),
    max_leaves=20,
)
CONDITION = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(
            ["Failed", "Completed", "Paused", "Running", "Stalled", "Ready", "Reconciling"]
        )
        | JSON,
        "status": st.sampled_from(["True", "False", "Unknown"]) | JSON,
        "reason": LUA_SPECIAL | JSON,
        "message": LUA_SPECIAL | JSON,
    },
)
STATUS = st.fixed_dictionaries(
    {},
    optional={
        "phase": st.sampled_from(
            ["Pending", "Running", "Succeeded", "Failed", "Paused", "Resuming"]
        )
        | JSON,
        "observedGeneration": JSON,
        "conditions": st.lists(CONDITION | JSON, max_size=6) | JSON,
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    status=STATUS | JSON, metadata=st.fixed_dictionaries({}, optional={"generation": JSON}) | JSON
)
def test_no_status_makes_the_script_raise(lua: ArgoLua, status: Any, metadata: Any) -> None:
    """Whatever a status holds, the script returns a health Argo CD accepts, with a string
    message: never a Lua error (which Argo CD would show as the job's health)."""
    obj = {**JOB, "metadata": metadata, "status": status}
    got = lua.health(json.dumps(obj))
    assert got is not None
    assert got["status"] in HEALTH_STATUSES
    assert got["status"] != "Missing"
    assert isinstance(got.get("message"), str)
    assert got["message"]


def test_a_huge_status_stays_within_argo_cds_time_limit(lua: ArgoLua) -> None:
    """Argo CD gives a script one second of wall-clock time, converting `obj` included. A job
    of 5000 pods with 10000 conditions takes about a tenth of it; the limit is wall-clock on a
    shared machine, so one of three tries must make it."""
    conditions = [{"type": f"X{i}", "status": "True", "message": "x" * 100} for i in range(10_000)]
    conditions.append({"type": "Failed", "status": "True", "message": "boom"})
    replicas = [
        {"name": f"big-worker-{i}", "phase": "Running", "uid": "u" * 36} for i in range(5000)
    ]
    status = {
        "phase": "Running",
        "conditions": conditions,
        "tasks": [{"type": "worker", "replicas": replicas}],
    }
    errors = []
    for _ in range(3):
        try:
            got = lua.health({**JOB, "status": status})
        except LuaError as err:
            errors.append(str(err))
            continue
        assert got == {"status": "Degraded", "message": "boom"}
        return
    pytest.fail(f"three runs over Argo CD's time limit: {errors}")


def test_the_runner_is_built_on_the_gopher_lua_of_tools_versions() -> None:
    """tools/versions.sh keys the runner's cache by GOPHER_LUA_VERSION: the wrapper module must
    require that version (the one Argo CD v3.6.1 embeds)."""
    versions = (REPO / "tools" / "versions.sh").read_text()
    wanted = re.search(r"^GOPHER_LUA_VERSION=(\S+)$", versions, re.M)
    assert wanted is not None
    go_mod = (REPO / "tools" / "gobuild" / "argocd-lua" / "go.mod").read_text()
    assert f"github.com/yuin/gopher-lua {wanted.group(1)}\n" in go_mod
