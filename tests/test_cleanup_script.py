"""The cleanup script, run as the CronJob runs it: busybox sh, busybox applets only, a stand-in kubectl.

The stand-in holds every pod of the fixture namespace and selects as the API server does, so these tests show
which pods the script's own selection deletes. Every run may make one list call and at most one delete call.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import kubectl_standin
import pytest
from busybox_harness import MISSING_IN_IMAGE, FakeNamespace, Run, make_bin
from conftest import stack_settings

from components.failed_pod_cleanup import (
    COMPONENT,
    SCRIPT_PATH,
    object_labels,
    script_environment,
    script_text,
)
from supersonic_interlink.contract import CHART

RELEASE = "supersonic-interlink"
NAMESPACE = "cms"
TRITON = CHART.inference_pod_labels(RELEASE)
START = datetime(2025, 6, 1, 8, 0, tzinfo=UTC)


def stamp(minutes: float) -> str:
    return (START + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def failed_triton(count: int, *, release: str = RELEASE, first_minute: int = 0) -> list[dict[str, Any]]:
    """``count`` Failed Triton pods, one every two minutes, with ReplicaSet-style names in no particular order."""
    labels = CHART.inference_pod_labels(release)
    pods = []
    for i in range(count):
        suffix = hashlib.sha256(f"{release}-{i}".encode()).hexdigest()[:5]
        pods.append(
            kubectl_standin.pod(
                f"{CHART.inference_object_name(release)}-7c9d8f6b5-{suffix}",
                created=stamp(first_minute + 2 * i),
                phase="Failed",
                labels=labels,
                container_reason="Error",
                exit_code=255,
            )
        )
    return pods


def newest_first(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in sorted(pods, key=lambda p: p["metadata"]["creationTimestamp"], reverse=True)]


def bystanders() -> list[dict[str, Any]]:
    """Pods the cleanup must never delete: wrong phase, other release, other component, other namespace."""
    pod = kubectl_standin.pod
    envoy = {**TRITON, CHART.component_label: CHART.envoy_component}
    other_chart = {**TRITON, CHART.name_label: "not-supersonic"}
    return [
        pod("triton-running", created=stamp(-30), phase="Running", labels=TRITON),
        pod("triton-pending", created=stamp(-20), phase="Pending", labels=TRITON),
        pod("triton-succeeded", created=stamp(-25), phase="Succeeded", labels=TRITON, exit_code=0),
        pod("triton-unknown", created=stamp(-24), phase="Unknown", labels=TRITON),
        pod(
            "other-release-failed-old",
            created=stamp(-60),
            phase="Failed",
            labels=CHART.inference_pod_labels("supersonic-gpu"),
            exit_code=1,
        ),
        pod(
            "other-release-failed-new",
            created=stamp(-50),
            phase="Failed",
            labels=CHART.inference_pod_labels("supersonic-gpu"),
            exit_code=1,
        ),
        pod("envoy-failed", created=stamp(-40), phase="Failed", labels=envoy, exit_code=1),
        pod("other-chart-failed", created=stamp(-45), phase="Failed", labels=other_chart, exit_code=1),
        pod("cleaner-failed", created=stamp(-35), phase="Failed", labels=object_labels(RELEASE), exit_code=1),
        pod("unlabelled-failed", created=stamp(-33), phase="Failed", labels={}, exit_code=1),
        pod(
            "triton-failed-in-another-namespace",
            created=stamp(-55),
            phase="Failed",
            labels=TRITON,
            namespace="cms-dev",
            exit_code=255,
        ),
    ]


@pytest.fixture(scope="session")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_bin(tmp_path_factory.mktemp("busybox-bin"))


@pytest.fixture
def namespace(tmp_path: Path, bin_dir: Path):
    def make(pods: list[dict[str, Any]]) -> FakeNamespace:
        return FakeNamespace(tmp_path, bin_dir, pods)

    return make


def environment(**cleanup: Any) -> dict[str, str]:
    """The container's environment for the hammer stack with ``cleanup`` overrides, as the component computes it."""
    return script_environment(stack_settings("hammer", cleanup=cleanup))


