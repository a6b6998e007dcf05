"""The `t9k-sdk` command as a user sees it: what it prints, what it writes, its exit status."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from t9k_sdk import load_all_yaml
from t9k_sdk.cli import main

REPO = Path(__file__).resolve().parents[2]

GOOD_JOBS = """\
from t9k_sdk import DeepSpeedJob, GenericJob, Replica, models

bert = DeepSpeedJob(name="bert", image="ds:1", workers=2, gpus_per_worker=8, run=["train.py"])
mnist = GenericJob(name="mnist", replicas=[Replica(type="worker", count=4, image="pt:2")])
again = bert  # the same object twice is rendered once
more = [
    mnist,
    models.GenericJob.model_validate(
        {
            "metadata": {"name": "raw"},
            "spec": {
                "replicaSpecs": [
                    {"type": "ps", "template": {"spec": {"containers": [{"name": "ps", "image": "tf"}]}}}
                ]
            },
        }
    ),
]
"""

INVALID_RULE = """\
from t9k_sdk import GenericJob, Replica

job = GenericJob(
    name="mnist",
    replicas=[Replica(type="worker", count=2, image="pt:2")],
    success_rules=[{"master": [0]}],
)
"""

VALID_MANIFEST = """\
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
          image: pt:2
"""

INVALID_MANIFEST = """\
apiVersion: batch.tensorstack.dev/v1beta1
kind: DeepSpeedJob
metadata:
  name: bert
spec:
  config:
    slotPerWorker: 2
  worker:
    replicas: 2
    template:
      spec:
        containers:
        - name: worker
          image: ds:1
          imagePullPolicyy: Always
