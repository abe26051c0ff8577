"""The chart conformance check, run with the real Helm v3 against the tests' own charts (tests/charts/): one
chart per generation that matters and one per failure class."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
from chart_fixtures import CHARTS, CONFORMING, fixture_chart

from supersonic_interlink import contract
from supersonic_interlink.chart.helm import ChartRenderer
from supersonic_interlink.components.failed_pod_cleanup import inference_pod_selector
from supersonic_interlink.components.supersonic_release import POSTRENDER
from supersonic_interlink.config import PROJECT
from supersonic_interlink.config.stack_config import load_stack_config
from supersonic_interlink.render import stack as rendering
from supersonic_interlink.render.conformance import Expected, check, contract_findings, mounted_key

ROOT = Path(__file__).resolve().parent.parent
LUA_NOT_MOUNTED = (
    "scale-from-zero Lua filter: /etc/envoy/lua/envoy-filter.lua in container envoy of supersonic-interlink-envoy is "
    "no key of a ConfigMap the chart renders (mounted from: {})"
)


NEWEST_CHART = "inference-server"


@pytest.fixture(scope="module")
def hammer() -> Expected:
    config = load_stack_config("hammer")
    release = f"{PROJECT}:release"
    config[release] = json.dumps({**json.loads(config[release]), "chart": {"path": str(CHARTS / CONFORMING)}})
    return Expected.from_rendered(rendering.render("hammer", config))


@pytest.fixture(scope="module")
def hammer_newest() -> Expected:
    return Expected.from_rendered(rendering.render("hammer"))  # for the generation SuperSONIC main carries


def objects_of(chart: Path, expected: Expected) -> list[dict]:
    with ChartRenderer(chart, expected.release_name, expected.namespace, expected.served, ROOT / POSTRENDER) as r:
        return r.render(expected.values)


def findings_of(chart: Path, expected: Expected) -> list[str]:
    return contract_findings(objects_of(chart, expected), expected)


@pytest.mark.parametrize(
    ("values", "said"), [({"replicas": 1}, "neither"), ({"triton": {}, "inferenceServer": {}}, "both")]
)
def test_a_chart_of_no_one_generation_is_refused_naming_both_blocks(values: dict, said: str) -> None:
    with pytest.raises(contract.UnknownGeneration, match=f"declares {said} of triton: or inferenceServer:"):
        contract.generation_of_values(values)


@pytest.mark.parametrize(("chart_name", "stack"), [(CONFORMING, "hammer"), (NEWEST_CHART, "hammer_newest")])
def test_the_cleanup_selector_selects_the_inference_pods_the_chart_renders(chart_name, stack, request, tmp_path):
    expected = request.getfixturevalue(stack)
    objects = objects_of(fixture_chart(chart_name, tmp_path), expected)
    wanted = dict(
        part.split("=", 1) for part in inference_pod_selector(expected.generation, "supersonic-interlink").split(",")
    )
    pods = [
        o["spec"]["template"]["metadata"]["labels"]
        for o in objects
        if o["kind"] == "Deployment"
        and o["metadata"]["name"] != contract.CHART.envoy_object_name("supersonic-interlink")
    ]
    assert pods, "the chart renders an inference-server Deployment"
    assert all(labels.items() >= wanted.items() for labels in pods), (
        f"the cleanup's selector {wanted} must match the pods the {chart_name} chart renders: {pods}"
    )


@pytest.mark.parametrize(
    ("chart_name", "expected"),
    [
        (
            "default-one",
            "ScaledObject supersonic-interlink-keda-so: spec.minReplicaCount is 1, not 0 (keda.minReplicaCount)",
        ),
        ("no-lua-mount", LUA_NOT_MOUNTED.format("none")),
        ("lua-config-map-skipped", LUA_NOT_MOUNTED.format("supersonic-interlink-lua-config/envoy-filter.lua")),
        (
            "wrong-configmap-key",
            (
                "Envoy configuration: key 'envoy.yaml' of ConfigMap supersonic-interlink-envoy-config is not this "
                "stack's envoy.yaml in ConfigMap supersonic-interlink-envoy-config (the chart copies the external "
                "ConfigMap's key 'envoy.yaml' into it)"
            ),
        ),
    ],
)
def test_each_failure_class_chart_is_exactly_its_finding(hammer, tmp_path, chart_name, expected):
    """A 0 through `default 1` holds a Slurm GPU job forever; an unmounted Lua filter crash-loops Envoy 1.39."""
    assert findings_of(fixture_chart(chart_name, tmp_path), hammer) == [expected]


def test_a_lua_filter_calling_clusters_of_another_name_is_a_finding(hammer, tmp_path) -> None:
    chart = fixture_chart(CONFORMING, tmp_path)
    shutil.copytree(CHARTS / NEWEST_CHART / "cfg", chart / "cfg", dirs_exist_ok=True)
    assert findings_of(chart, hammer) == [
        (
            f"scale-from-zero Lua filter: never names the Envoy cluster {cluster}, which this stack's envoy.yaml "
            "defines for it to call"
        )
        for cluster in ("triton_admission", "triton_grpc_service")
    ], "a wake would call a cluster this configuration does not have (the inferenceServer rename)"


def test_the_envoy_config_map_is_served_so_a_chart_without_it_would_fail(hammer, tmp_path) -> None:
    assert [m["kind"] for m in hammer.served] == ["ConfigMap"]
    unserved = Expected(hammer.release_name, hammer.namespace, hammer.values, hammer.envoy_yaml, [], hammer.generation)
    found = check(fixture_chart("conforming", tmp_path), unserved)
    assert found == [
        (
            "the chart refuses this stack's values: execution error at (supersonic/templates/envoy-config.yaml:12:6): "
            f"ConfigMap cms/{hammer.values['envoy']['external_config']['configmap_name']} not found"
        )
    ], "the chart's own message, verbatim, without Helm's prefix and --debug hint"


def _in(objects: list, kind: str, name: str, *path: str) -> dict:
    found = next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)
    for key in path:
        found = found[key]
    return found


TRITON, ENVOY, SCALED = "supersonic-interlink-triton", "supersonic-interlink-envoy", "supersonic-interlink-keda-so"
BROKEN = {
    "no headless Service": (
        lambda o: o.remove(_in(o, "Service", TRITON)),
        f"no Service {TRITON} (the inference server's headless Service) in what the chart renders",
    ),
    "a cluster IP": (
        lambda o: _in(o, "Service", TRITON, "spec").update(clusterIP="10.0.0.1"),
        f"Service {TRITON}: spec.clusterIP is '10.0.0.1', not 'None' (a headless Service)",
    ),
    "no component label": (
        lambda o: _in(o, "Deployment", TRITON, "spec", "template", "metadata", "labels").pop(
            "app.kubernetes.io/component"
        ),
        (
            f'Deployment {TRITON}: spec.template.metadata.labels["app.kubernetes.io/component"] is None, '
            "not 'triton' (the cleanup selects by it)"
        ),
    ),
    "no nodeSelector": (
        lambda o: _in(o, "Deployment", TRITON, "spec", "template", "spec").pop("nodeSelector"),
        (
            f'Deployment {TRITON}: spec.template.spec.nodeSelector["kubernetes.io/hostname"] is None, not '
            "'interlink-hammer' (triton.nodeSelector)"
        ),
    ),
    "no toleration": (
        lambda o: _in(o, "Deployment", TRITON, "spec", "template", "spec").pop("tolerations"),
        (
            f'Deployment {TRITON}: pods lack toleration {{"key": "virtual-node.interlink/no-schedule", "operator": '
            '"Exists"}'
        ),
    ),
    "another scale target": (
        lambda o: _in(o, "ScaledObject", SCALED, "spec", "scaleTargetRef").update(name="other"),
        f"ScaledObject {SCALED}: spec.scaleTargetRef.name is 'other', not '{TRITON}' (the inference server)",
    ),
    "no trigger timeout": (
        lambda o: _in(o, "ScaledObject", SCALED, "spec", "triggers")[0]["metadata"].pop("timeout"),
        f"ScaledObject {SCALED}: first trigger's metadata.timeout is None, not '60000' (the post-renderer's)",
    ),
    "no checksum": (
        lambda o: _in(o, "Deployment", ENVOY, "spec", "template", "metadata", "annotations").clear(),
        f'Deployment {ENVOY}: spec.template.metadata.annotations["checksum/envoy-config"] is None, not ',
    ),
    "no admission port": (
        lambda o: _in(o, "Deployment", ENVOY, "spec", "template", "spec", "containers")[1].update(ports=[]),
        f"Deployment {ENVOY}: no admission sidecar listening on port 8080 (scale from zero has nothing to wake",
    ),
}


@pytest.fixture(scope="module")
def conforming_objects(hammer, tmp_path_factory) -> list:
    objects = objects_of(fixture_chart(CONFORMING, tmp_path_factory.mktemp("chart")), hammer)
    assert contract_findings(objects, hammer) == [], "the conforming chart is the baseline each case breaks once"
    return objects


@pytest.mark.parametrize(("breaks", "finding"), BROKEN.values(), ids=BROKEN.keys())
def test_each_broken_contract_is_one_finding_naming_the_object_and_field(hammer, conforming_objects, breaks, finding):
    objects = copy.deepcopy(conforming_objects)
    breaks(objects)
    (found,) = contract_findings(objects, hammer)
    assert found.startswith(finding), found


def deployment(mounts: list[dict], volumes: list[dict]) -> dict:
    return {
        "spec": {"template": {"spec": {"containers": [{"name": "envoy", "volumeMounts": mounts}], "volumes": volumes}}}
    }


def test_a_mounted_file_is_traced_to_its_config_map_key() -> None:
    whole = deployment([{"name": "c", "mountPath": "/etc/envoy"}], [{"name": "c", "configMap": {"name": "cm"}}])
    assert mounted_key(whole, "envoy", "/etc/envoy/envoy.yaml") == ("cm", "envoy.yaml")
    items = deployment(
        [{"name": "l", "mountPath": "/etc/envoy/lua"}],
        [{"name": "l", "configMap": {"name": "lua", "items": [{"key": "k", "path": "envoy-filter.lua"}]}}],
    )
    assert mounted_key(items, "envoy", "/etc/envoy/lua/envoy-filter.lua") == ("lua", "k")
    assert mounted_key(items, "envoy", "/etc/envoy/lua/other.lua") is None, "items limit the files to those listed"
    sub = deployment(
        [{"name": "c", "mountPath": "/etc/envoy/envoy.yaml", "subPath": "config.yaml"}],
        [{"name": "c", "configMap": {"name": "cm"}}],
    )
    assert mounted_key(sub, "envoy", "/etc/envoy/envoy.yaml") == ("cm", "config.yaml")
    assert mounted_key(sub, "admission", "/etc/envoy/envoy.yaml") is None, "another container's mount does not count"
