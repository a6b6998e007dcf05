"""What a user sees where they type: `help()`, `inspect.signature` (editors, IPython), and the
errors that name a builder's arguments as they were written (`image`, not the wire path)."""

from __future__ import annotations

import inspect
import pydoc
from typing import Any

import pytest
from pydantic import BaseModel

import t9k_sdk
from t9k_sdk import (
    ColossalAIJob,
    DeepSpeedJob,
    Elastic,
    GenericJob,
    InvalidManifestError,
    Launcher,
    Replica,
    TorchrunJob,
)

PIECES = [
    obj
    for obj in (getattr(t9k_sdk, n) for n in t9k_sdk.__all__)
    if isinstance(obj, type)
    and issubclass(obj, BaseModel)
    and obj.__module__.startswith("t9k_sdk.builders")
]
"""The builders and their pieces (`Resources`, `PVC`, `Replica`, ...), as `t9k_sdk` exports them."""


def _help(cls: type[Any]) -> str:
    return pydoc.render_doc(cls, renderer=pydoc.plaintext)


def _args(cls: type[Any]) -> dict[str, str]:
    """The `Args:` section of `help(cls)`: argument -> its line(s), joined."""
    section = _help(cls).split(" |  Args:\n", 1)[1].split(" |  \n", 1)[0]
    args: dict[str, str] = {}
    for line in section.splitlines():
        text = line.removeprefix(" |  ")
        if text.startswith("        "):  # a wrapped line
            args[next(reversed(args))] += " " + text.strip()
        else:
            name, rest = text.strip().split(" ", 1)
            args[name] = rest
    return args


def test_help_deepspeedjob_is_short_and_lists_each_argument_with_its_type_and_doc() -> None:
    text = _help(DeepSpeedJob)
    args = _args(DeepSpeedJob)

    assert len(text) < 10_000  # it was 33 KB of pydantic's internals
    assert "Annotated[" not in text
    assert "model_dump" not in text
    assert "__pydantic" not in text
    assert list(args)[:4] == ["name", "image", "workers", "run"]
    assert args["image"] == '(str): Container image, e.g. "pytorch/pytorch:2.4.0".'
    assert args["workers"] == "(int): Number of worker pods."
    assert args["cpu_per_worker"] == (
        '(int | float | str | None): CPU per worker, e.g. 16 or 0.5 (written as "500m").'
    )
    assert args["restart_policy"] == (
        "(Literal['Always', 'OnFailure', 'Never', 'ExitCode'] | None): Always, OnFailure"
        " (default), Never or ExitCode."
    )
    assert args["volumes"].startswith("(list[PVC | EmptyDir | SecretVolume] | None): Volumes")
    for method in ("build(self)", "to_yaml(self)", "replace(self, **changes"):
        assert method in text


@pytest.mark.parametrize("cls", PIECES, ids=lambda c: c.__name__)
def test_every_argument_is_in_help_with_one_line_of_doc(cls: type[Any]) -> None:
    args = _args(cls)

    assert set(args) == set(cls.model_fields)
    for name, info in cls.model_fields.items():
        doc = " ".join((info.description or "").split())
        assert doc, f"{cls.__name__}.{name} has no docstring"
        assert args[name].endswith(f"): {doc}")


@pytest.mark.parametrize("cls", PIECES, ids=lambda c: c.__name__)
def test_signature_has_the_arguments_with_readable_types_and_defaults(cls: type[Any]) -> None:
    signature = inspect.signature(cls)

    assert list(signature.parameters) == list(_args(cls))  # no junk, in the order of help()
    assert all(p.kind is p.KEYWORD_ONLY for p in signature.parameters.values())
    assert "Annotated" not in str(signature)
    assert "typing." not in str(signature)
    for name, info in cls.model_fields.items():
        default = signature.parameters[name].default
        if default is not inspect.Parameter.empty:
            assert default == info.get_default()


def test_the_signature_reads_as_type_checkers_read_it() -> None:
    text = str(inspect.signature(DeepSpeedJob))
    launcher = inspect.signature(Launcher).parameters["image"]

    assert text.startswith("(*, name: str, image: str, workers: int = 1, run: list[str] | None")
    assert "clean_up_policy: Literal['None', 'Unfinished', 'All'] | None = None" in text
    assert "env: dict[str, str] | list[models.core_v1.EnvVar] | None = None" in text
    assert str(launcher) == "image: str | None = None"  # the launcher takes the job's


def test_a_subclass_gets_its_own_arguments_in_help_and_signature() -> None:
    class Sweep(DeepSpeedJob):
        """A DeepSpeedJob with a learning rate."""

        lr: float = 0.1
        """Learning rate passed to train.py."""

    assert "lr (float): Learning rate passed to train.py." in _help(Sweep)
    assert str(inspect.signature(Sweep).parameters["lr"]) == "lr: float = 0.1"
    assert "lr (" not in _help(DeepSpeedJob)


