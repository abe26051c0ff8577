"""Every name the SuperSONIC chart decides, in one table.

The program never spells a chart-owned name anywhere else: object names, pod labels, values keys, Envoy
cluster names and mount paths all come from here. ``CHART`` holds what every chart generation shares; a
``Generation`` row holds what one generation names its own way. Two generations are supported:

- ``TRITON``: SuperSONIC 0.3.x and the scale-from-zero commits of main up to the rename (``triton:`` values,
  ``<release>-triton`` objects, ``triton_*`` Envoy clusters, CANCELLED on a wake that timed out);
- ``INFERENCE_SERVER``: main from the rename on (``inferenceServer:`` values, which ``fail`` on a ``triton:``
  block, ``<release>-inference-server`` objects, ``inference_server_*`` clusters, UNAVAILABLE on a timed-out wake).

A stack's row is selected from its chart (``generation_of_values``: the top-level values block the chart
declares), never typed in the stack; a new generation is one more row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ChartContract:
    """Names every supported chart generation fixes the same way."""

    chart_name: str = "supersonic"
    """Value of the ``app.kubernetes.io/name`` label the chart puts on its pods (its ``.Chart.Name``)."""
    envoy_values_key: str = "envoy"
    """Top-level values block of the Envoy proxy (its image, placement, Service, external configuration)."""
    envoy_component: str = "envoy"
    """Suffix of the Envoy Deployment and ConfigMap names."""
    envoy_config_suffix: str = "envoy-config"
    """Suffix of the chart's own Envoy ConfigMap, into which it copies the external configuration it looks up."""
    envoy_config_path: str = "/etc/envoy/envoy.yaml"
    """Where the Envoy container reads its configuration: the chart's entrypoint runs ``envsubst`` over this file."""
    envoy_container: str = "envoy"
    """Name of the Envoy container in the Envoy pod (the one that must mount the configuration and the Lua filter)."""
    admission_container: str = "admission"
    """Name of the scale-from-zero admission sidecar in the Envoy pod (it answers the Lua filter's /wake)."""
    scaled_object_suffix: str = "keda-so"
    """Suffix of the KEDA ScaledObject name."""
    name_label: str = "app.kubernetes.io/name"
    instance_label: str = "app.kubernetes.io/instance"
    component_label: str = "app.kubernetes.io/component"
    admin_cluster: str = "envoy_admin"
    """Envoy cluster the Lua filter reads Envoy's own ``/stats`` through."""
    lua_filter_path: str = "/etc/envoy/lua/envoy-filter.lua"
    """Where the chart mounts its scale-from-zero Lua filter in the Envoy container."""
    admission_host: str = "127.0.0.1"
    """Loopback address the admission sidecar listens on inside the Envoy pod."""
    envoy_config_key: str = "envoy.yaml"
    """Key of the external ConfigMap the chart copies (``envoy.external_config.configmap_key``)."""
    repository_index_path: str = "/inference.GRPCInferenceService/RepositoryIndex"
    """First call of every client session; the Lua filter wakes Triton on it."""
    ready_timeout_margin_seconds: int = 120
    """What the chart adds to ``readyTimeoutSeconds`` for the RepositoryIndex route's ``idle_timeout``: the
    /wake call (30 s), a Prometheus query (5 s), the route's own retries (~41 s) and scheduling slack."""
    inference_grpc_port: int = 8001
    """gRPC port of the headless inference Service (Triton's own port), the Envoy cluster's endpoint port."""
    envoy_grpc_port: int = 8001
    """Port of Envoy's client listener: the chart's Envoy Service and probes target it and take no value for it."""
    envoy_admin_port: int = 9901
    """Envoy's admin port: the chart's Envoy probes and the Lua filter's ``envoy_admin`` cluster use it."""
    admission_port: int = 8080
    """Port of the chart's admission sidecar in the Envoy pod (fixed in the sidecar's own code)."""
    route_config_name: str = "local_route_grpc"
    """Name of the route configuration in the chart's generated Envoy config (``/config_dump`` shows it)."""
    loopback_connect_timeout_ms: int = 1000
    """Connect timeout the chart's config gives the two loopback clusters (``admission_cluster``, ``admin_cluster``);
    Envoy's own default, when the field is left out, is 5 s."""
    model_repository_claim: str = "cvmfs"
    """Name of the PersistentVolumeClaim the chart makes for ``storageType: cvmfs-pvc`` (once per namespace, not
    named after the release, created only when none exists and kept on uninstall: ``templates/cvmfs-pvc.yaml``)."""
    model_repository_storage_class: str = "cvmfs"
    """Storage class that claim asks for (the CVMFS CSI driver's, on Geddes)."""
    hold_annotation_variable: str = "HOLD_ANNOTATION"
    """Name of the constant in the chart's admission sidecar code (``cfg/admission-server.py``, deployed in a ConfigMap
    of the release) that names the ScaledObject annotation holding a wake's deadline (``db73925`` has one; c292baf
    keeps the hold in memory). The annotation is read from that code, never assumed."""
    external_config_guard: str = "is incompatible with envoy.external_config.load_from_configmap"
    """What the chart's ``fail`` says when it refuses ``scaleFromZero.enabled`` together with
    ``envoy.external_config.load_from_configmap`` (``templates/envoy/admission.yaml`` at 6003f24, db73925 and
    098d4a6c): a commit that carries it cannot run this program's Envoy configuration."""
    guarded_commits: Mapping[str, str] = field(
        default_factory=lambda: {
            # templates/envoy/admission.yaml, read at each commit in the stored copy of the chart's repository.
            "db73925a34eba2cd018e41338e0b1917c1640600": "templates/envoy/admission.yaml:9",
            "098d4a6c1411d22a748e7a7de4ff30eea10bf32d": "templates/envoy/admission.yaml:9",
        }
    )
    """Commits of the chart's repository known to carry that ``fail``, each with the template line it stands on: a pin
    of one is refused before anything is fetched, and ``render --check`` names it offline. Only commits whose full id
    was read are here (6003f24 and c292baf were seen by their short ids); any other commit is read for the guard once
    fetched."""
    inherited_deprecations: tuple[str, ...] = ("envoy.config.cluster.v3.Cluster.dns_refresh_rate",)
    """Fields Envoy calls deprecated that the chart's own generated configuration uses, and so this program's too
    (it follows that configuration): ``envoy --mode validate`` warns of them, and the check does not count them."""
    name_override_values: tuple[str, ...] = ("nameOverride", "fullnameOverride")
    """Top-level values that rename the chart's objects (``supersonic.name`` in ``templates/_helpers/_helpers.tpl``
    reads ``nameOverride``; ``fullnameOverride`` is the usual Helm spelling of the same): every name below is
    computed from the release name alone, so the program refuses them in ``helmValues``."""

    def instance_name(self, release_name: str) -> str:
        """The chart's instance name: ``nameOverride`` or the release name (this program never overrides)."""
        return release_name

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

    def client_endpoint_host(self, release_name: str, namespace: str) -> str:
        """In-cluster DNS name clients use to reach Envoy (the chart's Service named after the instance)."""
        return f"{self.instance_name(release_name)}.{namespace}.svc.cluster.local"


