"""The computed Envoy configuration against what the chart generates (the inference-server test chart, written from
what 42b2b933 generates: tests/charts/README.md): equal but for the declared additions."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from chart_fixtures import fixture_chart

from supersonic_interlink.chart.helm import ChartRenderer
from supersonic_interlink.contract import INFERENCE_SERVER
from supersonic_interlink.render import stack as rendering
from supersonic_interlink.render.conformance import Expected, generated_config, generated_config_findings


@pytest.fixture(scope="module")
def hammer(tmp_path_factory) -> tuple[Expected, Any]:
    """Hammer's Expected for the inference-server chart, and the configuration that chart generates for it."""
    chart = fixture_chart("inference-server", tmp_path_factory.mktemp("chart"))
    expected = Expected.from_rendered(rendering.render("hammer", chart_dir=chart))
    with ChartRenderer(chart, expected.release_name, expected.namespace, expected.served) as renderer:
        return expected, generated_config(renderer, expected)


@pytest.fixture
def generated(hammer) -> dict[str, Any]:
    return copy.deepcopy(hammer[1])


@pytest.fixture
def computed(hammer) -> dict[str, Any]:
    return yaml.safe_load(hammer[0].envoy_yaml)


def _cluster(config: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in config["static_resources"]["clusters"] if c["name"] == name)


def _hcm(config: dict[str, Any]) -> dict[str, Any]:
    return config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]


def test_hammers_configuration_is_what_the_chart_generates_plus_the_declared_additions(generated, computed):
    assert _cluster(generated, "inference_server_grpc_service")["connect_timeout"] == "2s", "the chart's own text"
    assert generated_config_findings(generated, computed, INFERENCE_SERVER) == [], (
        "the buffer, outlier ejection and the inference route's retry policy (with the breakers it needs) are the "
        "only differences from the chart's own configuration"
    )


@pytest.mark.parametrize(
    ("change", "count", "finding"),
    [
        (
            lambda config: _cluster(config, "inference_server_grpc_service").update(connect_timeout="0.25s"),
            1,
            (
                "the Envoy configuration changes the chart's clusters[name=inference_server_grpc_service]."
                "connect_timeout (chart: 2s, this stack: 0.25s)"
            ),
        ),
        (
            lambda config: _hcm(config)["route_config"]["virtual_hosts"][0]["routes"][0]["route"].pop("retry_policy"),
            5,
            (
                "the Envoy configuration changes the chart's routes[name=path /inference.GRPCInferenceService/"
                "RepositoryIndex].route.retry_policy.num_retries (chart: 15, this stack: (not set))"
            ),
        ),
        (
            lambda config: config["static_resources"]["clusters"].remove(_cluster(config, "envoy_admin")),
            1,
            "the Envoy configuration lacks the chart's clusters[name=envoy_admin]",
        ),
        (
            lambda config: _hcm(config)["http_filters"].insert(0, _hcm(config)["http_filters"].pop()),
            1,
            (
                "HTTP filters in another order than the chart's (envoy.filters.http.lua, envoy.filters.http.router), "
                "the declared additions aside"
            ),
        ),
        (
            # Outlier ejection is declared on the inference cluster only.
            lambda config: _cluster(config, "envoy_admin").update(outlier_detection={"consecutive_5xx": 1}),
            1,
            (
                "the Envoy configuration changes the chart's clusters[name=envoy_admin].outlier_detection."
                "consecutive_5xx (chart: (not set), this stack: 1)"
            ),
        ),
    ],
    ids=["changed field", "no retry policy", "no admin cluster", "filters reordered", "undeclared addition"],
)
def test_each_difference_from_the_chart_is_a_finding_naming_its_element_and_field(
    generated, computed, change, count, finding
):
    change(computed)
    found = generated_config_findings(generated, computed, INFERENCE_SERVER)
    assert len(found) == count and found[0] == finding, found
