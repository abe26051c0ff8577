"""What the end-to-end scenarios share: a project directory per scenario (this checkout's ``Pulumi.yaml`` and
post-renderer, its own stack files and file backend, so scenarios share no state and never write into ``stacks/``),
the chart they deploy, and readers of the live API and of Helm's release record."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from chart_fixtures import fixture_chart

from supersonic_interlink.config import PROJECT
from supersonic_interlink.config.stack_config import cli_config, read_stack_document
from supersonic_interlink.contract import CHART
from supersonic_interlink.engine import toolchain
from supersonic_interlink.engine.cluster import LocalCluster
from supersonic_interlink.engine.gate import steps_from_events
from supersonic_interlink.engine.run import Engine

ROOT = Path(__file__).resolve().parents[1]

# kwok holds this namespace's pods on the interLink virtual node in the Slurm queue; every other pod is Ready at once.
REHEARSAL_NAMESPACE = "e2e-rehearse"


def e2e_chart(into: Path, name: str = "conforming") -> Path:
    """A fixture chart of tests/charts with its one dependency present (as from git), so the real Helm installs it."""
    chart = fixture_chart(name, into)
    grafana = chart / "charts" / "grafana"
    grafana.mkdir(parents=True)
    (grafana / "Chart.yaml").write_text("apiVersion: v2\nname: grafana\nversion: 1.0.0\n")
    return chart


def hammer_like(namespace: str, release: str, chart: Path, **changes: Any) -> dict[str, Any]:
    """The hammer stack's config with its own namespace, release and chart; ``changes`` replace whole top-level keys."""
    config = read_stack_document(ROOT / "stacks" / "Pulumi.hammer.yaml")
    config[f"{PROJECT}:namespace"] = namespace
    config[f"{PROJECT}:release"] = {"name": release, "chart": {"path": str(chart)}}
    # The load metric selects its own release and namespace (serverLoad.metric may not select another's).
    load = dict(config[f"{PROJECT}:serverLoad"])
    load["metric"] = (
        load["metric"]
        .replace('release=~"supersonic-interlink"', f'release=~"{release}"')
        .replace('namespace=~"cms"', f'namespace=~"{namespace}"')
    )
    config[f"{PROJECT}:serverLoad"] = load
    for key, value in changes.items():
        config[f"{PROJECT}:{key}"] = value
    return config


@dataclass
class Project:
    directory: Path
    cluster: LocalCluster
    events: list[Any] = field(default_factory=list)
    output: list[str] = field(default_factory=list)

    @classmethod
    def create(cls, directory: Path, cluster: LocalCluster) -> Project:
        directory.mkdir(parents=True)
        shutil.copy(ROOT / "Pulumi.yaml", directory / "Pulumi.yaml")
        (directory / "postrender").symlink_to(ROOT / "postrender")
        (directory / "stacks").mkdir()
        (directory / "backend").mkdir()
        return cls(directory, cluster)

    @property
    def env(self) -> dict[str, str]:
        env = self.cluster.env()
        env["PULUMI_BACKEND_URL"] = f"file://{self.directory / 'backend'}"
        return env

    def stack_file(self, stack: str) -> Path:
        return self.directory / "stacks" / f"Pulumi.{stack}.yaml"

    def write_stack(self, stack: str, config: Mapping[str, Any]) -> None:
        """Write the stack's config, keeping what the CLI added to the file (its encryption salt)."""
        path = self.stack_file(stack)
        document = (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}
        kept_secure = {k: v for k, v in (document.get("config") or {}).items() if isinstance(v, dict) and "secure" in v}
        document["config"] = {**dict(config), **{k: v for k, v in kept_secure.items() if k not in config}}
        path.write_text(yaml.safe_dump(document, sort_keys=False))

    def cli_config(self, stack: str) -> dict[str, str]:
        """The config map the CLI passes the program for this stack (for rendering offline what it deploys)."""
        return cli_config(read_stack_document(self.stack_file(stack)))

    def engine(self, stack: str) -> Engine:
        return Engine(stack, work_dir=self.directory, env=self.env, log=self.output.append)

    def run(self, stack: str, action: str, **kwargs: Any) -> Any:
        """Run the engine; record its events (in order) and its printed output."""
        self.events.clear()
        self.output.clear()
        return self.engine(stack).run(action, on_event=self.events.append, **kwargs)

    def pulumi(self, *args: str, stack: str, input_text: str | None = None) -> subprocess.CompletedProcess:
        """The real CLI, as an operator types it, in the project directory."""
        return subprocess.run(
            [str(toolchain.path("pulumi")), *args, "--stack", stack, "--non-interactive"],
            cwd=self.directory,
            env={**self.env},
            capture_output=True,
            text=True,
            input=input_text,
            timeout=300,
        )

    def steps(self) -> list[tuple[str, str, str]]:
        """(op, resource type, resource name) of every step the last run reported, in order."""
        return [(step.op, step.type, step.name) for step in steps_from_events(self.events)]

    def changes(self) -> list[tuple[str, str, str]]:
        return [step for step in self.steps() if step[0] != "same"]


def existing_cvmfs_claim(project: Project, namespace: str) -> None:
    """The ``cvmfs`` claim an earlier install kept (as in Geddes' cms namespace): the chart then renders none."""
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": CHART.model_repository_claim, "namespace": namespace},
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "storageClassName": CHART.model_repository_storage_class,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    project.cluster.kubectl("apply", "-f", "-", input_text=json.dumps(claim))


def providers(pulumi_home: Path) -> list[int]:
    """Running provider processes started from this session's plugin directory."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and os.readlink(entry / "exe").startswith(str(pulumi_home)):
                found.append(int(entry.name))
    return found


def run_supersonic(
    verb: str, *args: str, cwd: Path = ROOT, env: Mapping[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``./supersonic VERB ARGS`` in a fresh interpreter from ``cwd``, with ``env`` added to this environment."""
    return subprocess.run(
        [sys.executable, "-m", "supersonic_interlink", verb, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        check=False,
    )


def unscheduled_pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
    """A pod no node will take (its nodeSelector matches none), so only the test sets its phase."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "nodeSelector": {"e2e.supersonic/never": "true"},
            "containers": [{"name": "triton-server", "image": "triton:test"}],
        },
    }


def kubectl_json(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(cluster.kubectl(*args, "-o", "json").stdout)


def envoy_config_maps(cluster: LocalCluster, release: str, namespace: str) -> dict[str, str]:
    """Name -> envoy.yaml of every Envoy ConfigMap the program made (the chart's own copy excluded)."""
    prefix = f"{CHART.envoy_object_name(release)}-external-"
    items = kubectl_json(cluster, "get", "configmap", "-n", namespace)["items"]
    return {
        i["metadata"]["name"]: i["data"][CHART.envoy_config_key]
        for i in items
        if i["metadata"]["name"].startswith(prefix)
    }


def helm(cluster: LocalCluster, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return cluster.tool("helm", *args, check=check, timeout=300)


def helm_history(cluster: LocalCluster, release: str, namespace: str) -> list[dict[str, Any]]:
    return list(json.loads(helm(cluster, "history", release, "-n", namespace, "-o", "json").stdout))


def helm_revisions(cluster: LocalCluster, release: str, namespace: str) -> list[tuple[int, str]]:
    return [(h["revision"], h["status"]) for h in helm_history(cluster, release, namespace)]


def helm_status(cluster: LocalCluster, release: str, namespace: str) -> dict[str, Any]:
    return dict(json.loads(helm(cluster, "status", release, "-n", namespace, "-o", "json").stdout))
