#!/usr/bin/env python3
"""Container images for the real node, built on this machine: no registry is ever contacted.

    python tools/images.py build [pause|base|train ...]   # build what is missing (all by default)
    python tools/images.py ref train                       # the image name a pod uses
    python tools/images.py list                            # every image, its key and whether built

They get into the real node's containerd with `python tools/cluster.py import-images` (and at
every `up`).

| image | what | from |
| --- | --- | --- |
| `pause` | the pod sandbox: Kubernetes' own `pause.c`, compiled static | the k8s.io/kubernetes Go module + gcc |
| `base` | Debian bookworm (minbase) with python3, OpenSSH, pdsh, iproute2, procps | Debian's packages (mmdebstrap) |
| `train` | `base` + torch, DeepSpeed and ColossalAI under /usr/local | PyPI |

Each image is one OCI archive (uncompressed layers) in `~/.cache/t9k-sdk/images/`, named by a
*content key*: the sha256 of its recipe (package lists, versions, the image's settings,
RECIPE_VERSION and the key of the image it builds on). A changed recipe is a new key and so a new
build; an unchanged one is reused in milliseconds. A change to how a recipe is built that the
recipe's data does not show (a build function's code) bumps RECIPE_VERSION. The image's tag is the first 12 hex digits of the
key, so a pod names exactly the recipe it runs.

Only the standard library is used (the script runs before any virtualenv exists). It must run
as root: mmdebstrap builds the Debian root file system in a chroot of its own.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
VERSIONS_FILE: Final = REPO_ROOT / "tools" / "versions.sh"
K8S_WRAPPER: Final = REPO_ROOT / "tools" / "gobuild" / "k8s"
RECIPE_VERSION: Final = "1"  # bump to rebuild every image after a change this file cannot see

# Debian packages of the base image. openssh-server/client and pdsh are what the operator's
# launchers use; iproute2, procps and netcat are for people (and tests) looking into a pod.
BASE_PACKAGES: Final = (
    "python3",
    "python3-distutils",
    "openssh-server",
    "openssh-client",
    "pdsh",
    "iproute2",
    "procps",
    "netcat-openbsd",
    "ca-certificates",
    "less",
)
# Installed with torch and ColossalAI: DeepSpeed's own dependencies (its build, the second
# step, then finds them installed), and setuptools, which torch.utils.cpp_extension imports
# (ColossalAI imports that module; torch asks for setuptools on Python >= 3.12 only).
TRAIN_EXTRA_PACKAGES: Final = ("hjson", "msgpack", "py-cpuinfo", "ninja", "setuptools")
SUITE: Final = "bookworm"
IMAGE_PATH: Final = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class ImageError(Exception):
    """A build step failed; the message says which and where its log is."""


def versions() -> dict[str, str]:
    """The KEY=VALUE lines of tools/versions.sh that are plain constants."""
    found: dict[str, str] = {}
    for line in VERSIONS_FILE.read_text().splitlines():
        m = re.fullmatch(r"([A-Z0-9_]+)=([A-Za-z0-9._+-]+)", line.strip())
        if m:
            found[m.group(1)] = m.group(2)
    return found


def cache_root() -> Path:
    env = os.environ.get("T9K_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "t9k-sdk"


def image_dir() -> Path:
    return cache_root() / "images"


@dataclass(frozen=True)
class Image:
    """One image: its name, what it is made of, and how."""

    name: str
    repository: str
    recipe: tuple[str, ...]
    parent: str | None
    build: Callable[[Image, Path, Callable[[str], None]], list[Path]]
    """Writes the image's own layer tars into the given work dir; returns them, in order."""
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ("/bin/bash",)
    env: tuple[str, ...] = (IMAGE_PATH,)
    expected_minutes: str = "1"
    user: str = ""
    labels: tuple[tuple[str, str], ...] = ()
    also_named: tuple[str, ...] = ()
    """Further names the archive gives the image (the release's name, for the operator)."""

    def key(self) -> str:
        h = hashlib.sha256()
        h.update(f"recipe {RECIPE_VERSION}\n".encode())
        for part in self.recipe:
            h.update(part.encode() + b"\n")
        config = [self.entrypoint, self.cmd, self.env]
        if self.user or self.labels or self.also_named:
            config += [self.user, self.labels, self.also_named]
        h.update(json.dumps(config).encode())
        if self.parent is not None:
            h.update(IMAGES[self.parent].key().encode())
        return h.hexdigest()

    @property
    def tag(self) -> str:
        return self.key()[:12]

    @property
    def ref(self) -> str:
        return f"{self.repository}:{self.tag}"

    @property
    def archive(self) -> Path:
        return image_dir() / f"{self.name}-{self.key()[:16]}.oci.tar"

    @property
    def layers_file(self) -> Path:
        """The digests of the image's layers (its parent's first), for children to reuse."""
        return self.archive.with_suffix(".layers.json")

    def built(self) -> bool:
        return self.archive.is_file() and self.layers_file.is_file()


