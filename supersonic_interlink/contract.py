"""Every name the SuperSONIC chart decides, in one table.

The program never spells a chart-owned name anywhere else: object names, pod labels, values keys, Envoy
cluster names and mount paths all come from ``CHART``. Later chart generations rename ``triton`` to
``inferenceServer`` (values key, object names, Envoy cluster names); moving to one of them is a change to this
table alone.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChartContract:
    """Names fixed by the chart generation this program targets (the ``triton`` naming)."""

    chart_name: str
    """Value of the ``app.kubernetes.io/name`` label the chart puts on its pods (its ``.Chart.Name``)."""
    inference_values_key: str
    """Top-level values block of the inference server (``triton`` here, ``inferenceServer`` later)."""
    inference_component: str
    """``app.kubernetes.io/component`` of the inference-server pods and suffix of their Deployment/Service."""
    envoy_values_key: str
    """Top-level values block of the Envoy proxy (its image, placement, Service, external configuration)."""
    envoy_component: str
    """Suffix of the Envoy Deployment and ConfigMap names."""
    envoy_config_suffix: str
    """Suffix of the chart's own Envoy ConfigMap, into which it copies the external configuration it looks up."""
    envoy_config_path: str
    """Where the Envoy container reads its configuration: the chart's entrypoint runs ``envsubst`` over this file."""
    envoy_container: str
    """Name of the Envoy container in the Envoy pod (the one that must mount the configuration and the Lua filter)."""
    admission_container: str
    """Name of the scale-from-zero admission sidecar in the Envoy pod (it answers the Lua filter's /wake)."""
    scaled_object_suffix: str
    """Suffix of the KEDA ScaledObject name."""
    name_label: str
    instance_label: str
    component_label: str
    inference_cluster: str
    """Envoy cluster the chart's Lua filter reads ``membership_healthy`` of; also the routes' target."""
    admission_cluster: str
    """Envoy cluster the Lua filter sends ``/wake`` and ``/sleep`` to (the admission sidecar)."""
    admin_cluster: str
    """Envoy cluster the Lua filter reads Envoy's own ``/stats`` through."""
    lua_filter_path: str
    """Where the chart mounts its scale-from-zero Lua filter in the Envoy container."""
    admission_host: str
    """Loopback address the admission sidecar listens on inside the Envoy pod."""
    envoy_config_key: str
    """Key of the external ConfigMap the chart copies (``envoy.external_config.configmap_key``)."""
    repository_index_path: str
    """First call of every client session; the Lua filter wakes Triton on it."""
    ready_timeout_margin_seconds: int
    """What the chart adds to ``readyTimeoutSeconds`` for the RepositoryIndex route's ``idle_timeout``: the
    /wake call (30 s), a Prometheus query (5 s), the route's own retries (~41 s) and scheduling slack."""
    inference_grpc_port: int
    """gRPC port of the headless inference Service (Triton's own port), the Envoy cluster's endpoint port."""
    envoy_grpc_port: int
    """Port of Envoy's client listener: the chart's Envoy Service and probes target it and take no value for it."""
    envoy_admin_port: int
    """Envoy's admin port: the chart's Envoy probes and the Lua filter's ``envoy_admin`` cluster use it."""
    admission_port: int
    """Port of the chart's admission sidecar in the Envoy pod (fixed in the sidecar's own code)."""
    route_config_name: str
    """Name of the route configuration in the chart's generated Envoy config (``/config_dump`` shows it)."""
    loopback_connect_timeout_ms: int
    """Connect timeout the chart's config gives the two loopback clusters (``admission_cluster``, ``admin_cluster``);
    Envoy's own default, when the field is left out, is 5 s."""
    model_repository_claim: str
    """Name of the PersistentVolumeClaim the chart makes for ``storageType: cvmfs-pvc`` (once per namespace, not
    named after the release, created only when none exists and kept on uninstall: ``templates/cvmfs-pvc.yaml``)."""
    model_repository_storage_class: str
    """Storage class that claim asks for (the CVMFS CSI driver's, on Geddes)."""
    name_override_values: tuple[str, ...]
    """Top-level values that rename the chart's objects (``supersonic.name`` in ``templates/_helpers/_helpers.tpl``
    reads ``nameOverride``; ``fullnameOverride`` is the usual Helm spelling of the same): every name below is
    computed from the release name alone, so the program refuses them in ``helmValues``."""

    def instance_name(self, release_name: str) -> str:
        """The chart's instance name: ``nameOverride`` or the release name (this program never overrides)."""
        return release_name

    def inference_object_name(self, release_name: str) -> str:
        """Name of the inference-server Deployment and of its headless Service."""
        return f"{self.instance_name(release_name)}-{self.inference_component}"

    def envoy_object_name(self, release_name: str) -> str:
        return f"{self.instance_name(release_name)}-{self.envoy_component}"

    def envoy_service_name(self, release_name: str) -> str:
        """The Envoy Service clients connect to: named after the instance itself."""
        return self.instance_name(release_name)

    def envoy_config_map_name(self, release_name: str) -> str:
        """The chart's own Envoy ConfigMap (``<name>-envoy-config``), the one the Envoy pods mount."""
        return f"{self.instance_name(release_name)}-{self.envoy_config_suffix}"

    def scaled_object_name(self, release_name: str) -> str:
        """Name of the KEDA ScaledObject (the admission sidecar patches its ``minReplicaCount`` at run time)."""
        return f"{self.instance_name(release_name)}-{self.scaled_object_suffix}"

    def inference_service_fqdn(self, release_name: str, namespace: str) -> str:
        """Absolute DNS name of the headless inference Service; the trailing dot skips the search-domain walk."""
        return f"{self.inference_object_name(release_name)}.{namespace}.svc.cluster.local."

    def client_endpoint_host(self, release_name: str, namespace: str) -> str:
        """In-cluster DNS name clients use to reach Envoy (the chart's Service named after the instance)."""
        return f"{self.instance_name(release_name)}.{namespace}.svc.cluster.local"

    def inference_pod_labels(self, release_name: str) -> dict[str, str]:
        """Labels that select exactly this release's inference-server pods."""
        return {
            self.name_label: self.chart_name,
            self.instance_label: self.instance_name(release_name),
            self.component_label: self.inference_component,
        }


CHART = ChartContract(
    chart_name="supersonic",
    inference_values_key="triton",
    inference_component="triton",
    envoy_values_key="envoy",
    envoy_component="envoy",
    envoy_config_suffix="envoy-config",
    envoy_config_path="/etc/envoy/envoy.yaml",
    envoy_container="envoy",
    admission_container="admission",
    scaled_object_suffix="keda-so",
    name_label="app.kubernetes.io/name",
    instance_label="app.kubernetes.io/instance",
    component_label="app.kubernetes.io/component",
    inference_cluster="triton_grpc_service",
    admission_cluster="triton_admission",
    admin_cluster="envoy_admin",
    lua_filter_path="/etc/envoy/lua/envoy-filter.lua",
    admission_host="127.0.0.1",
    envoy_config_key="envoy.yaml",
    repository_index_path="/inference.GRPCInferenceService/RepositoryIndex",
    ready_timeout_margin_seconds=120,
    inference_grpc_port=8001,
    envoy_grpc_port=8001,
    envoy_admin_port=9901,
    admission_port=8080,
    route_config_name="local_route_grpc",
    loopback_connect_timeout_ms=1000,
    model_repository_claim="cvmfs",
    model_repository_storage_class="cvmfs",
    name_override_values=("nameOverride", "fullnameOverride"),
)
