"""The chart conformance check's done criteria, run as a newcomer runs them: `./supersonic render hammer --check`
against the tests' stand-ins for the chart generations that matter (tests/charts/), each a fresh interpreter running
the real Helm v3; the failure classes are tested in tests/test_conformance.py."""

from __future__ import annotations

import pytest
from chart_fixtures import CONFORMING, fixture_chart
from e2e_harness import run_supersonic

# The published 0.3.1: Hammer would hold a Slurm GPU job forever (1 replica) and Envoy would crash-loop on the
# missing Lua file; and its own configuration without scale from zero: no wake route, Lua filter or loopback clusters.
WITHOUT_SCALE_FROM_ZERO = {
    "ScaledObject supersonic-interlink-keda-so: spec.minReplicaCount is 1, not 0 (keda.minReplicaCount)",
    (
        "scale-from-zero Lua filter: /etc/envoy/lua/envoy-filter.lua in container envoy of supersonic-interlink-envoy "
        "is no key of a ConfigMap the chart renders (mounted from: none)"
    ),
    (
        "Deployment supersonic-interlink-envoy: no admission sidecar listening on port 8080 (scale from zero has "
        "nothing to wake the inference server)"
    ),
    "HTTP filters in another order than the chart's (envoy.filters.http.router), the declared additions aside",
    (
        "the Envoy configuration has routes[name=path /inference.GRPCInferenceService/RepositoryIndex], which "
        "the chart does not generate"
    ),
    "the Envoy configuration has http_filters[name=envoy.filters.http.lua], which the chart does not generate",
    (
        "the Envoy configuration changes the chart's clusters[name=triton_grpc_service].connect_timeout (chart: "
        "0.25s, this stack: 2s)"
    ),
    (
        "the Envoy configuration changes the chart's clusters[name=triton_grpc_service].dns_refresh_rate (chart: "
        "(not set), this stack: 1s)"
    ),
    "the Envoy configuration has clusters[name=triton_admission], which the chart does not generate",
    "the Envoy configuration has clusters[name=envoy_admin], which the chart does not generate",
}
# Pinning such a commit would fail every install: the reason is named, the chart's own words kept.
REFUSAL = "scaleFromZero.enabled is incompatible with envoy.external_config.load_from_configmap"
GUARD = "execution error at (supersonic/templates/scale-from-zero-guard.yaml:4:4)"
STILL_REFUSES = {f"the chart refuses this stack's values: {GUARD}: {REFUSAL}"}


@pytest.mark.parametrize(
    ("chart_name", "generation"), [("inference-server", "inferenceServer"), (CONFORMING, "triton")]
)
def test_a_chart_that_does_what_the_stack_asks_passes_for_hammer_in_either_generation(chart_name, generation, tmp_path):
    chart = fixture_chart(chart_name, tmp_path)
    result = run_supersonic("render", "hammer", "--check", "--chart", str(chart))
    assert result.returncode == 0, f"nothing to report for a chart that does what the stack asks:\n{result.stderr}"
    assert f"stack hammer: chart {chart} conforms" in result.stdout and "stack hammer: checks passed" in result.stdout
    assert f"chart generation: {generation}, read from" in result.stdout, "--chart DIR: the generation is read from DIR"


@pytest.mark.parametrize(
    ("chart_name", "findings"),
    [("no-scale-from-zero", WITHOUT_SCALE_FROM_ZERO), ("refuses-external-config", STILL_REFUSES)],
    ids=["published-0.3.1-names-min-replica-count-and-the-missing-wiring", "a-commit-refusing-an-external-config"],
)
def test_a_chart_that_cannot_serve_the_stack_fails_naming_each_finding(chart_name, findings, tmp_path) -> None:
    chart = fixture_chart(chart_name, tmp_path)
    result = run_supersonic("render", "hammer", "--check", "--chart", str(chart))
    assert result.returncode == 1, result.stdout + result.stderr
    prefix = f"check: chart {chart}: "
    assert {line[len(prefix) :] for line in result.stderr.splitlines() if line.startswith(prefix)} == findings
    assert f"stack hammer: {len(findings)} finding(s)" in result.stderr
