"""The kustomize tree and Helm chart of the operator (t9k_sdk/install_trees.py), the committed
copies in deploy/, and `t9k-sdk install --kustomize DIR` / `--helm-chart DIR` that write them.

What kubectl and helm make of the files is checked against the real tools in
tests/cluster/test_install_gitops.py.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from t9k_sdk._yaml import load_documents
from t9k_sdk.cli import main
from t9k_sdk.install_trees import (
    IMAGE_REPOSITORY_PATTERN,
    NAMESPACE_PATTERN,
    helm_chart_files,
    kustomize_files,
    split_image,
)

REPO = Path(__file__).resolve().parents[2]
TREES = {
    "deploy/kustomize": kustomize_files,
    "deploy/helm/t9k-operator": helm_chart_files,
}


def _on_disk(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("tree", sorted(TREES))
def test_committed_trees_are_what_the_generator_writes(tree: str) -> None:
    root = REPO / tree
    expected = TREES[tree]()
    if os.environ.get("T9K_REGENERATE") and not os.environ.get("CI"):
        for name, text in expected.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
    on_disk = _on_disk(root)
    hint = "run `make install-files` (t9k_sdk/install.py or install_trees.py changed)"
    assert sorted(on_disk) == sorted(expected), f"{tree}: files differ from the generator; {hint}"
    stale = [name for name in expected if on_disk[name] != expected[name]]
    assert not stale, f"{tree}: {stale} are out of date; {hint}"


def test_every_generated_file_says_where_it_comes_from_and_how_to_regenerate() -> None:
    files = {**kustomize_files(), **helm_chart_files()}
    for name, text in files.items():
        if name.endswith(".json") or name.endswith("NOTES.txt"):
            continue  # JSON has no comments; NOTES.txt is shown to the user after install
        assert "Generated from t9k_sdk/install.py" in text, name
    for name, text in files.items():
        if name.endswith(".yaml") and not name.startswith("templates/"):
            assert "make install-files" in text, name


def test_the_namespace_scoped_overlay_names_the_watched_namespace_in_one_place() -> None:
    """The one edit the docs describe: the `namespace=` literal of kustomization.yaml."""
    files = kustomize_files(watch_namespace="team-b")
    kustomization = files["overlays/namespace-scoped/kustomization.yaml"]
    assert kustomization.count("namespace=team-b") == 1
    # the other mentions are where the replacement writes, overwritten from that literal
    (config,) = load_documents(kustomization)
    (generator,) = config["configMapGenerator"]
    assert generator["literals"] == ["namespace=team-b"]
    assert generator["options"]["annotations"] == {"config.kubernetes.io/local-config": "true"}


def test_kustomize_files_take_the_image_and_namespaces_they_are_given() -> None:
    files = kustomize_files("registry.example/op:2", "ops", "jobs")
    (deployment,) = load_documents(files["base/deployment.yaml"])
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example/op:2"
    assert deployment["metadata"]["namespace"] == "ops"
    assert "namespace=jobs" in files["overlays/namespace-scoped/kustomization.yaml"]


def test_a_hostile_image_is_refused_before_the_kustomize_base_is_made() -> None:
    image = 'x"\nkind: Secret\n---\napiVersion: v1'
    with pytest.raises(ValueError, match="is not an image reference: its name") as caught:
        kustomize_files(image)
    assert repr(image) in str(caught.value)


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("t9k-operator:0.1.0", {"repository": "t9k-operator", "tag": "0.1.0", "digest": ""}),
        (
            "reg.example:5000/t9k/op",
            {"repository": "reg.example:5000/t9k/op", "tag": "", "digest": ""},
        ),
        (
            "reg.example/op@sha256:" + "a" * 64,
            {"repository": "reg.example/op", "tag": "", "digest": "sha256:" + "a" * 64},
        ),
    ],
)
def test_an_image_splits_into_the_charts_image_values(image: str, expected: dict[str, str]) -> None:
    assert split_image(image) == expected
    (values,) = load_documents(helm_chart_files(image)["values.yaml"])
    assert values["image"] == expected


@pytest.mark.parametrize(
    ("image", "field"),
    [
        ("Registry/OP:1", "its name 'Registry/OP'"),
        ("op:bad tag", "its tag 'bad tag'"),
        ("op:-1", "its tag '-1'"),
        ("op@sha256:xyz", "its digest 'sha256:xyz'"),
        ("op\n", "its name 'op\\n'"),
    ],
)
def test_an_image_the_charts_schema_would_refuse_is_refused_before_writing(
    image: str, field: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(field)) as caught:
        helm_chart_files(image)
    assert repr(image) in str(caught.value)


def test_the_chart_schema_and_helpers_check_the_same_patterns_as_the_generator() -> None:
    files = helm_chart_files()
    schema = json.loads(files["values.schema.json"])
    assert schema["properties"]["namespace"]["pattern"] == NAMESPACE_PATTERN
    assert schema["properties"]["image"]["properties"]["repository"]["pattern"] == (
        IMAGE_REPOSITORY_PATTERN
    )
    assert schema["additionalProperties"] is False  # a misspelt value is an error, not ignored
    helpers = files["templates/_helpers.tpl"]
    assert json.dumps(NAMESPACE_PATTERN) in helpers
    assert json.dumps(IMAGE_REPOSITORY_PATTERN) in helpers


def test_the_charts_default_values_are_the_install_options() -> None:
    (values,) = load_documents(helm_chart_files("reg.example/op:3", "ops", "jobs")["values.yaml"])
    assert values["image"] == {"repository": "reg.example/op", "tag": "3", "digest": ""}
    assert (values["namespace"], values["watchNamespace"], values["createNamespace"]) == (
        "ops",
        "jobs",
        True,
    )
    assert values["replicas"] == 1


# -- the command line ------------------------------------------------------------------------


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_install_kustomize_writes_the_tree_with_the_given_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("--image", "reg.example/op:2", "--namespace", "ops", "--watch-namespace", "jobs")
    status, out, err = _run(capsys, "install", "--kustomize", str(tmp_path / "t9k"), *args)
    assert status == 0, err
    assert out == ""
    assert f"to {tmp_path / 't9k'}" in err
    assert _on_disk(tmp_path / "t9k") == kustomize_files("reg.example/op:2", "ops", "jobs")


def test_install_helm_chart_writes_the_chart_with_the_given_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = _run(
        capsys, "install", "--helm-chart", str(tmp_path / "chart"), "--namespace", "ops"
    )
    assert status == 0, err
    assert _on_disk(tmp_path / "chart") == helm_chart_files(namespace="ops")


def test_install_kustomize_leaves_other_files_in_the_directory_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "base").mkdir()
    mine = tmp_path / "base" / "my-patch.yaml"
    mine.write_text("keep me\n")
    status, _, err = _run(capsys, "install", "--kustomize", str(tmp_path))
    assert status == 0, err
    assert mine.read_text() == "keep me\n"


def test_install_refuses_both_trees_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = _run(
        capsys, "install", "--kustomize", str(tmp_path / "a"), "--helm-chart", str(tmp_path / "b")
    )
    assert status == 2
    assert "give one of them" in err
    assert not (tmp_path / "a").exists()
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("flag", ["--kustomize", "--helm-chart"])
def test_install_trees_refuse_a_bad_namespace_and_write_nothing(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = _run(capsys, "install", flag, str(tmp_path / "t"), "--watch-namespace", "a;b")
    assert status == 2
    assert "watch namespace 'a;b' is not a valid namespace name" in err
    assert not (tmp_path / "t").exists()


def test_install_helm_chart_refuses_an_image_with_a_newline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = _run(
        capsys, "install", "--helm-chart", str(tmp_path / "c"), "--image", "op:1\nkind: Secret"
    )
    assert status == 2
    assert "image 'op:1\\nkind: Secret' is not an image reference: its name 'op:1\\nkind'" in err
    assert not (tmp_path / "c").exists()


def test_install_kustomize_into_a_file_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "file"
    target.write_text("")
    status, _, err = _run(capsys, "install", "--kustomize", str(target))
    assert status != 0
    assert "exists and is not a directory" in err