def assert_call_budget(run: Run) -> None:
    verbs = run.verbs()
    assert verbs.count("get") == 1, f"one list call per run, got {run.calls}"
    assert verbs.count("delete") <= 1, f"at most one delete call per run, got {len(verbs) - 1}"
    assert verbs[0] == "get", "the list comes before any delete"


def assert_ok(run: Run) -> None:
    assert run.returncode == 0, f"the Job must succeed:\nstdout:\n{run.stdout}\nstderr:\n{run.stderr}"


# ------------------------------------------------------------------------------------------------ what goes


def test_the_22_failed_pods_of_the_change_request_leave_only_the_newest(namespace) -> None:
    pods = failed_triton(22)
    assert [p["metadata"]["name"] for p in sorted(pods, key=lambda p: p["metadata"]["name"])][-1] != newest_first(pods)[
        0
    ], "fixture: name order must not find the newest, only creation-time order does"
    run = namespace(pods).run(environment())
    assert_ok(run)
    assert_call_budget(run)
    assert run.remaining_names() == {newest_first(pods)[0]}, "21 deleted, the newest kept for diagnosis"
    assert len(run.deleted_names()) == 21
    assert run.stdout.rstrip().splitlines()[-1] == "cleanup: deleted 21, kept 1"


def test_keep_two_keeps_the_two_newest(namespace) -> None:
    pods = failed_triton(22)
    run = namespace(pods).run(environment(keep=2))
    assert_ok(run)
    assert_call_budget(run)
    assert run.remaining_names() == set(newest_first(pods)[:2]), "keep: 2 keeps the two newest Failed pods"
    assert "cleanup: deleted 20, kept 2" in run.stdout


def test_keep_zero_deletes_every_failed_pod(namespace) -> None:
    run = namespace(failed_triton(5)).run(environment(keep=0))
    assert_ok(run)
    assert_call_budget(run)
    assert run.remaining_names() == set(), "keep: 0 leaves no Failed pod"


def test_a_backlog_past_the_per_run_cap_goes_oldest_first_over_several_runs(namespace) -> None:
    pods = failed_triton(22)
    order = list(reversed(newest_first(pods)))
    fake = namespace(pods)
    env = {**environment(), "MAX_DELETE": "8"}
    first = fake.run(env)
    assert_ok(first)
    assert_call_budget(first)
    assert first.deleted_names() == order[:8], "the oldest go first, so every run makes progress on the backlog"
    assert first.stdout.rstrip().splitlines()[-1] == "cleanup: deleted 8, kept 1, 13 left for the next run"
    assert len(re.findall(r"^delete pod/", first.stdout, re.MULTILINE)) == 8, "a line per pod deleted, not per pod left"
    second, third, fourth = fake.run(env), fake.run(env), fake.run(env)
    assert [len(r.deleted_names()) for r in (second, third, fourth)] == [8, 5, 0]
    assert fourth.remaining_names() == {order[-1]}, "the newest survives every run"
    assert all(r.verbs().count("delete") <= 1 for r in (second, third, fourth))


def test_fewer_failed_pods_than_keep_deletes_none(namespace) -> None:
    pods = failed_triton(3)
    run = namespace(pods).run(environment(keep=5))
    assert_ok(run)
    assert run.verbs() == ["get"], "nothing to delete means no delete call"
    assert run.remaining_names() == {p["metadata"]["name"] for p in pods}
    assert "cleanup: deleted 0, kept 3" in run.stdout


def test_exactly_keep_failed_pods_deletes_none(namespace) -> None:
    run = namespace(failed_triton(1)).run(environment())
    assert_ok(run)
    assert run.verbs() == ["get"], "the single Failed pod is the newest and is kept"


