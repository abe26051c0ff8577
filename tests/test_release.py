"""The SuperSONIC Helm release as the program registers it, evaluated under the mock engine."""

from __future__ import annotations

import pulumi
import pytest
from conftest import stack_config, stack_settings

from supersonic_interlink.components.supersonic_release import HELM_RELEASE_TYPE, POSTRENDER
from supersonic_interlink.config import ConfigError, deep_merge
from supersonic_interlink.config.pulumi_config import settings_from_config
from supersonic_interlink.config.values import CONFIG_CHECKSUM_ANNOTATION, helm_values_collisions, split_nulls
from supersonic_interlink.contract import CHART, NEWEST
from supersonic_interlink.program import build
from supersonic_interlink.render.evaluate import evaluate

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


@pytest.fixture(scope="module")
def hammer():
    return evaluate(stack_config("hammer"), "hammer")


def values_of(evaluation) -> dict:
    return evaluation.one(HELM_RELEASE_TYPE).inputs["values"]


def test_hammer_release_scales_from_zero_with_a_900_second_wake_on_the_live_metric(hammer) -> None:
    values = values_of(hammer)
    assert values["scaleFromZero"] == {"enabled": True, "readyTimeoutSeconds": 900, "holdMinReplicasSeconds": 900}, (
        "waking on Hammer queues a Slurm job: 900 s, and the hold may not be shorter (the chart refuses)"
    )
    assert values["keda"]["enabled"] is True
    assert values["keda"]["minReplicaCount"] == 0, "no Slurm allocation is held while idle"
    assert values["keda"]["maxReplicaCount"] == 10
    assert values["keda"]["scaleUp"] == {"stabilizationWindowSeconds": 120, "periodSeconds": 120, "stepsize": 1}
    assert values["keda"]["scaleDown"] == {"stabilizationWindowSeconds": 120, "periodSeconds": 30, "stepsize": 1}
    assert values["prometheus"] == {
        "external": {"enabled": True, "url": "prometheus-server.cms.svc.cluster.local", "port": 9090, "scheme": "http"}
    }
    assert values["grafana"] == {"enabled": False}
    assert values["serverLoadThreshold"] == 20
    assert values["serverLoadMetric"] == (
        'sum (rate(nv_inference_queue_duration_us{app=~"supersonic", release=~"supersonic-interlink", '
        'namespace=~"cms"}[30s])) / sum ((rate(nv_inference_exec_count{app=~"supersonic", '
        'release=~"supersonic-interlink", namespace=~"cms"}[30s]) * 1000))'
    ), "the live release's metric exactly: KEDA's threshold of 20 is in its units"


