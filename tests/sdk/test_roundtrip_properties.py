"""Property-based round-trips: any data the emitter writes loads back equal, and any valid job
survives YAML -> model -> YAML unchanged and byte-stable."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from t9k_sdk import codecs, load_all_yaml, models
from t9k_sdk._yaml import dump_documents

# Scalars YAML is notorious for: words that are booleans or null in YAML 1.1, numbers in
# disguise, indicators, line separators, control characters.
TRICKY = st.sampled_from(
    [
        "yes", "No", "on", "OFF", "y", "N", "null", "~", "true", "1:20", "0x1f", "0o17", "1e3",
        ".5", "-1", "+1", "1_000", ".inf", "-.Inf", ".NaN", "2024-09-09", "2024-09-09T09:56:52Z",
        "=", "<<", "a: b", "a #b", "- x", "#c", "[x]", "{x}", "&a", "*a", "!tag", "%x", "@x",
        "`x", "'q'", '"q"', "|", ">", "?", ": x", "--epochs", "--master_port=29500", "---",
        "...", " lead", "trail ", "a\nb", "a\nb\n", "a\n\n", "\n", "\na", " \na", "a\n \nb",
        "x\u2028y", "x\x85y", "\t", "tab\tin", "\x00", "\x7f", "é", "日本", "\ufeff", "\ud7ff",
    ]
)  # fmt: skip
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(), TRICKY
)
KEYS = st.one_of(st.text(max_size=10), TRICKY)
DATA = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=1500, deadline=None)
@given(DATA)
def test_emitted_yaml_loads_back_equal_with_pyyaml_and_libyaml(data: Any) -> None:
    text = dump_documents([data])
    assert yaml.load(text, Loader=yaml.SafeLoader) == data
    assert yaml.load(text, Loader=yaml.CSafeLoader) == data


@settings(max_examples=200, deadline=None)
@given(st.lists(DATA, min_size=1, max_size=4))
def test_multi_document_streams_keep_every_document(docs: list[Any]) -> None:
    assert list(yaml.safe_load_all(dump_documents(docs))) == docs


NAMES = st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True)
_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
FREE_TEXT = st.one_of(st.text(max_size=30), TRICKY)


@st.composite
def generic_jobs(draw: st.DrawFn) -> dict[str, Any]:
    types = draw(st.lists(NAMES, min_size=1, max_size=4, unique=True))
    counts = {t: draw(st.integers(min_value=0, max_value=12)) for t in types}
    specs = []
    for t in types:
        # any image text the API server takes: not empty, no white space at either end
        image = draw(FREE_TEXT.filter(lambda text: bool(text) and text == text.strip(_SPACE)))
        container: dict[str, Any] = {"name": t, "image": image}
        if draw(st.booleans()):
            container["command"] = draw(st.lists(FREE_TEXT, max_size=4))
        if draw(st.booleans()):
            container["env"] = [
                {"name": n, "value": v}
                for n, v in draw(st.dictionaries(NAMES, FREE_TEXT, max_size=3)).items()
            ]
        if draw(st.booleans()):
            container["resources"] = {
                "limits": {
                    "cpu": draw(st.one_of(st.integers(0, 64), st.sampled_from(["500m", "2"])))
                }
            }
        spec: dict[str, Any] = {"type": t, "template": {"spec": {"containers": [container]}}}
        if draw(st.booleans()):
            spec["replicas"] = counts[t]
        else:
            counts[t] = 1
        if draw(st.booleans()):
            spec["restartPolicy"] = {
                "policy": draw(st.sampled_from(["Always", "OnFailure", "Never", "ExitCode"])),
                "limit": draw(st.integers(0, 10)),
            }
        specs.append(spec)
    rules = []
    for _ in range(draw(st.integers(0, 3))):
        usable = [t for t in types if counts[t] > 0]
        if not usable:
            break
        chosen = draw(st.lists(st.sampled_from(usable), min_size=1, unique=True))
        rules.append(
            {
                t: draw(
                    st.lists(
                        st.integers(0, counts[t] - 1).map(draw(st.sampled_from([int, str]))),
                        min_size=1,  # an empty list is rejected: the rule would hold at once
                        max_size=3,
                    )
                )
                for t in chosen
            }
        )
    manifest: dict[str, Any] = {
        "apiVersion": models.API_VERSION,
        "kind": "GenericJob",
        "metadata": {
            "name": draw(NAMES),
            "labels": draw(st.dictionaries(NAMES, NAMES, max_size=2)),
        },
        "spec": {"replicaSpecs": specs},
    }
    if rules:
        manifest["spec"][draw(st.sampled_from(["successRules", "failureRules"]))] = rules
    if draw(st.booleans()):
        manifest["spec"]["cleanUpPolicy"] = draw(st.sampled_from(["None", "Unfinished", "All"]))
    if draw(st.booleans()):
        manifest["spec"]["scheduler"] = {
            "t9kScheduler": {"queue": draw(NAMES), "priority": draw(st.integers(0, 100))}
        }
    return manifest


def _with_command(command: str) -> dict[str, Any]:
    container = {"name": "a", "image": "0", "command": [command]}
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "GenericJob",
        "metadata": {"name": "a"},
        "spec": {
            "replicaSpecs": [{"type": "a", "template": {"spec": {"containers": [container]}}}]
        },
    }


@settings(max_examples=300, deadline=None)
@given(generic_jobs())
# A literal block's indentation comes from its first non-empty line: found by this test.
@example(_with_command("\n 0"))
@example(_with_command("\n 0\n0"))
def test_any_valid_job_round_trips_through_yaml(manifest: dict[str, Any]) -> None:
    job = codecs.from_manifest(manifest)
    text = codecs.dump_all_yaml([job])
    assert yaml.safe_load(text) == manifest
    (again,) = load_all_yaml(text)
    assert again == job
    assert codecs.dump_all_yaml([again]) == text
