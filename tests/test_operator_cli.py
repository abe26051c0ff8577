"""Which Pulumi CLI and Kubernetes provider ``./supersonic pulumi`` and ``drift`` run: the operator's own first, in
the supported range, the provider at exactly the SDK's version; a Go build only where none is found."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

from supersonic_interlink.cli.verbs import DRIFT as drift_cli
from supersonic_interlink.cli.verbs import PULUMI as pulumi_cli
from supersonic_interlink.engine import installed, toolchain
from supersonic_interlink.engine.run import Engine

PROVIDER_VERSION = toolchain.version(toolchain.build_for("pulumi-resource-kubernetes"))


def fake_cli(directory: Path, version: str, name: str = "pulumi") -> Path:
    """A stand-in for a Pulumi CLI that answers ``pulumi version`` as the real one does."""
    directory.mkdir(parents=True, exist_ok=True)
    cli = directory / name
    cli.write_text(f"#!/bin/sh\n[ \"$1\" = version ] && echo '{version}'\n")
    cli.chmod(0o755)
    return cli


def install_plugin(home: Path, version: str) -> Path:
    """What ``pulumi plugin install resource kubernetes <version>`` leaves in ``home``."""
    directory = home / "plugins" / f"resource-kubernetes-{version}"
    directory.mkdir(parents=True)
    (directory / "pulumi-resource-kubernetes").write_text("#!/bin/sh\n")
    return directory


@pytest.fixture
def nothing_built(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[list[str]]:
    """An empty toolchain cache and home (no plugin in ~/.pulumi); each build asked for is recorded instead of run."""
    monkeypatch.setenv("SUPERSONIC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    monkeypatch.delenv(installed.CLI_ENV, raising=False)
    asked: list[list[str]] = []

    def ensure(names: list[str], *, log: object = None) -> dict[str, Path]:
        asked.append(names)
        return {name: toolchain.path(name) for name in names}

    monkeypatch.setattr(toolchain, "ensure", ensure)
    return asked


def test_the_named_cli_then_pulumi_cli_then_path_then_a_build_and_a_named_one_that_does_not_run_is_refused(
    tmp_path: Path, nothing_built: list, capsys: pytest.CaptureFixture
) -> None:
    missing = tmp_path / "no-such-pulumi"
    with pytest.raises(
        installed.Unusable, match=rf"pulumi CLI {re.escape(str(missing))} \(--pulumi\) reports no version"
    ):
        installed.find_cli(str(missing), {})
    assert nothing_built == [], "a CLI named on purpose is never replaced by a build"
    old = fake_cli(tmp_path / "old", "v3.100.0")
    assert drift_cli.main(["hammer", "--pulumi", str(old)]) == 2, "drift takes the same flag"
    assert f"pulumi CLI {old} (--pulumi) reports version 'v3.100.0', outside" in capsys.readouterr().err
    path = fake_cli(tmp_path / "path", "v3.274.1")
    from_env = fake_cli(tmp_path / "env", "v3.187.0", name="pulumi-3.187")
    named = fake_cli(tmp_path / "named", "v3.274.1", name="my-pulumi")
    env = {"PATH": str(tmp_path / "path"), installed.CLI_ENV: str(from_env)}
    assert installed.find_cli(str(named), env)[0].origin == "--pulumi"
    assert installed.find_cli(None, env)[0] == installed.Found(from_env, "v3.187.0", installed.CLI_ENV)
    assert installed.find_cli(None, {"PATH": env["PATH"]}) == (installed.Found(path, "v3.274.1", "on PATH"), False)
    assert nothing_built == [], "an installed CLI is never built"
    found, build = installed.find_cli(None, {"PATH": str(tmp_path / "empty")})
    assert build and found.path == toolchain.path("pulumi")
    assert found.origin == "none on PATH, PULUMI_CLI or --pulumi: building it from Go modules"


@pytest.mark.parametrize("version", ["v3.186.0", "v3.275.0", "v2.0.0", ""])
def test_a_cli_outside_the_range_is_refused_in_one_line_saying_what_to_install(
    tmp_path: Path, nothing_built: list, version: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    cli = fake_cli(tmp_path / "bin", version)
    fake_cli(tmp_path / "good", "v3.274.1")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{tmp_path / 'good'}:/usr/bin:/bin")
    assert pulumi_cli.main(["preview", "hammer"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    said = f"reports version '{version}'" if version else "reports no version"
    assert f"pulumi CLI {cli} (on PATH) {said}, outside the supported v3.187.0 to v3.274.1" in err
    assert "install the Pulumi CLI v3.274.1" in err and "--pulumi PATH or PULUMI_CLI" in err
    assert nothing_built == [], "a refused CLI is not passed over for a build, nor for the next on PATH"


def test_the_provider_is_the_plugin_in_pulumi_home_at_exactly_the_sdks_version_unless_half_installed(
    tmp_path: Path, nothing_built: list
) -> None:
    install_plugin(tmp_path / "other", "v4.30.0")
    with pytest.raises(installed.Unusable) as refused:
        installed.find_provider({"PULUMI_HOME": str(tmp_path / "other")})
    said = "is resource-kubernetes-v4.30.0, but this project's SDK (pulumi-kubernetes==4.25.0) runs exactly v4.25.0"
    assert said in str(refused.value)
    assert str(refused.value).endswith(f"pulumi plugin install resource kubernetes {PROVIDER_VERSION}")
    assert nothing_built == []
    directory = install_plugin(tmp_path / "home", PROVIDER_VERSION)
    found, source = installed.find_provider({"PULUMI_HOME": str(tmp_path / "home")})
    assert (found.path, found.origin, source) == (directory / "pulumi-resource-kubernetes", "installed plugin", None)
    Path(f"{directory}.partial").touch()
    found, source = installed.find_provider({"PULUMI_HOME": str(tmp_path / "home")})
    assert source == toolchain.path("pulumi-resource-kubernetes"), "built and installed again, as the CLI would"
    assert "building it from Go modules" in found.origin


def test_the_first_line_names_the_cli_and_provider_with_versions_and_origins(
    tmp_path: Path, nothing_built: list
) -> None:
    cli = fake_cli(tmp_path / "bin", "v3.274.1")
    plugin = install_plugin(tmp_path / "home", PROVIDER_VERSION)
    lines: list[str] = []
    env = {"PATH": str(tmp_path / "bin"), "PULUMI_HOME": str(tmp_path / "home")}
    engine = Engine("hammer", env=env, log=lines.append)
    command = engine._pulumi_command(env)
    assert lines == [
        (
            f"engine: pulumi CLI v3.274.1 (on PATH: {cli}); kubernetes provider {PROVIDER_VERSION} "
            f"(installed plugin: {plugin / 'pulumi-resource-kubernetes'})"
        )
    ]
    assert (command.command, str(command.version)) == (str(cli), "3.274.1"), "the Automation API runs that CLI"
    assert nothing_built == []


def test_the_supported_range_is_from_the_first_cli_loading_pulumi_yaml_to_the_one_built_and_installed() -> None:
    # Object keys with object defaults set the floor: if Pulumi.yaml stopped declaring them, look again.
    config = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    assert any(v.get("type") == "object" and isinstance(v.get("default"), dict) for v in config.values())
    assert installed.SUPPORTED[0] == (3, 187, 0)
    top = "v" + ".".join(map(str, installed.SUPPORTED[1]))
    assert toolchain.version(toolchain.build_for("pulumi")) == top
    pinned = re.search(r"^pulumi-kubernetes==(\S+)$", (ROOT / "requirements.txt").read_text(), re.MULTILINE)
    assert pinned
    for workflow, name in (("pull-request.yml", "preview"), ("drift.yml", "drift")):
        job = yaml.safe_load((ROOT / ".github" / "workflows" / workflow).read_text())["jobs"][name]
        installs = [s for s in job["steps"] if s.get("uses", "").startswith("pulumi/actions@")]
        versions = [s["with"]["pulumi-version"] for s in installs]
        assert versions == [top.removeprefix("v")], f"{workflow} installs the CLI the project is tested with"
        runs = "\n".join(s.get("run", "") for s in job["steps"])
        assert f"pulumi plugin install resource kubernetes v{pinned[1]}\n" in runs, "the provider at the SDK's version"
