"""``./supersonic stack new``: a new cluster's stack file that carries its own names and none of the source's."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_runner import run_cli

from supersonic_interlink.config import stack_config
from supersonic_interlink.config.pulumi_config import matchers
from supersonic_interlink.config.stack_config import read_stack_document

ROOT = Path(__file__).resolve().parent.parent
NEW = ("--namespace", "sonic", "--release", "sonic-anvil", "--node", "interlink-anvil")


@pytest.fixture
def stacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(ROOT / "stacks" / "Pulumi.hammer.yaml", tmp_path)
    monkeypatch.setattr(stack_config, "STACKS_DIR", tmp_path)
    return tmp_path


def test_the_new_stack_has_its_own_names_none_of_the_sources_and_checks_at_once(stacks: Path) -> None:
    done = run_cli("stack", "new", "anvil", *NEW)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("wrote stacks/Pulumi.anvil.yaml\nstack anvil: release sonic-anvil in namespace sonic")
    assert "stack anvil: no findings" in done.stdout, "rendered and checked at once"
    text = (stacks / "Pulumi.anvil.yaml").read_text()
    config = read_stack_document(stacks / "Pulumi.anvil.yaml")
    assert config["supersonic-interlink:release"]["name"] == "sonic-anvil"
    assert config["supersonic-interlink:triton"]["nodeSelector"] == {"kubernetes.io/hostname": "interlink-anvil"}
    selected = {(m.label, m.value) for m in matchers(config["supersonic-interlink:serverLoad"]["metric"])}
    assert selected == {("release", "sonic-anvil"), ("namespace", "sonic")}, "KEDA must scale on this release's queue"
    comments = [line for line in text.splitlines() if line.lstrip().startswith("#")]
    assert not [c for c in comments if "Geddes" in c or "Hammer" in c or "interlink-hammer" in c], comments
    assert "supersonic-interlink" not in text.replace("supersonic-interlink:", ""), "hammer's release name is gone"
    assert '#   review supersonic-interlink:triton.args[0]: it holds "cms", a name of hammer\'s' in comments, comments


def test_an_existing_stack_file_is_never_overwritten(stacks: Path) -> None:
    before = (stacks / "Pulumi.hammer.yaml").read_text()
    done = run_cli("stack", "new", "hammer", *NEW)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "stack new hammer: stacks/Pulumi.hammer.yaml exists; it is never overwritten\n"
    assert (stacks / "Pulumi.hammer.yaml").read_text() == before


def test_a_source_stack_without_a_file_is_named_and_nothing_written(stacks: Path) -> None:
    done = run_cli("stack", "new", "anvil", *NEW, "--from", "nosuch")
    assert (done.returncode, done.stderr) == (
        2,
        "stack new anvil: --from nosuch: no file Pulumi.nosuch.yaml in stacks/\n",
    )
    assert not (stacks / "Pulumi.anvil.yaml").exists()


def test_a_bad_name_writes_nothing_and_says_which_key(stacks: Path) -> None:
    done = run_cli("stack", "new", "anvil", "--namespace", "Not_A_Namespace", "--release", "r", "--node", "n")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith('stack new anvil: supersonic-interlink:namespace = "Not_A_Namespace": expected')
    assert not (stacks / "Pulumi.anvil.yaml").exists()
