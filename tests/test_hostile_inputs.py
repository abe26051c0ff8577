"""Hostile inputs to every tool: one line naming the input and the rule, exit 2, no forged line, sizes kept cheap."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from conftest import ROOT, stack_config, stack_settings
from wake_records import cold_wake, write_history

from supersonic_interlink.chart.pin import with_commit
from supersonic_interlink.cli import main as front_door
from supersonic_interlink.config import ChartSource, ConfigError
from supersonic_interlink.config.pulumi_config import settings_from_config
from supersonic_interlink.config.rules import printable
from supersonic_interlink.config.schema import drift
from supersonic_interlink.config.stack_config import check_stack_name
from supersonic_interlink.render import stack as render_stack_module
from supersonic_interlink.render.checks import object_findings
from supersonic_interlink.render.stack import render as render_stack
from supersonic_interlink.takeover.steps import format_steps
from supersonic_interlink.wake import history as wake_history
from supersonic_interlink.wake.probe import parse_endpoint

P = "supersonic-interlink"
LIVE_VALUES = ROOT / "tests" / "fixtures" / "live-values-hammer.yaml"
FORGING = "x$(id>&2)\x1b[31m\nstack hammer: checks passed"
"""A stack name that would run a command if pasted unquoted, colour the terminal and forge an output line."""
NAMES = {"300": "a" * 300, "forging": FORGING, "empty": "", "dots": "..", "space": "has space", "non-ascii": "ümlaut"}
VERBS = {
    "render": ["render"],
    "render-check": ["render", "--check"],
    "takeover-steps": ["takeover", "steps"],
    "takeover-values--live": ["takeover", "values", "--live", "/dev/null"],
    "takeover-objects--live": ["takeover", "objects", "--live", "/dev/null"],
    "diff": ["diff"],
}
# diff checks the name where render does, after a git archive costing a quarter second a name: two names suffice.
ONCE_FOR_DIFF = ("300", "forging")
CONFORMING = ROOT / "tests" / "charts" / "conforming"


def no_traceback(capsys: pytest.CaptureFixture[str]) -> str:
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, err
    assert "\x1b" not in out + err, "an escape code reached the terminal"
    return err


@pytest.mark.parametrize(
    ("verb", "stack"),
    [
        pytest.param(verb, stack, id=f"{verb_id}-{stack_id}")
        for verb_id, verb in VERBS.items()
        for stack_id, stack in NAMES.items()
        if verb_id != "diff" or stack_id in ONCE_FOR_DIFF
    ],
)
def test_a_name_the_pulumi_cli_would_refuse_is_one_line_in_every_tool(
    verb: list[str], stack: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*verb[:2], stack, *verb[2:]] if verb[0] == "takeover" else [verb[0], stack, *verb[1:]]
    assert front_door.main(args) == 2
    err = no_traceback(capsys)
    if stack == FORGING:
        assert err.count("\n") == 1 and "holds control characters; none is allowed" in err, err
    else:
        assert "not a stack name; expected 1 to 100 letters, digits, '-', '_' or '.'" in err, err


def test_the_stack_name_rule_is_the_pulumi_clis_at_its_boundary() -> None:
    """sdk/go/common/tokens/stack_name.go ParseStackName: 1 to 100 of [A-Za-z0-9_.-]."""
    assert check_stack_name("a" * 100) == "a" * 100 and check_stack_name("a-b_c.d9") == "a-b_c.d9"
    for bad in ("a" * 101, "a/b", "a:b", "a\n"):
        with pytest.raises(ConfigError):
            check_stack_name(bad)


def test_a_key_with_escape_codes_and_a_newline_is_echoed_escaped() -> None:
    config = stack_config("hammer")
    config[f"{P}:ev\x1b[2Jil\nstack hammer: checks passed"] = "x"
    with pytest.raises(ConfigError) as caught:
        settings_from_config(config)
    (line,) = caught.value.problems
    assert "\n" not in line and "\x1b" not in line
    assert line.startswith(f"{P}:ev\\x1b[2Jil\\nstack hammer: checks passed: unknown key"), line


def test_printable_escapes_control_format_and_line_separator_characters_only() -> None:
    assert printable("é ü ✓ a-b") == "é ü ✓ a-b"
    assert printable("\x1b\n\r\t\x00\x7f\x85\u202e\u2028\u200b") == "\\x1b\\n\\r\\t\\x00\\x7f\\x85\\u202e\\u2028\\u200b"


def test_takeover_steps_refuse_a_stack_name_the_shell_would_run() -> None:
    assert "pulumi up hammer --yes" in format_steps("hammer", stack_settings("hammer"))
    with pytest.raises(ConfigError):
        format_steps("x$(id>&2)", stack_settings("hammer"))  # the stack file path is built from a checked name first


def wake_line(**fields: object) -> bytes:
    return json.dumps({**cold_wake(400.0), **fields}).encode() + b"\n"


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b'{"kind":"probe","wake_seconds":' + b"1" * 5000 + b"}\n", "not JSON: Exceeds the limit (4300 digits)"),
        (b'{"kind":"probe","a":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", "maximum recursion depth exceeded"),
        (wake_line(stack="ham\x1b[31mmer\nFAKE"), "expected a stack name"),
        (wake_line(wake_seconds=1e308), "expected a number of seconds from 0 to"),
        (wake_line(elapsed_seconds=-1), "expected a number of seconds from 0 to"),
        (wake_line(elapsed_seconds=10**30), "expected a number of seconds from 0 to"),
    ],
    ids=["5000-digits", "nested-100000", "escape-in-stack", "wake-1e308", "negative", "10e30"],
)
def test_a_hostile_history_line_is_a_damaged_line_and_the_rest_still_reads(
    tmp_path: Path, line: bytes, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_history(tmp_path / "wakes.jsonl", [cold_wake(300.0), line, cold_wake(500.0)])
    history = wake_history.read(path)
    assert [w.wake_seconds for w in history.wakes] == [300.0, 500.0]
    assert [(d.line, reason in d.reason) for d in history.damaged] == [(2, True)], history.damaged
    assert front_door.main(["probe", "report", str(path)]) in (0, 1)
    no_traceback(capsys)


def test_the_longest_wake_a_record_may_hold_is_accepted_and_one_more_second_is_not() -> None:
    longest = wake_history.MAX_SECONDS
    assert wake_history.wake_from_record(1, cold_wake(float(longest))).wake_seconds == longest
    with pytest.raises(wake_history.DamagedRecord):
        wake_history.wake_from_record(1, cold_wake(float(longest + 1)))


@pytest.mark.parametrize("port", ["\u0668\u0660\u0660\u0661", "\uff18\uff10\uff10\uff11", "0", "65536", "+80", " 80"])
def test_a_probe_port_is_ascii_digits_from_1_to_65535(port: str) -> None:
    with pytest.raises(ValueError, match="expected HOST:PORT, a port from 1 to 65535"):
        parse_endpoint(f"127.0.0.1:{port}")
    assert parse_endpoint("127.0.0.1:65535") == "127.0.0.1:65535"


@pytest.mark.parametrize(
    "endpoint",
    ["https://my_host", "https://s3.example.org:٨٠", "http://a..b", "https://h:0", "https://-h", "https://h-:9000"],
)
def test_a_state_endpoint_botocore_cannot_use_is_refused_before_any_request(
    endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:  # argparse's own exit for a bad argument: 2
        front_door.main(["state", "check", "--bucket", "b-b-b", "--endpoint-url", endpoint])
    assert stopped.value.code == 2
    err = no_traceback(capsys)
    assert "expected https://HOST[:PORT]" in err, err


def test_a_project_file_that_is_not_a_mapping_is_one_line(tmp_path: Path) -> None:
    for text in ("- a\n- b\n", "config: [a]\n", "config: 5\n"):
        project = tmp_path / "Pulumi.yaml"
        project.write_text(text)
        with pytest.raises(ConfigError, match=r"^Pulumi.yaml: expected a mapping with a 'config:' mapping"):
            drift(project)


def test_pin_chart_finds_the_release_key_however_the_stack_writes_it() -> None:
    chart = ChartSource(git="https://github.com/fastmachinelearning/SuperSONIC", path="helm/supersonic")
    for key in ("release", f"{P}:release", f"{P}:config:release"):
        text = with_commit(f"config:\n  {key}:\n    name: x\n", chart, "a" * 40)
        assert f"commit: {'a' * 40}" in text and f"  {key}:\n" in text, text
    with pytest.raises(ConfigError, match="written 2 times"):
        with_commit(f"config:\n  release: {{name: x}}\n  {P}:release: {{name: y}}\n", chart, "a" * 40)


def test_the_mutation_list_fits_the_code_every_find_once_and_every_test_there() -> None:
    spec = importlib.util.spec_from_file_location("mutation_check", ROOT / "scripts" / "mutation_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    mutations, problems = module.parse(module.LIST.read_text())
    assert problems == [] and len(mutations) >= 30, problems
    assert {m.find != m.into for m in mutations} == {True}
    first = mutations[0]
    stale = f"file: {first.file}\nfind: {first.find}\ninto: x\ntests: tests/test_hostile_inputs.py::gone\nwhy: w\n"
    assert module.parse(stale, cover=False)[1] == ["line 1: no such test tests/test_hostile_inputs.py::gone"]


def test_render_and_takeover_out_never_write_through_a_planted_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    out = tmp_path / "rendered"
    out.mkdir()
    (out / "manifests.yaml").symlink_to(victim)
    assert front_door.main(["render", "hammer", "--out", str(out)]) == 2
    err = no_traceback(capsys)
    assert "is a symbolic link; not followed" in err and victim.read_text() == "untouched\n", err
    with pytest.raises(SystemExit) as stopped:
        front_door.main(["render", "hammer", "--out", ""])
    assert stopped.value.code == 2 and "'' is empty; expected a path to write to" in capsys.readouterr().err
    link = tmp_path / "table.md"
    link.symlink_to(tmp_path / "elsewhere.md")
    with pytest.raises(SystemExit) as stopped:
        front_door.main(["takeover", "values", "hammer", "--live", str(LIVE_VALUES), "--out", str(link)])
    assert stopped.value.code == 2 and "is a symbolic link" in capsys.readouterr().err
    assert not (tmp_path / "elsewhere.md").exists()


@pytest.mark.parametrize(
    "key, value", [("keda", '{"minReplicaCount": ' + "1" * 5000 + "}"), ("helmValues", "[" * 100_000 + "]" * 100_000)]
)
def test_a_huge_or_deep_json_value_in_pulumi_config_is_one_short_line(key: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        settings_from_config({**stack_config("hammer"), f"{P}:{key}": value})
    found = caught.value.problems
    assert any(p.startswith(f"{P}:{key} = ") for p in found) and all(len(p) < 400 and "\n" not in p for p in found)


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"], ids=["empty", "blank-lines", "comment"])
def test_an_empty_live_values_file_is_refused_not_read_as_no_values(
    tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    live = tmp_path / "live-values.yaml"
    live.write_text(text)
    assert front_door.main(["takeover", "values", "hammer", "--live", str(live)]) == 2
    err = no_traceback(capsys)
    assert f"{live}: empty; expected `helm get values -o yaml` output" in err, err
    live.write_text("null\n")  # what `helm get values -o yaml` prints for a release without values
    front_door.main(["takeover", "values", "hammer", "--live", str(live)])
    assert "empty; expected" not in no_traceback(capsys), "a release without values is still read as one"


def test_chart_objects_the_api_server_refuses_are_findings_naming_the_stack_key_each_value_once() -> None:
    """Values the settings let through and the API server refuses, checked in the chart's objects."""
    config = stack_config("hammer")
    triton = json.loads(config[f"{P}:triton"])
    triton["readinessProbe"] |= {"periodSeconds": 1.5, "failureThreshold": -1}
    triton["startupProbe"] |= {"periodSeconds": -5, "httpGet": {"path": "/v2", "port": "Http_Port"}}
    config[f"{P}:triton"] = json.dumps(triton)
    found = render_stack_module.chart_findings(CONFORMING, render_stack("hammer", config, chart_dir=CONFORMING))
    for key in (
        "readinessProbe.periodSeconds = 1.5",
        "readinessProbe.failureThreshold = -1",
        "startupProbe.periodSeconds = -5",
    ):
        line = next((f for f in found if f.startswith(f"{P}:triton.{key}: ")), None)
        assert line is not None, f"no finding names {key}: {found}"
        assert "expected a whole number from 0 (an int32)" in line, line
        assert "(the chart renders it as Deployment/supersonic-interlink-triton spec." in line, line
    assert [f for f in found if "startupProbe.httpGet.port" in f] == [
        (
            f'{P}:triton.startupProbe.httpGet.port = "Http_Port": expected a port number from 1 to 65535 or a port '
            "name (at most 15 lowercase letters, digits and '-', one letter) (the chart renders it as "
            "Deployment/supersonic-interlink-triton spec.template.spec.containers[0].startupProbe.httpGet.port)"
        )
    ], found
    paths = [f.split(" (the chart renders it as ")[-1] for f in found]
    assert len(paths) == len(set(paths)) == 4, f"a refused value is named once, by its clearest rule: {found}"


def container(**fields: object) -> dict:
    return {"spec": {"template": {"spec": {"containers": [{"name": "c", **fields}]}}}}


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        ({"metadata": {"name": "x", "annotations": {"a": "x" * 300 * 1024}}}, "metadata.annotations.a = "),
        (
            container(resources={"limits": {"memroy": "8G"}}),
            'spec.template.spec.containers[0].resources.limits.memroy = "8G": expected a container resource name',
        ),
        (
            container(ports=[{"containerPort": 0}]),
            "spec.template.spec.containers[0].ports[0].containerPort = 0: expected a port from 1 to 65535",
        ),
        (
            container(ports=[{"containerPort": 80, "name": "Http_Port"}]),
            'containers[0].ports[0].name = "Http_Port": expected a port number from 1 to 65535 or a port name',
        ),
    ],
    ids=["annotations-300k", "resource-typo", "container-port-0", "port-name"],
)
def test_the_api_servers_rules_hold_for_every_object_whoever_set_the_value(manifest: dict, expected: str) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", **manifest}
    findings = object_findings([deployment], stack_settings("hammer"), schemas=False)
    assert any(expected in line for line in findings), findings
    assert object_findings([{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}}], None) == []
