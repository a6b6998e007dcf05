"""Every registered job kind is served everywhere a user meets the kinds.

The kind registry (`t9k_sdk._kinds.JOB_KINDS`) is the one list of job kinds. A kind registered
there must have its CRD, its CLI short name, its Pulumi component, its Argo CD health check, its
reconcile rules and its place in the operator's watches and permissions; each test below fails
naming the place where a registered kind is missing (or where a kind is listed that the registry
does not have).
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest

import t9k_sdk
from t9k_sdk import _conventions, _kinds, argocd, builders, codecs, crds, install, models
from t9k_sdk._kube.resources import JOB_RESOURCES, job_resource
from t9k_sdk.builders._common import _Builder
from t9k_sdk.cli import _app, _completion, _declare, _sources
from t9k_sdk.client.kinds import KINDS as CLIENT_KINDS
from t9k_sdk.client.kinds import resolve_kind
from t9k_sdk.reconcile.kinds import RULES, KindRules
from tests.sdk.scripts import gen_reference

REPO = Path(__file__).resolve().parents[2]
KINDS = _kinds.JOB_KINDS
NAMES = [k.kind for k in KINDS]


def _differ(place: str, found: typing.Iterable[str]) -> str:
    """The message of a list that does not match the registry: what is missing, what is extra."""
    found = list(found)
    missing = [n for n in NAMES if n not in found]
    extra = [n for n in found if n not in NAMES]
    return f"{place}: missing registered kinds {missing}, kinds the registry lacks {extra}"


# -- the registry itself ------------------------------------------------------------------------


def test_the_registry_lists_the_three_kinds_in_order() -> None:
    assert NAMES == ["GenericJob", "DeepSpeedJob", "ColossalAIJob"]
    assert [k.short_name for k in KINDS] == ["gj", "dj", "caij"]
    assert [k.plural for k in KINDS] == ["genericjobs", "deepspeedjobs", "colossalaijobs"]
    assert _kinds.SSH_KINDS == ("DeepSpeedJob", "ColossalAIJob")


def test_names_are_unique() -> None:
    for attribute in ("kind", "plural", "short_name", "singular"):
        values = [getattr(k, attribute) for k in KINDS]
        assert len(set(values)) == len(values), f"two registered kinds share a {attribute}"


def test_the_any_job_union_names_exactly_the_registered_models() -> None:
    """`AnyJob` is written out for mypy; it must be the registry's models, in its order."""
    assert typing.get_args(_kinds.AnyJob) == _kinds.MODELS
    assert codecs.AnyJob is _kinds.AnyJob
    discriminated = typing.get_args(typing.get_args(models.AnyJob)[0])
    assert discriminated == _kinds.MODELS, "t9k_sdk.models.AnyJob (the discriminated union)"


def test_the_wire_models_list_every_registered_kind() -> None:
    """`t9k_sdk.models.JOB_KINDS` and `LIST_KINDS` (public, below the registry) agree with it."""
    assert list(models.JOB_KINDS) == NAMES, _differ("t9k_sdk.models.JOB_KINDS", models.JOB_KINDS)
    assert [models.JOB_KINDS[k.kind] for k in KINDS] == list(_kinds.MODELS)
    assert list(models.LIST_KINDS) == [k.list_kind for k in KINDS], "t9k_sdk.models.LIST_KINDS"
    for k in KINDS:
        assert k.model.model_fields["kind"].default == k.kind
        assert models.LIST_KINDS[k.list_kind].model_fields["kind"].default == k.list_kind


def test_by_kind_finds_each_kind_and_refuses_others() -> None:
    for k in KINDS:
        assert _kinds.by_kind(k.kind) is k
    with pytest.raises(KeyError):
        _kinds.by_kind("PyTorchJob")


# -- what users meet: CRDs, manifests, the command line, Python, Pulumi, Argo CD ---------------


