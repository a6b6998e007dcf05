"""Bad builder arguments as a user meets them: every builder and helper type raises
`InvalidManifestError` naming the argument, the value, what is allowed and a suggestion."""

from __future__ import annotations

from typing import Any, get_args

import pytest
from pydantic import ValidationError

from t9k_sdk import (
    PVC,
    ColossalAIJob,
    Debug,
    DeepSpeedJob,
    Elastic,
    EmptyDir,
    GenericJob,
    InvalidManifestError,
    Launcher,
    Replica,
    Resources,
    Resume,
    SecretVolume,
    T9kError,
    models,
)
from t9k_sdk.builders import AutotuneName, CleanUpPolicyName, RestartPolicyName


def _bert(**changes: Any) -> DeepSpeedJob:
    args: dict[str, Any] = {
        "name": "bert",
        "image": "ds:1",
        "workers": 2,
        "gpus_per_worker": 8,
        "run": ["train.py", "--lr", "0.1"],
    }
    return DeepSpeedJob(**{**args, **changes})


def _message(exc: pytest.ExceptionInfo[InvalidManifestError]) -> str:
    return str(exc.value)


# -- item 4: one error type ------------------------------------------------------------------

MISSPELLED: list[tuple[type[Any], dict[str, Any], str]] = [
    (Resources, {"gpu": 1}, "gpus"),
    (PVC, {"claim": "data", "mountpath": "/data"}, "mount_path"),
    (EmptyDir, {"mount_path": "/dev/shm", "sizelimit": "1Gi"}, "size_limit"),
    (SecretVolume, {"secret": "s", "mount_path": "/s", "readonly": True}, "read_only"),
    (Debug, {"comand": ["sleep", "inf"]}, "command"),
    (Resume, {"arg": ["--resume"]}, "args"),
    (Replica, {"type": "worker", "conut": 2}, "count"),
    (Launcher, {"imag": "pt:2"}, "image"),
    (Elastic, {"min": 1, "max": 4, "expect": 2}, "expected"),
]


@pytest.mark.parametrize(
    ("cls", "kwargs", "suggestion"), MISSPELLED, ids=[c.__name__ for c, _, _ in MISSPELLED]
)
def test_every_helper_type_names_an_unknown_argument_and_suggests_one(
    cls: type[Any], kwargs: dict[str, Any], suggestion: str
) -> None:
    with pytest.raises(InvalidManifestError) as exc:
        cls(**kwargs)

    assert isinstance(exc.value, T9kError)
    assert not isinstance(exc.value, ValidationError)
    assert exc.value.subject == cls.__name__
    wrong = next(k for k in kwargs if k not in cls.model_fields)
    (problem,) = [p for p in exc.value.problems if p.path == wrong]
    assert f"unknown field {wrong!r}; did you mean {suggestion!r}?" in problem.message
    assert f"allowed fields of {cls.__name__}:" in problem.message


def test_helper_types_name_the_argument_the_value_and_what_is_allowed() -> None:
    with pytest.raises(InvalidManifestError) as resources:
        Resources(cpu="lots", gpus=0.5)
    with pytest.raises(InvalidManifestError) as elastic:
        Elastic(min=0, max=4)
    with pytest.raises(InvalidManifestError) as pvc:
        PVC(claim="data")

    assert [str(p) for p in resources.value.problems] == [
        "cpu: must be a resource quantity: a number with an optional suffix (m, k, M, G, T, P, E,"
        " Ki, Mi, Gi, Ti, Pi, Ei or an exponent), such as 2, '500m', '1.5' or '16Gi'; got 'lots'",
        "gpus: expected an integer; got 0.5",
    ]
    assert _message(elastic) == (
        "Elastic is invalid:\n  - min: input should be greater than or equal to 1; got 0"
    )
    assert _message(pvc) == "PVC is invalid:\n  - mount_path: required field is missing"


@pytest.mark.parametrize(
    ("cpu", "wire"),
    [(0.5, "500m"), (2.0, 2), (1.25, "1250m"), (0.0001, "0.0001"), (8, 8), ("500m", "500m")],
)
def test_cpu_as_a_float_is_rendered_canonically(cpu: float | str, wire: int | str) -> None:
    job = GenericJob(
        name="mnist",
        replicas=[Replica(type="worker", image="pt:2", resources=Resources(cpu=cpu))],
    )
    job_per_worker = _bert(gpus_per_worker=0, cpu_per_worker=cpu)

    requests = job.to_dict()["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0][
        "resources"
    ]
    worker = job_per_worker.to_dict()["spec"]["worker"]["template"]["spec"]["containers"][0]
    assert requests == {"requests": {"cpu": wire}, "limits": {"cpu": wire}}
    assert worker["resources"]["limits"] == {"cpu": wire}


