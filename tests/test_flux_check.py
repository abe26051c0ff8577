"""The checks before the takeover's import step, on Flux objects shaped as helm-controller and source-controller
keep them (the e2e takeover rehearsal runs the same checks against a cluster)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from supersonic_interlink.config import Settings
from supersonic_interlink.config.pulumi_config import settings_from_config
from supersonic_interlink.config.stack_config import load_stack_config
from supersonic_interlink.takeover.flux_check import check, release_of

URL = "https://github.com/fastmachinelearning/SuperSONIC"


@pytest.fixture(scope="module")
def hammer() -> Settings:
    return settings_from_config(load_stack_config("hammer"))


def helm_release(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "suspend": True,
        "chart": {
            "spec": {
                "chart": "helm/supersonic",
                "reconcileStrategy": "Revision",
                "sourceRef": {"kind": "GitRepository", "name": "supersonic", "namespace": "flux-system"},
            }
        },
    }
    base.update(spec)
    return {"metadata": {"name": "supersonic-interlink", "namespace": "cms"}, "spec": base}


REPOSITORY = {"metadata": {"name": "supersonic", "namespace": "flux-system"}, "spec": {"url": URL + ".git"}}
DEPLOYED = {"info": {"status": "deployed"}, "version": 12}


def problems(hammer: Settings, *releases: dict[str, Any], status: dict[str, Any] = DEPLOYED) -> list[str]:
    return [f"{f.check}: {f.problem}" for f in check(list(releases), [REPOSITORY], status, hammer)]


def test_a_suspended_release_on_the_stacks_chart_and_deployed_passes(hammer: Settings) -> None:
    assert problems(hammer, helm_release()) == []


def test_the_helm_release_name_follows_helm_controller() -> None:
    hr = helm_release()
    assert release_of(hr) == ("supersonic-interlink", "cms")
    hr["spec"]["targetNamespace"] = "cms2"
    assert release_of(hr) == ("cms2-supersonic-interlink", "cms2")
    hr["spec"]["releaseName"] = "given"
    assert release_of(hr) == ("given", "cms2")


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"suspend": False}, "suspend: HelmRelease cms/supersonic-interlink is not suspended"),
        (
            {"chart": {"spec": {**helm_release()["spec"]["chart"]["spec"], "reconcileStrategy": "ChartVersion"}}},
            (
                "reconcileStrategy: HelmRelease cms/supersonic-interlink: spec.chart.spec.reconcileStrategy is "
                "'ChartVersion'"
            ),
        ),
        (
            {"chart": {"spec": {**helm_release()["spec"]["chart"]["spec"], "chart": "charts/other"}}},
            "chart: HelmRelease cms/supersonic-interlink: chart 'charts/other', the stack's is 'helm/supersonic'",
        ),
        (
            {"chart": {"spec": {**helm_release()["spec"]["chart"]["spec"], "sourceRef": {"kind": "HelmRepository"}}}},
            "source: HelmRelease cms/supersonic-interlink: the chart comes from a HelmRepository, not a GitRepository",
        ),
    ],
)
def test_each_check_names_what_is_wrong(hammer: Settings, change: dict[str, Any], says: str) -> None:
    found = problems(hammer, helm_release(**change))
    assert any(line.startswith(says) for line in found), found


def test_a_repository_of_another_url_is_not_the_stacks_chart(hammer: Settings) -> None:
    other = copy.deepcopy(REPOSITORY)
    other["spec"]["url"] = "https://github.com/someone/fork"
    found = [f"{f.check}: {f.problem}" for f in check([helm_release()], [other], DEPLOYED, hammer)]
    assert found == [
        (
            "source: GitRepository flux-system/supersonic: url 'https://github.com/someone/fork', the stack's chart is "
            f"'{URL}'"
        )
    ]


def test_a_helm_operation_in_flight_stops_the_import(hammer: Settings) -> None:
    found = problems(hammer, helm_release(), status={"info": {"status": "pending-upgrade"}, "version": 13})
    assert found == [
        (
            "helm status: release cms/supersonic-interlink is pending-upgrade (revision 13): a Helm operation is in "
            'flight or was interrupted (docs/takeover.md, "An interrupted up")'
        )
    ]


def test_no_or_two_helm_releases_for_the_release_is_a_finding(hammer: Settings) -> None:
    assert problems(hammer)[0].startswith(
        "HelmRelease: expected exactly one HelmRelease managing cms/supersonic-interlink, found none"
    )
    twin = helm_release()
    twin["metadata"] = {"name": "supersonic-interlink", "namespace": "other"}
    twin["spec"]["targetNamespace"] = "cms"
    twin["spec"]["releaseName"] = "supersonic-interlink"
    assert "found cms/supersonic-interlink, other/supersonic-interlink" in problems(hammer, helm_release(), twin)[0]
