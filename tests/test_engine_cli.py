"""``./supersonic pulumi``: what it refuses before any engine runs, with which exit code, and the scratch project
it uses on the local cluster's throwaway backend."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from cli_runner import run_cli
from conftest import ROOT

from supersonic_interlink.cli.verbs import PULUMI as pulumi_cli
from supersonic_interlink.engine import run
from supersonic_interlink.engine.cluster import SCRATCH_PROJECT_ENV
from supersonic_interlink.engine.gate import stack_removable


@pytest.fixture(autouse=True)
def no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to reach the engine fails the test: these cases must be decided before it."""

    def refuse(self: run.Engine, action: str, **kwargs: object) -> None:
        raise AssertionError(f"the engine was started for {action}")

    monkeypatch.setattr(run.Engine, "run", refuse)
    monkeypatch.delenv(SCRATCH_PROJECT_ENV, raising=False)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["up", "hammer"], "pulumi up: the following arguments are required: --yes"),
        (["destroy", "hammer"], "pulumi destroy: the following arguments are required: --yes"),
        (["up", "hammer", "--yes", "--json"], "unrecognized arguments: --json (see `./supersonic pulumi --help`)"),
        (["preview", "hammer", "--yes"], "unrecognized arguments: --yes"),
        (["preview", "nosuchstack"], "pulumi preview: argument stack: no stack 'nosuchstack'; stacks: "),
        (["gate", "hammer"], "pulumi gate: the following arguments are required: file"),
    ],
)
def test_usage_mistakes_exit_2_with_one_line(argv: list[str], says: str) -> None:
    done = run_cli("pulumi", *argv)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and says in done.stderr, done.stderr


def test_destroy_of_a_protected_release_is_refused_naming_the_deliberate_path(capsys: pytest.CaptureFixture) -> None:
    assert pulumi_cli.main(["destroy", "hammer", "--yes"]) == 2
    err = capsys.readouterr().err
    assert "destroy of hammer refused: the Helm release is protected (release.removable is false)" in err
    assert "set release.removable: true in stacks/Pulumi.hammer.yaml in a reviewed change" in err


def test_the_scratch_project_copies_the_stacks_and_keeps_what_the_cli_added(tmp_path: Path) -> None:
    scratch = run.scratch_project(tmp_path / "project")
    copied = yaml.safe_load((scratch / "stacks" / "Pulumi.hammer.yaml").read_text())
    original = yaml.safe_load((ROOT / "stacks" / "Pulumi.hammer.yaml").read_text())
    assert copied["config"] == original["config"]
    assert (scratch / "postrender").resolve() == ROOT / "postrender"
    # The CLI writes its encryption salt into the copy; the next run keeps it and refreshes the config.
    copied["encryptionsalt"] = "v1:salt"
    copied["config"] = {"stale": True}
    (scratch / "stacks" / "Pulumi.hammer.yaml").write_text(yaml.safe_dump(copied))
    run.scratch_project(scratch)
    again = yaml.safe_load((scratch / "stacks" / "Pulumi.hammer.yaml").read_text())
    assert again["encryptionsalt"] == "v1:salt" and again["config"] == original["config"]
    assert "encryptionsalt" not in (ROOT / "stacks" / "Pulumi.hammer.yaml").read_text()


def test_a_stack_holding_a_secret_is_read_without_its_passphrase(tmp_path: Path) -> None:
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.s.yaml").write_text(
        "config:\n  supersonic-interlink:serverLoad:\n    metric:\n      secure: v1:abc\n"
        "  supersonic-interlink:release:\n    name: r\n    removable: true\n"
    )
    assert stack_removable("s", root=tmp_path) is True
    (tmp_path / "stacks" / "Pulumi.s.yaml").write_text("config:\n  supersonic-interlink:release:\n    secure: v1:x\n")
    assert stack_removable("s", root=tmp_path) is False, "a secret cannot say removable: the default holds"


def test_pulumi_gate_runs_the_gate_on_any_clis_json_preview_without_an_engine(capsys: pytest.CaptureFixture) -> None:
    assert pulumi_cli.main(["gate", "hammer", str(ROOT / "tests/fixtures/previews/update.json")]) == 0
    assert "gate: stack hammer:" in capsys.readouterr().out
    assert pulumi_cli.main(["gate", "hammer", str(ROOT / "tests/fixtures/previews/rename-component.json")]) == 1
    assert "gate: stack hammer: delete of Helm release supersonic-helm" in capsys.readouterr().err


def test_a_relative_path_chart_means_the_same_directory_in_the_scratch_project(tmp_path: Path) -> None:
    # The provider resolves release.chart.path from the project directory ("repo charts not found" otherwise).
    root = tmp_path / "project"
    (root / "stacks").mkdir(parents=True)
    (root / "Pulumi.yaml").write_text("name: supersonic-interlink\n")
    for path, resolved in (("charts/x", root / "charts" / "x"), ("../elsewhere", tmp_path / "elsewhere")):
        stack = {"config": {"supersonic-interlink:release": {"name": "r", "chart": {"path": path}}}}
        (root / "stacks" / "Pulumi.s.yaml").write_text(yaml.safe_dump(stack))
        scratch = run.scratch_project(tmp_path / "scratch", root=root)
        copied = yaml.safe_load((scratch / "stacks" / "Pulumi.s.yaml").read_text())
        assert copied["config"]["supersonic-interlink:release"]["chart"] == {"path": str(resolved)}


def test_cluster_env_of_a_cluster_not_running_is_refused_not_exports_of_nothing(tmp_path: Path) -> None:
    result = run_cli("cluster", "env", "--dir", str(tmp_path))
    assert result.returncode == 1 and result.stdout == "", result.stdout
    assert result.stderr.strip() == f"cluster: not running in {tmp_path}; start it with ./supersonic cluster start"
