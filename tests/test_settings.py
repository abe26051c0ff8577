"""Stack config -> typed settings: defaults from Pulumi.yaml only, every mistake reported at once by its key."""

from __future__ import annotations

import json
from pathlib import Path

import pulumi
import pytest
from conftest import stack_config, stack_settings

from supersonic_interlink.config import ConfigError, Settings
from supersonic_interlink.config.pulumi_config import settings_from_config
from supersonic_interlink.config.stack_config import cli_config, read_stack_document, stack_names
from supersonic_interlink.render.evaluate import evaluate

P = "supersonic-interlink"
REPO = {"repo": "https://example.org/charts", "name": "supersonic"}
GIT = {"git": "https://github.com/f/S", "path": "helm/supersonic"}


def problems(**overrides) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        settings_from_config(stack_config("hammer", **overrides))
    return caught.value.problems


def test_every_stack_file_loads() -> None:
    assert stack_names() == ["geddes-gpu", "hammer"]
    for stack in stack_names():
        assert isinstance(settings_from_config(stack_config(stack)), Settings)


def test_a_partial_object_in_a_stack_keeps_the_other_defaults_from_pulumi_yaml() -> None:
    settings = stack_settings("hammer", scaleFromZero={"readyTimeoutSeconds": 900, "holdMinReplicasSeconds": 950})
    assert settings.scaleFromZero.enabled is True, "enabled comes from the Pulumi.yaml default"
    assert settings.scaleFromZero.holdMinReplicasSeconds == 950
    assert settings.envoy.bufferMaxRequestBytes == 33554432


def test_the_cli_merge_replaces_a_whole_default_object_like_the_pulumi_cli() -> None:
    merged = cli_config({f"{P}:keda": {"maxReplicaCount": 3}}, defaults={"keda": {"enabled": True}, "x": "y"})
    assert json.loads(merged[f"{P}:keda"]) == {"maxReplicaCount": 3}
    assert merged[f"{P}:x"] == "y", "strings pass as they are"


@pytest.mark.parametrize(
    "chart, complaint",
    [
        ({**REPO, "version": "^0.4"}, "an exact chart version"),
        (REPO, "{repo, name, version}"),
        ({**REPO, "version": "0.4.0", "path": "./chart"}, "not a mix"),
        ({**REPO, "repo": "example.org", "version": "0.4.0"}, "https://"),
        ({"git": GIT["git"]}, "{git, commit, path}"),
        ({**GIT, "git": "git@github.com:f/S"}, "https://"),
        ({**GIT, "commit": "e578801"}, "40 lowercase hexadecimal"),
        ({"commit": "0" * 40, "path": "./chart"}, "commit goes with git"),
        ({**GIT, "name": "supersonic", "version": "0.3.1"}, "nothing else"),
    ],
)
def test_a_chart_source_is_repo_name_and_exact_version_or_a_path(chart, complaint) -> None:
    found = problems(release={"name": "supersonic-interlink", "chart": chart})
    assert len(found) == 1 and f"{P}:release.chart" in found[0] and complaint in found[0], found


def test_a_local_path_or_a_git_source_with_a_commit_is_pinned_and_a_git_branch_is_not() -> None:
    def chart(**source):
        return stack_settings("hammer", release={"name": "supersonic-interlink", "chart": source}).release.chart

    assert (chart(path="./supersonic").kind, chart(path="./supersonic").pinned) == ("path", True)
    assert (chart(**GIT).kind, chart(**GIT).pinned) == ("git", False), "a branch must never count as a pinned chart"
    assert chart(**GIT, commit="a" * 40).pinned


def test_a_bad_or_text_typed_timeout_names_the_key_the_value_and_what_is_allowed() -> None:
    """Only a quoted "900" in a stack file is text: `pulumi config set --path` stores a number."""
    allowed = "expected a whole number from 1 to 9223371736 (the Helm timeout, this + 300 s, is a Go duration, and the"
    found = problems(scaleFromZero={"readyTimeoutSeconds": "900", "holdMinReplicasSeconds": 900, "enabled": "true"})
    assert found[0] == f'{P}:scaleFromZero.enabled = "true": expected true or false' and len(found) == 2
    assert found[1].startswith(f'{P}:scaleFromZero.readyTimeoutSeconds = "900": {allowed} RepositoryIndex'), found
    found = problems(scaleFromZero={"readyTimeoutSeconds": -5, "holdMinReplicasSeconds": 900})
    assert len(found) == 1 and found[0].startswith(f"{P}:scaleFromZero.readyTimeoutSeconds = -5: {allowed}"), found


def test_every_problem_is_reported_at_once_one_line_each_naming_key_value_and_allowed() -> None:
    found = problems(
        namespace="CMS_prod",
        release={"name": "a" * 34},
        triton={"args": "tritonserver", "nodeSelector": {"gpu": True}},
        cleanup={"image": "alpine/kubectl"},
        envoy={"loadBalancerPolicy": "FASTEST"},
        scaleFromZero={"readyTimeoutSeconds": 900, "holdMinReplicasSeconds": 899},  # across keys, still reported
    )
    expected = [
        f'{P}:cleanup.image = "alpine/kubectl": expected an image with a pinned',
        f'{P}:envoy.loadBalancerPolicy = "FASTEST": expected one of ROUND_ROBIN, LEAST_REQUEST',
        f'{P}:namespace = "CMS_prod": expected a Kubernetes name',
        f"{P}:release.name = \"{'a' * 34}\": expected a release name: lowercase letters, digits and '-', starting with",
        f"{P}:scaleFromZero.holdMinReplicasSeconds = 899: expected a value >= scaleFromZero.readyTimeoutSeconds (900)",
        f'{P}:triton.args = "tritonserver": expected a non-empty list of strings',
        f"{P}:triton.nodeSelector.gpu = true: expected a string (quote numbers and booleans)",
    ]
    assert len(found) == len(expected) and all(any(p.startswith(e) for p in found) for e in expected), found