# --------------------------------------------------------------------------------------------
# helpers


def _run(argv: Sequence[str], log: Path, env: dict[str, str] | None = None) -> None:
    with log.open("ab") as fh:
        fh.write(f"\n$ {' '.join(argv)}\n".encode())
        fh.flush()
        proc = subprocess.run(list(argv), stdout=fh, stderr=subprocess.STDOUT, env=env, check=False)
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise ImageError(
            f"`{' '.join(argv[:3])} ...` exited with {proc.returncode}; read {log}:\n{tail}"
        )


def _need_root(name: str, why: str) -> None:
    if os.geteuid() != 0:
        raise ImageError(f"building the {name} image needs root: {why}")


def _debian_mirror() -> str:
    """The host's own Debian mirror (the only package source this machine may use)."""
    deb822 = Path("/etc/apt/sources.list.d/debian.sources")
    if deb822.is_file():
        for line in deb822.read_text().splitlines():
            if line.startswith("URIs:"):
                return line.split()[1]
    legacy = Path("/etc/apt/sources.list")
    if legacy.is_file():
        for line in legacy.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "deb" and "security" not in parts[1]:
                return parts[1] if not parts[1].startswith("[") else parts[2]
    raise ImageError("no Debian mirror found in /etc/apt/sources.list.d/debian.sources")


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def _tar_dir(src: Path, out: Path, members: Sequence[str]) -> None:
    """A layer tar of `members` under `src`, owned by root, with fixed times."""
    argv = [
        "tar",
        "--owner=0",
        "--group=0",
        "--numeric-owner",
        "--mtime=@0",
        "--sort=name",
        "-C",
        str(src),
        "-cf",
        str(out),
        *members,
    ]
    subprocess.run(argv, check=True)


# --------------------------------------------------------------------------------------------
# recipes


def build_pause(image: Image, work: Path, say: Callable[[str], None]) -> list[Path]:
    """Kubernetes' pause.c from the k8s.io/kubernetes module, compiled static, one file."""
    v = versions()["K8S_VERSION"]
    env = {**os.environ, "GOFLAGS": "-mod=readonly", "GOWORK": "off", "GOTOOLCHAIN": "local"}
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"k8s.io/kubernetes@{v}"],
        cwd=K8S_WRAPPER,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if out.returncode != 0:
        raise ImageError(f"go mod download k8s.io/kubernetes@{v} failed:\n{out.stderr}")
    src = Path(json.loads(out.stdout)["Dir"]) / "build" / "pause" / "linux" / "pause.c"
    root = work / "root"
    root.mkdir()
    log = work / "build.log"
    _run(["gcc", "-Os", "-static", "-DVERSION=v3.10-t9k", "-o", str(root / "pause"), str(src)], log)
    _run(["strip", str(root / "pause")], log)
    layer = work / "layer.tar"
    _tar_dir(root, layer, ["pause"])
    return [layer]


def build_base(image: Image, work: Path, say: Callable[[str], None]) -> list[Path]:
    """Debian minbase with BASE_PACKAGES, straight to a tar (one layer). No host keys: the
    operator's sshd script makes them in each pod."""
    _need_root("base", "mmdebstrap builds the root file system in a chroot")
    layer = work / "rootfs.tar"
    hooks = [
        'rm -f "$1"/etc/ssh/ssh_host_*',
        'rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/log/*.log',
    ]
    argv = [
        "mmdebstrap",
        "--quiet",
        "--variant=minbase",
        f"--include={','.join(image.recipe[1:])}",
        "--dpkgopt=path-exclude=/usr/share/man/*",
        "--dpkgopt=path-exclude=/usr/share/doc/*",
        "--dpkgopt=path-exclude=/usr/share/locale/*",
        "--dpkgopt=path-include=/usr/share/doc/*/copyright",
        *(f"--customize-hook={h}" for h in hooks),
        SUITE,
        str(layer),
        _debian_mirror(),
    ]
    _run(argv, work / "build.log")
    return [layer]