"""


@pytest.fixture(autouse=True)
def _forget_test_modules(tmp_path: Path) -> Iterator[None]:
    """Drop the modules the test imported from its tmp_path (siblings imported by job files)."""
    yield
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file is not None and Path(file).is_relative_to(tmp_path):
            del sys.modules[name]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


# -- render --------------------------------------------------------------------------------


def test_render_prints_every_job_once_in_definition_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = _write(tmp_path / "jobs.py", GOOD_JOBS)

    status, out, err = _run(capsys, "render", str(jobs))

    assert (status, err) == (0, "")
    loaded = load_all_yaml(out)
    assert [(j.kind, j.metadata.name) for j in loaded] == [
        ("DeepSpeedJob", "bert"),
        ("GenericJob", "mnist"),
        ("GenericJob", "raw"),
    ]
    assert out.count("\n---\n") == 2


def test_render_keeps_what_job_files_print_out_of_the_yaml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = _write(tmp_path / "jobs.py", 'print("defining the jobs")\n' + GOOD_JOBS)

    status, out, err = _run(capsys, "render", str(jobs))

    assert status == 0
    assert len(load_all_yaml(out)) == 3
    assert "defining the jobs" not in out
    assert "defining the jobs" in err


def test_render_to_a_directory_writes_one_file_per_job_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "jobs" / "a.py", GOOD_JOBS)
    _write(
        tmp_path / "jobs" / "sub" / "b.py",
        INVALID_RULE.replace('"master"', '"worker"').replace('"mnist"', '"nested"'),
    )
    _write(tmp_path / "jobs" / "_helpers" / "c.py", 'raise RuntimeError("must not be imported")')
    _write(tmp_path / "jobs" / ".cache" / "d.py", 'raise RuntimeError("must not be imported")')
    out_dir = tmp_path / "manifests"

    status, out, err = _run(capsys, "render", str(tmp_path / "jobs"), "--out-dir", str(out_dir))

    assert (status, out) == (0, "")
    names = sorted(p.name for p in out_dir.iterdir())
    assert names == [
        "deepspeedjob-bert.yaml",
        "genericjob-mnist.yaml",
        "genericjob-nested.yaml",
        "genericjob-raw.yaml",
    ]
    bert = load_all_yaml(out_dir / "deepspeedjob-bert.yaml")
    assert [j.metadata.name for j in bert] == ["bert"]
    assert f"wrote 4 manifests to {out_dir}" in err
    assert f"{out_dir / 'deepspeedjob-bert.yaml'}" in err
    assert "DeepSpeedJob 'bert'" in err


def test_render_directory_order_is_sorted_and_recursive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = 'from t9k_sdk import GenericJob, Replica\njob = GenericJob(name="{}", replicas=[Replica(type="w", image="i")])\n'
    for rel, name in [("b.py", "second"), ("a.py", "first"), ("c/z.py", "third")]:
        _write(tmp_path / "jobs" / rel, template.format(name))

    status, out, _ = _run(capsys, "render", str(tmp_path / "jobs"))

    assert status == 0
    assert [j.metadata.name for j in load_all_yaml(out)] == ["first", "second", "third"]


def test_render_imports_a_module_by_name_from_the_current_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    package = "t9k_cli_test_jobs_pkg"
    _write(tmp_path / package / "__init__.py", "")
    _write(tmp_path / package / "training.py", GOOD_JOBS)
    monkeypatch.chdir(tmp_path)
    for name in (package, f"{package}.training"):
        monkeypatch.delitem(sys.modules, name, raising=False)

    status, out, err = _run(capsys, "render", f"{package}.training")

    assert (status, err) == (0, "")
    assert [j.metadata.name for j in load_all_yaml(out)] == ["bert", "mnist", "raw"]


def test_render_unknown_module_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _run(capsys, "render", "no_such_pkg_t9k.jobs")

    assert (status, out) == (2, "")
    assert "no_such_pkg_t9k.jobs: no such file, directory or Python module" in err


def test_render_missing_file_and_yaml_file_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = _run(capsys, "render", str(tmp_path / "nope.py"))
    assert status == 2
    assert "nope.py: no such file or directory" in err

    manifest = _write(tmp_path / "job.yaml", VALID_MANIFEST)
    status, _, err = _run(capsys, "render", str(manifest))
    assert status == 2
    assert "not a Python file" in err
    assert "t9k-sdk validate" in err


def test_render_without_jobs_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = _write(tmp_path / "settings.py", "IMAGE = 'pt:2'\n")

    status, out, err = _run(capsys, "render", str(empty))

    assert (status, out) == (1, "")
    assert f"no jobs found in {empty}" in err


def test_render_directory_without_python_files_finds_no_jobs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "jobs" / "README.md", "jobs go here\n")

    status, out, err = _run(capsys, "render", str(tmp_path / "jobs"))

    assert (status, out) == (1, "")
    assert f"no jobs found in {tmp_path / 'jobs'}" in err


def test_render_invalid_job_shows_the_problem_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "jobs" / "good.py", GOOD_JOBS)
    bad = _write(tmp_path / "jobs" / "rules.py", INVALID_RULE)
    out_dir = tmp_path / "manifests"

    status, out, err = _run(capsys, "render", str(tmp_path / "jobs"), "--out-dir", str(out_dir))

    assert (status, out) == (1, "")
    assert f"cannot import {bad}:" in err  # builders check the wire rules when created
    assert "GenericJob 'mnist' is invalid:" in err
    assert "  - success_rules[0].master: " in err  # the builder argument, as written
    assert "no replica type 'master'" in err
    assert "nothing was written" in err
    assert not out_dir.exists()


def test_render_invalid_builder_arguments_point_at_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _write(
        tmp_path / "bert.py",
        """\
        from t9k_sdk import DeepSpeedJob

        job = DeepSpeedJob(name="bert", workers=0, run=["train.py"])
        """,
    )

    status, out, err = _run(capsys, "render", str(bad))

    assert (status, out) == (1, "")
    assert f"cannot import {bad}:" in err
    assert "line 3" in err
    assert 'job = DeepSpeedJob(name="bert", workers=0' in err
    assert "DeepSpeedJob 'bert' is invalid:" in err
    assert "- workers: input should be greater than or equal to 1; got 0" in err
    assert "site-packages" not in err  # the user's code only, not pydantic's internals


def test_render_import_failure_shows_file_and_exception(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _write(tmp_path / "broken.py", "x = 1\ny = x / 0\n")

    status, _, err = _run(capsys, "render", str(bad))

    assert status == 1
    assert f"cannot import {bad}:" in err
    assert "line 2" in err
    assert "ZeroDivisionError: division by zero" in err


def test_render_refuses_two_different_jobs_with_the_same_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "jobs" / "a.py", GOOD_JOBS)
    _write(tmp_path / "jobs" / "b.py", INVALID_RULE.replace('"master"', '"worker"'))

    status, out, err = _run(capsys, "render", str(tmp_path / "jobs"))

    assert (status, out) == (1, "")
    assert "two different jobs are both GenericJob 'mnist'" in err


def test_render_to_a_directory_refuses_two_jobs_for_one_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = _write(
        tmp_path / "jobs.py",
        """\
        from t9k_sdk import GenericJob, Replica

        worker = Replica(type="worker", image="pt:2")
        dev = GenericJob(name="mnist", namespace="dev", replicas=[worker])
        prod = GenericJob(name="mnist", namespace="prod", replicas=[worker])
        """,
    )

    status, out, _ = _run(capsys, "render", str(jobs))
    assert status == 0
    assert [j.metadata.namespace for j in load_all_yaml(out)] == ["dev", "prod"]

    status, _, err = _run(capsys, "render", str(jobs), "--out-dir", str(tmp_path / "out"))
    assert status == 1
    assert f"{jobs}: dev and {jobs}: prod would both be written to genericjob-mnist.yaml" in err
    assert not (tmp_path / "out").exists()


def test_render_renders_a_job_imported_by_another_file_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "jobs" / "a.py", GOOD_JOBS)
    _write(tmp_path / "jobs" / "b.py", "from a import bert\n")

    status, out, err = _run(capsys, "render", str(tmp_path / "jobs"))

    assert (status, err) == (0, "")
    assert [j.metadata.name for j in load_all_yaml(out)] == ["bert", "mnist", "raw"]


# -- validate ------------------------------------------------------------------------------


def test_validate_valid_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _write(tmp_path / "a.yaml", VALID_MANIFEST + "---\n" + VALID_MANIFEST.replace("ok", "ok2"))
    b = _write(tmp_path / "b.yaml", VALID_MANIFEST)

    status, out, _ = _run(capsys, "validate", str(a), str(b))

    assert (status, out) == (0, "3 documents valid\n")


def test_validate_a_directory_checks_its_yaml_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "manifests" / "a.yaml", VALID_MANIFEST)
    _write(tmp_path / "manifests" / "b.yml", INVALID_MANIFEST)
    _write(tmp_path / "manifests" / "notes.txt", "not a manifest: [")

    status, out, _ = _run(capsys, "validate", str(tmp_path / "manifests"))

    assert status == 1
    assert out.startswith(f"{tmp_path / 'manifests' / 'b.yml'}: document 0 (DeepSpeedJob 'bert'): ")
    assert out.splitlines()[-1] == "2 problems in 1 of 2 documents (2 files checked)"


def test_validate_lists_every_problem_with_file_document_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "jobs.yaml", VALID_MANIFEST + "---\n" + INVALID_MANIFEST)

    status, out, _ = _run(capsys, "validate", str(path))

    assert status == 1
    lines = out.splitlines()
    where = f"{path}: document 1 (DeepSpeedJob 'bert'): "
    assert lines[0].startswith(
        where + "spec.config.slotPerWorker: unknown field 'slotPerWorker'; did you mean"
        " 'slotsPerWorker'?"
    )
    assert lines[1].startswith(
        where + "spec.worker.template.spec.containers[0].imagePullPolicyy: unknown field"
    )
    assert lines[-1] == "2 problems in 1 of 2 documents (1 file checked)"
    assert len(lines) == 3


def test_validate_reports_a_document_that_is_not_an_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "list.yaml", "- a\n- b\n")

    status, out, _ = _run(capsys, "validate", str(path))

    assert status == 1
    assert out.splitlines()[0] == (
        f"{path}: document 0: expected a Kubernetes object (a mapping); got a list"
    )


def test_validate_checks_the_items_of_a_list_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    item = textwrap.indent(INVALID_MANIFEST, "  ").replace("  apiVersion", "- apiVersion", 1)
    path = _write(tmp_path / "list.yaml", "apiVersion: v1\nkind: List\nitems:\n" + item)

    status, out, _ = _run(capsys, "validate", str(path))

    assert status == 1
    assert out.splitlines()[0].startswith(
        f"{path}: document 0 (DeepSpeedJob 'bert'): items[0].spec.config.slotPerWorker: unknown"
    )


LEGACY_COLOSSALAI = """\
apiVersion: batch.tensorstack.dev/v1beta1
kind: ColossalAIJob
metadata:
  name: palm