CHART = ChartContract()


@dataclass(frozen=True)
class Generation:
    """What one chart generation names its own way: one row of the table below."""

    inference_values_key: str
    """Top-level values block of the inference server; the chart's own ``values.yaml`` declares it, which is how a
    chart's generation is told (``generation_of_values``)."""
    inference_component: str
    """``app.kubernetes.io/component`` of the inference-server pods and suffix of their Deployment/Service."""
    inference_cluster: str
    """Envoy cluster the chart's Lua filter reads ``membership_healthy`` of; also the routes' target."""
    admission_cluster: str
    """Envoy cluster the Lua filter sends ``/wake`` and ``/sleep`` to (the admission sidecar)."""
    wake_timeout_status: str
    """gRPC status (by name) the Lua filter answers a RepositoryIndex with when no healthy inference server appeared
    within ``readyTimeoutSeconds``."""
    wake_timeout_code: int
    """The same status as the number in its ``grpc-status`` header."""
    wake_timeout_message: str
    """The ``grpc-message`` of that answer (empty: the filter sends none)."""

    @property
    def name(self) -> str:
        """How docs and messages call the generation: by its inference-server values block."""
        return self.inference_values_key

    def inference_object_name(self, release_name: str) -> str:
        """Name of the inference-server Deployment and of its headless Service."""
        return f"{CHART.instance_name(release_name)}-{self.inference_component}"

    def inference_service_fqdn(self, release_name: str, namespace: str) -> str:
        """Absolute DNS name of the headless inference Service; the trailing dot skips the search-domain walk."""
        return f"{self.inference_object_name(release_name)}.{namespace}.svc.cluster.local."

    def inference_pod_labels(self, release_name: str) -> dict[str, str]:
        """Labels that select exactly this release's inference-server pods (the cleanup's selector)."""
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
    # cfg/envoy-filter.lua at c292baf1: the request is not let through, and the response filter sets grpc-status 1
    # and drops the grpc-message.
    wake_timeout_status="CANCELLED",
    wake_timeout_code=1,
    wake_timeout_message="",
)

INFERENCE_SERVER = Generation(
    inference_values_key="inferenceServer",
    inference_component="inference-server",
    inference_cluster="inference_server_grpc_service",
    admission_cluster="inference_server_admission",
    # cfg/envoy-filter.lua at 098d4a6c (the file is not stored at 42b2b933): after the wait the request goes on to the
    # router, which finds no healthy host; the response filter sets grpc-status 14 and keeps Envoy's own grpc-message,
    # writing its own reason only where Envoy gave none.
    wake_timeout_status="UNAVAILABLE",
    wake_timeout_code=14,
    wake_timeout_message="no healthy upstream",
)

GENERATIONS = (TRITON, INFERENCE_SERVER)
"""Every supported generation, oldest first."""

NEWEST = GENERATIONS[-1]
"""What SuperSONIC main carries: the generation an unpinned git chart is rendered with (pinning reads the chart)."""

WAKE_TIMEOUT_STATUSES = frozenset(g.wake_timeout_status for g in GENERATIONS)
"""Every status a generation's Lua filter answers a timed-out wake with: a wake history can span a chart upgrade."""


class UnknownGeneration(ValueError):
    """The chart's values declare no supported generation's inference-server block, or more than one."""


def generation_of_values(values: object) -> Generation:
    """The generation whose inference-server block the chart's own ``values.yaml`` declares at the top level."""
    keys = set(values) if isinstance(values, dict) else set()
    found = [g for g in GENERATIONS if g.inference_values_key in keys]
    if len(found) == 1:
        return found[0]
    blocks = " or ".join(f"{g.inference_values_key}:" for g in GENERATIONS)
    said = "both" if found else "neither"
    raise UnknownGeneration(f"its values.yaml declares {said} of {blocks}; this program supports exactly those two")
