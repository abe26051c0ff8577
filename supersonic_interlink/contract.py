"""Every name the SuperSONIC chart decides, in one table: ``CHART`` for what every generation shares, one
``Generation`` row each (``TRITON``: 0.3.x up to the rename; ``INFERENCE_SERVER``: main since), read from the chart."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ChartContract:
    """Names every supported chart generation fixes the same way."""

    chart_name: str = "supersonic"  # the app.kubernetes.io/name label on the chart's pods
    envoy_values_key: str = "envoy"
    envoy_component: str = "envoy"
    envoy_config_suffix: str = "envoy-config"  # the chart's own ConfigMap, where it copies the external one
    envoy_config_path: str = "/etc/envoy/envoy.yaml"  # the chart's entrypoint runs envsubst over it
    envoy_container: str = "envoy"
    admission_container: str = "admission"  # the sidecar in the Envoy pod answering the Lua filter's /wake
    scaled_object_suffix: str = "keda-so"
    name_label: str = "app.kubernetes.io/name"
    instance_label: str = "app.kubernetes.io/instance"
    component_label: str = "app.kubernetes.io/component"
    admin_cluster: str = "envoy_admin"  # the Lua filter reads Envoy's own /stats through it
    lua_filter_path: str = "/etc/envoy/lua/envoy-filter.lua"
    admission_host: str = "127.0.0.1"
    envoy_config_key: str = "envoy.yaml"  # envoy.external_config.configmap_key
    repository_index_path: str = "/inference.GRPCInferenceService/RepositoryIndex"  # a session's first: it wakes
    ready_timeout_margin_seconds: int = 120
    """Added to ``readyTimeoutSeconds`` for the RepositoryIndex route's ``idle_timeout``: /wake (30 s), a
    Prometheus query (5 s), the route's retries (~41 s) and slack."""
    inference_grpc_port: int = 8001
    envoy_grpc_port: int = 8001  # the chart's Envoy Service and probes take no value for it
    envoy_admin_port: int = 9901
    admission_port: int = 8080  # fixed in the sidecar's own code
    route_config_name: str = "local_route_grpc"
    loopback_connect_timeout_ms: int = 1000  # the chart's two loopback clusters; Envoy's default is 5 s
    model_repository_claim: str = "cvmfs"  # one per namespace, kept on uninstall (templates/cvmfs-pvc.yaml)
    model_repository_storage_class: str = "cvmfs"
    hold_annotation_variable: str = "HOLD_ANNOTATION"
    """The constant in ``cfg/admission-server.py`` naming the annotation of a wake's deadline, read from that code."""
    external_config_guard: str = "is incompatible with envoy.external_config.load_from_configmap"
    """The chart's ``fail`` refusing scale from zero with an external Envoy config (templates/envoy/admission.yaml)."""
    guarded_commits: Mapping[str, str] = field(
        default_factory=lambda: {
            "db73925a34eba2cd018e41338e0b1917c1640600": "templates/envoy/admission.yaml:9",
            "098d4a6c1411d22a748e7a7de4ff30eea10bf32d": "templates/envoy/admission.yaml:9",
        }
    )
    """Commits read to carry that ``fail``, with its line: a pin of one is refused before anything is fetched."""
    inherited_deprecations: tuple[str, ...] = ("envoy.config.cluster.v3.Cluster.dns_refresh_rate",)
    """Deprecated fields the chart's own generated config uses: ``envoy --mode validate``'s warning is not counted."""
    name_override_values: tuple[str, ...] = ("nameOverride", "fullnameOverride")
    """Values that rename the chart's objects (``supersonic.name`` in ``_helpers.tpl``): refused in ``helmValues``."""

    def instance_name(self, release_name: str) -> str:
        return release_name  # this program never sets nameOverride

    def envoy_object_name(self, release_name: str) -> str:
        return f"{self.instance_name(release_name)}-{self.envoy_component}"

    def envoy_service_name(self, release_name: str) -> str:
        return self.instance_name(release_name)

    def envoy_config_map_name(self, release_name: str) -> str:
        return f"{self.instance_name(release_name)}-{self.envoy_config_suffix}"

    def scaled_object_name(self, release_name: str) -> str:
        return f"{self.instance_name(release_name)}-{self.scaled_object_suffix}"

    def client_endpoint_host(self, release_name: str, namespace: str) -> str:
        return f"{self.instance_name(release_name)}.{namespace}.svc.cluster.local"


CHART = ChartContract()


@dataclass(frozen=True)
class Generation:
    """What one chart generation names its own way: one row of the table below."""

    inference_values_key: str
    """Top-level values block of the inference server: the chart's ``values.yaml`` declaring it tells the generation."""
    inference_component: str
    """``app.kubernetes.io/component`` of the inference-server pods, suffix of their Deployment and Service."""
    inference_cluster: str  # the Envoy cluster the routes target
    admission_cluster: str
    wake_timeout_status: str
    """gRPC status the Lua filter answers a RepositoryIndex with when no server was ready in ``readyTimeoutSeconds``."""
    wake_timeout_code: int
    wake_timeout_message: str

    @property
    def name(self) -> str:
        return self.inference_values_key

    def inference_object_name(self, release_name: str) -> str:
        return f"{CHART.instance_name(release_name)}-{self.inference_component}"

    def inference_service_fqdn(self, release_name: str, namespace: str) -> str:
        return f"{self.inference_object_name(release_name)}.{namespace}.svc.cluster.local."  # no search-domain walk

    def inference_pod_labels(self, release_name: str) -> dict[str, str]:
        return {
            CHART.name_label: CHART.chart_name,
            CHART.instance_label: CHART.instance_name(release_name),
            CHART.component_label: self.inference_component,
        }


TRITON = Generation(
    inference_values_key="triton",
    inference_component="triton",
    inference_cluster="triton_grpc_service",
    admission_cluster="triton_admission",
    # cfg/envoy-filter.lua at c292baf1: the response filter sets grpc-status 1 and drops the grpc-message.
    wake_timeout_status="CANCELLED",
    wake_timeout_code=1,
    wake_timeout_message="",
)

INFERENCE_SERVER = Generation(
    inference_values_key="inferenceServer",
    inference_component="inference-server",
    inference_cluster="inference_server_grpc_service",
    admission_cluster="inference_server_admission",
    # cfg/envoy-filter.lua at 098d4a6c: the router finds no healthy host; grpc-status 14, Envoy's grpc-message kept.
    wake_timeout_status="UNAVAILABLE",
    wake_timeout_code=14,
    wake_timeout_message="no healthy upstream",
)

GENERATIONS = (TRITON, INFERENCE_SERVER)
NEWEST = GENERATIONS[-1]  # what SuperSONIC main carries: an unpinned git chart is rendered with it
WAKE_TIMEOUT_STATUSES = frozenset(g.wake_timeout_status for g in GENERATIONS)  # a wake history can span an upgrade


class UnknownGeneration(ValueError):
    pass


def generation_of_values(values: object) -> Generation:
    """The generation whose inference-server block the chart's own ``values.yaml`` declares at the top level."""
    found = [g for g in GENERATIONS if isinstance(values, dict) and g.inference_values_key in values]
    if len(found) != 1:
        blocks = " or ".join(f"{g.inference_values_key}:" for g in GENERATIONS)
        said = "both" if found else "neither"
        raise UnknownGeneration(f"its values.yaml declares {said} of {blocks}; this program supports exactly those two")
    return found[0]
