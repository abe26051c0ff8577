"""The cleanup script run as the CronJob runs it (busybox sh, the real kubectl 1.34.5) against a stand-in API server:
the pods deleted and the requests made (kubectl's discovery, then one LIST and one DELETE). Which bystanders the
real API server spares is tests/e2e/test_cleanup_api_server.py's; what the Role allows, test_cleanup_authorizer.py's."""

from __future__ import annotations

import contextlib
import hashlib
import re
import urllib.parse
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from busybox_harness import MISSING_IN_IMAGE, Cluster, Run, kubectl_path, make_bin
from conftest import stack_settings
from kube_api_standin import JSONObject, kube_api_standin, pod

from supersonic_interlink.components.failed_pod_cleanup import (
    ROLE_RULES,
    inference_pod_selector,
    object_labels,
    script_environment,
    script_text,
)
from supersonic_interlink.contract import NEWEST

RELEASE = "supersonic-interlink"
NAMESPACE = "cms"
TRITON = NEWEST.inference_pod_labels(RELEASE)
SELECTOR = inference_pod_selector(NEWEST, RELEASE)
START = datetime(2025, 6, 1, 8, 0, tzinfo=UTC)
# kubectl 1.34 with an empty cache discovers the API (GET /api, GET /apis) before its list; `delete --raw` needs none.
DISCOVERY_REQUESTS = 2


