"""Hostile and broken YAML: every bad file gets one clear error, in bounded time and memory.

Each input is read through the Python API (`load_all_yaml`, `validate`'s loader) and through the
command line (`validate`, `plan`, `convert`, and the loader of `apply -f`). All of them run in one
child process with a cap on memory and CPU time, so a regression (an alias bomb that expands, a
cycle that recurses) fails the test instead of hanging or swapping the CI machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from t9k_sdk import _yaml, load_all_yaml
from t9k_sdk.errors import InvalidManifestError, InvalidYAMLError

GOOD = """\
apiVersion: batch.tensorstack.dev/v1beta1
kind: GenericJob
metadata:
  name: ok
spec:
  replicaSpecs:
  - type: worker
    template:
      spec:
        containers:
        - name: worker
          image: pytorch/pytorch:2.4.0
"""


def _alias_bomb() -> bytes:
    """'Billion laughs' in a job: nine levels of nine aliases, 9**9 strings from 772 bytes.

    Inside `affinity` (kept as given by the models) it used to be expanded by validation until
    the process ran out of memory.
    """
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, 9):
        name, prev = chr(ord("a") + level), chr(ord("a") + level - 1)
        lines.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]")
    bomb = "".join(" " * 12 + line + "\n" for line in lines)
    job = GOOD + "        affinity:\n          x:\n" + bomb
    return job.encode()


def _big_string_aliased() -> bytes:
    """A 1 MiB string aliased 200,000 times: 2 MB of file, 200 GB once expanded. It used to
    pass `validate`, hang `plan` and end `convert` with a MemoryError."""
    return b"a: &a " + b"x" * 2**20 + b"\nb: [" + b", ".join([b"*a"] * 200_000) + b"]\n"


def _many_documents() -> bytes:
    """2,400 valid jobs of 120 values each: each one far under the budget, together over it.
    Budgeted per document, 2,311 documents each just under it took 7.5 minutes to validate."""
    labels = "".join(f"    l{i}: v\n" for i in range(50))
    docs = [
        GOOD.replace("  name: ok\n", f"  name: ok-{i}\n  labels:\n{labels}") for i in range(2_400)
    ]
    return "---\n".join(docs).encode()


# name -> (file content, "line L, column C" expected, a phrase of the message)
CASES: dict[str, tuple[bytes, str, str]] = {
    "alias bomb": (_alias_bomb(), "line 20, column 32", "more than 250,000 values"),
    "1 MiB string aliased 200,000 times": (
        _big_string_aliased(),
        "line 2, column 69",
        "more than 16 MiB of text once its aliases are expanded",
    ),
    "many documents under the budget each": (
        _many_documents(),
        "line 124025, column 3",
        "the file holds more than 250,000 values (all documents together",
    ),
    "alias cycle": (b"spec: &a\n  self: *a\n", "line 2, column 9", "a cycle"),
    "undefined alias": (b"spec: *nowhere\n", "line 1, column 7", "refers to no anchor"),
    "unhashable key": (b"? [a, b]\n: 1\n", "line 1, column 3", "keys must be strings; got a list"),
    "mapping key": (b"{a: 1}: x\n", "line 1, column 1", "keys must be strings; got a mapping"),
    "integer key": (b"metadata:\n  labels:\n    1: x\n", "line 3, column 5", "got an integer (1)"),
    "set": (b"tags: !!set {a, b}\n", "line 1, column 7", "tag !!set is not allowed"),
    "binary key": (b"!!binary aGk=: 1\n", "line 1, column 1", "tag !!binary is not allowed"),
    "python tag": (
        b"x: !!python/object/apply:os.system [echo]\n",
        "line 1, column 4",
        "tag !!python/object/apply:os.system is not allowed",
    ),
    "timestamp tag": (b"x: !!timestamp 2024-01-01\n", "line 1, column 4", "!!timestamp"),
    "nan": (b"x: .nan\n", "line 1, column 4", ".nan is not a number JSON can hold"),
    "huge integer": (b"x: " + b"9" * 5000 + b"\n", "line 1, column 4", "5000 digits"),
    "bad explicit int": (b"x: !!int abc\n", "line 1, column 1", "cannot read a value"),
    "non-UTF-8": (
        GOOD.replace("ok", "\xe9t\xe9").encode("latin-1"),
        "line 4, column 9",
        "not UTF-8 text: byte 0xe9 at byte offset 77",
    ),
    "nesting 500 deep": (
        b"x: " + b"[" * 500 + b"]" * 500 + b"\n",
        "line 1, column 103",
        "100 deep",
    ),
    "nesting 100000 deep": (b"[" * 100_000, "line 1, column 101", "100 deep"),
    # libyaml (PyYAML >= 6.0.4 wheels) stops at 1000 levels, ahead of our limit: still ours
    "mappings nested 100000 deep": (
        b"# deep\n" + b"{a: " * 100_000,
        "line 2, column 398",
        "100 deep",
    ),
    "too large": (b"# " + b"x" * _yaml.MAX_BYTES + b"\n", "", "larger than 8 MiB"),
    "duplicate key": (
        b"kind: GenericJob\nkind: DeepSpeedJob\n",
        "line 2, column 1",
        "duplicate key 'kind' (first at line 1)",
    ),
    "syntax": (b"metadata:\n  name: a: b\n", "line 2, column 10", "mapping values are not allowed"),
    "bad document after a good one": (
        GOOD.encode() + b"---\n" + b"a: [1\n",
        "line 15, column 1",
        "did not find expected",
    ),
}

_CHILD = """
import contextlib, io, json, resource, sys
from pathlib import Path

resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))
resource.setrlimit(resource.RLIMIT_CPU, ({cpu}, {cpu}))

from t9k_sdk import InvalidYAMLError, load_all_yaml
from t9k_sdk.cli import main
from t9k_sdk.cli._sources import APPLY, expand, load_jobs

def run(argv, stdin=None):
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return [status, out.getvalue(), err.getvalue()]

results = {{}}
for path in sorted(Path(sys.argv[1]).iterdir()):
    data = path.read_bytes()
    entry = {{}}
    for source in ("bytes", "path"):
        try:
            load_all_yaml(data if source == "bytes" else path)
            entry[source] = ["ok", ""]
        except InvalidYAMLError as exc:
            entry[source] = ["InvalidYAMLError", str(exc)]
        except BaseException as exc:
            entry[source] = [type(exc).__name__, str(exc)[:300]]
    entry["validate"] = run(["validate", str(path)])
    entry["validate-stdin"] = run(["validate", "-"], stdin=data)
    entry["plan"] = run(["plan", str(path)])
    entry["convert"] = run(["convert", str(path)])
    found = load_jobs(expand([str(path)], APPLY))
    entry["apply"] = [len(found.jobs), found.errors]
    results[path.stem] = entry
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What every reader made of every case, from one child process capped at 1 GiB and 60 s."""
    folder = tmp_path_factory.mktemp("bad-yaml")
    for i, (content, _, _) in enumerate(CASES.values()):
        (folder / f"case{i:02d}.yaml").write_bytes(content)
    script = _CHILD.format(memory=1024**3, cpu=60)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"the readers crashed or ran out of memory:\n{proc.stderr[-3000:]}"
    by_file: dict[str, Any] = json.loads(proc.stdout)
    return {name: by_file[f"case{i:02d}"] for i, name in enumerate(CASES)} | {"_folder": folder}


@pytest.mark.parametrize("case", list(CASES))
def test_python_api_raises_one_error_type_naming_the_position(
    results: dict[str, Any], case: str
) -> None:
    _, where, phrase = CASES[case]
    for source in ("bytes", "path"):
        kind, message = results[case][source]
        assert kind == "InvalidYAMLError", (source, kind, message)
        assert message.startswith(f"{where}: invalid YAML: " if where else "invalid YAML: ")
        assert phrase in message


@pytest.mark.parametrize("case", list(CASES))
def test_cli_reports_one_line_with_file_and_position_and_exits_1(
    results: dict[str, Any], case: str
) -> None:
    _, where, phrase = CASES[case]
    path = results["_folder"] / f"case{list(CASES).index(case):02d}.yaml"
    prefix = f"{path}: {where}: invalid YAML: " if where else f"{path}: invalid YAML: "

    status, out, err = results[case]["validate"]
    assert (status, err) == (1, "")
    *lines, summary = out.splitlines()
    assert summary == "1 file with invalid YAML (1 file checked)"
    assert len(lines) == 1, lines
    assert lines[0].startswith(prefix)
    assert phrase in lines[0]

    status, out, err = results[case]["validate-stdin"]
    assert status == 1
    assert out.splitlines()[0] == lines[0].replace(str(path), "<stdin>")

    for command in ("plan", "convert"):
        status, out, err = results[case][command]
        assert (status, out) == (1, ""), command
        assert err.splitlines() == [f"t9k-sdk: error: {lines[0]}"], command

    loaded, errors = results[case]["apply"]
    assert (loaded, errors) == (0, [lines[0]])


def test_too_deep_in_a_later_document_comes_after_the_earlier_ones() -> None:
    documents = _yaml.iter_documents(b"a: 1\n---\n" + b"[" * 100_000)
    assert next(iter(documents)) == {"a": 1}
    with pytest.raises(InvalidYAMLError, match=r"line 3, column 101: .*nested more than 100 deep"):
        list(documents)


def test_aliases_within_the_budget_and_merge_keys_still_load() -> None:
    text = textwrap.dedent("""\
        base: &base {image: pytorch/pytorch:2.4.0, imagePullPolicy: IfNotPresent}
        one: *base
        two: {<<: *base, name: worker}
        date: 2024-01-01
        """)
    (doc,) = _yaml.load_documents(text)
    assert doc["one"] == doc["base"]
    assert doc["two"] == {**doc["base"], "name": "worker"}
    assert doc["date"] == "2024-01-01"  # a string, as in Kubernetes, not a datetime


def test_numbers_are_read_as_the_api_server_reads_them() -> None:
    """YAML 1.1's sexagesimal numbers and floats beyond 64 bits: PyYAML read `1:40` as 100 and
    `1.0e+400` as infinity (null once written as JSON); the API server reads both as strings."""
    (doc,) = _yaml.load_documents(
        "replicas: 1:40\nvalue: 1:30\nhuge: 1.0e+400\nfine: 1_000\nhalf: 0.5\n"
    )
    assert doc == {
        "replicas": "1:40",
        "value": "1:30",
        "huge": "1.0e+400",
        "fine": 1000,
        "half": 0.5,
    }
    job = GOOD.replace("  - type: worker\n", "  - type: worker\n    replicas: 1:40\n")
    with pytest.raises(InvalidManifestError, match=r"replicas.*'1:40'") as err:
        load_all_yaml(job)
    assert "100" not in str(err.value)
