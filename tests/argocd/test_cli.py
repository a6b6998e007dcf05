"""`t9k-sdk argocd-health`: the argocd-cm patch, the script, and the files of deploy/argocd/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from t9k_sdk import argocd
from t9k_sdk.cli import main
from tests.argocd.runner import REPO


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_it_prints_the_argocd_cm_patch_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _run(capsys, "argocd-health")
    assert (status, err) == (0, "")
    assert yaml.safe_load(out) == argocd.argocd_cm_patch()
    assert out == (REPO / "deploy" / "argocd" / argocd.PATCH_FILE).read_text()
    # The script stays readable in the patch: a literal block, not one escaped line.
    assert "resource.customizations.health.batch.tensorstack.dev_GenericJob: |\n" in out


def test_json_and_lua_outputs(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(capsys, "argocd-health", "-o", "json")
    assert status == 0
    assert json.loads(out) == argocd.argocd_cm_patch()
    status, out, _ = _run(capsys, "argocd-health", "-o", "lua")
    assert status == 0
    assert out == argocd.health_lua()


def test_out_dir_writes_argo_cds_layout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _run(capsys, "argocd-health", "--out-dir", str(tmp_path / "argocd"))
    assert (status, out) == (0, "")
    assert "wrote 4 files" in err
    for kind in argocd.KINDS:
        written = tmp_path / "argocd" / "resource_customizations" / "batch.tensorstack.dev" / kind
        assert (written / "health.lua").read_text() == argocd.health_lua()
    assert sorted(p.name for p in (tmp_path / "argocd").iterdir()) == [
        "argocd-cm-patch.yaml",
        "resource_customizations",
    ]


def test_a_format_it_does_not_know_is_a_usage_error_listing_the_choices(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, err = _run(capsys, "argocd-health", "-o", "patch")
    assert (status, out) == (2, "")
    assert "argument -o/--output: invalid choice: 'patch'" in err
    assert all(choice in err.rsplit("choose from", 1)[1] for choice in ("yaml", "json", "lua"))


def test_a_format_and_a_directory_together_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _run(capsys, "argocd-health", "-o", "lua", "--out-dir", str(tmp_path))
    assert (status, out) == (2, "")
    assert "-o lua and --out-dir" in err
    assert list(tmp_path.iterdir()) == []


def test_a_file_in_the_way_of_the_directory_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "argocd"
    blocker.write_text("mine")
    status, _, err = _run(capsys, "argocd-health", "--out-dir", str(blocker))
    assert status == 2
    assert "exists and is not a directory" in err
    assert blocker.read_text() == "mine"
    # A path below the directory taken by a file: nothing is written, the error says where.
    target = tmp_path / "deploy"
    (target / "resource_customizations").mkdir(parents=True)
    (target / "resource_customizations" / "batch.tensorstack.dev").write_text("mine")
    status, _, err = _run(capsys, "argocd-health", "--out-dir", str(target))
    assert status == 1
    assert f"cannot write to {target}" in err
    assert "nothing was written" in err
    assert sorted(p.name for p in target.rglob("*")) == [
        "batch.tensorstack.dev",
        "resource_customizations",
    ]
