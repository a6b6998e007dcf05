"""tools/images.py without building a real image: the OCI archive it writes is a valid image
layout (what `ctr images import` reads), a child image reuses its parent's layers, and the
content key follows the recipe."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tools import images


def _layer(work: Path, name: str, text: str) -> Path:
    out = work / f"{name}.tar"
    with tarfile.open(out, "w") as tf:
        data = text.encode()
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return out


def _builder(name: str) -> Callable[[images.Image, Path, Callable[[str], None]], list[Path]]:
    def build(image: images.Image, work: Path, say: Callable[[str], None]) -> list[Path]:
        say(f"building {name}")
        return [_layer(work, name, f"the {name} layer\n")]

    return build


@pytest.fixture
def two_images(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    monkeypatch.setenv("T9K_CACHE_DIR", str(tmp_path / "cache"))
    parent = images.Image("t-parent", "localhost/t9k/t-parent", ("a",), None, _builder("p"))
    child = images.Image(
        "t-child", "localhost/t9k/t-child", ("b",), "t-parent", _builder("c"), env=("X=1",)
    )
    monkeypatch.setitem(images.IMAGES, "t-parent", parent)
    monkeypatch.setitem(images.IMAGES, "t-child", child)
    return "t-parent", "t-child"


def _read(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tf:
        return {m.name: tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_an_image_is_a_valid_oci_layout_with_its_parents_layers(
    two_images: tuple[str, str],
) -> None:
    said: list[str] = []
    images.build(["t-child"], say=said.append)  # builds the parent first
    assert [m for m in said if m.startswith("built")] == [
        f"built {images.IMAGES[n].ref} in 0s (0 MiB)" for n in two_images
    ]
    child = images.IMAGES["t-child"]
    files = _read(child.archive)
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    (entry,) = json.loads(files["index.json"])["manifests"]
    assert entry["annotations"]["io.containerd.image.name"] == child.ref
    assert child.ref == f"localhost/t9k/t-child:{child.key()[:12]}"

    def blob(digest: str) -> bytes:
        data = files["blobs/sha256/" + digest.removeprefix("sha256:")]
        assert "sha256:" + hashlib.sha256(data).hexdigest() == digest  # content-addressed
        return data

    manifest = json.loads(blob(entry["digest"]))
    config = json.loads(blob(manifest["config"]["digest"]))
    layers = [blob(layer["digest"]) for layer in manifest["layers"]]
    # uncompressed layers: each digest is also the diff_id; the parent's layer comes first
    assert config["rootfs"]["diff_ids"] == [layer["digest"] for layer in manifest["layers"]]
    names = []
    for data in layers:
        with tarfile.open(fileobj=io.BytesIO(data)) as layer_tar:
            names.append(layer_tar.getnames())
    assert names == [["p"], ["c"]]
    assert config["config"]["Env"] == ["X=1"]
    assert config["config"]["Labels"] == {"dev.t9k.image.key": child.key()}


def test_the_key_follows_the_recipe_and_a_built_image_is_reused(
    two_images: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    said: list[str] = []
    images.build(["t-parent"], say=said.append)
    images.build(["t-parent"], say=said.append)
    assert sum(m.startswith("built") for m in said) == 1  # the second build reuses it
    child_key = images.IMAGES["t-child"].key()
    changed = images.Image("t-parent", "localhost/t9k/t-parent", ("a2",), None, _builder("p"))
    monkeypatch.setitem(images.IMAGES, "t-parent", changed)
    assert not changed.built()  # a new recipe is a new key, so a new build
    assert images.IMAGES["t-child"].key() != child_key  # and so is every image built on it
