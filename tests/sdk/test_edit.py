"""Reading a manifest as its kind (`models.DeepSpeedJob.from_yaml`) and changing fields deep inside
it in one call (`edit`), as a user editing a published job does; mistakes name the path, the
value and what would be right."""

from __future__ import annotations

import io
import re
import warnings
from pathlib import Path

import pytest

from t9k_sdk import InvalidManifestError, InvalidYAMLError, LegacyManifestWarning, models

PUBLISHED = Path(__file__).parent / "published"

JOB = """\
apiVersion: batch.tensorstack.dev/v1beta1
kind: DeepSpeedJob
metadata:
  name: bert
spec:
  config:
    slotsPerWorker: 8
    run:
      python: [train.py, --epochs, "3"]
  worker:
    replicas: 2
    template:
      spec:
        containers:
          - name: worker
            image: ds:0.14
            resources:
              limits: {nvidia.com/gpu: 8}
"""


def _problems(exc: pytest.ExceptionInfo[InvalidManifestError]) -> list[tuple[str, str]]:
    return [(p.path, p.message) for p in exc.value.problems]


# -- from_yaml ---------------------------------------------------------------------------------


def test_from_yaml_reads_text_bytes_a_file_or_a_path_as_the_kind(tmp_path: Path) -> None:
    path = tmp_path / "bert.yaml"
    path.write_text(JOB)
    for source in (JOB, JOB.encode(), io.StringIO(JOB), path):
        job = models.DeepSpeedJob.from_yaml(source)
        assert type(job) is models.DeepSpeedJob
        assert (job.name, job.spec.worker.replicas) == ("bert", 2)


def test_from_yaml_of_another_kind_names_the_class_that_reads_it() -> None:
    with pytest.raises(InvalidManifestError) as exc:
        models.GenericJob.from_yaml(JOB)
    assert exc.value.subject == "DeepSpeedJob 'bert'"
    assert _problems(exc) == [
        (
            "kind",
            "GenericJob.from_yaml reads a GenericJob; got 'DeepSpeedJob'"
            " (models.DeepSpeedJob.from_yaml reads it)",
        )
    ]


def test_from_yaml_reads_one_job_and_says_how_to_read_a_file() -> None:
    with pytest.raises(InvalidManifestError, match=r"expected one document, a DeepSpeedJob; got 2"):
        models.DeepSpeedJob.from_yaml(JOB + "---\n" + JOB)
    with pytest.raises(
        InvalidManifestError,
        match=re.escape("got the text 'bert.yaml' (to read a file, pass Path('bert.yaml'))"),
    ):
        models.DeepSpeedJob.from_yaml("bert.yaml")


def test_from_yaml_reports_every_field_at_fault_and_bad_yaml_with_its_position() -> None:
    bad = JOB.replace("slotsPerWorker: 8", "slotPerWorker: 8").replace(
        "replicas: 2", "replicas: -1"
    )
    with pytest.raises(InvalidManifestError) as exc:
        models.DeepSpeedJob.from_yaml(bad)
    assert [path for path, _ in _problems(exc)] == [
        "spec.config.slotPerWorker",
        "spec.worker.replicas",
    ]
    with pytest.raises(InvalidYAMLError, match="line 2, column 5: invalid YAML: mapping values"):
        models.DeepSpeedJob.from_yaml("a: 1\nb: c: d\n")


def test_from_yaml_converts_a_legacy_manifest_with_a_warning() -> None:
    with pytest.warns(LegacyManifestWarning):
        job = models.ColossalAIJob.from_yaml(PUBLISHED / "A_2_6.yaml")
    assert [r.type for r in job.spec.replica_specs] == ["launcher", "worker"]


# -- edit --------------------------------------------------------------------------------------


def test_edit_sets_fields_deep_inside_in_one_call_and_leaves_the_original() -> None:
    job = models.DeepSpeedJob.from_yaml(JOB)

    edited = job.edit(
        {
            "spec.worker.replicas": 4,
            "spec.worker.template.spec.containers[0].image": "ds:0.15",
            "spec.config.run.python[-1]": "5",
            'spec.worker.template.spec.containers[0].resources.limits["nvidia.com/gpu"]': 4,
            "spec.runPolicy.backoffLimit": 1,  # mappings not set yet are created
            "spec.config.slotsPerWorker": None,  # removed
        }
    )

    assert type(edited) is models.DeepSpeedJob
    container = edited.spec.worker.template.spec.containers[0]
    assert (edited.spec.worker.replicas, container.image) == (4, "ds:0.15")
    assert edited.spec.config.run.python == ["train.py", "--epochs", "5"]
    assert container.resources.limits == {"nvidia.com/gpu": 4}
    assert edited.spec.run_policy.backoff_limit == 1
    assert edited.spec.config.slots_per_worker is None
    assert job == models.DeepSpeedJob.from_yaml(JOB)


def test_edit_takes_models_as_values() -> None:
    job = models.DeepSpeedJob.from_yaml(JOB)
    env = [models.core_v1.EnvVar(name="NCCL_DEBUG", value="INFO")]
    edited = job.edit({"spec.worker.template.spec.containers[0].env": env})
    assert edited.spec.worker.template.spec.containers[0].env == env


@pytest.mark.parametrize(
    ("changes", "path", "message"),
    [
        (
            {"spec.worker.replicas": -1},
            "spec.worker.replicas",
            "input should be greater than or equal to 0; got -1",
        ),
        (
            {"spec.worker.replica": 2},
            "spec.worker.replica",
            "unknown field 'replica'; did you mean 'replicas'? allowed fields of Worker:"
            " replicas, template, restartPolicy",
        ),
        (
            {"spec.config.run.python[3]": "x"},
            "spec.config.run.python[3]",
            "spec.config.run.python has 3 items; index 3 is not one (0 to 2, or -1 for the last)",
        ),
        (
            {"spec.worker.template.spec.containers.image": "x"},
            "spec.worker.template.spec.containers.image",
            "spec.worker.template.spec.containers is a list of 1: give an item's index, as in"
            " spec.worker.template.spec.containers[0]",
        ),
        (
            {"spec.worker.replicas.count": 1},
            "spec.worker.replicas.count",
            "spec.worker.replicas is int 2, which has no field 'count'",
        ),
        (
            {"spec.worker.template.spec.volumes[0].name": "x"},
            "spec.worker.template.spec.volumes[0].name",
            "spec.worker.template.spec.volumes is not set; set the whole list first",
        ),
        (
            {"spec.config.run.python[0]": None},
            "spec.config.run.python[0]",
            "a list item cannot be None; set the list without it",
        ),
        (
            {"spec..worker": 1},
            "spec..worker",
            "not a path at character 5; a path is names joined by dots, [N] for a list's item"
            ' (-1 for the last) and ["a.b"] for a key with dots, such as'
            " spec.worker.template.spec.containers[0].image",
        ),
    ],
)
def test_an_edit_that_cannot_be_made_names_the_path_and_what_is_wrong(
    changes: dict[str, object], path: str, message: str
) -> None:
    job = models.DeepSpeedJob.from_yaml(JOB)
    with pytest.raises(InvalidManifestError) as exc:
        job.edit(changes)
    assert exc.value.subject == "DeepSpeedJob 'bert'"
    assert _problems(exc) == [(path, message)]


def test_removing_what_is_not_there_is_nothing_to_do() -> None:
    job = models.DeepSpeedJob.from_yaml(JOB)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert job.edit({"spec.elastic.maxReplicas": None}) == job
