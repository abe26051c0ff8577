"""An operator's own Pulumi CLI on PATH, with an empty toolchain cache and no ``go``: ``./supersonic pulumi preview``
and ``up`` run the real engine and build nothing; a CLI outside the supported range is refused. The chart's path is
relative to the project, and must mean the same directory in ``./supersonic cluster env``'s scratch copy of it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from e2e_harness import hammer_like, helm_status, run_supersonic
from project_copies import project_copy

from supersonic_interlink.chart import binaries
from supersonic_interlink.engine import toolchain
from supersonic_interlink.engine.cluster import SCRATCH_PROJECT_ENV, LocalCluster

pytestmark = pytest.mark.timeout(900)

STACK = "operator-cli"
RELEASE = "operator-cli"
NAMESPACE = "e2e-operator-cli"
PROVIDER = toolchain.version(toolchain.build_for("pulumi-resource-kubernetes"))


def operator_machine(tmp_path: Path, cluster: LocalCluster) -> dict[str, str]:
    """The built ``pulumi`` copied onto PATH, the provider by ``pulumi plugin install``, an empty cache, no Go."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy2(toolchain.path("pulumi"), bin_dir / "pulumi")
    tools = [str(binaries.path(name).parent) for name in ("kubectl", "helm")]
    env = {
        **cluster.env(),
        "PATH": ":".join([str(bin_dir), *tools, "/usr/bin", "/bin"]),
        "SUPERSONIC_CACHE": str(tmp_path / "empty-cache"),
        "PULUMI_HOME": str(tmp_path / "pulumi-home"),
        "PULUMI_BACKEND_URL": f"file://{tmp_path / 'backend'}",
        SCRATCH_PROJECT_ENV: str(tmp_path / "scratch"),
    }
    (tmp_path / "empty-cache").mkdir()
    (tmp_path / "backend").mkdir()
    assert shutil.which("go", path=env["PATH"]) is None, "no Go on this machine's PATH"
    provider = str(toolchain.path("pulumi-resource-kubernetes"))
    argv = [str(bin_dir / "pulumi"), "plugin", "install", "resource", "kubernetes", PROVIDER, "--file", provider]
    install = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert install.returncode == 0, install.stderr
    return env


def test_the_operators_cli_previews_and_applies_a_relative_path_chart_and_builds_nothing(
    cluster: LocalCluster, chart: Path, tmp_path: Path
) -> None:
    root = project_copy(tmp_path)
    shutil.copytree(chart, root / "charts" / "e2e")
    config = hammer_like(NAMESPACE, RELEASE, Path("charts/e2e"))
    assert config["supersonic-interlink:release"]["chart"] == {"path": "charts/e2e"}, "relative, as allowed"
    (root / "stacks" / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    cluster.kubectl("create", "namespace", NAMESPACE)
    env = operator_machine(tmp_path, cluster)

    preview = run_supersonic("pulumi", "preview", STACK, cwd=root, env=env, timeout=600)
    assert preview.returncode == 0, preview.stdout + preview.stderr
    first = preview.stdout.splitlines()[0]
    plugin = Path(env["PULUMI_HOME"]) / "plugins" / f"resource-kubernetes-{PROVIDER}" / "pulumi-resource-kubernetes"
    assert first == (
        f"engine: pulumi CLI v3.274.1 (on PATH: {tmp_path / 'bin' / 'pulumi'}); "
        f"kubernetes provider {PROVIDER} (installed plugin: {plugin})"
    ), first
    assert "toolchain:" not in preview.stdout + preview.stderr, "nothing is built"

    up = run_supersonic("pulumi", "up", STACK, "--yes", cwd=root, env=env, timeout=600)
    assert up.returncode == 0, up.stdout + up.stderr
    assert "toolchain:" not in up.stdout + up.stderr
    status = helm_status(cluster, RELEASE, NAMESPACE)
    assert status["info"]["status"] == "deployed", "the chart at charts/e2e was found from the scratch project"
    assert list((tmp_path / "empty-cache").iterdir()) == [], "the toolchain cache stays empty"

    # A CLI outside the supported range, first on PATH: refused in one line, never passed over for another.
    old = tmp_path / "old-bin"
    old.mkdir()
    (old / "pulumi").write_text('#!/bin/sh\n[ "$1" = version ] && echo v3.186.0\n')
    (old / "pulumi").chmod(0o755)
    refused = run_supersonic(
        "pulumi", "preview", STACK, cwd=root, env={**env, "PATH": f"{old}:{env['PATH']}"}, timeout=120
    )
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.strip() == (
        f"supersonic pulumi: pulumi CLI {old / 'pulumi'} (on PATH) reports version 'v3.186.0', outside the "
        "supported v3.187.0 to v3.274.1: install the Pulumi CLI v3.274.1 (pulumi/actions with pulumi-version, or "
        "its installer), or name one from v3.187.0 to v3.274.1 with --pulumi PATH or PULUMI_CLI"
    )
    assert "engine:" not in refused.stdout
