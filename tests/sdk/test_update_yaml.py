"""`update_yaml`: writing a loaded manifest back changes the lines of the values that changed and
no other byte, whatever the file's comments, quoting and indentation; and what it writes always
reads back as exactly the new values. The loader's limits hold on this path too."""

from __future__ import annotations

import copy
import difflib
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from t9k_sdk import (
    InvalidYAMLError,
    LegacyManifestWarning,
    T9kError,
    _yaml,
    load_all_yaml,
    models,
    to_manifest,
    update_yaml,
)
from t9k_sdk._yaml_update import update_documents

PUBLISHED = Path(__file__).parent / "published"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

JOB = """\
# Megatron GPT pre-training (from T9k's examples; adjust the PVC to your cluster).
apiVersion: batch.tensorstack.dev/v1beta1
kind: DeepSpeedJob
metadata:
  name: gpt-pretrain
  labels:
    app: megatron-gpt   # used by the dashboards
spec:
  config:
    localRank: true
    slotsPerWorker: 4
    run:
      python:
        - /t9k/mnt/pretrain_gpt.py
        - "--num-layers"
        - '24'
        - --train-iters
        - "10000"   # about 2 hours on 8 A100s

        - --deepspeed_config
        - ds_config.json
  worker:
    replicas: 2   # one per node
    template:
      spec:
        containers:
          - name: worker
            image: "t9kpublic/megatron-deepspeed:23.06-py3"
            securityContext:
              capabilities:
                add: [ "IPC_LOCK" ]
            env:
            - name: CUDA_DEVICE_MAX_CONNECTIONS
              value: "1"
            resources:
              limits: {cpu: 16, memory: 64Gi}
"""