def test_running_pending_succeeded_and_other_owners_pods_are_never_deleted(namespace) -> None:
    others = bystanders()
    failed = failed_triton(4)
    run = namespace(others + failed).run(environment(keep=0))
    assert_ok(run)
    assert_call_budget(run)
    assert run.remaining_names() == {p["metadata"]["name"] for p in others}, (
        "only this release's Failed Triton pods in its namespace may go; other phases, releases, components, "
        "charts, the cleaner's own pods and other namespaces stay"
    )
    assert sorted(run.deleted_names()) == sorted(p["metadata"]["name"] for p in failed)


def test_an_empty_list_makes_no_delete_call_and_exits_zero(namespace) -> None:
    run = namespace(bystanders()).run(environment())
    assert_ok(run)
    assert run.verbs() == ["get"], "an empty list is a no-op, not a delete of nothing"
    assert "deleted 0, kept 0" in run.stdout
    assert len(run.remaining) == len(bystanders())


def test_a_failing_list_fails_the_job_and_deletes_nothing(namespace) -> None:
    pods = failed_triton(22)
    run = namespace(pods).run(environment(), fail=["get"])
    assert run.returncode != 0, "a list that failed must fail the Job, so the failure shows in its history"
    assert run.verbs() == ["get"], "nothing is deleted on the strength of a failed (possibly partial) list"
    assert len(run.remaining) == 22
    assert "nothing deleted" in run.stderr


def test_a_failing_delete_fails_the_job_without_claiming_a_count(namespace) -> None:
    run = namespace(failed_triton(4)).run(environment(), fail=["delete"])
    assert run.returncode != 0, "a delete that failed must fail the Job"
    assert_call_budget(run)
    assert "cleanup: deleted" not in run.stdout, "the summary reports deletions only once they happened"


def test_the_dry_run_deletes_nothing_and_says_what_would_go(namespace) -> None:
    pods = failed_triton(22)
    run = namespace(pods).run(environment(dryRun=True))
    assert_ok(run)
    assert run.verbs() == ["get"], "a dry run makes no delete call"
    assert len(run.remaining) == 22
    assert len(re.findall(r"^would delete pod/", run.stdout, re.MULTILINE)) == 21
    assert "cleanup (dry run): deleted 0, would delete 21, kept 1" in run.stdout


def test_a_second_run_finds_only_the_kept_pod_and_deletes_nothing(namespace) -> None:
    fake = namespace(failed_triton(22))
    first = fake.run(environment())
    second = fake.run(environment())
    assert_ok(first)
    assert_ok(second)
    assert second.verbs() == ["get"], "the cleanup is idempotent: a clean namespace makes no delete call"
    assert second.remaining_names() == first.remaining_names()


# ------------------------------------------------------------------------------------------------ the record


def test_each_pod_is_logged_with_creation_time_reason_and_exit_code_before_the_delete(namespace) -> None:
    pods = failed_triton(3)
    provider_failed = kubectl_standin.pod(
        "triton-provider-failed", created=stamp(-10), phase="Failed", labels=TRITON, reason="ProviderFailed"
    )
    run = namespace(pods + [provider_failed]).run(environment())
    assert_ok(run)
    lines = run.stdout.splitlines()
    oldest = newest_first(pods)[-1]
    record = f"delete pod/{oldest} created={stamp(0)} reason=Error exit=255"
    assert record in lines, f"each deleted pod gets a line with name, creation time, reason, exit code:\n{run.stdout}"
    assert f"delete pod/triton-provider-failed created={stamp(-10)} reason=ProviderFailed exit=-" in lines, (
        "a pod with no container status still gets its line, with the pod's reason"
    )
    assert f"keep pod/{newest_first(pods)[0]} created={stamp(4)} reason=Error exit=255" in lines
    assert lines.index(record) < lines.index(f'pod "{oldest}" deleted'), "the record is written before the delete"
    assert lines[-1] == "cleanup: deleted 3, kept 1"


def test_the_delete_call_names_pods_and_does_not_wait(namespace) -> None:
    run = namespace(failed_triton(3)).run(environment())
    delete = run.calls[-1]
    assert delete[0] == "delete" and "--wait=false" in delete, "the Job must not wait on each pod's termination"
    assert ["--namespace", NAMESPACE] == delete[delete.index("--namespace") : delete.index("--namespace") + 2]
    assert all(arg.startswith("pod/") for arg in delete if not arg.startswith("-") and arg not in ("delete", NAMESPACE))