def build_train(image: Image, work: Path, say: Callable[[str], None]) -> list[Path]:
    """torch, ColossalAI and DeepSpeed from PyPI into /usr/local of the image (one layer).

    pip runs with the host's Debian python3.11, the same interpreter as the base image's, into a
    staging root; `--ignore-installed` keeps the host's own packages out of the decision, so the
    layer holds every dependency. DeepSpeed is built in a second step against the staged torch
    with its CPU shared-memory op compiled ahead of time: the image needs no compiler.
    """
    _need_root("train", "pip installs into a staging root owned by root")
    v = versions()
    stage = work / "stage"
    prefix = "/opt/t9k"  # Debian's pip adds `local/`: files land in <stage>/opt/t9k/local/...
    site = stage / "opt" / "t9k" / "local" / "lib" / "python3.11" / "dist-packages"
    wheelhouse = cache_root() / "wheelhouse"
    wheelhouse.mkdir(parents=True, exist_ok=True)
    log = work / "build.log"
    pip = [
        "/usr/bin/python3",
        "-m",
        "pip",
        "install",
        "--quiet",
        "--root",
        str(stage),
        "--prefix",
        prefix,
        "--break-system-packages",
        "--no-compile",
        "--no-warn-script-location",
        "--disable-pip-version-check",
        "--find-links",
        str(wheelhouse),
    ]
    env = {**os.environ, "PIP_NO_INPUT": "1", "BUILD_EXT": "0"}
    env.pop("PYTHONPATH", None)
    torch = f"torch=={v['TRAIN_TORCH_VERSION']}"
    say(f"downloading {torch} (the CUDA build with its nvidia wheels, about 3 GB; it runs on CPU)")
    _run(
        [
            "/usr/bin/python3",
            "-m",
            "pip",
            "download",
            "--quiet",
            "--only-binary=:all:",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "-d",
            str(wheelhouse),
            torch,
        ],
        log,
        env,
    )
    say(f"installing {torch}, colossalai=={v['TRAIN_COLOSSALAI_VERSION']} and their dependencies")
    _run(
        [
            *pip,
            "--ignore-installed",
            torch,
            f"colossalai=={v['TRAIN_COLOSSALAI_VERSION']}",
            *TRAIN_EXTRA_PACKAGES,
        ],
        log,
        env,
    )
    say(f"building deepspeed=={v['TRAIN_DEEPSPEED_VERSION']} against it (CPU ops ahead of time)")
    ds_env = {
        **env,
        "PYTHONPATH": str(site),
        "DS_ACCELERATOR": "cpu",
        "DS_BUILD_OPS": "0",
        "DS_BUILD_SHM_COMM": "1",
        "MAX_JOBS": "2",
    }
    _run(
        [
            *pip,
            "--no-cache-dir",
            "--no-build-isolation",
            f"deepspeed=={v['TRAIN_DEEPSPEED_VERSION']}",
        ],
        log,
        ds_env,
    )
    # The layer must work on its own: import everything with no host package on the path.
    check = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "import torch, deepspeed, colossalai, colossalai.booster, torch.distributed.run;"
        "print('torch', torch.__version__, 'deepspeed', deepspeed.__version__,"
        " 'colossalai', colossalai.__version__)"
    )
    _run(["/usr/bin/python3", "-I", "-S", "-c", check, str(site)], log, ds_env)
    usr = work / "layer" / "usr"
    usr.mkdir(parents=True)
    (stage / "opt" / "t9k" / "local").rename(usr / "local")
    shutil.rmtree(stage)
    layer = work / "layer.tar"
    _tar_dir(work / "layer", layer, ["usr"])
    shutil.rmtree(work / "layer")
    return [layer]