def test_helm_values_may_not_override_a_computed_value() -> None:
    found = problems(helmValues={"scaleFromZero": {"readyTimeoutSeconds": 60}, "envoy": {"replicas": 2}})
    computed = f"{P}:helmValues.scaleFromZero.readyTimeoutSeconds: set by the program from typed settings"
    assert found == [f"{computed}; change the typed key instead"]


def test_invalid_config_stops_the_real_program_with_the_messages_and_no_traceback() -> None:
    """What `pulumi up` shows: pulumi.RunError carries the message alone."""
    said = f"{P}:keda.minReplicaCount = -1: expected a whole number from 0 to 2147483647 (a Kubernetes int32)"
    with pytest.raises(pulumi.RunError) as caught:
        evaluate(stack_config("hammer", keda={"minReplicaCount": -1}), "hammer")
    assert said in str(caught.value)


@pytest.mark.parametrize("key", ["kubernetes:context", "kubernetes:suppressHelmHookWarnings", "pulumi:tags"])
def test_a_provider_key_that_changes_up_is_refused_and_one_that_only_says_where_is_not(key: str) -> None:
    config = {**stack_config("hammer"), key: "x"}
    assert isinstance(settings_from_config(config), Settings)
    config["kubernetes:renderYamlToDirectory"] = "rendered"
    with pytest.raises(ConfigError, match="kubernetes:renderYamlToDirectory: changes what pulumi up does; expected"):
        settings_from_config(config)


@pytest.mark.parametrize(
    ("resources", "problem"),
    [
        # validation.go ValidateContainerResourceRequirements: request <= limit, compared as quantities.
        ({"requests": {"cpu": "2"}, "limits": {"cpu": "1500m"}}, 'requests.cpu = "2": expected at most the limit ("15'),
        # ... and a resource that cannot be overcommitted (an extended one) needs request == limit, and a limit.
        (
            {"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 2}},
            "requests.nvidia.com/gpu = 1: expected the",
        ),
        ({"requests": {"example.com/fpga": 1}}, "limits.example.com/fpga = null: expected a limit equal to the"),
        ({"limits": {"nvidia.com/gpu": "500m"}}, 'limits.nvidia.com/gpu = "500m": expected a whole number'),
        # validateContainerResourceName: without a domain, only the standard container resources.
        ({"requests": {"memroy": "8G"}}, 'requests.memroy = "memroy": expected a container resource name: cpu,'),
        ({"limits": {"kubernetes.io/gpu": 2}}, 'limits.kubernetes.io/gpu = "kubernetes.io/gpu": expected a container'),
    ],
)
def test_resources_the_api_server_would_refuse_are_refused_here(resources: dict, problem: str) -> None:
    found = problems(triton={"args": ["tritonserver"], "resources": resources})
    assert any(line.startswith(f"{P}:triton.resources.{problem}") for line in found), found


@pytest.mark.parametrize(
    "resources",
    [
        {"requests": {"cpu": "1500m"}, "limits": {"cpu": "1.5"}},  # equal, written two ways
        {"requests": {"cpu": 1}},  # no limit: fine for a native resource
        {"limits": {"nvidia.com/gpu": 1}},  # the request defaults to the limit
        {"limits": {"hugepages-2Mi": "1Gi", "ephemeral-storage": "1Gi", "kubernetes.io/memory": "1Gi"}},
    ],
)
def test_resources_at_the_boundary_are_accepted(resources: dict) -> None:
    config = stack_config("hammer", triton={"args": ["tritonserver"], "resources": resources})
    loaded = settings_from_config(config).triton.resources
    assert all(loaded.requests[k] == v for k, v in resources.get("requests", {}).items()), loaded


def test_toleration_seconds_at_two_to_the_53_the_largest_that_stays_exact_is_accepted() -> None:
    """One more is refused: tests/fixtures/config/api-tolerations.yaml."""
    toleration = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 2**53}
    settings = settings_from_config(stack_config("hammer", envoy={"tolerations": [toleration]}))
    assert settings.envoy.tolerations[0].tolerationSeconds == 2**53


def test_pod_annotations_past_the_api_servers_256_kib_are_refused_and_up_to_it_accepted() -> None:
    key = "slurm-job.vk.io/flags"
    fits = {key: "x" * (256 * 1024 - len(key))}
    assert stack_settings("hammer", triton={"args": ["t"], "podAnnotations": fits}).triton.podAnnotations == fits
    found = problems(triton={"args": ["t"], "podAnnotations": {key: "x" * 300 * 1024}})
    assert any(
        line.startswith(f"{P}:triton.podAnnotations = ") and "at most 262144 bytes in all" in line for line in found
    ), found


def test_a_stack_file_importing_an_esc_environment_is_refused_offline(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.x.yaml"
    stack.write_text("environment: [cms-secrets]\nconfig: {}\n")
    with pytest.raises(ConfigError, match=r"x\.yaml: 'environment' imports Pulumi ESC environments"):
        read_stack_document(stack)