def stamp(minutes: float) -> str:
    return (START + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def failed(name: str, minute: float, labels: dict[str, str] = TRITON, **fields: Any) -> JSONObject:
    """A Failed pod (of the release unless ``labels`` say otherwise), created ``minute`` minutes after the start."""
    return pod(name, created=stamp(minute), phase="Failed", labels=labels, **fields)


def failed_triton(count: int, *, release: str = RELEASE, first_minute: int = 0) -> list[JSONObject]:
    """``count`` Failed Triton pods, one every two minutes, with ReplicaSet-style names in no particular order."""
    labels = NEWEST.inference_pod_labels(release)
    stem = f"{NEWEST.inference_object_name(release)}-7c9d8f6b5"
    pods = []
    for i in range(count):
        suffix = hashlib.sha256(f"{release}-{i}".encode()).hexdigest()[:8]
        pods.append(failed(f"{stem}-{suffix}", first_minute + 2 * i, labels, container_reason="Error", exit_code=255))
    assert len(names(pods)) == count, "fixture: pod names are unique"
    return pods


def names(pods: list[JSONObject]) -> set[str]:
    return {p["metadata"]["name"] for p in pods}


def newest_first(pods: list[JSONObject]) -> list[str]:
    return [p["metadata"]["name"] for p in sorted(pods, key=lambda p: p["metadata"]["creationTimestamp"], reverse=True)]


def bystanders() -> list[JSONObject]:
    """Pods the cleanup must not delete: a Running one, another release's, the cleaner's own, another namespace's."""
    return [
        pod("triton-running", created=stamp(-30), phase="Running", labels=TRITON),
        failed("other-release-failed", -60, labels=NEWEST.inference_pod_labels("x")),
        failed("cleaner-failed", -35, labels=object_labels(RELEASE), exit_code=1),
        failed("triton-failed-elsewhere", -55, namespace="cms-dev"),
    ]


@pytest.fixture(scope="session")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_bin(tmp_path_factory.mktemp("busybox-bin"))


@pytest.fixture
def cluster(tmp_path: Path, bin_dir: Path) -> Iterator[Callable[[list[JSONObject]], Cluster]]:
    """A stand-in API server holding ``pods``."""
    with contextlib.ExitStack() as stack:
        yield lambda pods: Cluster(tmp_path, bin_dir, stack.enter_context(kube_api_standin(pods)))


def environment(**cleanup: Any) -> dict[str, str]:
    """The container's environment for the hammer stack with ``cleanup`` overrides, as the component computes it."""
    return script_environment(stack_settings("hammer", cleanup=cleanup))


def assert_ok(run: Run) -> None:
    assert run.returncode == 0, f"the Job must succeed:\nstdout:\n{run.stdout}\nstderr:\n{run.stderr}"


def assert_requests(run: Run, *pod_verbs: str) -> None:
    assert run.verbs() == ["discovery"] * DISCOVERY_REQUESTS + list(pod_verbs), (
        f"kubectl's discovery, then one LIST and at most one DELETE of the collection, for any backlog: {run.requests}"
    )


def delete_request(run: Run) -> tuple[str, str]:
    """The label and field selectors of the run's DELETE of the collection."""
    (delete,) = [r for r in run.requests if r.verb == "deletecollection"]
    assert delete.path == f"/api/v1/namespaces/{NAMESPACE}/pods"
    return delete.param("labelSelector") or "", delete.param("fieldSelector") or ""


def log_lines(run: Run, action: str) -> list[str]:
    return [line for line in run.stdout.splitlines() if line.startswith(f"{action} pod/")]


def summary(run: Run) -> str:
    return run.stdout.rstrip().splitlines()[-1]


def test_the_22_failed_pods_of_the_change_request_dry_run_then_keep_only_the_newest_then_stay(cluster) -> None:
    pods = failed_triton(22)
    assert max(names(pods)) != newest_first(pods)[0], "fixture: only creation-time order finds the newest"
    fake = cluster(pods)
    dry, run, second = fake.run(environment(dryRun=True)), fake.run(environment()), fake.run(environment())
    assert_ok(dry)
    assert_requests(dry, "list")
    assert dry.deleted == set()
    assert len(log_lines(dry, "would delete")) == 21 and len(log_lines(dry, "keep")) == 1
    assert summary(dry) == "cleanup (dry run): deleted 0, would delete 21, kept 1"
    (line,) = [line for line in dry.stdout.splitlines() if line.startswith("cleanup (dry run): would send DELETE ")]
    printed = urllib.parse.urlsplit(line.rsplit(" ", 1)[1])
    assert_ok(run)
    assert_requests(run, "list", "deletecollection")
    (sent,) = [r for r in run.requests if r.verb == "deletecollection"]
    assert (printed.path, urllib.parse.parse_qs(printed.query)) == (sent.path, sent.query), (
        "the dry run prints the request the real run sends"
    )
    used = {r.verb for r in dry.pod_requests() + run.pod_requests()}
    assert used == set(ROLE_RULES[0]["verbs"]), "the runs use every verb the Role grants, and nothing else"
    assert run.deleted == names(pods) - {newest_first(pods)[0]}, "21 deleted, the newest kept for diagnosis"
    assert summary(run) == "cleanup: deleted 21, kept 1"
    assert_ok(second)
    assert_requests(second, "list")
    assert second.deleted == set(), "the cleanup is idempotent: a clean namespace gets no delete request"


@pytest.mark.parametrize("keep", [2, 0])
def test_the_delete_request_is_confined_to_the_releases_failed_pods_except_the_kept(cluster, keep: int) -> None:
    pods = failed_triton(5)
    run = cluster(pods).run(environment(keep=keep))
    assert_ok(run)
    assert_requests(run, "list", "deletecollection")
    labels, fields = delete_request(run)
    assert labels == SELECTOR, "the API server deletes only pods with the release's inference-server labels"
    kept = newest_first(pods)[:keep]
    assert fields.split(",") == ["status.phase=Failed"] + [f"metadata.name!={name}" for name in reversed(kept)], (
        "only Failed pods, and never a kept one (keep: 0, the phase alone): the server enforces the selection"
    )
    assert run.deleted == names(pods) - set(kept), "keep: 0 leaves no Failed pod"


@pytest.mark.parametrize(
    ("pods", "keep", "summary_end"),
    [
        (failed_triton(3), 5, "cleanup: deleted 0, kept 3"),
        (failed_triton(1), 1, "cleanup: deleted 0, kept 1"),
        (bystanders(), 1, "deleted 0, kept 0"),
    ],
    ids=["fewer-than-keep", "exactly-keep", "none-failed"],
)
def test_no_more_failed_pods_than_keep_deletes_none(cluster, pods: list[JSONObject], keep: int, summary_end) -> None:
    run = cluster(pods).run(environment(keep=keep))
    assert_ok(run)
    assert_requests(run, "list")
    assert run.deleted == set(), "the newest keep Failed pods are kept"
    assert summary(run).endswith(summary_end)


def test_a_backlog_of_more_than_kubectls_chunks_clears_in_one_run_of_two_requests_on_pods(cluster) -> None:
    # Past kubectl's 500-pod list chunks; the 5,000 pods' time and memory are benchmarks/cleanup_5000.py's.
    backlog = failed_triton(1001)
    running = [pod(f"triton-running-{i}", created=stamp(i), phase="Running", labels=TRITON) for i in range(50)]
    run = cluster(backlog + running + failed_triton(50, release="supersonic-gpu")).run(environment())
    assert_ok(run)
    assert_requests(run, "list", "deletecollection")
    assert run.pod_requests()[0].param("limit") is None, "--chunk-size=0: kubectl would list in chunks of 500"
    assert run.deleted == names(backlog) - {newest_first(backlog)[0]}, "the whole backlog but the newest, in one run"
    assert len(log_lines(run, "delete")) == 1000 and len(log_lines(run, "keep")) == 1
    assert summary(run) == "cleanup: deleted 1000, kept 1"


def test_a_reason_with_a_newline_tab_quotes_and_substitutions_deletes_nothing_else(cluster, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    reason = f'OOMKilled\ntriton-running\t"quoted" $(touch {marker}) `touch {marker}`'
    hostile = failed("triton-hostile", 0, reason=reason, container_reason=reason, exit_code=137)
    run = cluster([hostile, *failed_triton(1, first_minute=10), *bystanders()]).run(environment())
    assert_ok(run)
    assert_requests(run, "list", "deletecollection")
    assert run.deleted == {"triton-hostile"}, "the line after the newline in the reason names a Running pod"
    assert not marker.exists(), "a reason is data: $(...) and backquotes in it never run"
    escaped = f'reason="OOMKilled\\ntriton-running\\t\\"quoted\\" $(touch {marker}) `touch {marker}`"'
    assert log_lines(run, "delete") == [
        f'delete pod/triton-hostile created={stamp(0)} {escaped} [container "triton": exit=137 {escaped}]'
    ], "one log line per pod, the reason escaped so that it cannot split the line"
    assert all(re.fullmatch(r"[ -~]*", line) for line in run.stdout.splitlines()), "the log is printable ASCII"


def test_a_newline_in_the_kept_pods_container_reason_does_not_delete_it(cluster) -> None:
    older = failed_triton(1)
    kept = failed("triton-newest", 30, container_reason=f"Error\n{older[0]['metadata']['name']}", exit_code=1)
    run = cluster([*older, kept]).run(environment(keep=1))
    assert_ok(run)
    assert run.deleted == names(older), "the newest pod is kept even when its reason reads like another pod's name"
    assert summary(run) == "cleanup: deleted 1, kept 1"
    assert delete_request(run)[1] == "status.phase=Failed,metadata.name!=triton-newest"


def timeless(created: str | None) -> JSONObject:
    bad = pod("triton-timeless", created=created or "", phase="Failed", labels=TRITON)
    if created is None:
        del bad["metadata"]["creationTimestamp"]
    return bad


NO_NAME = "has no pod name"
NO_TIME = "does not start with a creation time"
BAD_NAMES = ["Triton-Upper", "triton running", "triton\nrunning", "triton_", "-triton", "a..b", "a" * 254, ""]
BAD_TIMES = ["yesterday", "2025-06-01 08:00:00", "2025-06-01T08:00:00+02:00", None]


@pytest.mark.parametrize(
    ("bad", "why"),
    [*((failed(name, 1, exit_code=1), NO_NAME) for name in BAD_NAMES), *((timeless(c), NO_TIME) for c in BAD_TIMES)],
)
def test_a_listing_the_script_cannot_trust_stops_the_run_before_any_delete(cluster, bad: JSONObject, why: str) -> None:
    run = cluster([*failed_triton(3), *bystanders(), bad]).run(environment(keep=0))
    assert run.returncode == 1, "a listing with a name the API never returns, or without a creation time, fails"
    assert_requests(run, "list")
    assert run.deleted == set(), "nothing is deleted on the strength of a listing the script cannot trust"
    assert re.fullmatch(rf"cleanup: line \d+ of the listing {why}[ -~]*; nothing deleted\n", run.stderr), (
        "one printable line, whatever the name holds: " + run.stderr
    )


def test_pods_created_in_the_same_second_are_kept_by_name_whatever_the_listing_order(cluster) -> None:
    older = failed_triton(3)
    same_second = [failed(name, 60, exit_code=1) for name in ("triton-tie-b", "triton-tie-c", "triton-tie-a")]
    run = cluster(older + same_second).run(environment(keep=2))
    assert_ok(run)
    assert run.deleted == names(older) | {"triton-tie-a"}, "of pods created in the same second, later names stay"
    assert log_lines(run, "keep") == [
        f'keep pod/triton-tie-{tie} created={stamp(60)} reason=- [container "triton": exit=1 reason=-]'
        for tie in ("b", "c")
    ]


LISTING_FAILED = "cleanup: listing Failed pods in cms failed; nothing deleted"


@pytest.mark.parametrize(
    ("verb", "says"),
    [
        ("list", ["cleanup: kubectl: Error from server (InternalError)", LISTING_FAILED]),
        ("deletecollection", ["cleanup: the delete request failed"]),
    ],
)
def test_a_failing_request_fails_the_job_and_claims_no_deletion(cluster, verb: str, says: list[str]) -> None:
    fake = cluster(failed_triton(22))
    fake.server.failing.add(verb)
    run = fake.run(environment())
    assert run.returncode == 1, "a request that failed must fail the Job, not pass for an empty list"
    assert_requests(run, *dict.fromkeys(["list", verb]))
    assert run.deleted == set()
    assert all(line in run.stderr for line in says), run.stderr
    assert "cleanup: deleted" not in run.stdout, "the summary reports deletions only once they happened"


def test_each_pod_is_logged_with_creation_time_reason_and_exit_code_before_the_delete(cluster) -> None:
    pods = failed_triton(3)
    odd = failed("triton-odd", -5)
    odd["status"]["containerStatuses"] = [{"name": "triton", "state": {"terminated": {"exitCode": "1\n2"}}}]
    run = cluster([*pods, failed("triton-provider-failed", -10, reason="ProviderFailed"), odd]).run(environment())
    assert_ok(run)
    lines = run.stdout.splitlines()
    newest, middle, oldest = newest_first(pods)
    assert lines == [
        f"cleanup: 5 Failed pods in cms match {SELECTOR}; keeping the newest 1",
        f'delete pod/triton-provider-failed created={stamp(-10)} reason="ProviderFailed"',
        f'delete pod/triton-odd created={stamp(-5)} reason=- [container "triton": exit="1\\n2" reason=-]',
        f'delete pod/{oldest} created={stamp(0)} reason=- [container "triton": exit=255 reason="Error"]',
        f'delete pod/{middle} created={stamp(2)} reason=- [container "triton": exit=255 reason="Error"]',
        f'keep pod/{newest} created={stamp(4)} reason=- [container "triton": exit=255 reason="Error"]',
        "cleanup: sending DELETE /api/v1/namespaces/cms/pods?labelSelector="
        + urllib.parse.quote(SELECTOR, safe="")
        + "&fieldSelector="
        + urllib.parse.quote(f"status.phase=Failed,metadata.name!={newest}", safe=""),
        "cleanup: deleted 4, kept 1",
    ], "oldest first, one line per pod (an exit code not a number quoted), written before the request"


BAD_PARAMETERS = {
    "KEEP": ["-1", "one", "1.5", "21", "007", "99999999999999999999", "1\n2"],
    "NAMESPACE": ["CMS", "-cms", "c" * 64, "cms\nkube-system", "cms/../kube-system"],
    "SELECTOR": [
        *["app in (a,b)", "app!=triton", "!app", "app", "app=triton,,x=y", "app=", "=triton", "app==triton"],
        *["app=tri ton", "app=triton\nx=y", "a/b/c=d", "app=$(id)", "app=" + "v" * 64],
    ],
    "DRY_RUN": ["yes", "True"],
}


@pytest.mark.parametrize(("name", "value"), [(name, value) for name, bad in BAD_PARAMETERS.items() for value in bad])
def test_a_parameter_out_of_its_range_stops_the_run_before_any_request(cluster, name: str, value: str) -> None:
    run = cluster(failed_triton(3)).run({**environment(), name: value})
    assert run.returncode == 2, "a bad parameter is a configuration error, reported as such"
    assert run.requests == [], "nothing is listed or deleted with a parameter the script cannot trust"
    assert run.stderr.startswith(f"cleanup: {name}=") and run.stderr.rstrip().endswith("; nothing deleted")
    assert len(run.stderr.splitlines()) == 1, "the message is one line, whatever the value holds"


@pytest.mark.parametrize(
    ("name", "value"), [("KEEP", "0"), ("KEEP", "20"), ("SELECTOR", "app.kubernetes.io/instance=x")]
)
def test_a_parameter_at_the_edge_of_its_range_is_accepted(cluster, name: str, value: str) -> None:
    assert_ok(cluster(failed_triton(3)).run({**environment(), name: value}))


@pytest.mark.parametrize("missing", ["NAMESPACE", "SELECTOR", "KEEP", "DRY_RUN"])
def test_a_missing_parameter_stops_the_run_before_any_request(cluster, missing: str) -> None:
    env = {**environment(), "NAMESPACE": NAMESPACE}
    del env[missing]
    # Cluster.run supplies the downward API's NAMESPACE, so an empty one stands for a missing one.
    run = cluster(failed_triton(3)).run({**env, missing: ""} if missing == "NAMESPACE" else env)
    assert run.returncode == 2, f"{missing} has no default in the script (defaults live in Pulumi.yaml)"
    assert run.requests == [], "nothing is listed or deleted without every parameter"
    assert missing in run.stderr, "the message names the missing parameter"


def kubelet_expand(text: str, defined: dict[str, str]) -> str:
    """The kubelet's ``$(VAR)`` expansion of a container's command (``$$`` escapes, unknown names stay)."""
    return re.sub(r"\$(\$|\(([^)]*)\))", lambda m: "$" if m[1] == "$" else defined.get(m[2], m[0]), text)


def test_the_script_text_survives_the_kubelets_variable_expansion_and_uses_nothing_the_image_lacks() -> None:
    defined = dict.fromkeys([*environment(), "NAMESPACE"], "<expanded>")
    assert kubelet_expand("a $(KEEP) $$(KEEP) $$ $(X $", defined) == "a <expanded> $(KEEP) $ $(X $", "fixture"
    assert kubelet_expand(script_text(), defined) == script_text(), (
        "the kubelet rewrites $(NAME) and $$ in a container command; the script must contain neither"
    )
    code = "\n".join(line for line in script_text().splitlines() if not line.lstrip().startswith("#"))
    for missing in sorted(MISSING_IN_IMAGE):
        assert not re.search(rf"\b{missing}\b", code), f"alpine/kubectl has no {missing}"
    assert not re.search(r"head\s+-n\s*-", code), "busybox head has no negative counts"
    assert "pipefail" not in code, "busybox ash in the image is not guaranteed pipefail"


def test_the_harness_path_holds_only_busybox_applets_and_the_real_kubectl(bin_dir: Path) -> None:
    entries = list(bin_dir.iterdir())
    assert all(e.is_symlink() for e in entries), "nothing but links: the image's tools, not the host's"
    targets = {e.name: e.resolve() for e in entries}
    assert targets.pop("kubectl") == kubectl_path().resolve(), "the real kubectl 1.34.5, not a stand-in"
    assert {t.name for t in targets.values()} == {"busybox"}, "every other tool the script finds is busybox's"
    assert not (bin_dir / "tac").exists(), "the image's missing applets are missing here too"