def test_float_quantities_in_requests_limits_and_memory() -> None:
    resources = Resources(memory=1.5e9, requests={"ephemeral-storage": 0.75}).to_requirements()

    assert resources.requests == {"memory": 1500000000, "ephemeral-storage": "750m"}
    with pytest.raises(InvalidManifestError, match=r"cpu: must be a resource quantity .*got nan"):
        Resources(cpu=float("nan"))


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (
            {"clean_up_policy": "unfinished"},
            "clean_up_policy: input should be 'None', 'Unfinished' or 'All'; got 'unfinished';"
            " did you mean 'Unfinished'?",
        ),
        (
            {"restart_policy": "OnFailur"},
            "restart_policy: input should be 'Always', 'OnFailure', 'Never' or 'ExitCode'; got"
            " 'OnFailur'; did you mean 'OnFailure'?",
        ),
        (
            {"autotune": "tuen"},
            "autotune: input should be 'none', 'tune' or 'run'; got 'tuen'; did you mean 'tune'?",
        ),
        (
            {"image_pull_policy": "IfNotPresnt"},
            "image_pull_policy: input should be 'Always', 'IfNotPresent' or 'Never'; got"
            " 'IfNotPresnt'; did you mean 'IfNotPresent'?",
        ),
    ],
)
def test_misspelled_enum_values_get_a_suggestion(kwargs: dict[str, Any], expected: str) -> None:
    with pytest.raises(InvalidManifestError) as exc:
        _bert(**kwargs)

    assert [str(p) for p in exc.value.problems] == [expected]


def test_enum_arguments_accept_the_documented_strings_and_keep_the_enum() -> None:
    job = GenericJob(
        name="mnist",
        replicas=[Replica(type="worker", image="pt:2", restart_policy="Never")],
        clean_up_policy="Unfinished",
    )

    assert job.clean_up_policy is models.CleanUpPolicy.UNFINISHED
    assert job.replicas[0].restart_policy is models.RestartPolicyType.NEVER
    assert job.to_dict()["spec"]["cleanUpPolicy"] == "Unfinished"


@pytest.mark.parametrize(
    ("names", "enum"),
    [
        (CleanUpPolicyName, models.CleanUpPolicy),
        (RestartPolicyName, models.RestartPolicyType),
        (AutotuneName, models.AutotuneType),
    ],
)
def test_the_string_types_list_exactly_the_enum_values(names: Any, enum: Any) -> None:
    assert list(get_args(names)) == [e.value for e in enum]


def test_colossalai_builder_uses_the_same_error() -> None:
    with pytest.raises(InvalidManifestError) as exc:
        ColossalAIJob(name="palm", image="c:1", script=["train.py"], worker=2)

    assert "unknown field 'worker'; did you mean 'workers'?" in _message(exc)


def test_elastic_bounds_are_checked_when_it_is_created() -> None:
    with pytest.raises(InvalidManifestError) as inverted:
        Elastic(min=8, max=2)
    with pytest.raises(InvalidManifestError) as outside:
        Elastic(min=2, max=8, expected=9)

    assert _message(inverted) == "Elastic is invalid:\n  - max: must be at least min (8); got 2"
    assert _message(outside) == (
        "Elastic is invalid:\n  - expected: must be between min and max (2-8); got 9"
    )
    assert Elastic(min=2, max=8, expected=8).expected == 8


@pytest.mark.parametrize(
    ("make", "suggestion"),
    [
        (lambda: Replica(type="worker", image="pt:2", replicas=4), "count"),
        (lambda: GenericJob(name="g", replica_specs=[]), "replicas"),
        (lambda: _bert(gpus_per_worker=0, replicas=4), "workers"),
        (lambda: ColossalAIJob(name="p", image="c:1", script=["t.py"], replicas=4), "workers"),
    ],
    ids=["Replica", "GenericJob", "DeepSpeedJob", "ColossalAIJob"],
)
def test_kubeflow_and_kubernetes_names_suggest_the_builder_argument(
    make: Any, suggestion: str
) -> None:
    with pytest.raises(InvalidManifestError) as exc:
        make()

    assert f"; did you mean {suggestion!r}? allowed fields of" in _message(exc)
