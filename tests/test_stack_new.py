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


@pytest.mark.parametrize(
    ("name", "args", "said"),
    [
        ("hammer", NEW, "stack new hammer: stacks/Pulumi.hammer.yaml exists; it is never overwritten\n"),
        (
            "anvil",
            (*NEW, "--from", "nosuch"),
            "stack new anvil: --from nosuch: no file Pulumi.nosuch.yaml in stacks/\n",
        ),
        ("anvil", ("--namespace", "Not_A", "--release", "r", "--node", "n"), "stack new anvil: supersonic-interlink:"),
    ],
)
def test_a_refused_stack_new_writes_nothing_and_says_why(stacks: Path, name: str, args: tuple, said: str) -> None:
    before = sorted((p.name, p.read_text()) for p in stacks.iterdir())
    done = run_cli("stack", "new", name, *args)
    assert (done.returncode, done.stdout) == (2, "") and done.stderr.startswith(said), done.stderr
    assert sorted((p.name, p.read_text()) for p in stacks.iterdir()) == before, "nothing is written or overwritten"
