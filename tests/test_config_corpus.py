"""Stack files with the one-line errors each must produce (its ``# expect:`` lines), read as render and up read them."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import run_cli
from conftest import ROOT, stack_config

from supersonic_interlink.components.supersonic_release import HELM_RELEASE_TYPE
from supersonic_interlink.config import ConfigError, load_settings
from supersonic_interlink.config import stack_config as stack_config_module
from supersonic_interlink.config.pulumi_config import settings_from_config
from supersonic_interlink.config.stack_config import cli_config, read_stack_document
from supersonic_interlink.render.evaluate import evaluate

CORPUS = ROOT / "tests" / "fixtures" / "config"
FILES = sorted(CORPUS.glob("*.yaml"))
P = "supersonic-interlink"


def expected(path: Path) -> list[str]:
    lines = path.read_bytes().decode("utf-8", errors="replace").splitlines()
    return [line[len("# expect: ") :] for line in lines if line.startswith("# expect: ")]


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_each_stack_file_in_the_corpus_gets_exactly_its_one_line_errors(path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        settings_from_config(cli_config(read_stack_document(path)))
    found = caught.value.problems
    assert found == expected(path) and found, f"{path.name}: got {found}"
    assert all("\n" not in line for line in found), "one line per problem"


@pytest.mark.parametrize("name", ["not-utf8", "top-level-list", "alias-bomb", "date-key", "cpu-lots"])
def test_render_exits_2_with_the_same_lines_and_no_traceback(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One corpus file per kind of problem: bytes, the document's shape, the YAML reader, a timestamp, settings."""
    stack = tmp_path / "Pulumi.corpus.yaml"
    stack.write_bytes((CORPUS / f"{name}.yaml").read_bytes())
    monkeypatch.setattr(stack_config_module, "STACKS_DIR", tmp_path)
    result = run_cli("render", "corpus")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    for line in expected(CORPUS / f"{name}.yaml"):
        assert line.replace(f"tests/fixtures/config/{name}.yaml", str(stack)) in result.stderr, result.stderr


@pytest.mark.parametrize("schedule", ["@hourly", "@midnight", "@annually", "0 3 * * mon-fri", "5/15 * * * ?"])
def test_schedules_kubernetes_accepts_are_accepted(schedule: str) -> None:
    """robfig/cron (parser.go ParseStandard, what Kubernetes validates with): descriptors, names, N/step, '?'."""
    settings = load_settings(stack_config("hammer", cleanup={"schedule": schedule}))
    assert settings.cleanup.schedule == schedule


def test_the_largest_counts_the_consumers_take_are_accepted() -> None:
    envoy = {"bufferMaxRequestBytes": 4294967295, "dnsRefreshMs": 2, "circuitBreakers": {"maxRetries": 4294967295}}
    keda = {"maxReplicaCount": 2147483647, "scaleUp": {"periodSeconds": 1800}}
    settings = load_settings(stack_config("hammer", envoy=envoy, cleanup={"keep": 20}, keda=keda))
    assert settings.envoy.bufferMaxRequestBytes == 4294967295 and settings.cleanup.keep == 20


def test_a_rename_replaces_the_release_by_uninstalling_the_old_one_first() -> None:
    """Name and namespace force a replacement (helm_release.go Diff); the chart's fixed-name cvmfs PVC would collide."""
    evaluation = evaluate(stack_config("hammer"), "hammer")
    release = evaluation.one(HELM_RELEASE_TYPE)
    assert release.delete_before_replace, "create-before-delete collides on the chart's fixed-name objects"
    others = [r for r in evaluation.resources if r.custom and r is not release]
    assert others and not any(r.delete_before_replace for r in others), "only the Release needs it"
