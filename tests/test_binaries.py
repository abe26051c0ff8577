"""The pinned Helm v3 and kubectl binaries are installed, verified, and are the versions the checks rely on."""

from __future__ import annotations

import pytest

from supersonic_interlink.chart import binaries


@pytest.mark.parametrize("name", sorted(binaries.BINARIES))
def test_the_installed_binary_matches_its_pinned_checksum_and_version(name: str) -> None:
    executable = binaries.ensure(name)
    assert binaries.installed(name), f"{executable} must match the sha256 pinned in binaries.py"
    assert binaries._reported_version(executable) == binaries.BINARIES[name].version, (
        "Helm must be v3 (pulumi-kubernetes embeds Helm v3; Helm 4 takes --post-renderer as a plugin name) and "
        "kubectl 1.34 (the cleanup image's minor version)"
    )


def test_a_missing_binary_names_the_command_that_installs_it(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(binaries, "TOOLS_DIR", tmp_path / ".tools")
    monkeypatch.setattr(binaries, "ROOT", tmp_path)
    with pytest.raises(binaries.BinaryError, match=r"python -m supersonic_interlink.chart.binaries install helm"):
        binaries.ensure("helm")