spec:
  launcher:
    image: colossalai:0.2.5
  worker:
    replicas: 1
    procPerWorker: 4
    command: [train.py]
    template:
      spec:
        containers:
        - name: worker
          image: colossalai:0.2.5
"""


def test_validate_accepts_legacy_forms_that_apply_converts_and_strict_rejects_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """T9k still publishes the legacy ColossalAIJob schema: apply, plan and render convert it,
    so validate says so (exit 0); --strict is for manifests kubectl or a GitOps tool applies as
    written, which the API server rejects; convert rewrites them."""
    path = _write(tmp_path / "legacy.yaml", LEGACY_COLOSSALAI)

    status, out, err = _run(capsys, "validate", str(path))
    assert (status, err) == (0, "")  # no raw Python warning
    first = out.splitlines()[0]
    assert first.startswith(
        f"{path}: document 0 (ColossalAIJob 'palm'): warning: ColossalAIJob"
        " spec.launcher/spec.worker is the legacy schema"
    )
    assert "t9k-sdk apply, plan and render convert it" in first
    assert f"`t9k-sdk convert {path}` rewrites it" in first
    assert out.splitlines()[-1] == "1 document valid (1 warning)"

    status, out, err = _run(capsys, "validate", "--strict", str(path))
    assert status == 1
    first = out.splitlines()[0]
    assert first.startswith(
        f"{path}: document 0 (ColossalAIJob 'palm'): ColossalAIJob spec.launcher/spec.worker"
        " is the legacy schema"
    )
    assert f"`t9k-sdk convert {path}` rewrites it in the current schema" in first
    assert out.splitlines()[-1] == "1 problem in 1 of 1 document (1 file checked)"

    status, out, err = _run(capsys, "convert", "-i", str(path))
    assert (status, err) == (0, f"rewrote {path}\n")
    assert "replicaSpecs" in path.read_text()
    status, out, _ = _run(capsys, "validate", "--strict", str(path))
    assert (status, out.splitlines()[-1]) == (0, "1 document valid")


COMMENTED_LEGACY = """\
# PaLM on ColossalAI, from T9k's manual (2023): keep this note
apiVersion: batch.tensorstack.dev/v1beta1
kind: ColossalAIJob
metadata:
  name: palm   # the model's name
