"""render: the offline main job, run as a newcomer runs it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import conftest
import pytest
import yaml
from cli_runner import run_cli

from supersonic_interlink.config import stack_config
from supersonic_interlink.config.stack_config import SECRET_PLACEHOLDER, stack_names
from supersonic_interlink.render import stack as rendering
from supersonic_interlink.render.conformance import Expected, check
from supersonic_interlink.render.evaluate import SECRET_SIGNATURE

ROOT = Path(__file__).resolve().parent.parent


def run_render(*args: str) -> subprocess.CompletedProcess:
    return run_cli("render", *args, cwd=ROOT)


@pytest.fixture(scope="module")
def hammer() -> dict[str, Any]:
    return rendering.render("hammer")


@pytest.mark.parametrize("stack", stack_names())
def test_every_stack_renders_with_no_finding_and_its_skipped_chart_check_named(stack: str, tmp_path: Path) -> None:
    strict = stack == "hammer"  # the one stack run under --strict
    result = run_render(stack, "--out", str(tmp_path), "--check", *(["--strict"] if strict else []))
    assert result.returncode == (3 if strict else 0), f"render --check for {stack}:\n{result.stdout}\n{result.stderr}"
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["envoy.yaml", "manifests.yaml", "release.yaml"], "no chart on disk, so no chart/ objects"
    assert (
        f"stack {stack}: check skipped: chart conformance: commit 42b2b9334db3 is not on disk: the chart checks "
        f"need `./supersonic render {stack} --fetch-chart` (network access to "
        "https://github.com/fastmachinelearning/SuperSONIC)"
    ) in result.stdout, "the pinned commit cannot be fetched offline: one line says what would run the chart checks"
    assert f"stack {stack}: no findings, but 1 check(s) skipped (chart conformance): not a pass" in result.stdout
    assert "checks passed" not in result.stdout, "a check that did not run is never reported as passed"
    if strict:
        assert f"stack {stack}: --strict: a check that could not run fails the run (exit 3)" in result.stderr


def test_with_the_chart_on_disk_the_tree_holds_each_chart_object_as_deployed(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for out in (first, second):
        result = run_render("hammer", "--out", str(out), "--chart", "tests/charts/conforming")
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"wrote {out}/chart/ (12 chart objects)" in result.stdout
    files = sorted(str(p.relative_to(first)) for p in (first / "chart").rglob("*.yaml"))
    assert files == [
        "chart/ConfigMap/supersonic-interlink-envoy-admission.yaml",
        "chart/ConfigMap/supersonic-interlink-envoy-config.yaml",
        "chart/ConfigMap/supersonic-interlink-lua-config.yaml",
        "chart/Deployment.apps/supersonic-interlink-envoy.yaml",
        "chart/Deployment.apps/supersonic-interlink-triton.yaml",
        "chart/PersistentVolumeClaim/cvmfs.yaml",
        "chart/Role.rbac.authorization.k8s.io/supersonic-interlink-envoy.yaml",
        "chart/RoleBinding.rbac.authorization.k8s.io/supersonic-interlink-envoy.yaml",
        "chart/ScaledObject.keda.sh/supersonic-interlink-keda-so.yaml",
        "chart/Service/supersonic-interlink-triton.yaml",
        "chart/Service/supersonic-interlink.yaml",
        "chart/ServiceAccount/supersonic-interlink-envoy.yaml",
    ], "one object per file, by kind and name"
    for name in files:
        assert (first / name).read_bytes() == (second / name).read_bytes(), f"{name} differs between two renders"
    scaled = yaml.safe_load((first / "chart/ScaledObject.keda.sh/supersonic-interlink-keda-so.yaml").read_text())
    assert scaled["spec"]["triggers"][0]["metadata"]["timeout"] == "60000", "the post-renderer ran, as on up"
    envoy_config = yaml.safe_load((first / "chart/ConfigMap/supersonic-interlink-envoy-config.yaml").read_text())
    assert envoy_config["data"]["envoy.yaml"].rstrip() == (first / "envoy.yaml").read_text().rstrip(), (
        "the chart's lookup was answered: it copied this stack's Envoy ConfigMap"
    )
    offline = run_render("hammer", "--out", str(first))
    assert not (first / "chart").exists(), "a tree is exactly one render: no chart objects left from an earlier one"
    assert "the chart's objects are not rendered: commit 42b2b9334db3 is not on disk" in offline.stdout


def test_secret_data_is_masked_in_the_tree_yet_a_change_shows() -> None:
    secret: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    secret["data"] = {"token": "aHVudGVyMg=="}
    masked = rendering.mask([secret, {**secret, "data": {"token": "aHVudGVyMw=="}}])
    assert "aHVudGVyMg==" not in str(masked) and masked[0]["data"]["token"].startswith("(masked: 12 bytes, sha256 ")
    assert masked[0] != masked[1], "two different values must still read as different"
    assert secret["data"]["token"] == "aHVudGVyMg==", "the objects given are not changed"


def test_the_tree_is_deterministic_sorted_plain_kubernetes_the_release_as_helm_gets_it_and_the_stored_envoy_text(
    hammer: dict[str, Any], tmp_path: Path
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    rendering.write(hammer, first)
    rendering.write(rendering.render("hammer"), second)
    for name in ("manifests.yaml", "release.yaml", "envoy.yaml"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), f"{name} differs between two renders"
    documents = list(yaml.safe_load_all((first / "manifests.yaml").read_text()))
    keys = [(d["kind"], d["metadata"]["name"]) for d in documents]
    assert keys == sorted(keys), "sorted output keeps PR diffs stable"
    assert all("apiVersion" in d and "kind" in d for d in documents)
    floats: list[str] = []
    json.loads(json.dumps(documents), parse_float=floats.append)
    assert floats == [], "integers must come out as integers, as Kubernetes spells them"
    release = yaml.safe_load((first / "release.yaml").read_text())
    assert release["name"] == "supersonic-interlink" and release["namespace"] == "cms"
    assert release["chart"] == {
        "git": "https://github.com/fastmachinelearning/SuperSONIC",
        "commit": "42b2b9334db34ebd51ac97f18a0301922cbe90cb",
        "path": "helm/supersonic",
    }, "SuperSONIC main at the commit that dropped the external-config guard"
    assert release["options"]["chart"] == ".charts/42b2b9334db34ebd51ac97f18a0301922cbe90cb/helm/supersonic"
    assert release["values"]["scaleFromZero"]["readyTimeoutSeconds"] == 900
    name = hammer["release"]["values"]["envoy"]["external_config"]["configmap_name"]
    stored = [m["data"]["envoy.yaml"] for m in hammer["manifests"] if m["metadata"]["name"] == name]
    assert stored == [(first / "envoy.yaml").read_text()], "envoy.yaml is the text stored in the ConfigMap"


def test_a_secret_is_rendered_as_the_value_the_provider_is_handed_not_as_its_wire_wrapper() -> None:
    token = {"auth": {"token": SECRET_PLACEHOLDER}}
    config = conftest.stack_config("hammer", helmValues=token)
    rendered = rendering.render("hammer", config, secrets=["supersonic-interlink:helmValues.auth.token"])
    assert rendered["release"]["values"]["auth"] == token["auth"], "offline the placeholder, unwrapped"
    assert SECRET_SIGNATURE[0] not in json.dumps(rendered["release"]), "no secret wrapper left for Helm to read"


def test_without_out_it_prints_a_short_summary_and_names_an_unknown_stack_with_the_known_ones() -> None:
    result = run_render("hammer")
    assert result.returncode == 0, result.stderr
    assert "stack hammer: release supersonic-interlink in namespace cms" in result.stdout
    assert "readyTimeoutSeconds 900 (RepositoryIndex idle_timeout 1020s)" in result.stdout
    assert (
        "chart: git https://github.com/fastmachinelearning/SuperSONIC commit 42b2b9334db34ebd51ac97f18a0301922cbe90cb "
        "path helm/supersonic"
    ) in result.stdout
    result = run_render("nope")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "no file stacks/Pulumi.nope.yaml (stacks: geddes-gpu, hammer)" in result.stderr


def test_an_unpinned_stacks_summary_says_preview_and_up_refuse_it_and_fetch_chart_names_the_pin_command(
    unpinned_stacks: Path,
) -> None:
    result = run_render("hammer")
    assert result.returncode == 0, result.stderr
    assert "NOT PINNED: pulumi preview/up refuse it; run `./supersonic render hammer --pin-chart`" in result.stdout
    result = run_render("hammer", "--fetch-chart")
    assert result.returncode == 1
    assert "run `./supersonic render hammer --pin-chart` and commit the stack file" in result.stderr


def test_invalid_config_exits_2_with_every_problem_and_no_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = {"namespace": "cms", "release": {"name": "supersonic-interlink"}, "triton": {"args": ["tritonserver"]}}
    config |= {"prometheus": {"url": "prometheus", "port": 99999}, "scaleFromZero": {"readyTimeoutSeconds": 900}}
    stack = {"config": {f"supersonic-interlink:{key}": value for key, value in config.items()}}
    (tmp_path / "Pulumi.broken.yaml").write_text(yaml.safe_dump(stack))
    monkeypatch.setattr(stack_config, "STACKS_DIR", tmp_path)
    result = run_render("broken")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "supersonic-interlink:scaleFromZero.holdMinReplicasSeconds = 300: expected a value >= " in result.stderr
    assert "supersonic-interlink:prometheus.port = 99999: expected a port from 1 to 65535" in result.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--chart", "tests/charts/conforming"], "give --check or --out too"),
        (["--strict"], "--strict fails a check that could not run: give --check too"),
        (["--check", "--chart", "no/such/chart"], "not a chart directory"),
        (["--out", "/dev/null/rendered"], "render: --out /dev/null/rendered: cannot write: Not a directory"),
        (["--pin-chart", ""], "argument --pin-chart: is empty: expected a branch, a tag or a commit"),
        (
            ["--fetch-chart", "--check"],
            "--fetch-chart only changes the chart: run --check / --out / --json as a second command",
        ),
        (["--pin-chart", "main", "--out", "x"], "--pin-chart only changes the chart"),
    ],
)
def test_bad_arguments_are_one_line_usage_errors(args: list[str], message: str) -> None:
    result = run_render("hammer", *args)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, "an operator's mistake is not a bug"


BROKEN_CHART_YAML = [
    ("apiVersion: v2\nname: x\nversion: 0.1.0\ndependencies: [a, b\n", "not a readable chart file"),
    ("apiVersion: v2\nname: x\nversion: 0.1.0\ndependencies: [a, b]\n", "every entry of dependencies"),
    ("- just\n- a list\n", "expected a mapping"),
]


def broken_chart(directory: Path, chart_yaml: str) -> Path:
    (directory / "templates").mkdir(parents=True)
    (directory / "Chart.yaml").write_text(chart_yaml)
    return directory


def test_a_broken_chart_yaml_is_a_finding_of_check_and_out_still_writes_the_programs_files(tmp_path: Path) -> None:
    chart_yaml, complaint = BROKEN_CHART_YAML[0]
    chart = broken_chart(tmp_path / "chart", chart_yaml)
    result = run_render("hammer", "--check", "--chart", str(chart))
    assert result.returncode == 1, result.stderr
    assert "the chart cannot be rendered" in result.stderr and complaint in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    result = run_render("hammer", "--out", str(tmp_path / "out"), "--chart", str(chart))
    assert result.returncode == 1, result.stderr
    assert "the chart's objects cannot be rendered" in result.stderr and complaint in result.stderr, result.stderr
    assert (tmp_path / "out").is_dir() and "Traceback" not in result.stderr


@pytest.mark.parametrize("chart_yaml, complaint", BROKEN_CHART_YAML)
def test_each_way_a_chart_yaml_breaks_is_named_in_the_chart_finding(
    hammer: dict[str, Any], tmp_path: Path, chart_yaml: str, complaint: str
) -> None:
    expected = Expected.from_rendered(hammer)
    (finding,) = check(broken_chart(tmp_path, chart_yaml), expected)
    assert finding.startswith(f"the chart cannot be rendered: {tmp_path / 'Chart.yaml'}: {complaint}"), finding