# The operator's image: Debian's python3.11 with no shell, no package manager and no compiler,
# the pinned wheels of OPERATOR_LOCK and the project's own wheel. Debian's packages are
# *extracted*, not installed (mmdebstrap's `extract` variant runs no maintainer script), so
# nothing that only an installer needs has to be in the image; the files of the few such
# packages the python packages depend on anyway are removed (OPERATOR_DROPPED).
OPERATOR_PACKAGES: Final = ("python3-minimal", "python3.11-minimal", "libpython3.11-stdlib")
OPERATOR_DROPPED: Final = (
    "bin/tar",
    "usr/bin/tar",
    "usr/bin/dpkg*",
    "usr/bin/update-alternatives",
    "usr/bin/py3*",
    "usr/sbin/dpkg*",
    "usr/sbin/rmt*",
    "usr/sbin/tarcat",
    "sbin/start-stop-daemon",
    "usr/sbin/start-stop-daemon",
    "usr/lib/dpkg",
    "usr/libexec/dpkg",
    "usr/share/dpkg",
    "var/lib/dpkg",
    "etc/dpkg",
    "etc/alternatives",
    "etc/cron.daily",
    "etc/logrotate.d",
    "usr/share/man",
    "usr/share/info",
    "usr/share/lintian",
    "usr/share/polkit-1",
    "usr/share/locale",
    "usr/share/bug",
    # what mmdebstrap leaves for an installer, and device nodes (the runtime makes /dev)
    "dev/*",
    "etc/apt",
    "etc/fstab",
    "lib/systemd",
    "var/cache/apt",
    "var/lib/apt",
    "var/log/apt",
)
OPERATOR_LOCK: Final = REPO_ROOT / "operator" / "image-requirements.txt"
# The Kubernetes client's asyncio half (`kubernetes.aio`, 68 MB with its byte-code) and what
# only it needs: `import kubernetes` never imports it and the operator uses the synchronous
# client, so neither is in the image (a third of its size).
OPERATOR_UNUSED_TREES: Final = ("kubernetes/aio",)
OPERATOR_UNUSED_DISTS: Final = frozenset(
    {
        "aiohappyeyeballs",
        "aiohttp",
        "aiohttp-retry",
        "aiosignal",
        "attrs",
        "frozenlist",
        "multidict",
        "propcache",
        "yarl",
    }
)
OPERATOR_USER: Final = "65532"
OPERATOR_SOURCES: Final = ("pyproject.toml", "README.md", "t9k_sdk", "operator/t9k_operator")
RELEASE_REPOSITORY: Final = "ghcr.io/t9k/t9k-operator"
"""Where a release publishes the operator's image; `t9k_sdk.install.DEFAULT_IMAGE` names it
with the package's version (tests/operator/test_operator_image.py keeps the two in step)."""
SOURCE_DATE_EPOCH: Final = "0"


def project_version() -> str:
    m = re.search(r'^version = "([^"]+)"', (REPO_ROOT / "pyproject.toml").read_text(), re.M)
    if not m:
        raise ImageError('pyproject.toml has no `version = "..."` line')
    return m.group(1)


def release_ref() -> str:
    """The name a release publishes the operator's image under: `REPOSITORY:VERSION`."""
    return f"{RELEASE_REPOSITORY}:{project_version()}"


def _source_digest() -> str:
    """The sha256 of the project's files that go into its wheel (path and bytes of each)."""
    h = hashlib.sha256()
    for top in OPERATOR_SOURCES:
        root = REPO_ROOT / top
        files = sorted(root.rglob("*")) if root.is_dir() else [root]
        for path in files:
            if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            h.update(str(path.relative_to(REPO_ROOT)).encode() + b"\0")
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def _operator_recipe() -> tuple[str, ...]:
    return (
        SUITE,
        *OPERATOR_PACKAGES,
        "dropped " + " ".join(OPERATOR_DROPPED),
        "lock "
        + (
            hashlib.sha256(OPERATOR_LOCK.read_bytes()).hexdigest()
            if OPERATOR_LOCK.is_file()
            else "none"
        ),
        "sources " + _source_digest(),
        "unused " + " ".join([*OPERATOR_UNUSED_TREES, *sorted(OPERATOR_UNUSED_DISTS)]),
        # how it is built is this file's code: a change to it is a new image (20 s)
        "builder " + hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
    )


def _pip(stage: Path) -> list[str]:
    return [
        "/usr/bin/python3",
        "-m",
        "pip",
        "install",
        "--quiet",
        "--root",
        str(stage),
        "--prefix",
        "/opt/t9k",  # Debian's pip adds `local/`: files land in <stage>/opt/t9k/local/...
        "--break-system-packages",
        "--ignore-installed",
        "--no-deps",
        "--no-compile",
        "--no-warn-script-location",
        "--disable-pip-version-check",
        "--no-cache-dir",
    ]


