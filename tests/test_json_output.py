"""``--json``: one document on stdout with the keys docs/json.md documents; on bad input exit 2 and stdout empty."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_runner import run_cli
from test_objects_diff import fixture_chart, live_files

from supersonic_interlink.contract import NEWEST, TRITON
from supersonic_interlink.diff import report

ROOT = Path(__file__).resolve().parent.parent
LIVE_VALUES = ROOT / "tests" / "fixtures" / "live-values-hammer.yaml"


def documented(verb: str, *argv: str) -> tuple[dict, str]:
    """``verb --json``'s document, exit 0 and with exactly the keys docs/json.md lists for it, in order; and stderr."""
    done = run_cli(*verb.split(), *argv, "--json", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    section = (ROOT / "docs" / "json.md").read_text().split(f"### `{verb} --json`", 1)[1].split("\n### ", 1)[0]
    assert list(document) == re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE)
    return document, done.stderr


def test_render_json_is_the_documented_document_and_nothing_else(tmp_path: Path) -> None:
    document, stderr = documented("render", "hammer", "--out", str(tmp_path / "out"))
    assert document["generation"] == NEWEST.name and document["release"]["namespace"] == "cms"
    assert document["written"] == [
        str(tmp_path / "out" / name) for name in ("manifests.yaml", "release.yaml", "envoy.yaml")
    ]
    assert "wrote " in stderr, "the text form's lines go to stderr"


@pytest.mark.parametrize(
    "argv",
    [
        ["render", "nosuch", "--json"],
        ["takeover", "values", "hammer", "--json", "--live", "nope.yaml"],
        ["takeover", "objects", "hammer", "--json", "--live", "nope.yaml"],
        ["diff", "hammer", "--json", "--markdown"],
    ],
)
def test_bad_input_with_json_exits_2_with_nothing_on_stdout(argv: list[str]) -> None:
    done = run_cli(*argv, cwd=ROOT)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.strip() and "Traceback" not in done.stderr


def test_takeover_values_json_is_the_documented_document() -> None:
    document, _ = documented("takeover values", "hammer", "--live", str(LIVE_VALUES))
    row = next(r for r in document["deliberate"] if r["path"] == "keda.minReplicaCount")
    assert row == {"path": "keda.minReplicaCount", "after": 0, "why": row["why"]} and row["why"], (
        "the live release does not set it: no 'before' at all, not null"
    )


def test_takeover_objects_json_is_the_documented_document(tmp_path: Path) -> None:
    chart = fixture_chart("conforming", tmp_path)
    document, _ = documented("takeover objects", "hammer", *live_files(tmp_path), "--chart", str(chart))
    assert "ConfigMap/cms/supersonic-interlink-lua-config" in document["added"] and document["removed"] == [], (
        "the scale-from-zero objects the live values do not render are created, nothing deleted"
    )
    assert "Deployment.apps/cms/supersonic-interlink-envoy" in [c["object"] for c in document["changed"]]


def test_diff_json_is_the_documented_document(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report, "base_commit", lambda ref: ("0" * 40, ref))
    release = {"apiVersion": "helm.sh/v3", "kind": "Release", "metadata": {"name": "r", "namespace": "cms"}}
    before = report.Side("base", objects=[{**release, "values": {"a": 1}}], generation=TRITON.name)
    after = report.Side("working tree", objects=[{**release, "values": {"a": 2, "b": None}}], generation=TRITON.name)
    monkeypatch.setattr(report, "at_commit", lambda *args: before)
    monkeypatch.setattr(report, "render_side", lambda *args: after)
    document, _ = documented("diff", "hammer", "--base", "main")
    assert document["changed"] == [
        {
            "object": "Release.helm.sh/cms/r",
            "changes": [{"path": "values.a", "before": 1, "after": 2}, {"path": "values.b", "after": None}],
        }
    ], "a key only one side has leaves the other out; an explicit null stays null"
    assert document == json.loads(json.dumps(report.as_json(report.diff_stack("hammer", "main"))))
