"""SSH key pairs for the jobs whose launchers reach their workers over SSH (DeepSpeed, ColossalAI).

Key generation is random, so the pure core takes the pair as an input (`Observed.ssh_key`); the
controller asks for one only when the job's `<job>-ssh` Secret does not exist yet.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["generate_ssh_key"]


def generate_ssh_key(comment: str = "t9k-operator") -> tuple[str, str]:
    """A fresh ed25519 pair: (private key in OpenSSH PEM, public key as an OpenSSH line).

    Uses the `cryptography` package (the `operator` extra); without it, `ssh-keygen`.
    RuntimeError if neither is available.
    """
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        return _ssh_keygen(comment)
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return private, f"{public.decode()} {comment}"


def _ssh_keygen(comment: str) -> tuple[str, str]:
    binary = shutil.which("ssh-keygen")
    if binary is None:
        raise RuntimeError(
            "cannot generate an SSH key: install the `operator` extra of t9k-sdk (it brings"
            " `cryptography`) or OpenSSH's ssh-keygen"
        )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "id_ed25519"
        subprocess.run(
            [binary, "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", os.fspath(path)],
            check=True,
            capture_output=True,
        )
        return path.read_text(), path.with_suffix(".pub").read_text().strip()
