"""The operator's image as `make operator-image` builds it (tools/images.py): what a release
publishes and what `t9k-sdk install` names by default.

These read the built OCI archive (`make test` builds the images before the tests run; a missing
archive fails with the command that builds it). The reproducibility test builds the image a
second time, from nothing, into a cache of its own (about 20 s and the wheels' download).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from t9k_sdk import __version__
from t9k_sdk.install import DEFAULT_IMAGE, RELEASE_REPOSITORY, install_manifests
from tools import images

REPO = Path(__file__).resolve().parents[2]
IMAGE = images.IMAGES["operator"]


@pytest.fixture(scope="module")
def archive() -> Path:
    if not IMAGE.built():
        pytest.fail(f"the operator image is not built: run `make operator-image` ({IMAGE.archive})")
    return IMAGE.archive


def _json(tf: tarfile.TarFile, name: str) -> Any:
    fh = tf.extractfile(name)
    assert fh is not None, name
    return json.load(fh)


def _manifest(archive: Path) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    with tarfile.open(archive) as tf:
        index = _json(tf, "index.json")
        entry = index["manifests"][0]
        manifest = _json(tf, "blobs/sha256/" + entry["digest"].split(":")[1])
        config = _json(tf, "blobs/sha256/" + manifest["config"]["digest"].split(":")[1])
    return index["manifests"], manifest, config


def _files(archive: Path) -> Iterator[tarfile.TarInfo]:
    _, manifest, _ = _manifest(archive)
    with tarfile.open(archive) as outer:
        for layer in manifest["layers"]:
            fh = outer.extractfile("blobs/sha256/" + layer["digest"].split(":")[1])
            assert fh is not None
            with tarfile.open(fileobj=fh) as inner:
                yield from inner


def test_the_image_is_named_as_the_release_publishes_it_and_as_install_defaults_to(
    archive: Path,
) -> None:
    entries, _, config = _manifest(archive)
    names = [e["annotations"]["io.containerd.image.name"] for e in entries]
    assert names == [IMAGE.ref, f"{RELEASE_REPOSITORY}:{__version__}"]
    assert DEFAULT_IMAGE == images.release_ref() == names[1]
    assert len({e["digest"] for e in entries}) == 1  # two names, one image
    labels = config["config"]["Labels"]
    assert labels["org.opencontainers.image.version"] == __version__
    assert labels["org.opencontainers.image.source"] == "https://github.com/t9k/t9k-sdk"


def test_the_image_runs_the_operator_as_the_user_the_deployment_asks_for(archive: Path) -> None:
    _, _, config = _manifest(archive)
    pod = next(m for m in install_manifests() if m["kind"] == "Deployment")["spec"]["template"]
    uid = pod["spec"]["securityContext"]["runAsUser"]
    assert config["config"]["User"] == f"{uid}:{uid}"
    assert config["config"]["Entrypoint"] == ["/usr/local/bin/t9k-operator"]
    assert "PYTHONDONTWRITEBYTECODE=1" in config["config"]["Env"]


def test_the_image_has_no_shell_no_package_manager_and_no_compiler(archive: Path) -> None:
    members = list(_files(archive))
    names = {m.name.removeprefix("./") for m in members}
    assert not [m.name for m in members if m.isdev()]  # the runtime makes /dev
    assert "usr/bin/python3.11" in names
    assert "usr/local/bin/t9k-operator" in names
    tools = [
        "sh",
        "bash",
        "dash",
        "busybox",
        "dpkg",
        "apt",
        "apt-get",
        "pip",
        "pip3",
        "gcc",
        "cc",
        "tar",
        "perl",
    ]
    forbidden = {f"{d}/{t}" for d in ("bin", "usr/bin", "sbin", "usr/sbin") for t in tools}
    assert not names & forbidden, sorted(names & forbidden)
    # byte-code is there (the root file system is read-only in the pod: nothing is compiled at
    # start) and the asyncio half of the Kubernetes client, which the operator never imports,
    # is not
    assert any(
        n.startswith("usr/local/lib/python3.11/dist-packages/t9k_operator/__pycache__/")
        for n in names
    )
    assert not any("dist-packages/kubernetes/aio/" in n for n in names)
    assert not any(n.startswith("usr/local/lib/python3.11/dist-packages/aiohttp/") for n in names)


def test_every_file_is_owned_by_root_and_none_can_be_written_by_the_operator(
    archive: Path,
) -> None:
    writable = [
        m.name
        for m in _files(archive)
        if (m.uid, m.gid) != (0, 0)
        or (m.mode & 0o002 and not m.issym() and m.name.removeprefix("./") != "tmp")
    ]
    assert writable == []


def test_the_sbom_lists_the_debian_packages_and_the_wheels_with_their_versions(
    archive: Path,
) -> None:
    sbom = json.loads(images.sbom_path(IMAGE).read_text())
    assert sbom["spdxVersion"] == "SPDX-2.3"
    purls = {ref["referenceLocator"] for p in sbom["packages"] for ref in p["externalRefs"]}
    assert any(p.startswith("pkg:deb/debian/python3.11-minimal@3.11.") for p in purls)
    assert any(p.startswith("pkg:deb/debian/libssl3@") for p in purls)
    assert f"pkg:pypi/t9k-sdk@{__version__}" in purls
    for line in images.OPERATOR_LOCK.read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split()[0].split("==")
            assert (
                f"pkg:pypi/{name.lower()}@{version}" in {p.replace("_", "-") for p in purls} | purls
            )


def test_the_same_sources_build_the_same_image_byte_for_byte(archive: Path, tmp_path: Path) -> None:
    env = {**os.environ, "T9K_CACHE_DIR": str(tmp_path)}
    build = subprocess.run(
        [sys.executable, str(REPO / "tools" / "images.py"), "build", "operator"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    second = tmp_path / "images" / archive.name
    first_entries, first_manifest, _ = _manifest(archive)
    second_entries, second_manifest, _ = _manifest(second)
    assert second_manifest["layers"] == first_manifest["layers"]
    assert second_entries[0]["digest"] == first_entries[0]["digest"]