def _operator_rootfs(work: Path, log: Path) -> Path:
    """Debian's python3.11, extracted into work/rootfs, with nothing an installer needs; the
    packages it came from (name, version) listed in work/debs.txt for the SBOM."""
    rootfs = work / "rootfs"
    listing = work / "debs.txt"
    argv = [
        "mmdebstrap",
        "--quiet",
        "--variant=extract",
        "--format=directory",
        f"--include={','.join(OPERATOR_PACKAGES)}",
        "--dpkgopt=path-exclude=/usr/share/man/*",
        "--dpkgopt=path-exclude=/usr/share/doc/*",
        "--dpkgopt=path-include=/usr/share/doc/*/copyright",
        # (the extract variant runs extract hooks only: the rest is done below, in Python)
        f'--extract-hook=ls "$1"/var/cache/apt/archives > {listing}',
        SUITE,
        str(rootfs),
        _debian_mirror(),
    ]
    _run(argv, log, {**os.environ, "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH})
    for pattern in OPERATOR_DROPPED:
        for path in rootfs.glob(pattern):
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    for name in ("etc/resolv.conf", "etc/hostname"):
        (rootfs / name).unlink(missing_ok=True)
    (rootfs / "tmp").mkdir(exist_ok=True)
    (rootfs / "tmp").chmod(0o1777)
    (rootfs / "etc").mkdir(exist_ok=True)
    (rootfs / "etc" / "passwd").write_text(
        "root:x:0:0:root:/root:/nonexistent\n"
        f"nonroot:x:{OPERATOR_USER}:{OPERATOR_USER}:nonroot:/nonexistent:/nonexistent\n"
    )
    (rootfs / "etc" / "group").write_text(f"root:x:0:\nnonroot:x:{OPERATOR_USER}:\n")
    return rootfs


def _operator_site(work: Path, rootfs: Path, log: Path) -> None:
    """The pinned wheels and the project's own wheel into rootfs/usr/local, compiled."""
    env = {**os.environ, "PIP_NO_INPUT": "1", "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH}
    env.pop("PYTHONPATH", None)
    wheels = work / "wheels"
    _run(
        [
            "/usr/bin/python3",
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--disable-pip-version-check",
            "--no-cache-dir",
            "-w",
            str(wheels),
            str(REPO_ROOT),
        ],
        log,
        env,
    )
    stage = work / "stage"
    _run([*_pip(stage), "--require-hashes", "-r", str(OPERATOR_LOCK)], log, env)
    _run([*_pip(stage), *map(str, sorted(wheels.glob("*.whl")))], log, env)
    local = rootfs / "usr" / "local"
    shutil.rmtree(local, ignore_errors=True)
    (stage / "opt" / "t9k" / "local").rename(local)
    for tree in OPERATOR_UNUSED_TREES:
        shutil.rmtree(local / "lib" / "python3.11" / "dist-packages" / tree)
    # pip records where each wheel came from (the project's is in a temporary directory):
    # drop it, and its line in RECORD, so that two builds are the same bytes
    for origin in local.rglob("*.dist-info/direct_url.json"):
        origin.unlink()
        record = origin.with_name("RECORD")
        lines = record.read_text().splitlines(keepends=True)
        record.write_text(
            "".join(x for x in lines if not x.startswith(f"{origin.parent.name}/direct_url.json,"))
        )
    for path in (local / "bin").iterdir():
        if path.name not in ("t9k-operator", "t9k-sdk"):
            path.unlink()
    # byte-code ahead of time (the root file system is read-only in the pod): hashes, not
    # times, so that two builds are the same bytes
    for tree in (rootfs / "usr" / "lib" / "python3.11", local / "lib" / "python3.11"):
        _run(
            [
                "/usr/bin/python3",
                "-m",
                "compileall",
                "-q",
                "-j",
                "1",
                "--invalidation-mode",
                "unchecked-hash",
                "-s",
                str(rootfs),
                "-p",
                "/",
                "-x",
                r"(lib2to3|test|tests|idlelib|turtledemo)/",
                str(tree),
            ],
            log,
            env,
        )


def lock_operator() -> None:
    """Resolve the [operator] extra with the Debian python3.11 the image runs, and pin every
    wheel it picks with its hash into OPERATOR_LOCK."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        argv = [
            "/usr/bin/python3", "-m", "pip", "install", "--dry-run", "--ignore-installed",
            "--quiet", "--disable-pip-version-check", "--break-system-packages",
            "--only-binary=:all:", "--report", str(report), f"{REPO_ROOT}[operator]",
        ]  # fmt: skip
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise ImageError(f"resolving the [operator] extra failed:\n{proc.stderr}")
        picked = json.loads(report.read_text())["install"]
    lines = [
        "# The operator image's Python dependencies, pinned with their hashes: what",
        "# `make operator-image` installs (pip --require-hashes), for CPython 3.11 on linux/amd64",
        "# (Debian bookworm's python3.11). Regenerate after a change to the [operator] extra, or",
        "# to take newer releases: python tools/images.py lock operator",
        "# Left out: " + ", ".join(sorted(OPERATOR_UNUSED_DISTS)) + " (kubernetes.aio only;",
        "# the operator uses the synchronous client).",
    ]
    for item in sorted(picked, key=lambda i: str(i["metadata"]["name"]).lower()):
        info = item["download_info"]
        if str(info["url"]).startswith("file:"):
            continue  # the project itself: its wheel is built from the tree
        if str(item["metadata"]["name"]).lower() in OPERATOR_UNUSED_DISTS:
            continue
        digest = str(info["archive_info"]["hash"]).replace("=", ":", 1)
        lines.append(f"{item['metadata']['name']}=={item['metadata']['version']} --hash={digest}")
    OPERATOR_LOCK.write_text("\n".join(lines) + "\n")


def sbom_path(image: Image) -> Path:
    """The image's SBOM (SPDX 2.3 JSON), written beside its archive when it is built."""
    return image.archive.with_name(image.archive.name.replace(".oci.tar", ".spdx.json"))


def _operator_sbom(image: Image, rootfs: Path, debs: Path) -> dict[str, object]:
    """Every Debian package the image's files came from and every Python distribution in it."""
    packages: list[dict[str, object]] = []

    def package(kind: str, name: str, version: str, purl: str) -> None:
        packages.append(
            {
                "SPDXID": f"SPDXRef-{kind}-{re.sub(r'[^A-Za-z0-9.-]', '-', name)}",
                "name": name,
                "versionInfo": version,
                "downloadLocation": "NOASSERTION",
                "filesAnalyzed": False,
                "externalRefs": [
                    {
                        "referenceCategory": "PACKAGE-MANAGER",
                        "referenceType": "purl",
                        "referenceLocator": purl,
                    }
                ],
            }
        )

    for line in sorted(debs.read_text().split()):
        if not line.endswith(".deb"):
            continue
        name, version, arch = line.removesuffix(".deb").split("_")
        version = version.replace("%3a", ":")
        package(
            "deb", name, version, f"pkg:deb/debian/{name}@{version}?arch={arch}&distro=debian-12"
        )
    site = rootfs / "usr" / "local" / "lib" / "python3.11" / "dist-packages"
    for meta in sorted(site.glob("*.dist-info/METADATA")):
        fields = dict(
            line.split(": ", 1)
            for line in meta.read_text().split("\n\n")[0].splitlines()
            if ": " in line and line[0] != " "
        )
        name, version = fields["Name"], fields["Version"]
        package("pypi", name, version, f"pkg:pypi/{name.lower()}@{version}")
    return {
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": image.also_named[0] if image.also_named else image.ref,
        "documentNamespace": f"https://github.com/t9k/t9k-sdk/spdx/{image.name}-{image.key()}",
        "creationInfo": {"created": "1970-01-01T00:00:00Z", "creators": ["Tool: tools/images.py"]},
        "packages": packages,
    }


def build_operator(image: Image, work: Path, say: Callable[[str], None]) -> list[Path]:
    """Two layers: Debian's python3.11 (no shell, no dpkg), then /usr/local (the wheels)."""
    _need_root("operator", "mmdebstrap extracts Debian's packages as root")
    log = work / "build.log"
    os.umask(0o022)
    say("extracting python3.11 from Debian's packages (no shell, no package manager)")
    rootfs = _operator_rootfs(work, log)
    say("installing the pinned wheels of operator/image-requirements.txt and the project's own")
    _operator_site(work, rootfs, log)
    check = "import t9k_operator.cli, t9k_operator.manager, cryptography, orjson; print('ok')"
    _run(["chroot", str(rootfs), "/usr/bin/python3", "-I", "-c", check], log)
    sbom = _operator_sbom(image, rootfs, work / "debs.txt")
    sbom_path(image).write_text(json.dumps(sbom, indent=1, sort_keys=True) + "\n")
    os_layer, app_layer = work / "os.tar", work / "app.tar"
    members = sorted(p.name for p in rootfs.iterdir() if p.name != "usr")
    usr = sorted(f"usr/{p.name}" for p in (rootfs / "usr").iterdir() if p.name != "local")
    _tar_dir(rootfs, os_layer, [*members, *usr])
    _tar_dir(rootfs, app_layer, ["usr/local"])
    return [os_layer, app_layer]


def _train_recipe() -> tuple[str, ...]:
    v = versions()
    return (
        f"torch {v['TRAIN_TORCH_VERSION']}",
        f"deepspeed {v['TRAIN_DEEPSPEED_VERSION']}",
        f"colossalai {v['TRAIN_COLOSSALAI_VERSION']}",
        *TRAIN_EXTRA_PACKAGES,
        "python3.11",
    )


def _images() -> dict[str, Image]:
    return {
        "pause": Image(
            "pause",
            "localhost/t9k/pause",
            (f"kubernetes {versions()['K8S_VERSION']}",),
            None,
            build_pause,
            entrypoint=("/pause",),
            cmd=(),
            env=(),
        ),
        "base": Image(
            "base",
            "localhost/t9k/base",
            (SUITE, *BASE_PACKAGES),
            None,
            build_base,
            expected_minutes="2 to 4",
        ),
        "train": Image(
            "train",
            "localhost/t9k/train",
            _train_recipe(),
            "base",
            build_train,
            env=(IMAGE_PATH, "DS_ACCELERATOR=cpu"),
            expected_minutes="8 to 15",
        ),
        "operator": Image(
            "operator",
            "localhost/t9k/operator",
            _operator_recipe(),
            None,
            build_operator,
            entrypoint=("/usr/local/bin/t9k-operator",),
            cmd=(),
            env=(IMAGE_PATH, "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"),
            expected_minutes="1 to 2",
            user=f"{OPERATOR_USER}:{OPERATOR_USER}",
            labels=(
                ("org.opencontainers.image.source", "https://github.com/t9k/t9k-sdk"),
                ("org.opencontainers.image.version", project_version()),
                ("org.opencontainers.image.licenses", "Apache-2.0"),
            ),
            also_named=(release_ref(),),
        ),
    }


IMAGES: Final = _images()
ORDER: Final = ("pause", "base", "train", "operator")


# --------------------------------------------------------------------------------------------
# OCI archive


def _layer_entries(image: Image) -> list[dict[str, object]]:
    """The parent's layers, as {digest, size}: the image's own layers follow them."""
    entries: list[dict[str, object]] = []
    if image.parent is not None:
        entries.extend(json.loads(IMAGES[image.parent].layers_file.read_text()))
    return entries


def write_archive(image: Image, own_layers: Sequence[Path]) -> None:
    """The OCI image layout as one tar: oci-layout, index.json, blobs (uncompressed layers:
    no gzip CPU on a 2-core machine, and the diff_id is the digest)."""
    parent_entries = _layer_entries(image)
    own = [
        {"digest": _sha256_file(p), "size": p.stat().st_size, "file": str(p)} for p in own_layers
    ]
    cfg: dict[str, object] = {
        "architecture": "amd64",
        "os": "linux",
        "created": "2000-01-01T00:00:00Z",
        "config": {
            "Env": list(image.env),
            "WorkingDir": "/",
            **({"Entrypoint": list(image.entrypoint)} if image.entrypoint else {}),
            **({"Cmd": list(image.cmd)} if image.cmd else {}),
            **({"User": image.user} if image.user else {}),
            "Labels": {"dev.t9k.image.key": image.key(), **dict(image.labels)},
        },
        "rootfs": {
            "type": "layers",
            "diff_ids": [e["digest"] for e in [*parent_entries, *own]],
        },
    }
    blobs: dict[str, bytes] = {}

    def blob(obj: object) -> tuple[str, int]:
        data = json.dumps(obj, separators=(",", ":"), sort_keys=True).encode()
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return digest, len(data)

    cfg_digest, cfg_size = blob(cfg)
    layers = [*parent_entries, *own]
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": cfg_digest,
            "size": cfg_size,
        },
        "layers": [
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar",
                "digest": e["digest"],
                "size": e["size"],
            }
            for e in layers
        ],
    }
    man_digest, man_size = blob(manifest)
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        # one entry per name: `ctr images import` gives the image each of them
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": man_digest,
                "size": man_size,
                "platform": {"architecture": "amd64", "os": "linux"},
                "annotations": {
                    "io.containerd.image.name": ref,
                    "org.opencontainers.image.ref.name": ref.rsplit(":", 1)[1],
                },
            }
            for ref in (image.ref, *image.also_named)
        ],
    }
    tmp = image.archive.with_suffix(".partial")
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tf:

        def add_bytes(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tf.addfile(info, io.BytesIO(data))

        add_bytes("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        add_bytes("index.json", json.dumps(index, sort_keys=True).encode())
        for digest, data in blobs.items():
            add_bytes("blobs/sha256/" + digest.split(":")[1], data)
        for entry in parent_entries:
            # A parent's layer is read out of the parent's archive: no second copy on disk.
            _copy_blob(IMAGES[image.parent or ""].archive, str(entry["digest"]), tf)
        for entry in own:
            info = tarfile.TarInfo("blobs/sha256/" + str(entry["digest"]).split(":")[1])
            info.size = int(str(entry["size"]))
            info.mode = 0o644
            with Path(str(entry["file"])).open("rb") as fh:
                tf.addfile(info, fh)
    image.layers_file.write_text(
        json.dumps([{"digest": e["digest"], "size": e["size"]} for e in layers])
    )
    tmp.rename(image.archive)


def _copy_blob(archive: Path, digest: str, out: tarfile.TarFile) -> None:
    name = "blobs/sha256/" + digest.split(":")[1]
    with tarfile.open(archive) as src:
        member = src.getmember(name)
        fh = src.extractfile(member)
        if fh is None:
            raise ImageError(f"{archive} has no blob {digest}")
        info = tarfile.TarInfo(name)
        info.size = member.size
        info.mode = 0o644
        out.addfile(info, fh)


# --------------------------------------------------------------------------------------------
# commands


def build(names: Sequence[str], say: Callable[[str], None] | None = None) -> None:
    """Build every named image (and what it builds on) that is not in the cache yet."""
    out = say or (lambda msg: print(f"[images] {msg}", file=sys.stderr, flush=True))
    wanted: list[str] = []
    for name in names:
        chain = [name]
        while (parent := IMAGES[chain[-1]].parent) is not None:
            chain.append(parent)
        for n in reversed(chain):
            if n not in wanted:
                wanted.append(n)
    image_dir().mkdir(parents=True, exist_ok=True)
    with (image_dir() / ".lock").open("w") as lock:
        # one builder at a time: a second waits, then finds the image built
        fcntl.flock(lock, fcntl.LOCK_EX)
        # what a builder that was killed left: work directories and half-written archives
        for stale in [*image_dir().glob("build-*"), *image_dir().glob("*.partial")]:
            shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
        _build_locked(wanted, out)
        _prune(wanted)


def _build_locked(wanted: Sequence[str], out: Callable[[str], None]) -> None:
    for name in wanted:
        image = IMAGES[name]
        if image.built():
            continue
        image_dir().mkdir(parents=True, exist_ok=True)
        out(
            f"building {image.ref} (first time only, about {image.expected_minutes} min;"
            f" cached in {image_dir()})"
        )
        start = time.monotonic()
        work = Path(tempfile.mkdtemp(prefix=f"build-{name}-", dir=image_dir()))
        try:
            layers = image.build(image, work, lambda msg, n=name: out(f"{n}: {msg}"))
            write_archive(image, layers)
        except BaseException:
            log = work / "build.log"
            if log.is_file():
                shutil.copy(log, image_dir() / f"{name}-failed.log")
            raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
        size = image.archive.stat().st_size / 2**20
        out(f"built {image.ref} in {time.monotonic() - start:.0f}s ({size:.0f} MiB)")


def _prune(names: Sequence[str]) -> None:
    """Remove archives of the same images with other keys (an older recipe)."""
    for name in names:
        keep = IMAGES[name].archive
        for path in image_dir().glob(f"{name}-*.oci.tar"):
            if path != keep:
                path.unlink(missing_ok=True)
                path.with_suffix(".layers.json").unlink(missing_ok=True)
                path.with_name(path.name.replace(".oci.tar", ".spdx.json")).unlink(missing_ok=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    p_build = sub.add_parser("build", help="build the images that are not cached yet")
    p_build.add_argument("names", nargs="*", help=f"any of {', '.join(ORDER)} (default: all)")
    p_ref = sub.add_parser("ref", help="print an image's name:tag")
    p_ref.add_argument("name", choices=ORDER)
    sub.add_parser("list", help="every image, its key and whether it is built")
    p_path = sub.add_parser("path", help="print the path of an image's OCI archive")
    p_path.add_argument("name", choices=ORDER)
    sub.add_parser("sbom", help="print the operator image's SBOM (SPDX JSON)").add_argument(
        "name", choices=("operator",)
    )
    sub.add_parser("lock", help="re-pin operator/image-requirements.txt").add_argument(
        "name", choices=("operator",)
    )
    args = parser.parse_args(argv)
    unknown = [n for n in getattr(args, "names", []) if n not in IMAGES]
    if unknown:
        parser.error(f"unknown image {unknown[0]!r}; the images are {', '.join(ORDER)}")
    try:
        if args.command == "build":
            build(args.names or list(ORDER))
        elif args.command == "ref":
            print(IMAGES[args.name].ref)
        elif args.command == "path":
            print(IMAGES[args.name].archive)
        elif args.command == "sbom":
            if not sbom_path(IMAGES[args.name]).is_file():
                raise ImageError(f"the {args.name} image is not built: run make operator-image")
            print(sbom_path(IMAGES[args.name]).read_text(), end="")
        elif args.command == "lock":
            lock_operator()
        elif args.command == "list":
            for name in ORDER:
                image = IMAGES[name]
                state = "built" if image.built() else "not built"
                print(f"{name:<6} {image.ref:<36} {state:<10} {image.archive}")
    except ImageError as err:
        print(f"[images] error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