def test_the_list_call_selects_on_the_server_by_labels_and_phase(namespace) -> None:
    run = namespace(failed_triton(2)).run(environment())
    get = run.calls[0]
    selector = get[get.index("--selector") + 1]
    assert dict(part.split("=", 1) for part in selector.split(",")) == TRITON, (
        "the selector is the chart contract's label set for the release's inference pods"
    )
    assert get[get.index("--field-selector") + 1] == "status.phase=Failed"
    assert get[get.index("--sort-by") + 1] == ".metadata.creationTimestamp"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("KEEP", "-1"),
        ("KEEP", "one"),
        ("KEEP", "1.5"),
        ("MAX_DELETE", "0"),
        ("MAX_DELETE", "-5"),
        ("MAX_DELETE", "all"),
    ],
)
def test_a_count_that_is_not_a_whole_number_stops_before_any_call(namespace, name: str, value: str) -> None:
    run = namespace(failed_triton(3)).run({**environment(), name: value})
    assert run.returncode == 2, "a bad parameter is a configuration error, reported as such"
    assert run.calls == [], "nothing is listed or deleted with a parameter the script cannot trust"
    assert name in run.stderr


@pytest.mark.parametrize("missing", ["NAMESPACE", "SELECTOR", "KEEP", "MAX_DELETE", "DRY_RUN"])
def test_a_missing_parameter_stops_before_any_call(namespace, missing: str) -> None:
    fake = namespace(failed_triton(3))
    env = {**environment(), "NAMESPACE": NAMESPACE}
    del env[missing]
    run = fake.run({**env, missing: ""}) if missing == "NAMESPACE" else fake.run(env)
    assert run.returncode == 2, f"{missing} has no default in the script (defaults live in Pulumi.yaml)"
    assert run.calls == [], "nothing is listed or deleted without every parameter"
    assert missing in run.stderr, "the message names the missing parameter"


def test_a_dry_run_flag_that_is_not_true_or_false_stops_before_any_call(namespace) -> None:
    run = namespace(failed_triton(3)).run({**environment(), "DRY_RUN": "yes"})
    assert run.returncode == 2
    assert run.calls == []


# ------------------------------------------------------------------------------------------------ the text