def test_every_kind_has_a_crd() -> None:
    generated = crds.generate_crds()
    kinds = [crd["spec"]["names"]["kind"] for crd in generated]
    assert kinds == NAMES, _differ("t9k_sdk.crds.generate_crds()", kinds)
    for k, crd in zip(KINDS, generated, strict=True):
        names = crd["spec"]["names"]
        assert crd["metadata"]["name"] == f"{k.plural}.{models.GROUP}"
        assert names["plural"] == k.plural
        assert names["singular"] == k.singular
        assert names["listKind"] == k.list_kind
        assert names["shortNames"] == [k.short_name]
        columns = [c["name"] for c in crd["spec"]["versions"][0]["additionalPrinterColumns"]]
        assert columns == ["Phase", *(c.name for c in k.printer_columns), "Ready", "Age"]


def test_every_kind_has_its_committed_crd() -> None:
    """`make crds` writes one file per kind; a registered kind without one was not regenerated."""
    committed = (REPO / "operator" / "deploy" / "crds").glob("*.yaml")
    text = "\n".join(p.read_text() for p in committed)
    missing = [k.kind for k in KINDS if f"name: {k.plural}.{models.GROUP}" not in text]
    assert not missing, f"operator/deploy/crds has no CRD of {missing}: run `make crds`"


def test_every_kind_is_read_from_a_manifest() -> None:
    """The parser picks the model by `kind`, and its errors name every kind."""
    for k in KINDS:
        manifest = {"apiVersion": models.API_VERSION, "kind": k.kind, "metadata": {"name": "x"}}
        with pytest.raises(t9k_sdk.InvalidManifestError) as caught:
            codecs.from_manifest(manifest)  # no spec: invalid, as the kind's model says
        assert f"{k.kind} 'x'" in str(caught.value)
        with pytest.raises(t9k_sdk.InvalidManifestError) as caught:
            codecs.from_manifest({"apiVersion": models.API_VERSION, "kind": k.kind.lower()})
        assert f"did you mean {k.kind!r}" in str(caught.value)
    with pytest.raises(t9k_sdk.InvalidManifestError) as caught:
        codecs.from_manifest({"apiVersion": models.API_VERSION})
    assert f"expected one of {', '.join(NAMES)}" in str(caught.value)


def test_every_kind_has_a_cli_short_name() -> None:
    """The parser and the completion scripts are built without importing the models (so that
    `--help` and Tab answer at once): their kind names are written out, and must be the
    registry's."""
    shorts = [k.short_name for k in KINDS]
    assert list(_completion._KINDS) == shorts, "t9k_sdk/cli/_completion.py: _KINDS"
    expected = (
        f"KIND is {', '.join(shorts[:-1])} or {shorts[-1]} (or {', '.join(NAMES)}, any case)."
    )
    assert expected == _declare.KINDS_HELP, "t9k_sdk/cli/_declare.py: KINDS_HELP"
    description = str(_app._parser().description)
    assert f"({', '.join(NAMES)})" in description, "t9k_sdk/cli/_app.py: the parser's description"


def test_every_kind_resolves_by_the_names_users_type() -> None:
    assert [k.kind for k in CLIENT_KINDS] == NAMES, _differ(
        "t9k_sdk.client.kinds.KINDS", [k.kind for k in CLIENT_KINDS]
    )
    for k in KINDS:
        for typed in (k.short_name, k.kind, k.kind.upper(), k.plural, k.singular):
            assert resolve_kind(typed).model is k.model


def test_every_kind_has_a_builder() -> None:
    """The builders a kind registers exist, are public and build that kind."""
    for k in KINDS:
        assert k.builders, f"{k.kind} registers no builder"
        for name in k.builders:
            assert name in builders.__all__, f"t9k_sdk.builders.__all__ lacks {name}"
            assert name in t9k_sdk.__all__, f"t9k_sdk.__all__ lacks {name}"
            cls = getattr(builders, name)
            assert typing.get_type_hints(cls.build)["return"] is k.model, name
    registered = {name for k in KINDS for name in k.builders}
    made_by_builders = {
        name
        for name in builders.__all__
        if isinstance(cls := getattr(builders, name), type) and issubclass(cls, _Builder)
    }
    assert made_by_builders == registered, "job builders in t9k_sdk.builders no kind registers"


