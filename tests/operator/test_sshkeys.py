"""SSH key pairs for DeepSpeedJob/ColossalAIJob launchers."""

from __future__ import annotations

import pytest

from t9k_operator import sshkeys


def test_a_fresh_ed25519_pair_in_openssh_formats() -> None:
    private, public = sshkeys.generate_ssh_key()
    assert private.startswith("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    assert private.rstrip().endswith("-----END OPENSSH PRIVATE KEY-----")
    kind, blob, comment = public.split(" ")
    assert (kind, comment) == ("ssh-ed25519", "t9k-operator")
    assert len(blob) > 60
    assert sshkeys.generate_ssh_key()[1] != public  # random, never reused


def test_the_public_key_belongs_to_the_private_key() -> None:
    serialization = pytest.importorskip("cryptography.hazmat.primitives.serialization")
    private, public = sshkeys.generate_ssh_key()
    key = serialization.load_ssh_private_key(private.encode(), password=None)
    derived = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    assert public.startswith(derived.decode() + " ")
