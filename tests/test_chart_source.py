"""The git chart source: fetched at its commit into the cache, pinned by resolving a ref, refused while unpinned."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pulumi
import pytest
from chart_fixtures import CHART_PATH, UPSTREAM, chart_repository, commit_chart, fixture_chart, git, redirect_upstream
from cli_runner import run_cli
from conftest import stack_config, unpinned_config

from supersonic_interlink.chart import source as chart_source
from supersonic_interlink.chart.source import ChartSourceError, fetch, resolve, verify
from supersonic_interlink.components.supersonic_release import HELM_RELEASE_TYPE
from supersonic_interlink.config import load_settings
from supersonic_interlink.render.evaluate import evaluate, run_entry_point


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return chart_repository(tmp_path_factory.mktemp("remote"))


def pinned(commit: str, name: str = "supersonic-interlink") -> dict:
    return stack_config(
        "hammer", release={"name": name, "chart": {"git": UPSTREAM, "path": CHART_PATH, "commit": commit}}
    )


@pytest.fixture
def fetched(upstream: Path, tmp_path: Path) -> tuple[str, Path]:
    commit = git("rev-parse", "HEAD", cwd=upstream)
    return commit, fetch(upstream.as_uri(), commit, CHART_PATH, cache=tmp_path / "cache")


def test_a_commit_is_fetched_into_the_cache_verified_used_without_the_network_and_refused_once_changed(
    upstream: Path, tmp_path: Path, fetched: tuple[str, Path]
) -> None:
    assert subprocess.run(["git", "--version"], capture_output=True, check=True).stdout.startswith(b"git version")
    commit, chart = fetched
    assert chart == tmp_path / "cache" / commit / CHART_PATH
    assert (chart / "Chart.yaml").is_file() and (chart / "templates" / "keda.yaml").is_file()
    assert git("rev-parse", "HEAD", cwd=tmp_path / "cache" / commit) == commit
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name != commit], "no partial fetch left behind"
    gone = "https://127.0.0.1:1/SuperSONIC"  # nothing listens there
    assert fetch(gone, commit, CHART_PATH, cache=tmp_path / "cache") == tmp_path / "cache" / commit / CHART_PATH
    (chart / "templates" / "extra.yaml").write_text("kind: ConfigMap\n")
    with pytest.raises(ChartSourceError, match=r"the cached chart is not the pinned commit: .*extra.yaml differs"):
        fetch(upstream.as_uri(), commit, CHART_PATH, cache=tmp_path / "cache")
    (chart / "templates" / "extra.yaml").unlink()
    (chart / "values.yaml").write_text("edited: true\n")
    assert "values.yaml differs" in str(verify(chart.parent.parent, commit, CHART_PATH))
    git("commit", "--quiet", "--all", "-m", "moved on", cwd=chart.parent.parent)
    assert f", not {commit}" in str(verify(chart.parent.parent, commit, CHART_PATH)), "HEAD must be the pinned commit"


PLANTED_BINDING = """apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: planted}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: default}]
"""


@pytest.mark.parametrize(
    "planted",
    [
        # A subchart directory: Helm renders every chart under charts/, so this would deploy cluster-admin.
        {
            "charts/evil/Chart.yaml": "apiVersion: v2\nname: evil\nversion: 1.0.0\n",
            "charts/evil/templates/crb.yaml": PLANTED_BINDING,
        },
        {"charts/grafana/Chart.yaml": "apiVersion: v2\nname: grafana\nversion: 1.0.0\n"},  # unpacked
        {"charts/evil-1.0.0.tgz": "archive"},  # an archive of no declared dependency
        {"charts/grafana-1.0.1.tgz": "archive"},  # the declared dependency at another version than Chart.yaml's
        {"charts/grafana-1.0.0.tgz.d/x": "x"},
        {"charts/.hidden.tgz": "archive"},
    ],
    ids=["subchart-directory", "dependency-unpacked", "undeclared-archive", "other-version", "nested", "hidden"],
)
def test_only_the_archives_the_providers_dependency_update_writes_are_allowed_under_charts(
    tmp_path: Path, fetched: tuple[str, Path], planted: dict[str, str]
) -> None:
    commit, chart = fetched
    (chart / "charts").mkdir()
    (chart / "charts" / "grafana-1.0.0.tgz").write_bytes(b"archive")  # the declared dependency's archive
    assert verify(chart.parent.parent, commit, CHART_PATH) is None, "so the refusal below is the plant's"
    for name, text in planted.items():
        (chart / name).parent.mkdir(parents=True, exist_ok=True)
        (chart / name).write_text(text)
    problem = verify(chart.parent.parent, commit, CHART_PATH)
    assert problem is not None and f"{CHART_PATH}/{next(iter(planted))}" in problem and "differs" in problem, problem
    setting = load_settings(pinned(commit, "x")).release.chart
    assert chart_source.chart_on_disk(setting, cache=tmp_path / "cache") is None, "never handed to Helm or the check"


def test_a_version_the_lock_file_locks_is_the_one_allowed(fetched: tuple[str, Path]) -> None:
    _, chart = fetched
    (chart / "Chart.yaml").write_text((chart / "Chart.yaml").read_text().replace("version: 1.0.0", "version: ~1.0"))
    identity = ["-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    git(*identity, "commit", "--quiet", "-am", "range", cwd=chart.parent.parent)
    commit = git("rev-parse", "HEAD", cwd=chart.parent.parent)
    (chart / "charts").mkdir()
    (chart / "charts" / "grafana-1.0.7.tgz").write_bytes(b"archive")
    assert verify(chart.parent.parent, commit, CHART_PATH) is None, "a range without a lock: the resolved version"
    (chart / "Chart.lock").write_text(
        "dependencies:\n- name: grafana\n  repository: https://charts.invalid/grafana\n  version: 1.0.3\n"
    )
    assert "grafana-1.0.7.tgz differs" in str(verify(chart.parent.parent, commit, CHART_PATH))
    (chart / "charts" / "grafana-1.0.7.tgz").rename(chart / "charts" / "grafana-1.0.3.tgz")
    assert verify(chart.parent.parent, commit, CHART_PATH) is None, "dependencyUpdate writes the lock it resolved"


def test_a_commit_the_repository_does_not_have_or_without_the_chart_is_refused(upstream: Path, tmp_path: Path) -> None:
    with pytest.raises(ChartSourceError, match=f"git fetch of .* failed: .*not our ref {'0' * 40}"):
        fetch(upstream.as_uri(), "0" * 40, CHART_PATH, cache=tmp_path / "cache")
    commit = git("rev-parse", "HEAD", cwd=upstream)
    with pytest.raises(ChartSourceError, match=f"commit {commit} has no chart at charts/other"):
        fetch(upstream.as_uri(), commit, "charts/other", cache=tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == [], "a refused commit is not cached"


def test_no_network_is_said_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ChartSourceError) as unreachable:
        resolve("https://127.0.0.1:1/SuperSONIC", "main")
    message = str(unreachable.value)
    assert "\n" not in message and "needs network access" in message and "127.0.0.1:1" in message


def test_a_branch_or_tag_resolves_to_its_commit_and_an_older_commit_is_fetched_exactly(tmp_path: Path) -> None:
    remote = chart_repository(tmp_path / "remote")
    first = git("rev-parse", "HEAD", cwd=remote)
    git("tag", "-a", "v1", "-m", "release", cwd=remote)
    second = commit_chart(remote, "default-one", "a later commit on main")
    assert resolve(remote.as_uri(), "main") == second
    assert resolve(remote.as_uri(), "v1") == first, "an annotated tag resolves to the commit, not the tag object"
    assert resolve(remote.as_uri(), first) == first, "a full commit id is taken as given (fetch then proves it)"
    with pytest.raises(ChartSourceError, match="has no branch or tag named 'nope'"):
        resolve(remote.as_uri(), "nope")
    chart = fetch(remote.as_uri(), first, CHART_PATH, cache=tmp_path / "cache")
    assert "| int" in (chart / "templates" / "keda.yaml").read_text(), "the pinned commit's chart, not main's"


def test_preview_and_up_stop_before_registering_anything_while_the_chart_is_unpinned() -> None:
    with pytest.raises(pulumi.RunError) as refused:
        evaluate(unpinned_config("hammer"), "hammer", offline=False)
    assert str(refused.value) == (
        "supersonic-interlink:release.chart is a git source without a commit, so it names no exact chart: "
        "run `./supersonic render hammer --pin-chart` and commit the stack file"
    )
    stopped: list[str] = []

    def program() -> None:
        try:
            run_entry_point()
        except pulumi.RunError as error:
            stopped.append(str(error))

    evaluation = evaluate(unpinned_config("hammer"), "hammer", program=program, offline=False)
    assert stopped and "--pin-chart" in stopped[0], "the program did stop"
    assert evaluation.resources == [], "the refusal comes before any resource is registered"


def test_a_pinned_stack_is_fetched_and_deployed_from_the_cache(
    upstream: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commit = git("rev-parse", "HEAD", cwd=upstream)
    monkeypatch.setattr(chart_source, "CACHE_ROOT", tmp_path / "cache")
    for key, value in redirect_upstream(upstream).items():
        monkeypatch.setenv(key, value)
    evaluation = evaluate(pinned(commit), "hammer", offline=False)
    assert evaluation.one(HELM_RELEASE_TYPE).inputs["chart"] == f".charts/{commit}/{CHART_PATH}", (
        "relative to the project: the same input on every machine; a new commit is a changed input, so an upgrade"
    )
    assert (tmp_path / "cache" / commit / CHART_PATH / "Chart.yaml").is_file(), "fetched before registering"


GUARDED = "098d4a6c1411d22a748e7a7de4ff30eea10bf32d"


def test_a_known_guarded_commit_is_refused_before_any_fetch_and_a_fetch_failure_stops_preview_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chart_source, "CACHE_ROOT", tmp_path / "cache")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "url.https://127.0.0.1:1/.insteadOf")  # GitHub unreachable
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "https://github.com/")
    with pytest.raises(pulumi.RunError) as stopped:
        evaluate(pinned(GUARDED), "hammer", offline=False)
    assert str(stopped.value) == (
        f"commit {GUARDED} still refuses scaleFromZero.enabled with envoy.external_config.load_from_configmap "
        "(templates/envoy/admission.yaml:9), so it cannot load this program's Envoy configuration: pin a commit "
        "without that fail (docs/chart.md)"
    ), "named by commit and template line, and not a network error: nothing was fetched"
    assert not (tmp_path / "cache").exists()
    with pytest.raises(pulumi.RunError) as stopped:
        evaluate(pinned("b" * 40), "hammer", offline=False)
    assert "\n" not in str(stopped.value) and "needs network access" in str(stopped.value)


def test_a_fetched_commit_whose_templates_carry_the_guard_is_refused_naming_the_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    guarded = chart_repository(tmp_path / "remote", "refuses-external-config")
    commit = git("rev-parse", "HEAD", cwd=guarded)
    monkeypatch.setattr(chart_source, "CACHE_ROOT", tmp_path / "cache")
    for key, value in redirect_upstream(guarded).items():
        monkeypatch.setenv(key, value)
    chart = load_settings(pinned(commit)).release.chart
    guard = r"\(templates/scale-from-zero-guard.yaml:4\)"
    with pytest.raises(ChartSourceError, match=rf"^commit {commit} still refuses .* {guard}"):
        chart_source.prepare(chart, "hammer")


def test_a_chart_without_scale_from_zero_is_refused_for_a_stack_that_enables_it(tmp_path: Path) -> None:
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "templates" / "keda.yaml").write_text("minReplicaCount: {{ .Values.keda.minReplicaCount | default 1 }}\n")
    with pytest.raises(ChartSourceError, match=r"^commit c0ffee has no scale from zero \(no template of its chart"):
        chart_source.refuse_without_scale_from_zero("c0ffee", chart)
    chart_source.refuse_without_scale_from_zero("c0ffee", fixture_chart("conforming", tmp_path / "sfz"))


def test_render_check_names_a_known_guarded_commit_offline(unpinned_stacks: Path) -> None:
    stack = unpinned_stacks / "Pulumi.hammer.yaml"
    stack.write_text(
        stack.read_text().replace(
            "      path: helm/supersonic\n", f"      commit: {GUARDED}\n      path: helm/supersonic\n", 1
        )
    )
    done = run_cli("render", "hammer", "--check")
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        f"check: supersonic-interlink:release.chart.commit: commit {GUARDED} still refuses scaleFromZero.enabled "
        "with envoy.external_config.load_from_configmap (templates/envoy/admission.yaml:9)"
    ) in done.stderr, "known from the chart's history: a finding although the chart is not on disk"
