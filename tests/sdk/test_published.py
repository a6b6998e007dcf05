"""Every published manifest and snippet of T9k's manuals (t9k-semantics.md Appendix A).

Complete manifests round-trip YAML -> model -> YAML without loss; snippets (with `...`
elisions) are completed with a minimal job of their kind and must then be accepted with their
content intact; manifests with known typos must be rejected with a message naming the typo;
legacy ColossalAIJob manifests are converted with a warning.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from t9k_sdk import LegacyManifestWarning, codecs, load_all_yaml
from t9k_sdk.errors import InvalidManifestError
from t9k_sdk.validation import validate_manifest

from .manifests import MAKERS, generic_job, pod

PUBLISHED = Path(__file__).parent / "published"

ROUNDTRIP = ["A_1_1", "A_2_1", "A_3_9", "A_3_10", "A_3_11"]
LEGACY = ["A_2_6", "A_2_7"]
# snippet -> (kind, base manifest maker overrides)
SNIPPETS: dict[str, tuple[str, dict[str, Any]]] = {
    "A_1_3": (
        "GenericJob",
        {
            "replicaSpecs": [
                {"type": "master", "replicas": 3, "template": pod()},
                {"type": "worker", "replicas": 3, "template": pod()},
            ]
        },
    ),
    "A_1_4": ("GenericJob", {}),
    "A_1_5": ("GenericJob", {}),
    "A_1_6": ("GenericJob", {}),
    "A_1_7": ("GenericJob", {}),
    "A_1_8": ("GenericJob", {}),
    "A_1_11": ("GenericJob", {}),
    "A_2_3": ("ColossalAIJob", {}),
    "A_2_5": ("ColossalAIJob", {}),
    "A_3_2": ("DeepSpeedJob", {}),
    "A_3_3": ("DeepSpeedJob", {}),
    "A_4_1": ("GenericJob", {}),
    "A_5_2": ("GenericJob", {}),
    "A_5_3": ("GenericJob", {}),
}
# manifest -> [(path, words of the message)]: published typos must be named
TYPOS: dict[str, list[tuple[str, str]]] = {
    "A_3_1": [
        ("kind", "did you mean 'DeepSpeedJob'"),
        ("spec.config.slotPerWorker", "did you mean 'slotsPerWorker'"),
        ("spec.config.run.python", "expected a list"),
    ],
    "A_1_9": [("status.conditions[0].type", "'Initializing'")],
    "A_1_10": [
        ("status.tasks[0].status", "unknown field 'status'; allowed: type, restartCount, replicas")
    ],
    "A_2_4": [
        ("status.tasks[0].status", "unknown field 'status'; allowed: type, restartCount, replicas")
    ],
    "A_3_4": [
        ("status.tasks[0].status", "unknown field 'status'; allowed: type, restartCount, replicas")
    ],
}
STATUS_TYPOS = {"A_1_10", "A_2_4", "A_3_4"}
TYPO_KIND = {
    "A_1_9": "GenericJob",
    "A_1_10": "GenericJob",
    "A_2_4": "ColossalAIJob",
    "A_3_4": "DeepSpeedJob",
}
NOT_T9K = {"A_4_2": "PodGroup", "A_4_3": "Pod", "A_4_4": "PyTorchTrainingJob", "A_4_5": "PodGroup"}


def test_every_published_example_is_classified() -> None:
    names = {p.stem for p in PUBLISHED.glob("*.yaml")}
    classified = {*ROUNDTRIP, *LEGACY, *SNIPPETS, *TYPOS, *NOT_T9K}
    assert names == classified


def _text(name: str) -> str:
    return (PUBLISHED / f"{name}.yaml").read_text()


def _snippet_docs(name: str) -> list[dict[str, Any]]:
    """The documents of a snippet, with the `...` elision lines removed."""
    lines = [line for line in _text(name).splitlines() if line.strip() != "..."]
    return [d for d in yaml.safe_load_all("\n".join(lines)) if d]


def _merge(base: Any, extra: Any) -> Any:
    if isinstance(base, dict) and isinstance(extra, dict):
        out = dict(base)
        for key, value in extra.items():
            out[key] = _merge(base[key], value) if key in base else copy.deepcopy(value)
        return out
    return copy.deepcopy(extra)


def _complete(kind: str, overrides: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    manifest = _merge(MAKERS[kind](**overrides), doc)
    for spec in manifest["spec"].get("replicaSpecs", []):
        spec.setdefault("template", pod())  # the snippets elide templates with `...`
    return manifest


def _contains(whole: Any, part: Any) -> bool:
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(
            k in whole and _contains(whole[k], v) for k, v in part.items()
        )
    if isinstance(part, list):
        return (
            isinstance(whole, list)
            and len(whole) == len(part)
            and all(_contains(w, p) for w, p in zip(whole, part, strict=True))
        )
    if isinstance(whole, int | str) and isinstance(part, int | str) and str(whole) == str(part):
        return True  # timestamps come back as the same text; ints stay ints
    return bool(whole == part)


@pytest.mark.parametrize("name", ROUNDTRIP)
def test_complete_manifest_round_trips_without_loss(name: str) -> None:
    original = yaml.safe_load(_text(name))
    jobs = load_all_yaml(_text(name))
    assert len(jobs) == 1
    dumped = codecs.dump_all_yaml(jobs)
    assert yaml.safe_load(dumped) == original  # nothing lost, nothing added
    assert codecs.dump_all_yaml(load_all_yaml(dumped)) == dumped  # byte-stable


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippet_is_accepted_in_a_job_of_its_kind(name: str) -> None:
    kind, overrides = SNIPPETS[name]
    docs = _snippet_docs(name)
    assert docs
    for doc in docs:
        manifest = _complete(kind, overrides, doc)
        job = codecs.from_manifest(manifest)
        out = codecs.to_manifest(job)
        assert _contains(out, doc), f"{name}: snippet content lost: {doc}"


@pytest.mark.parametrize("name", sorted(TYPOS))
def test_published_typos_are_rejected_naming_the_typo(name: str) -> None:
    if name in TYPO_KIND:
        docs = [_complete(TYPO_KIND[name], {}, d) for d in _snippet_docs(name)]
    else:
        docs = [yaml.safe_load(_text(name))]
    problems = []
    for doc in docs:
        if name in STATUS_TYPOS:
            # status keeps unknown keys when read (a live object must always parse); the
            # validator reports them, as the API server would prune them
            codecs.from_manifest(doc)
            problems.extend(validate_manifest(doc))
            continue
        with pytest.raises(InvalidManifestError) as info:
            codecs.from_manifest(doc)
        problems.extend(info.value.problems)
    for path, words in TYPOS[name]:
        assert any(
            p.path == path and words in p.message for p in problems
        ), f"{name}: expected {path}: ...{words}...; got {[str(p) for p in problems]}"


@pytest.mark.parametrize("name", LEGACY)
def test_legacy_colossalai_schema_is_converted_with_a_warning(name: str) -> None:
    with pytest.warns(LegacyManifestWarning, match="legacy schema"):
        (job,) = load_all_yaml(_text(name))
    legacy = yaml.safe_load(_text(name))["spec"]
    out = codecs.to_manifest(job)["spec"]
    assert "launcher" not in out
    assert "worker" not in out
    launcher, worker = out["replicaSpecs"]
    assert launcher["type"] == "launcher"
    container = launcher["template"]["spec"]["containers"][0]
    assert container["name"] == "launcher"
    assert container["image"] == legacy["launcher"]["image"]
    assert container["workingDir"] == legacy["launcher"]["workingDir"]
    assert worker == {
        "type": "worker",
        "replicas": legacy["worker"]["replicas"],
        "template": legacy["worker"]["template"],
    }
    assert out["torchConfig"]["script"] == legacy["worker"]["command"]
    assert out["torchConfig"]["procPerWorker"] == legacy["worker"]["procPerWorker"]
    # the converted job is stable in the current schema, with no further warning
    dumped = codecs.dump_all_yaml([job])
    assert codecs.dump_all_yaml(load_all_yaml(dumped)) == dumped


def test_legacy_enable_spelling_is_converted_with_a_warning() -> None:
    manifest = generic_job(runMode={"debug": {"enable": True}})
    with pytest.warns(LegacyManifestWarning, match=r"runMode.debug.enable is a legacy spelling"):
        job = codecs.from_manifest(manifest)
    assert codecs.to_manifest(job)["spec"]["runMode"] == {"debug": {"enabled": True}}


def test_both_enable_spellings_are_rejected() -> None:
    with pytest.raises(InvalidManifestError, match="either 'enabled' or the legacy 'enable'"):
        codecs.from_manifest(generic_job(runMode={"pause": {"enable": True, "enabled": True}}))


@pytest.mark.parametrize("name", sorted(NOT_T9K))
def test_other_kinds_are_rejected_with_the_supported_kinds(name: str) -> None:
    docs = _snippet_docs(name)
    with pytest.raises(InvalidManifestError) as info:
        codecs.from_manifest(docs[0])
    assert f"{NOT_T9K[name]!r} is not a T9k job kind" in str(info.value)
    assert "GenericJob, DeepSpeedJob, ColossalAIJob" in str(info.value)