def test_hammer_triton_runs_on_the_interlink_virtual_node_as_the_running_release_does(hammer) -> None:
    triton = values_of(hammer)[NEWEST.inference_values_key]
    assert triton["nodeSelector"] == {"kubernetes.io/hostname": "interlink-hammer"}
    assert triton["tolerations"] == [{"key": "virtual-node.interlink/no-schedule", "operator": "Exists"}], (
        "without the toleration the virtual node's taint keeps Triton Pending forever"
    )
    assert triton["image"] == "/cvmfs/unpacked.cern.ch/nvcr.io/nvidia/tritonserver:24.11-py3", (
        "Singularity runs the image off unpacked.cern.ch, which carries only this tag; another fails the Slurm job"
    )
    assert triton["resources"]["requests"] == {"cpu": 2, "memory": "8G"}, "the chart's schema types cpu as an integer"
    assert triton["annotations"] == {
        "slurm-job.vk.io/singularity-options": "--unsquash --bind /cvmfs --no-home --compat",
        "slurm-job.vk.io/flags": "--uid=616617 -A cms --gres=gpu:1 --time=0-04:00:00",
        "interlink.virtual-kubelet.io/wstunnel-timeout": "5m",
        "interlink.eu/wstunnel-extra-ports": "8000:http:TCP,8001:grpc:TCP,8002:metrics:TCP",
    }
    assert triton["service"] == {
        "labels": {"scrape_metrics": "true"},
        "annotations": {"metallb.universe.tf/address-pool": "geddes-private-pool"},
    }
    assert triton["modelRepository"] == {"enabled": True, "storageType": "cvmfs-pvc", "mountPath": "/cvmfs"}
    assert triton["readinessProbe"] == {"successThreshold": 3}, "its own exec probe: the chart reads only this"
    assert "valueYamlFiles" not in hammer.one(HELM_RELEASE_TYPE).inputs, "no explicit nulls: nothing to remove"
    assert triton["startupProbe"] == {
        "httpGet": {"path": "/v2/health/ready", "port": "http"},
        "periodSeconds": 5,
        "failureThreshold": 60,
    }
    assert triton["command"] == ["/bin/sh", "-c"], "the one argument is a shell command line"
    assert triton["args"] == [
        (
            "/opt/tritonserver/bin/tritonserver"
            " --model-repository=/cvmfs/cms.cern.ch/el9_amd64_gcc13/cms/cmssw/CMSSW_16_0_0_pre4/external"
            "/el9_amd64_gcc13"
            "/data/RecoBTag/Combined/data/models/"
            " --allow-gpu-metrics=true --log-verbose=0 --strict-model-config=false --exit-timeout-secs=60"
        )
    ], "the live release's Triton command line, CMSSW_16_0_0_pre4's model repository"


def test_hammer_envoy_stays_on_the_af_nodes_and_loads_the_external_config(hammer) -> None:
    envoy = values_of(hammer)["envoy"]
    assert envoy["nodeSelector"] == {"cms-af-prod": "true"}
    assert envoy["tolerations"] == [
        {"key": "hub.jupyter.org/dedicated", "operator": "Equal", "value": "cms-af", "effect": "NoSchedule"}
    ]
    assert envoy["service"]["type"] == "LoadBalancer"
    assert "loadBalancerPolicy" not in envoy and "grpc_route_timeout" not in envoy, "the external envoy.yaml has both"
    assert envoy["ingress"] == {"enabled": False}
    config_map = hammer.one(CONFIG_MAP).inputs
    assert envoy["external_config"] == {
        "load_from_configmap": True,
        "configmap_name": config_map["metadata"]["name"],
        "configmap_key": CHART.envoy_config_key,
    }, "the chart copies exactly this ConfigMap and key; a wrong name fails the install"
    assert config_map["metadata"]["namespace"] == "cms", "the chart's lookup reads the release namespace only"
    assert (
        envoy["annotations"][CONFIG_CHECKSUM_ANNOTATION]
        == config_map["metadata"]["annotations"]["supersonic-interlink/config-sha256"]
    )


def test_release_takes_its_chart_from_the_git_cache_rolls_back_on_failure_and_is_parented_and_exported(hammer) -> None:
    release = hammer.one(HELM_RELEASE_TYPE).inputs
    assert release["name"] == "supersonic-interlink"
    assert release["namespace"] == "cms"
    assert release["chart"] == ".charts/42b2b9334db34ebd51ac97f18a0301922cbe90cb/helm/supersonic", (
        "hammer's pinned commit, from the cache the provider is handed by a path relative to the project"
    )
    assert "version" not in release and "repositoryOpts" not in release, "no chart repository, no version named"
    assert release["dependencyUpdate"] is True, "a chart checked out from git has no dependencies in charts/"
    assert release["maxHistory"] == 10, "the provider keeps every revision by default"
    assert release["atomic"] is True and release["cleanupOnFail"] is True, "a failed upgrade rolls back, not half-done"
    assert release["timeout"] == 1200, "readyTimeoutSeconds 900 + 300: a Triton replaced mid-upgrade waits in Slurm"
    assert release["postrender"] == POSTRENDER
    by_name = {r.name: r for r in hammer.resources}
    assert by_name["supersonic-helm"].parent.endswith("supersonic-interlink:index:SupersonicRelease::supersonic")
    assert by_name["envoy-configmap"].parent.endswith("supersonic-interlink:index:EnvoyConfig::envoy")
    assert not by_name["supersonic"].custom and not by_name["envoy"].custom
    outputs = hammer.outputs
    assert outputs["releaseName"] == "supersonic-interlink"
    assert outputs["namespace"] == "cms"
    assert outputs["envoyConfigMap"] == hammer.one(CONFIG_MAP).inputs["metadata"]["name"]
    assert outputs["clientEndpoint"] == "supersonic-interlink.cms.svc.cluster.local:8001"