def test_help_hides_pydantic_but_the_objects_keep_its_methods() -> None:
    job = DeepSpeedJob(name="bert", image="ds:1", run=["train.py"])

    assert dir(DeepSpeedJob) == ["build", "model_copy", "replace", "to_dict", "to_yaml"]
    assert job.model_dump()["image"] == "ds:1"
    assert "model_dump" in dir(job)
    assert DeepSpeedJob.model_json_schema()["required"] == ["name"]


# -- a missing image, and the wire rules' problems, name the argument -------------------------


def _problems(make: Any) -> list[str]:
    with pytest.raises(InvalidManifestError) as info:
        make()
    return [str(p) for p in info.value.problems]


IMAGE_REQUIRED = (
    "image: required: the image of the training container, e.g."
    " image='pytorch/pytorch:2.4.0'; got None"
)


@pytest.mark.parametrize(
    "make",
    [
        lambda: DeepSpeedJob(name="x", workers=2, run=["t.py"]),  # type: ignore[call-arg]
        lambda: TorchrunJob(name="x", run=["t.py"]),  # type: ignore[call-arg]
        lambda: ColossalAIJob(name="x", script=["t.py"]),  # type: ignore[call-arg]
        lambda: Replica(type="worker"),  # type: ignore[call-arg]
    ],
    ids=["DeepSpeedJob", "TorchrunJob", "ColossalAIJob", "Replica"],
)
def test_a_missing_image_names_the_image_argument(make: Any) -> None:
    assert _problems(make) == [IMAGE_REQUIRED]


def test_an_image_in_the_template_s_training_container_is_enough_at_run_time() -> None:
    template = {"spec": {"containers": [{"name": "worker", "image": "ds:1"}]}}
    job = DeepSpeedJob(name="x", run=["t.py"], template=template)  # type: ignore[call-arg]
    sidecar = {"spec": {"containers": [{"name": "proxy"}, {"name": "worker", "image": "ds:1"}]}}

    assert job.to_dict()["spec"]["worker"]["template"]["spec"]["containers"][0]["image"] == "ds:1"
    assert _problems(lambda: job.replace(image="")) == [
        IMAGE_REQUIRED.replace("got None", "got ''")
    ]
    assert _problems(lambda: DeepSpeedJob(name="x", image="i", run=["t"], template=sidecar)) == [
        "template.spec.containers[0].image: every container needs an image; got None"
    ]


def _generic(**replica: Any) -> GenericJob:
    return GenericJob(name="g", replicas=[Replica(**{"type": "w", "image": "i", **replica})])


@pytest.mark.parametrize(
    ("make", "path"),
    [
        (lambda: DeepSpeedJob(name="Bad_Name", image="i", run=["t.py"]), "name"),
        (lambda: DeepSpeedJob(name="b", namespace="Bad NS", image="i", run=["t.py"]), "namespace"),
        (lambda: DeepSpeedJob(name="b", labels={"a b": "c"}, image="i", run=["t.py"]), "labels"),
        (lambda: DeepSpeedJob(name="b", queue="", image="i", run=["t.py"]), "queue"),
        (lambda: DeepSpeedJob(name="b", env={"1A": "x"}, image="i", run=["t.py"]), "env"),
        (lambda: DeepSpeedJob(name="b", image="i", custom_command=""), "custom_command"),
        (
            lambda: DeepSpeedJob(
                name="b", image="i", run=["t.py"], other_args=["--master_port=1", "--no_python"]
            ),
            "other_args[1]",
        ),
        (lambda: _generic(type="Bad_Type"), "replicas[0].type"),
        (lambda: _generic(ports={"Bad Port": 80}), "replicas[0].ports"),
        (lambda: _generic(container_name="Bad_Name"), "replicas[0].container_name"),
        (lambda: TorchrunJob(name="t" * 60, image="i", run=["t.py"]), "name"),
        (
            lambda: ColossalAIJob(
                name="c",
                image="i",
                script=["t.py"],
                launcher=Launcher(
                    template={"spec": {"containers": [{"name": "launcher"}, {"name": "x"}]}}
                ),
            ),
            "launcher.template.spec.containers[1].image",
        ),
    ],
)
def test_the_wire_rules_problems_name_the_builder_argument(make: Any, path: str) -> None:
    problems = _problems(make)

    assert [p.split(": ", 1)[0] for p in problems][:1] == [path], problems
    assert not any(p.startswith(("spec.", "metadata.")) for p in problems), problems


def test_a_message_that_names_the_wire_field_names_the_argument() -> None:
    (problem,) = _problems(lambda: TorchrunJob(name="t" * 60, image="i", run=["t.py"]))

    assert "shorten name or the replica type" in problem
    assert "metadata.name" not in problem


def test_workers_outside_elastic_bounds_name_workers() -> None:
    assert _problems(
        lambda: DeepSpeedJob(
            name="d", image="i", run=["t"], workers=1, elastic=Elastic(min=2, max=4)
        )
    ) == ["workers: must be between elastic min and max (2-4), or give elastic expected=; got 1"]
