"""render.py: the offline main job, run as a newcomer runs it."""

from __future__ import annotations

import concurrent.futures
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import render
from supersonic_interlink.stack_config import stack_names

ROOT = Path(__file__).resolve().parent.parent


def run_render(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "render.py"), *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


@pytest.mark.parametrize("stack", stack_names())
def test_every_stack_renders_and_passes_its_checks(stack: str, tmp_path: Path) -> None:
    result = run_render(stack, "--out", str(tmp_path), "--check")
    assert result.returncode == 0, f"render --check must pass for {stack}:\n{result.stdout}\n{result.stderr}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["envoy.yaml", "manifests.yaml", "release.yaml"]
    assert f"stack {stack}: checks passed" in result.stdout


def test_output_is_byte_for_byte_deterministic(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    render.write(render.render("hammer"), first)
    render.write(render.render("hammer"), second)
    for name in ("manifests.yaml", "release.yaml", "envoy.yaml"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), f"{name} differs between two renders"


def test_manifests_are_plain_kubernetes_sorted_by_kind_then_name(tmp_path: Path) -> None:
    render.write(render.render("hammer"), tmp_path)
    documents = list(yaml.safe_load_all((tmp_path / "manifests.yaml").read_text()))
    keys = [(d["kind"], d["metadata"]["name"]) for d in documents]
    assert keys == sorted(keys), "sorted output keeps PR diffs stable"
    assert all("apiVersion" in d and "kind" in d for d in documents)

    def floats(value) -> list:
        if isinstance(value, float):
            return [value]
        if isinstance(value, dict):
            return [f for v in value.values() for f in floats(v)]
        if isinstance(value, list):
            return [f for v in value for f in floats(v)]
        return []

    assert floats(documents) == [], "integers must come out as integers, as Kubernetes spells them"


def test_release_yaml_holds_the_chart_and_the_values_as_passed_to_helm(tmp_path: Path) -> None:
    render.write(render.render("hammer"), tmp_path)
    release = yaml.safe_load((tmp_path / "release.yaml").read_text())
    assert release["name"] == "supersonic-interlink" and release["namespace"] == "cms"
    assert release["chart"] == {
        "repo": "https://fastmachinelearning.org/SuperSONIC",
        "name": "supersonic",
        "version": "0.4.0",
    }
    assert release["values"]["scaleFromZero"]["readyTimeoutSeconds"] == 900
    assert release["values"]["triton"]["readinessProbe"]["exec"] is None, "explicit nulls reach Helm"


def test_envoy_yaml_is_the_text_stored_in_the_config_map(tmp_path: Path) -> None:
    rendered = render.render("hammer")
    render.write(rendered, tmp_path)
    stored = [
        m["data"]["envoy.yaml"]
        for m in rendered["manifests"]
        if m["kind"] == "ConfigMap"
        and m["metadata"]["name"] == rendered["release"]["values"]["envoy"]["external_config"]["configmap_name"]
    ]
    assert stored == [(tmp_path / "envoy.yaml").read_text()]


def test_without_out_it_prints_a_short_summary() -> None:
    result = run_render("hammer")
    assert result.returncode == 0, result.stderr
    assert "stack hammer: release supersonic-interlink in namespace cms" in result.stdout
    assert "readyTimeoutSeconds 900 (RepositoryIndex idle_timeout 1020s)" in result.stdout


def test_invalid_config_exits_2_with_every_problem_and_no_traceback(tmp_path: Path) -> None:
    root = tmp_path / "project"
    for name in ("Pulumi.yaml", "render.py", "__main__.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text((ROOT / name).read_text())
    for package in ("supersonic_interlink", "components", "scripts", "postrender"):
        if (ROOT / package).is_dir():
            subprocess.run(["cp", "-r", str(ROOT / package), str(root / package)], check=True)
    (root / "stacks").mkdir()
    (root / "stacks" / "Pulumi.broken.yaml").write_text(
        yaml.safe_dump(
            {
                "config": {
                    "supersonic-interlink:namespace": "cms",
                    "supersonic-interlink:release": {"name": "supersonic-interlink"},
                    "supersonic-interlink:prometheus": {"url": "prometheus", "port": 99999},
                    "supersonic-interlink:triton": {"args": ["tritonserver"]},
                    "supersonic-interlink:scaleFromZero": {"readyTimeoutSeconds": 900},
                }
            }
        )
    )
    result = subprocess.run(
        [sys.executable, "render.py", "broken"], capture_output=True, text=True, timeout=60, cwd=root
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "supersonic-interlink:scaleFromZero.holdMinReplicasSeconds = 300: expected a value >= " in result.stderr
    assert "supersonic-interlink:prometheus.port = 99999: expected a port from 1 to 65535" in result.stderr


def test_an_unknown_stack_is_named_with_the_known_ones() -> None:
    result = run_render("nope")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "no file stacks/Pulumi.nope.yaml (stacks: geddes-gpu, hammer)" in result.stderr


def test_helm_template_arguments_name_the_pinned_chart_and_turn_off_only_the_lookup(tmp_path: Path) -> None:
    """What the pull-request workflow hands `helm template` (which cannot answer the chart's lookup)."""
    render.write(render.render("hammer"), tmp_path)
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "helm_template_args.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "supersonic-interlink",
        "supersonic",
        "--repo",
        "https://fastmachinelearning.org/SuperSONIC",
        "--version",
        "0.4.0",
        "--namespace",
        "cms",
        "--values",
        str(tmp_path / "template-values.yaml"),
    ]
    values = yaml.safe_load((tmp_path / "template-values.yaml").read_text())
    release = yaml.safe_load((tmp_path / "release.yaml").read_text())
    assert values["envoy"]["external_config"]["load_from_configmap"] is False
    release["values"]["envoy"]["external_config"]["load_from_configmap"] = False
    assert values == release["values"], "everything else is the release's values as Helm gets them"


def test_repeated_renders_under_load_exit_with_an_empty_stderr() -> None:
    """12 renders, two at a time: an event loop left open printed `Exception ignored ... Invalid file descriptor:
    -1` at exit in about one run of six under load, with exit code 0."""
    runs = 12

    def one(_: int) -> subprocess.CompletedProcess:
        return run_render("hammer")

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(one, range(runs)))
    noisy = [r.stderr for r in results if r.stderr]
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results if r.returncode]
    assert noisy == [], f"{len(noisy)} of {runs} renders wrote to stderr; the first:\n{noisy[0] if noisy else ''}"