def kubelet_expand(text: str, defined: dict[str, str]) -> str:
    """The kubelet's ``$(VAR)`` expansion of a container's command (``$$`` escapes, unknown names stay)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "$" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                close = text.find(")", i + 2)
                if close >= 0:
                    name = text[i + 2 : close]
                    out.append(defined.get(name, f"$({name})"))
                    i = close + 1
                    continue
            out.append("$" + nxt)
            i += 2
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def test_the_script_text_survives_the_kubelets_variable_expansion() -> None:
    names = {name: "<expanded>" for name in [*environment(), "NAMESPACE"]}
    assert kubelet_expand("a $(KEEP) $$(KEEP) $$", names) == "a <expanded> $(KEEP) $", "fixture: the expansion"
    assert kubelet_expand(script_text(), names) == script_text(), (
        "the kubelet rewrites $(NAME) and $$ in a container command; the script must contain neither"
    )


def test_the_script_uses_nothing_the_image_lacks() -> None:
    code = "\n".join(line for line in script_text().splitlines() if not line.lstrip().startswith("#"))
    for missing in sorted(MISSING_IN_IMAGE):
        assert not re.search(rf"\b{missing}\b", code), f"alpine/kubectl has no {missing}"
    assert not re.search(r"head\s+-n\s*-", code), "busybox head has no negative counts"
    assert "pipefail" not in code, "busybox ash in the image is not guaranteed pipefail"


def test_shellcheck_finds_nothing_in_the_script_as_posix_sh() -> None:
    shellcheck = shutil.which("shellcheck")
    assert shellcheck, "shellcheck is a test dependency (dev.sh test and CI install it)"
    result = subprocess.run([shellcheck, "--shell=sh", str(SCRIPT_PATH)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"busybox ash runs POSIX sh; shellcheck found:\n{result.stdout}"


def test_the_harness_path_holds_only_busybox_applets_and_the_standin(bin_dir: Path) -> None:
    entries = list(bin_dir.iterdir())
    links = [e for e in entries if e.is_symlink()]
    assert {e.name for e in entries} - {e.name for e in links} == {"kubectl"}
    targets = {e.resolve().name for e in links}
    assert targets == {"busybox"}, "every tool the script finds must be busybox's, as in the image"
    assert not (bin_dir / "tac").exists(), "the image's missing applets are missing here too"


# ------------------------------------------------------------------------------------------------ the stand-in


def standin(state: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {kubectl_standin.STATE_ENV: str(state)}
    return subprocess.run(
        [sys.executable, kubectl_standin.__file__, *argv], env=env, capture_output=True, text=True, timeout=30
    )


def test_the_standin_selects_by_labels_and_phase_as_the_api_server_does(tmp_path: Path) -> None:
    state = tmp_path / "pods.json"
    pods = failed_triton(2) + bystanders()
    kubectl_standin.write_state(state, pods)
    selector = ",".join(f"{k}={v}" for k, v in TRITON.items())
    result = standin(
        state,
        "get",
        "pods",
        "-n",
        NAMESPACE,
        "-l",
        selector,
        "--field-selector=status.phase=Failed",
        "--sort-by=.metadata.creationTimestamp",
        "-o",
        "name",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [f"pod/{name}" for name in reversed(newest_first(failed_triton(2)))], (
        "only the release's Failed Triton pods in the namespace, oldest first"
    )
    everything = standin(state, "get", "pods", "-n", NAMESPACE, "-o", "name")
    assert len(everything.stdout.split()) == len([p for p in pods if p["metadata"]["namespace"] == NAMESPACE]), (
        "unfiltered, the stand-in lists the whole namespace: the filtering is the selectors' doing"
    )


def test_the_standin_renders_the_jsonpath_the_script_asks_for(tmp_path: Path) -> None:
    state = tmp_path / "pods.json"
    kubectl_standin.write_state(state, failed_triton(1))
    template = (
        '{range .items[*]}{.metadata.name}{"\\t"}{.status.containerStatuses[*].state.terminated.exitCode}'
        '{"\\t"}{.status.reason}{"\\n"}{end}'
    )
    result = standin(state, "get", "pods", "-n", NAMESPACE, "-o", f"jsonpath={template}")
    name = failed_triton(1)[0]["metadata"]["name"]
    assert result.stdout == f"{name}\t255\t\n", "missing keys print empty, as kubectl's jsonpath allows"


@pytest.mark.parametrize(
    "argv",
    [
        ["get", "pods", "-n", NAMESPACE, "-l", "app in (a,b)", "-o", "name"],
        ["get", "pods", "-n", NAMESPACE, "--field-selector", "status.podReason=Error", "-o", "name"],
        ["get", "pods", "-n", NAMESPACE, "--no-such-flag", "-o", "name"],
        ["delete", "-n", NAMESPACE, "pod/not-there"],
    ],
)
def test_the_standin_refuses_what_it_does_not_model(tmp_path: Path, argv: list[str]) -> None:
    state = tmp_path / "pods.json"
    kubectl_standin.write_state(state, failed_triton(1))
    result = standin(state, *argv)
    assert result.returncode == 1, f"an unmodelled or failing call must fail, not pass by accident: {argv}"


def test_the_fixture_pods_are_shaped_as_the_api_server_returns_them() -> None:
    pod = failed_triton(1)[0]
    assert json.loads(json.dumps(pod))["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 255
    assert pod["metadata"]["labels"][CHART.component_label] == CHART.inference_component
    assert object_labels(RELEASE)[CHART.component_label] == COMPONENT