spec:
  ssh:
    authMountPath: "/root/.ssh"
    sshdPath: /usr/sbin/sshd
  launcher:
    image: colossalai:0.2.5
  worker:
    replicas: 2
    procPerWorker: 4
    command: [ "train.py", "--epochs", "3" ]
    template:
      spec:
        containers:
          - name: worker
            image: colossalai:0.2.5   # pinned
---
# an elastic DeepSpeedJob in the current schema but for `enable`
apiVersion: batch.tensorstack.dev/v1beta1
kind: DeepSpeedJob
metadata: {name: elastic}
spec:
  elastic:
    enable: true
    minReplicas: 1   # at night
    maxReplicas: 4
  config:
    run:
      python: ["train.py"]
  worker:
    template:
      spec:
        containers:
          - name: worker
            image: 'ds:1'
---
# already current: not a byte changed
apiVersion: batch.tensorstack.dev/v1beta1
kind: GenericJob
metadata:
  name: mnist
spec:
  replicaSpecs:
    - type: worker   # the only type
      template:
        spec:
          containers: [{name: worker, image: "pt:2"}]
"""


CONVERTED_PALM = """\
  torchConfig:
    procPerWorker: 4
    script:
      - train.py
      - --epochs
      - "3"
  replicaSpecs:
    - type: launcher
      template:
        spec:
          containers:
            - name: launcher
              image: colossalai:0.2.5
    - type: worker
      replicas: 2
      template:
        spec:
          containers:
            - name: worker
              image: colossalai:0.2.5