def _changed(before: str, after: str) -> list[str]:
    """The lines a unified diff shows as removed (-) and added (+)."""
    return [
        line.rstrip("\n")
        for line in difflib.unified_diff(before.splitlines(True), after.splitlines(True), n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def _doc(text: str) -> dict[str, Any]:
    (doc,) = _yaml.load_documents(text)
    assert isinstance(doc, dict)
    return doc


def _update(text: str, change: Any) -> str:
    """`text` updated to its document as `change` (which edits a copy in place) leaves it."""
    new = copy.deepcopy(_doc(text))
    change(new)
    out = update_documents(text, [new])
    assert _yaml.load_documents(out) == [new]
    return out


# -- a user's edit of a published job -----------------------------------------------------------


def test_three_changes_to_a_published_job_change_three_lines() -> None:
    job = models.DeepSpeedJob.from_yaml(JOB).edit(
        {
            "spec.worker.replicas": 4,
            "spec.worker.template.spec.containers[0].image": "t9kpublic/megatron-deepspeed:24.01",
            "spec.config.run.python[4]": "20000",
        }
    )

    out = update_yaml(JOB, [job])

    assert _changed(JOB, out) == [
        '-        - "10000"   # about 2 hours on 8 A100s',
        '+        - "20000"   # about 2 hours on 8 A100s',
        "-    replicas: 2   # one per node",
        "+    replicas: 4   # one per node",
        '-            image: "t9kpublic/megatron-deepspeed:23.06-py3"',
        '+            image: "t9kpublic/megatron-deepspeed:24.01"',
    ]
    assert models.DeepSpeedJob.from_yaml(out) == job


def test_a_job_written_back_unchanged_is_the_same_bytes() -> None:
    job = models.DeepSpeedJob.from_yaml(JOB)
    assert update_yaml(JOB, [job]) == JOB
    assert update_yaml(JOB, [job.edit({"spec.worker.replicas": 2})]) == JOB


def _job_files() -> list[Path]:
    """The published manifests and the examples that are jobs in the current schema."""
    files = [
        *sorted(PUBLISHED.glob("*.yaml")),
        *sorted(EXAMPLES.glob("*.yaml")),
        *sorted((EXAMPLES / "gitops" / "manifests").glob("deepspeedjob-*.yaml")),
    ]
    out = []
    for path in files:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", LegacyManifestWarning)
                load_all_yaml(path)
        except (T9kError, LegacyManifestWarning):
            continue  # snippets, the manual's typos, legacy schemas (converted: test_cli)
        out.append(path)
    return out


@pytest.mark.parametrize("path", _job_files(), ids=lambda p: p.name)
def test_every_published_and_example_job_round_trips_byte_for_byte(path: Path) -> None:
    """T9k's manuals mix sequence indentations in one file, pad flow lists (`[ "IPC_LOCK" ]`)
    and leave trailing spaces: a job loaded and written back keeps all of it."""
    text = path.read_text()
    assert update_yaml(text, load_all_yaml(text)) == text


# -- what changes, and how ---------------------------------------------------------------------


def test_a_new_key_goes_where_the_new_value_has_it_at_the_mappings_indentation() -> None:
    def change(doc: dict[str, Any]) -> None:
        spec = doc["spec"]
        doc["spec"] = {"runPolicy": {"backoffLimit": 2}, **spec}  # first in the new order
        doc["spec"]["worker"]["template"]["spec"]["containers"][0]["workingDir"] = "/t9k/mnt"
        doc["metadata"]["labels"]["team"] = "nlp"

    out = _update(JOB, change)

    assert _changed(JOB, out) == [
        "+    team: nlp",
        "+  runPolicy:",
        "+    backoffLimit: 2",
        "+            workingDir: /t9k/mnt",
    ]
    assert "    app: megatron-gpt   # used by the dashboards\n    team: nlp\n" in out
    assert "spec:\n  runPolicy:\n    backoffLimit: 2\n  config:\n" in out


def test_a_removed_key_loses_its_lines_and_a_renamed_one_stays_in_place() -> None:
    text = textwrap.dedent("""\
        elastic:
          enable: true   # the legacy spelling
          minReplicas: 1
          # the most the quota allows
          maxReplicas: 4
        """)

    def change(doc: dict[str, Any]) -> None:
        doc["elastic"] = {"enabled": True, "minReplicas": 1}

    out = _update(text, change)

    assert out == textwrap.dedent("""\
        elastic:
          enabled: true
          minReplicas: 1
          # the most the quota allows
        """)


def test_list_items_are_aligned_so_only_the_inserted_and_removed_ones_change() -> None:
    def change(doc: dict[str, Any]) -> None:
        python = doc["spec"]["config"]["run"]["python"]
        python.remove("--num-layers")
        python.remove("24")
        python.insert(1, "--seed")
        python.insert(2, "7")
        python.append("--fp16")
        doc["spec"]["worker"]["template"]["spec"]["containers"][0]["env"].append(
            {"name": "NCCL_DEBUG", "value": "INFO"}
        )

    out = _update(JOB, change)

    assert _changed(JOB, out) == [  # the items in the places of others keep their quoting
        '-        - "--num-layers"',
        "-        - '24'",
        '+        - "--seed"',
        "+        - '7'",
        "+        - --fp16",
        "+            - name: NCCL_DEBUG",
        "+              value: INFO",
    ]
    # the env list is flush with its key in this file, the others indented: each kept its own
    assert "            env:\n            - name: CUDA" in out


def test_a_scalar_keeps_its_quoting_and_a_flow_collection_its_style() -> None:
    def change(doc: dict[str, Any]) -> None:
        python = doc["spec"]["config"]["run"]["python"]
        python[1], python[2] = "--num-layers=32", "32"
        container = doc["spec"]["worker"]["template"]["spec"]["containers"][0]
        container["securityContext"]["capabilities"]["add"].append("SYS_PTRACE")
        container["resources"]["limits"]["nvidia.com/gpu"] = 8

    out = _update(JOB, change)

    assert _changed(JOB, out) == [
        '-        - "--num-layers"',
        "-        - '24'",
        '+        - "--num-layers=32"',
        "+        - '32'",
        '-                add: [ "IPC_LOCK" ]',
        '+                add: [ "IPC_LOCK", "SYS_PTRACE" ]',
        "-              limits: {cpu: 16, memory: 64Gi}",
        "+              limits: {cpu: 16, memory: 64Gi, nvidia.com/gpu: 8}",
    ]


def test_values_that_change_shape_are_written_again_in_place() -> None:
    text = textwrap.dedent("""\
        a: 1   # a number
        b:
          - x
        c: |
          line one
          line two
        d: keep  # this stays
        """)

    def change(doc: dict[str, Any]) -> None:
        doc["a"] = {"nested": [1, 2]}
        doc["b"] = []
        doc["c"] = "line one\nline 2\n"

    out = _update(text, change)

    assert out == textwrap.dedent("""\
        a:   # a number
          nested:
            - 1
            - 2
        b: []
        c: |
          line one
          line 2
        d: keep  # this stays
        """)


def test_strings_that_would_read_as_something_else_are_quoted() -> None:
    text = "a: x\nb: 'y'\nc: \"z\"\n"
    new = {"a": "true", "b": "it's", "c": "2024-01-01", "d": "1:40"}
    out = update_documents(text, [new])
    assert _yaml.load_documents(out) == [new]
    assert out == 'a: "true"\nb: \'it\'\'s\'\nc: "2024-01-01"\nd: "1:40"\n'


def test_line_endings_byte_order_mark_and_a_missing_final_line_break_are_kept() -> None:
    text = "\ufeffa: 1\r\nlist:\r\n  - x\r\nb: 2"
    out = update_documents(text, [{"a": 5, "list": ["x", "z"], "b": 2, "c": 3}])
    assert out == "\ufeffa: 5\r\nlist:\r\n  - x\r\n  - z\r\nb: 2\r\nc: 3"


def test_a_key_set_to_null_and_an_absent_key_are_the_same_value() -> None:
    text = "metadata:\n  name: x\n  creationTimestamp: null\nspec: {}\n"
    assert update_documents(text, [{"metadata": {"name": "x"}, "spec": {}}]) == text


def test_documents_keep_their_separators_and_empty_ones() -> None:
    text = "# first\na: 1\n---\n# nothing here\n---\nb: 2  # second\n...\n"
    out = update_documents(text, [{"a": 1}, {"b": 3}])
    assert out == "# first\na: 1\n---\n# nothing here\n---\nb: 3  # second\n...\n"
    with pytest.raises(ValueError, match="holds 2 documents that are not empty; got 1"):
        update_documents(text, [{"a": 1}])


def test_a_document_with_aliases_is_written_again_whole_and_right() -> None:
    text = textwrap.dedent("""\
        # shared resources
        limits: &r {cpu: 1}
        requests: *r
        other: 1
        ---
        kept: [ 1 ]  # untouched
        """)
    out = update_documents(text, [{"limits": {"cpu": 2}, "requests": {"cpu": 1}}, {"kept": [1]}])
    assert _yaml.load_documents(out) == [
        {"limits": {"cpu": 2}, "requests": {"cpu": 1}},
        {"kept": [1]},
    ]
    assert out.endswith("---\nkept: [ 1 ]  # untouched\n")


def _yaml_texts() -> list[str]:
    out = []
    for path in sorted(PUBLISHED.glob("*.yaml")):
        try:
            _yaml.load_documents(path)
        except InvalidYAMLError:
            continue  # snippets with `...` elisions
        out.append(path.read_text())
    return out


_YAML_FILES = [JOB, *_yaml_texts()]


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_whatever_changes_the_text_reads_back_as_the_new_value(data: st.DataObject) -> None:
    """Random edits of T9k's published manifests: set, add and remove keys and items anywhere."""
    text = data.draw(st.sampled_from(_YAML_FILES))
    docs = [d for d in _yaml.load_documents(text) if d is not None]
    new = copy.deepcopy(docs)
    scalars = st.one_of(
        st.integers(-5, 10**12),
        st.booleans(),
        st.none(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from(
            ["x", "yes", "a: b", "", "1.5", "- a", "#c", "with, comma", "two\nlines\n"]
        ),
        st.text(max_size=8),
    )
    for _ in range(data.draw(st.integers(1, 6))):
        _mutate(data, new[0], scalars)
    out = update_documents(text, new)
    read = [d for d in _yaml.load_documents(out) if d is not None]
    assert _without_nulls(read) == _without_nulls(new)  # a null is an absent key (both ways)


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _mutate(data: st.DataObject, node: Any, scalars: st.SearchStrategy[Any]) -> None:
    """One random change somewhere below `node` (a mapping or a list)."""
    while True:
        children = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        if not children or data.draw(st.integers(0, 3)) == 0:
            break
        _, child = data.draw(st.sampled_from(children))
        if not isinstance(child, dict | list):
            break
        node = child
    action = data.draw(st.sampled_from(["set", "add", "remove"]))
    value = data.draw(
        st.one_of(
            scalars,
            st.lists(scalars, max_size=2),
            st.dictionaries(st.sampled_from(["k", "name", "x y"]), scalars, max_size=2),
        )
    )
    if isinstance(node, dict):
        if action == "remove" and node:
            del node[data.draw(st.sampled_from(sorted(node)))]
        elif action == "set" and node:
            node[data.draw(st.sampled_from(sorted(node)))] = value
        else:
            node[data.draw(st.sampled_from(["new", "zeta", "apiVersion"]))] = value
    elif action == "remove" and node:
        node.pop(data.draw(st.integers(0, len(node) - 1)))
    elif action == "set" and node:
        node[data.draw(st.integers(0, len(node) - 1))] = value
    else:
        node.insert(data.draw(st.integers(0, len(node))), value)


# -- the loader's safety holds -----------------------------------------------------------------


def test_a_python_object_tag_is_refused_not_built() -> None:
    text = "a: !!python/object/apply:os.system ['echo pwned']\n"
    with pytest.raises(
        InvalidYAMLError,
        match=r"line 1, column 4: .*tag !!python/object/apply:os.system is not allowed",
    ):
        update_documents(text, [{"a": 1}])


def test_a_billion_laughs_document_is_refused_before_it_expands() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        prev = chr(ord("a") + i - 1)
        cur = chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [{','.join(['*' + prev] * 9)}]")
    text = "\n".join(lines) + "\n"
    with pytest.raises(InvalidYAMLError, match="more than 250,000 values"):
        update_documents(text, [{"a": 1}])
    with pytest.raises(InvalidYAMLError, match="more than 250,000 values"):
        update_yaml(text, [{"a": 1}])


def test_the_emitter_writes_what_pyyaml_reads_in_flow_style() -> None:
    value = {"a,b": ["x, y", "[z]", "", "true", 1, None, {"k": "v"}], "": "q"}
    assert yaml.safe_load(_yaml.emit_flow(value)) == value
    assert yaml.safe_load(_yaml.emit_flow(value, quoted=True, padded=True)) == value


def test_a_builder_or_a_manifest_dict_can_be_written_back_too() -> None:
    job = models.DeepSpeedJob.from_yaml(JOB)
    manifest = to_manifest(job.edit({"metadata.name": "gpt-2"}))
    out = update_yaml(JOB, [manifest])
    assert _changed(JOB, out) == ["-  name: gpt-pretrain", "+  name: gpt-2"]
