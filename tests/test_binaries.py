"""The pinned Helm v3 and kubectl binaries are installed, verified, and are the versions the checks rely on."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess

import pytest

from supersonic_interlink.chart import binaries


@pytest.mark.parametrize("name", sorted(binaries.BINARIES))
def test_the_installed_binary_matches_its_pinned_checksum_and_version(name: str) -> None:
    executable = binaries.ensure(name)
    assert binaries.installed(name), f"{executable} must match the sha256 pinned in binaries.py"
    flags = ["--client", "-o", "json"] if name == "kubectl" else ["--template", "{{.Version}}"]
    reported = subprocess.run([executable, "version", *flags], capture_output=True, text=True, check=True).stdout
    version = json.loads(reported)["clientVersion"]["gitVersion"] if name == "kubectl" else reported.strip()
    assert version == binaries.BINARIES[name].version, (
        "Helm must be v3 (pulumi-kubernetes embeds Helm v3; Helm 4 takes --post-renderer as a plugin name) and "
        "kubectl 1.34 (the cleanup image's minor version)"
    )


def test_a_missing_binary_names_its_install_command_a_present_one_is_hashed_once_a_changed_one_is_refused(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(binaries, "TOOLS_DIR", tmp_path / ".tools")
    monkeypatch.setattr(binaries, "ROOT", tmp_path)
    with pytest.raises(binaries.BinaryError, match=r"python -m supersonic_interlink.chart.binaries install helm"):
        binaries.ensure("helm")
    pinned = b"the pinned bytes"
    tiny = dataclasses.replace(binaries.BINARIES["helm"], sha256=hashlib.sha256(pinned).hexdigest())
    monkeypatch.setitem(binaries.BINARIES, "tiny", tiny)
    hashed: list[bytes] = []

    def sha256(data: bytes) -> str:
        hashed.append(data)
        return hashlib.sha256(data).hexdigest()

    monkeypatch.setattr(binaries, "_sha256", sha256)
    target = binaries.path("tiny")
    target.parent.mkdir(parents=True)
    target.write_bytes(b"other bytes, same size")
    with pytest.raises(binaries.BinaryError):
        binaries.ensure("tiny")
    target.write_bytes(pinned)
    assert binaries.ensure("tiny") == binaries.ensure("tiny") == target
    assert hashed[1:] == [pinned], "hashed once for two uses: a readiness poll calls kubectl many times a second"
    replacement = target.with_name("replacement")
    replacement.write_bytes(b"the changed bytes")
    os.replace(replacement, target)
    with pytest.raises(binaries.BinaryError):
        binaries.ensure("tiny")