def test_a_python_job_file_may_define_every_kind() -> None:
    types = _sources._job_types()
    for k in KINDS:
        assert k.model in types, f"t9k_sdk/cli/_sources.py reads no {k.kind} wire model"
        for name in k.builders:
            assert getattr(builders, name) in types, f"t9k_sdk/cli/_sources.py reads no {name}"


def test_every_kind_has_a_pulumi_component() -> None:
    pytest.importorskip("pulumi")
    pytest.importorskip("pulumi_kubernetes")
    from t9k_sdk import pulumi as t9k_pulumi

    for k in KINDS:
        component = getattr(t9k_pulumi, k.kind, None)
        assert component is not None, f"t9k_sdk.pulumi has no component {k.kind}"
        assert k.kind == component.KIND
        assert f"{k.kind}Args" in t9k_pulumi.__all__, f"t9k_sdk.pulumi lacks {k.kind}Args"
    assert list(t9k_pulumi.REPLACE_ON_CHANGES) == NAMES, _differ(
        "t9k_sdk.pulumi.REPLACE_ON_CHANGES", t9k_pulumi.REPLACE_ON_CHANGES
    )


def test_every_kind_has_an_argocd_health_check() -> None:
    assert list(argocd.KINDS) == NAMES, _differ("t9k_sdk.argocd.KINDS", argocd.KINDS)
    patch = argocd.argocd_cm_patch()["data"]
    files = argocd.deploy_files()
    for k in KINDS:
        assert argocd.config_map_key(k.kind) in patch
        assert argocd.script_path(k.kind) in files
        committed = REPO / "deploy" / "argocd" / argocd.script_path(k.kind)
        assert committed.is_file(), f"{committed} is missing: run `make argocd-health`"


# -- the reconcile core and the operator --------------------------------------------------------


def test_every_kind_has_reconcile_rules() -> None:
    assert list(RULES) == NAMES, _differ("t9k_sdk.reconcile.kinds.RULES", RULES)
    for rules in RULES.values():
        assert issubclass(rules, KindRules)


def test_every_kind_is_watched_and_may_be_written_by_the_operator() -> None:
    from t9k_operator.controller import SSH_KINDS, Controller
    from t9k_sdk.reconcile import Plan
    from tests.operator.fakes import FakeCluster

    kinds = [r.kind for r in JOB_RESOURCES]
    assert kinds == NAMES, _differ("t9k_sdk._kube.resources.JOB_RESOURCES", kinds)
    for k in KINDS:
        assert job_resource(k.kind).plural == k.plural
    controller = Controller(FakeCluster(), lambda *a, **kw: Plan())
    assert list(controller.jobs) == NAMES, _differ("the operator's job informers", controller.jobs)
    assert {k.kind for k in KINDS if k.ssh} == SSH_KINDS, "t9k_operator.controller.SSH_KINDS"

    rules = install.cluster_role_rules()
    on_jobs = {r for rule in rules if models.GROUP in rule["apiGroups"] for r in rule["resources"]}
    for k in KINDS:
        for resource in (k.plural, f"{k.plural}/status"):
            assert resource in on_jobs, f"the operator's RBAC rules lack {resource}"


def test_every_kind_labels_its_children_for_the_operator() -> None:
    selector = _conventions.MANAGED_SELECTOR
    listed = selector.split(" in (", 1)[1].split(")", 1)[0].split(",")
    assert listed == [k.singular for k in KINDS], "t9k_sdk._conventions.MANAGED_SELECTOR"


# -- the documentation --------------------------------------------------------------------------


def test_every_kind_has_a_section_in_the_api_reference() -> None:
    gen: Any = gen_reference()
    assert sorted(gen.KINDS) == sorted(NAMES), _differ("docs/gen_reference.py: KINDS", gen.KINDS)
    roots = {model for _, model in gen.ROOTS}
    for k in KINDS:
        assert k.model in roots, f"docs/gen_reference.py: ROOTS lacks {k.kind}"
        assert (
            models.LIST_KINDS[k.list_kind] in roots
        ), f"docs/gen_reference.py: ROOTS lacks {k.list_kind}"
