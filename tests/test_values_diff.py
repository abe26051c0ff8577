"""The live release's values against the hammer stack's: every difference declared with its reason, or a finding."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path

import pytest
import yaml
from cli_runner import run_cli
from conftest import ROOT

from supersonic_interlink.contract import NEWEST
from supersonic_interlink.objdiff import ABSENT
from supersonic_interlink.objdiff import Path as ValuePath
from supersonic_interlink.render.stack import render
from supersonic_interlink.takeover.values_diff import (
    DELIBERATE,
    LiveInputError,
    compare_values,
    load_live_values,
    markdown,
)

FIXTURE = Path(__file__).parent / "fixtures" / "live-values-hammer.yaml"


@pytest.fixture(scope="module")
def live() -> dict:
    return yaml.safe_load(FIXTURE.read_text())


@pytest.fixture(scope="module")
def project() -> dict:
    return render("hammer")["release"]["values"]


def test_the_hammer_stack_differs_from_the_live_release_only_where_declared_and_a_stale_declaration_is_reported(
    live, project
) -> None:
    comparison = compare_values(live, project)
    assert comparison.undeclared == () and comparison.stale == (), markdown(comparison, "hammer")
    assert [(".".join(map(str, change.path)), change.before) for change, _ in comparison.explained] == [
        ("triton", "(this block)"),
        ("envoy.annotations.checksum/envoy-config", ABSENT),
        ("envoy.external_config.configmap_name", "supersonic-interlink-envoy-config-custom"),
        ("envoy.image", ABSENT),
        ("envoy.loadBalancerPolicy", "ROUND_ROBIN"),
        ("inferenceServer.readinessProbe.exec", None),
        ("inferenceServer.readinessProbe.grpc.port", 8001),
        ("keda.metricType", ABSENT),
        ("keda.minReplicaCount", ABSENT),
        ("scaleFromZero.enabled", ABSENT),
        ("scaleFromZero.holdMinReplicasSeconds", ABSENT),
        ("scaleFromZero.readyTimeoutSeconds", ABSENT),
    ], "the first upgrade changes exactly these values of the live release, each for a stated reason"
    assert project["scaleFromZero"]["readyTimeoutSeconds"] == 900 and project["keda"]["minReplicaCount"] == 0
    changed = copy.deepcopy(live)
    changed["envoy"]["image"] = project["envoy"]["image"]
    comparison = compare_values(changed, project)
    assert [path for path, _ in comparison.stale] == [("envoy", "image")], (
        "the table in the pull request must not claim a change the upgrade does not make"
    )
    assert comparison.undeclared == () and comparison.has_findings
    assert "**Declared in `supersonic_interlink/takeover/values_diff.py`, but no longer true** (findings: " in (
        markdown(comparison, "hammer")
    )


@pytest.mark.parametrize(
    ("path", "live_value"),
    [
        (("triton", "image"), "/cvmfs/unpacked.cern.ch/nvcr.io/nvidia/tritonserver:26.04-py3"),
        (("serverLoadMetric",), "sum(rate(nv_inference_queue_duration_us[2m]))"),
        (("triton", "annotations", "slurm-job.vk.io/flags"), "--uid=616617 -A cms --gres=gpu:1 --time=0-02:00:00"),
        (("envoy", "external_config", "configmap_key"), "config.yaml"),
    ],
)
def test_a_value_the_stack_changes_without_declaring_it_is_a_finding(live, project, path, live_value) -> None:
    changed = copy.deepcopy(live)
    node = changed
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = live_value
    comparison = compare_values(changed, project)
    # The live triton: block is compared under the project's inferenceServer: name.
    moved = tuple(NEWEST.inference_values_key if key == "triton" else key for key in path)
    assert [change.path for change in comparison.undeclared] == [moved], "an unexplained change must stop the takeover"
    assert comparison.has_findings


def test_the_most_specific_declaration_gives_the_reason_in_a_table_of_one_row_per_value() -> None:
    declared: dict[ValuePath, str] = {("a",): "block", ("a", "b"): "leaf"}
    comparison = compare_values({"a": {"b": 1, "c": 1}}, {"a": {"b": 2, "c": 2}}, declared)
    assert [(change.path, why) for change, why in comparison.explained] == [(("a", "b"), "leaf"), (("a", "c"), "block")]
    assert comparison.stale == ()
    assert all(len(why) > 40 for why in DELIBERATE.values()), "the why column is what the reviewer reads"
    comparison = compare_values({"m": "a | b", "x": 1}, {"m": "a || b", "y": 2}, {("m",): "why m", ("y",): "why y"})
    table = markdown(comparison, "s")
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert rows[0] == "| `m` | `a \\| b` | `a \\|\\| b` | why m |", "a pipe in a value must not split the row"
    assert rows[1] == "| `y` | *(not set)* | `2` | why y |"
    assert "**Undeclared differences**" in table and "| `x` | `1` | *(not set)* |" in table
    assert table.endswith("2 deliberate, 1 undeclared, 0 stale.\n")


@pytest.mark.parametrize(
    ("text", "found"),
    [("- a\n- b\n", "a list"), ("a: 1\n---\nb: 2\n", "2 YAML documents"), ("", "empty"), ("# comment\n", "empty")],
)
def test_a_live_file_that_is_not_one_mapping_of_values_is_one_line(text, found) -> None:
    with pytest.raises(LiveInputError) as caught:
        load_live_values(text, "f")
    assert str(caught.value) == f"f: {found}; expected `helm get values -o yaml` output, one mapping of values"
    with pytest.raises(LiveInputError, match=r"^f: not UTF-8 text \(byte 0xff at offset 3\)"):
        load_live_values(b"a: \xff\n", "f")
    assert load_live_values("null\n", "f") == {}, "what helm prints for a release without values"


def test_a_live_file_whose_aliases_expand_past_a_million_values_is_refused() -> None:
    # Nine levels of ten aliases each: 10**9 values once expanded, from a file of under 500 bytes.
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    with pytest.raises(LiveInputError, match=r"^f: more than 1,000,000 values with aliases expanded"):
        load_live_values("\n".join(lines) + "\n", "f")
    five_levels = "\n".join(lines[:5]) + "\n"  # 10**5 values: within the limit, read as YAML 1.1 reads it
    assert len(load_live_values(five_levels, "f")["a4"]) == 10


def _takeover(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("takeover", "values", "hammer", *args, cwd=ROOT)


def test_the_values_command_exits_0_when_every_difference_is_declared_1_on_a_finding_2_on_a_bad_file(
    live, project, tmp_path
) -> None:
    done = _takeover("--live", str(FIXTURE))
    assert done.returncode == 0, done.stderr
    assert done.stdout == markdown(compare_values(live, project), "hammer")
    assert "| `keda.minReplicaCount` | *(not set)* | `0` |" in done.stdout
    changed = tmp_path / "live.yaml"
    changed.write_text(FIXTURE.read_text().replace("tritonserver:24.11-py3", "tritonserver:26.04-py3"))
    done = _takeover("--live", str(changed))
    assert done.returncode == 1
    assert "| `inferenceServer.image` |" in done.stdout and "1 undeclared and 0 stale" in done.stderr
    missing = _takeover("--live", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr.strip() == f"--live {tmp_path / 'nope.yaml'}: cannot read: No such file or directory"
