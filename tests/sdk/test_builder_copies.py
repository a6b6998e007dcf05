"""Copies of builders as a user makes them (a sweep): each copy renders what it prints, is
validated like a new builder, and `render` refuses two different jobs with one name."""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path

import pytest
import yaml

from t9k_sdk import (
    DeepSpeedJob,
    GenericJob,
    InvalidManifestError,
    Replica,
)
from t9k_sdk.cli import main
from tests.sdk.test_builder_errors import _bert, _message

# -- item 3: copies --------------------------------------------------------------------------


def test_a_sweep_written_with_model_copy_renders_one_manifest_per_job() -> None:
    base = _bert()
    base.to_yaml()  # built (and cached) before the copies are taken
    sweep = [
        base.model_copy(update={"name": f"bert-lr{i}", "run": ["train.py", "--lr", lr]})
        for i, lr in enumerate(["0.1", "0.01", "0.001"])
    ]

    manifests = [job.to_dict() for job in sweep]

    assert [m["metadata"]["name"] for m in manifests] == ["bert-lr0", "bert-lr1", "bert-lr2"]
    assert [m["spec"]["config"]["run"]["python"][-1] for m in manifests] == [
        "0.1",
        "0.01",
        "0.001",
    ]
    assert base.to_dict()["metadata"]["name"] == "bert"


def test_replace_returns_a_new_validated_builder_and_keeps_the_original() -> None:
    base = _bert()

    bigger = base.replace(name="bert-16", workers=16)

    assert isinstance(bigger, DeepSpeedJob)
    assert bigger.to_dict()["spec"]["worker"]["replicas"] == 16
    assert bigger.to_dict()["metadata"]["name"] == "bert-16"
    assert base.to_dict()["spec"]["worker"]["replicas"] == 2
    assert copy.copy(base).to_dict() == base.to_dict()
    assert base.model_copy().to_dict() == base.to_dict()


def test_replace_and_model_copy_validate_the_changes() -> None:
    base = _bert()

    with pytest.raises(InvalidManifestError) as bad_value:
        base.replace(workers=0)
    with pytest.raises(InvalidManifestError) as unknown:
        base.model_copy(update={"wokers": 4})
    with pytest.raises(InvalidManifestError) as conflict:
        base.replace(module=["pkg.train"])  # run is kept: two launch choices

    assert "workers: input should be greater than or equal to 1; got 0" in _message(bad_value)
    assert "unknown field 'wokers'; did you mean 'workers'?" in _message(unknown)
    assert "give only one of run, module, exec, custom_command" in _message(conflict)


def test_helper_types_can_be_replaced_too() -> None:
    worker = Replica(type="worker", count=2, image="pt:2")

    four = worker.replace(count=4)

    assert (four.count, four.image, worker.count) == (4, "pt:2", 2)
    job = GenericJob(name="mnist", replicas=[four])
    assert job.to_dict()["spec"]["replicaSpecs"][0]["replicas"] == 4
    with pytest.raises(InvalidManifestError, match="count: input should be greater than or equal"):
        worker.replace(count=-1)


def _render(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str
) -> tuple[int, str, str]:
    path = tmp_path / "sweep.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    status = main(["render", str(path)])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize(
    "how", ["model_copy(update={'name': f'bert-{lr}'})", "replace(name=f'bert-{lr}')"]
)
def test_render_of_a_sweep_of_copies_renders_every_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    status, out, err = _render(
        tmp_path,
        capsys,
        f"""\
        from t9k_sdk import DeepSpeedJob

        base = DeepSpeedJob(name="bert", image="ds:1", workers=2, run=["train.py"])
        sweep = [base.{how} for lr in ("a", "b", "c")]
        """,
    )

    assert (status, err) == (0, "")
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(out)]
    assert names == ["bert", "bert-a", "bert-b", "bert-c"]


def test_render_refuses_two_copies_with_one_name_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _render(
        tmp_path,
        capsys,
        """\
        from t9k_sdk import DeepSpeedJob

        base = DeepSpeedJob(name="bert", image="ds:1", workers=2, run=["train.py"])
        sweep = [base.replace(workers=n) for n in (4, 8)]
        """,
    )

    assert (status, out) == (1, "")
    source = tmp_path / "sweep.py"
    assert (
        f"two different jobs are both DeepSpeedJob 'bert': {source}: base and {source}: sweep[0]"
        in err
    )
    assert f"{source}: base and {source}: sweep[1]" in err


def test_render_writes_identical_duplicates_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, _ = _render(
        tmp_path,
        capsys,
        """\
        from t9k_sdk import DeepSpeedJob

        base = DeepSpeedJob(name="bert", image="ds:1", workers=2, run=["train.py"])
        same = base.replace(workers=2)
        """,
    )

    assert status == 0
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(out)] == ["bert"]