def test_second_stack_runs_triton_on_cluster_gpus_with_the_default_wake_and_sends_no_value_files(run_stack) -> None:
    evaluation = run_stack("geddes-gpu")
    assert "valueYamlFiles" not in evaluation.one(HELM_RELEASE_TYPE).inputs, "no nulls: no value files"
    values = values_of(evaluation)
    triton = values[NEWEST.inference_values_key]
    assert values["scaleFromZero"]["readyTimeoutSeconds"] == 300
    assert triton["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert triton["tolerations"] == [] and triton["annotations"] == {}, "no interLink: no virtual node, no Slurm"
    assert triton["resources"]["limits"]["nvidia.com/gpu"] == 1


def test_helm_values_fill_in_what_settings_do_not_model_but_not_under_the_other_generations_block(run_stack) -> None:
    key = NEWEST.inference_values_key
    values = values_of(run_stack(helmValues={"envoy": {"replicas": 2}, key: {"affinity": {"x": "y"}}}))
    assert values["envoy"]["replicas"] == 2
    assert values[key]["affinity"] == {"x": "y"}
    assert values["envoy"]["service"] == {"type": "LoadBalancer"}, "merging underneath keeps computed values"
    with pytest.raises(ConfigError) as refused:
        settings_from_config(stack_config("hammer", helmValues={"triton": {"affinity": {"x": "y"}}}))
    assert refused.value.problems == [
        (
            "supersonic-interlink:helmValues.triton: the triton generation's block; expected inferenceServer "
            "(inferenceServer generation)"
        )
    ], "the newest chart fails the whole install on a triton: block; say so before anything deploys"


def test_helm_values_collisions_are_found_at_every_depth_and_nulls_split_out_with_their_nesting() -> None:
    computed = {"a": {"b": 1, "c": {"d": 2}}, "e": 3}
    assert helm_values_collisions(computed, {"a": {"c": {"d": 9}}, "e": 4, "f": 5}) == ["a.c.d", "e"]
    assert helm_values_collisions(computed, {"a": {"x": 1}}) == []
    assert deep_merge({"a": {"x": 1}}, computed) == {"a": {"b": 1, "c": {"d": 2}, "x": 1}, "e": 3}
    kept, nulls = split_nulls({"a": {"b": None, "c": 1}, "d": None, "e": {"f": {"g": None}}, "h": 2})
    assert kept == {"a": {"c": 1}, "e": {"f": {}}, "h": 2}
    assert nulls == {"a": {"b": None}, "d": None, "e": {"f": {"g": None}}}


def test_outputs_checked_inside_apply_really_ran() -> None:
    settings = stack_settings("hammer")
    ran: list[str] = []

    def program() -> None:
        build(settings)
        outputs = getattr(pulumi.runtime.get_root_resource(), "outputs", {})
        assert {"releaseName", "clientEndpoint"} <= set(outputs), "the mock engine runs the program under a Stack"

        def check(args: list) -> None:
            name, endpoint = args
            assert name == "supersonic-interlink"
            assert endpoint.endswith(":8001")
            ran.append("checked")

        pulumi.Output.all(outputs["releaseName"], outputs["clientEndpoint"]).apply(check)

    evaluate(stack_config("hammer"), "hammer", program=program)
    assert ran == ["checked"], "an apply callback that never runs would pass silently"
