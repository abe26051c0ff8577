"""The engine toolchain's pins: one place each, and the provider labelled with the version the SDK asks for."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_runner import run_cli
from conftest import ROOT

from supersonic_interlink.engine import cluster, toolchain


def test_the_provider_is_built_at_the_sdks_pinned_version_from_the_commit_of_its_release_tag() -> None:
    pinned = re.search(r"^pulumi-kubernetes==(\S+)$", (ROOT / "requirements.txt").read_text(), re.MULTILINE)
    assert pinned, "requirements.txt pins pulumi-kubernetes"
    build = toolchain.build_for("pulumi-resource-kubernetes")
    assert toolchain.version(build) == f"v{pinned.group(1)}", "the engine asks for exactly the SDK's version"
    # v4.25.0 is commit f47bc2d6f199, the tag of pulumi/pulumi-kubernetes.
    assert toolchain.module_version(build).endswith("-f47bc2d6f199")


def test_every_binary_has_one_wrapper_module_naming_its_version() -> None:
    for build in toolchain.BUILDS:
        go_mod = ROOT / "tools" / build.group / "go.mod"
        assert go_mod.is_file(), f"{build.group}: no tools/{build.group}/go.mod"
        assert (go_mod.parent / "go.sum").is_file(), f"{build.group}: go.sum pins the module's hashes"
        version = toolchain.module_version(build)
        assert re.fullmatch(r"v\d+\.\d+\.\d+(-[0-9.a-z-]+)?", version), (build.group, version)
        for package in build.packages.values():
            assert f"tool {package}" in go_mod.read_text() or f"\t{package}\n" in go_mod.read_text(), (
                f"{package} is not a tool of tools/{build.group}/go.mod, so go mod tidy would drop it"
            )


def test_binaries_are_cached_by_name_and_version_in_the_home_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SUPERSONIC_CACHE", raising=False)
    version = toolchain.version(toolchain.build_for("pulumi"))
    path = toolchain.path("pulumi")
    assert path == Path.home() / ".cache" / "supersonic-interlink" / "bin" / f"pulumi-{version}" / "pulumi"
    assert not path.is_relative_to(ROOT), "build caches live outside the clone"


def test_building_an_unknown_binary_is_a_usage_error_and_without_go_a_missing_one_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    done = run_cli("toolchain", "build", "kubelet")
    assert done.returncode == 2 and "argument NAME: unknown binary 'kubelet'; known: " in done.stderr, done.stderr
    with pytest.raises(toolchain.ToolchainError, match="unknown binary 'kubelet'; known: pulumi"):
        toolchain.path("kubelet")
    monkeypatch.setenv("SUPERSONIC_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(toolchain.ToolchainError, match="the go command is not on PATH"):
        toolchain.ensure(["etcd"], log=lambda _line: None)
    everything = run_cli("toolchain", "build")  # no NAME: every binary, not a usage error
    assert everything.returncode == 1 and "the go command is not on PATH" in everything.stderr, everything.stderr


def test_the_version_ldflags_stamp_what_each_binary_reports() -> None:
    flags = toolchain._ldflags(toolchain.build_for("kube-apiserver"))
    version = toolchain.module_version(toolchain.build_for("kube-apiserver"))
    minor = version.split(".")[1]
    assert f"k8s.io/component-base/version.gitVersion={version}" in flags
    assert f"k8s.io/client-go/pkg/version.gitMinor={minor}" in flags
    assert "version.Version=v3." in toolchain._ldflags(toolchain.build_for("pulumi"))


def test_kwokctl_runs_the_local_binaries_on_loopback_without_leader_election_and_with_the_stages_given() -> None:
    paths = {name: Path(f"/built/{name}") for name in [*cluster.COMPONENTS.values(), "kubectl"]}
    stage = {"kind": "Stage", "metadata": {"name": "queue"}}
    configuration, *stages = cluster.kwokctl_config(paths, [stage])
    options = configuration["options"]
    assert (options["runtime"], options["bindAddress"]) == ("binary", "127.0.0.1"), "kwokctl's default is 0.0.0.0"
    binaries = {key: value for key, value in options.items() if key.endswith("Binary")}
    assert binaries == {
        "etcdBinary": "/built/etcd",
        "kubeApiserverBinary": "/built/kube-apiserver",
        "kubeControllerManagerBinary": "/built/kube-controller-manager",
        "kubeSchedulerBinary": "/built/kube-scheduler",
        "kwokControllerBinary": "/built/kwok",
        "kubectlBinary": "/built/kubectl",
    }, "every binary kwokctl would download is a local one"
    assert options["kubeVersion"] == toolchain.version(toolchain.build_for("kube-apiserver"))
    patches = {p["name"]: {a["key"]: a["value"] for a in p["extraArgs"]} for p in configuration["componentsPatches"]}
    assert patches["kube-controller-manager"] == {"leader-elect": "false", "use-service-account-credentials": "true"}
    assert patches["kube-scheduler"] == {"leader-elect": "false"}
    assert [s["metadata"]["name"] for s in stages] == ["service-load-balancer", "queue"]