"""


def test_convert_in_place_rewrites_only_the_legacy_fields_and_keeps_the_rest_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "jobs.yaml", COMMENTED_LEGACY)

    status, out, err = _run(capsys, "convert", "-i", str(path))

    assert (status, out, err) == (0, "", f"rewrote {path}\n")
    text = path.read_text()
    palm, elastic, mnist = text.split("---\n")
    before = COMMENTED_LEGACY.split("---\n")
    assert mnist == before[2]
    # the DeepSpeedJob: one line, the legacy spelling, changed
    assert elastic == before[1].replace("    enable: true\n", "    enabled: true\n")
    # the ColossalAIJob: its comments, quoting and untouched lines stay; the legacy fields are
    # replaced by the current ones, in the file's indentation (a comment inside them is lost)
    assert palm == before[0].split("  launcher:")[0] + CONVERTED_PALM
    assert [j.name for j in load_all_yaml(text)] == ["palm", "elastic", "mnist"]
    status, out, _ = _run(capsys, "validate", "--strict", str(path))
    assert (status, out.splitlines()[-1]) == (0, "3 documents valid")
    # converting again changes nothing, and printing shows what -i writes
    assert _run(capsys, "convert", str(path))[1] == text


def test_convert_writes_a_json_file_back_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    legacy = yaml.safe_load(LEGACY_COLOSSALAI)
    path = _write(tmp_path / "palm.json", json.dumps(legacy, indent=2))

    assert _run(capsys, "convert", "-i", str(path))[0] == 0

    converted = json.loads(path.read_text())
    assert list(converted["spec"]) == ["torchConfig", "replicaSpecs"]
    assert [j.name for j in load_all_yaml(path)] == ["palm"]


def test_convert_keeps_a_list_a_list_and_converts_its_items(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elastic = COMMENTED_LEGACY.split("---\n")[1]
    item = textwrap.indent(elastic.split("\n", 1)[1], "  ").replace("  apiVersion", "- apiVersion")
    text = "# the nightly jobs\napiVersion: v1\nkind: List\nitems:\n" + item
    path = _write(tmp_path / "list.yaml", text)
    assert "      enable: true\n" in text  # the legacy spelling, to convert

    assert _run(capsys, "convert", "-i", str(path))[0] == 0

    assert path.read_text() == text.replace("      enable: true\n", "      enabled: true\n")


def test_validate_names_the_legacy_fields_the_user_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = LEGACY_COLOSSALAI.replace("replicas: 1", "replicas: -1").replace(
        "procPerWorker: 4", "procPerWorker: many"
    )
    path = _write(tmp_path / "legacy.yaml", text)
    status, out, _ = _run(capsys, "validate", str(path))
    assert status == 1
    problems = [line for line in out.splitlines() if ": warning:" not in line][:-1]
    assert any("spec.worker.replicas:" in line for line in problems), out
    assert any("spec.worker.procPerWorker:" in line for line in problems), out
    assert not any("replicaSpecs" in line or "torchConfig" in line for line in problems), out


def test_validate_reads_standard_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(INVALID_MANIFEST))

    status, out, _ = _run(capsys, "validate", "-")

    assert status == 1
    assert out.startswith("<stdin>: document 0 (DeepSpeedJob 'bert'): spec.config.slotPerWorker:")


def test_validate_yaml_syntax_error_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "broken.yaml", "kind: GenericJob\nmetadata:\n  name: a: b\n")

    status, out, _ = _run(capsys, "validate", str(path))

    assert status == 1
    first = out.splitlines()[0]
    assert first.startswith(f"{path}: line 3, column 10: invalid YAML: ")
    assert "mapping values are not allowed" in first
    assert "1 file with invalid YAML" in out


def test_validate_rejects_duplicate_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "dup.yaml", VALID_MANIFEST + "          image: pt:3\n")

    status, out, _ = _run(capsys, "validate", str(path))

    assert status == 1
    assert out.splitlines()[0] == (
        f"{path}: line 13, column 11: invalid YAML: duplicate key 'image' (first at line 12);"
        " the first value would be silently lost"
    )


def test_validate_missing_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _run(capsys, "validate", str(tmp_path / "nope.yaml"))

    assert (status, out) == (2, "")
    assert "nope.yaml: no such file" in err


def test_validate_with_nothing_to_validate_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = _write(tmp_path / "empty.yaml", "# nothing yet\n")

    status, out, _ = _run(capsys, "validate", str(empty))
    assert status == 1
    assert out == f"no documents found in {empty}: nothing was validated\n"

    (tmp_path / "manifests").mkdir()
    status, out, _ = _run(capsys, "validate", str(tmp_path / "manifests"))
    assert status == 1
    assert out == f"no documents found in {tmp_path / 'manifests'}: nothing was validated\n"


# -- crds ----------------------------------------------------------------------------------

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the CRDs are large: use libyaml
_CRD_NAMES = {
    "genericjobs.batch.tensorstack.dev",
    "deepspeedjobs.batch.tensorstack.dev",
    "colossalaijobs.batch.tensorstack.dev",
}


def test_crds_prints_the_three_crds(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "crds")

    assert status == 0
    docs = list(yaml.load_all(out, Loader=_LOADER))
    assert [d["kind"] for d in docs] == ["CustomResourceDefinition"] * 3
    assert {d["metadata"]["name"] for d in docs} == _CRD_NAMES


def test_crds_writes_one_file_per_crd(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = _run(capsys, "crds", "--out-dir", str(tmp_path / "crds"))

    assert status == 0
    files = sorted(p.name for p in (tmp_path / "crds").iterdir())
    assert files == [f"batch.tensorstack.dev_{n.split('.')[0]}.yaml" for n in sorted(_CRD_NAMES)]
    for file in files:
        (crd,) = yaml.load_all((tmp_path / "crds" / file).read_text(), Loader=_LOADER)
        assert file == f"{crd['spec']['group']}_{crd['spec']['names']['plural']}.yaml"
    assert "wrote 3 CRDs" in err


# -- help, version, usage -------------------------------------------------------------------


@pytest.mark.parametrize("command", [[], ["render"], ["validate"], ["crds"]], ids=str)
def test_help(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, *command, "--help")

    assert status == 0
    assert out.startswith(f"usage: t9k-sdk {' '.join(command)}".rstrip())
    assert "exit status: 0 success, 1 invalid input or nothing found, 2 usage error" in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "--version")

    assert (status, out) == (0, "t9k-sdk 0.1.0\n")


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = _run(capsys)

    assert status == 2
    assert "usage: t9k-sdk" in err


# -- install -------------------------------------------------------------------------------


def test_install_refuses_an_invalid_namespace_naming_the_value_and_the_rule(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, err = _run(capsys, "install", "--watch-namespace", "Team_A")
    assert status == 2
    assert out == ""
    assert "'Team_A' is not a valid namespace name" in err
    assert "DNS-1123 label" in err


def test_install_with_a_watch_namespace_prints_roles_and_no_cluster_role(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, _ = _run(capsys, "install", "--namespace", "ops", "--watch-namespace", "team-a")
    assert status == 0
    kinds = [doc["kind"] for doc in yaml.safe_load_all(out) if doc]
    assert "ClusterRole" not in kinds
    assert kinds.count("Role") == 2
    assert "--namespace=team-a" in out


# -- the installed command, end to end ------------------------------------------------------


@pytest.fixture
def console_script() -> Iterator[Path]:
    script = Path(sys.executable).parent / "t9k-sdk"
    assert script.exists(), "the t9k-sdk console script is not installed (pip install -e .)"
    return script


def test_console_script_renders_the_examples_and_validates_them(
    tmp_path: Path, console_script: Path
) -> None:
    rendered = subprocess.run(
        [console_script, "render", "examples/", "--out-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert rendered.returncode == 0, rendered.stderr
    files = sorted(str(p) for p in tmp_path.glob("*.yaml"))
    assert len(files) >= 6

    validated = subprocess.run(
        [console_script, "validate", *files], capture_output=True, text=True, check=False
    )

    assert validated.returncode == 0, validated.stdout
    assert validated.stdout == f"{len(files)} documents valid\n"
