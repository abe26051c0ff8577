"""Every config key's shape and one default as pydantic models (a field's docstring is its ``Pulumi.yaml``
description); the rules within a section as its validators, those across keys as ``Settings``'."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, Field, PrivateAttr, ValidationError, model_validator
from pydantic_core import InitErrorDetails

from supersonic_interlink.config.rules import (
    CHANGES_UP,
    CLEANUP_KEEP_MAX,
    ENVOY_DURATION_MAX_SECONDS,
    HELM_UPGRADE_MARGIN_SECONDS,
    HPA_MAX_PERIOD_SECONDS,
    HPA_MAX_STABILIZATION_WINDOW_SECONDS,
    INT32_MAX,
    INT64_MAX,
    PULUMI_NUMBER_MAX,
    READY_TIMEOUT_MAX_SECONDS,
    UINT32_MAX,
    AbsolutePath,
    AnnotationMap,
    ChartPath,
    ChartRepo,
    ContainerResource,
    Cron,
    ExactVersion,
    Expect,
    Frozen,
    GitCommit,
    GitURL,
    Host,
    Image,
    JSONObject,
    KubernetesName,
    LabelMap,
    LabelValue,
    Limits,
    Model,
    NoEmptyArgument,
    OneOf,
    Port,
    QualifiedName,
    Quantity,
    ReleaseName,
    fail,
    fail_at,
    overcommit_allowed,
    quantity_value,
)
from supersonic_interlink.contract import CHART, NEWEST, Generation

MARGIN = CHART.ready_timeout_margin_seconds
READY_WHY = (
    f"the Helm timeout, this + {HELM_UPGRADE_MARGIN_SECONDS} s, is a Go duration, and the RepositoryIndex "
    f"idle_timeout, this + {MARGIN} s, an Envoy duration"
)


def thaw(value: Any) -> Any:
    """Plain dicts and lists again; an optional field left unset is left out."""
    if isinstance(value, Model):
        fields = [n for n in type(value).model_fields if getattr(value, n) is not None or n in value.model_fields_set]
        return {name: thaw(getattr(value, name)) for name in fields}
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def empty() -> Any:
    return Field(default_factory=dict)


Int32 = Annotated[int, Limits(0, INT32_MAX, "a Kubernetes int32")]
PositiveInt32 = Annotated[int, Limits(1, INT32_MAX, "a Kubernetes int32")]
PulumiExact = Annotated[int, Limits(1, PULUMI_NUMBER_MAX, "exact through Pulumi")]
EnvoyMillis = Annotated[int, Limits(1, ENVOY_DURATION_MAX_SECONDS * 1000, "milliseconds of an Envoy duration")]
EnvoySeconds = Annotated[int, Limits(1, ENVOY_DURATION_MAX_SECONDS, "seconds of an Envoy duration")]
EnvoyCount = Annotated[int, Limits(1, UINT32_MAX, "an Envoy uint32")]
Int64Exact = Annotated[
    int, Limits(-PULUMI_NUMBER_MAX, PULUMI_NUMBER_MAX, "a Kubernetes int64 that stays exact through Pulumi's numbers")
]
Quantities = Annotated[Mapping[ContainerResource, Quantity], Frozen, Expect("an object of Kubernetes quantities")]
Strings = Annotated[list[str], NoEmptyArgument, Frozen]


class Toleration(Model):
    """A Kubernetes toleration, with the API server's rules (validation.go ``ValidateTolerations``)."""

    key: QualifiedName | None = None
    operator: Annotated[str, OneOf("Exists", "Equal")] | None = None
    value: LabelValue | None = None
    effect: Annotated[str, OneOf("NoSchedule", "PreferNoSchedule", "NoExecute")] | None = None
    tolerationSeconds: Int64Exact | None = None

    @model_validator(mode="after")
    def _as_the_api_server_checks(self) -> Toleration:
        if not self.key and self.operator != "Exists":
            raise fail_at("operator", self.operator, "Exists when key is empty (the API server's rule)")
        if self.operator == "Exists" and self.value:
            raise fail_at("value", self.value, "no value with operator Exists (the API server refuses one)")
        if self.tolerationSeconds is not None and self.effect != "NoExecute":
            raise fail_at("effect", self.effect, "NoExecute when tolerationSeconds is set (the API server's rule)")
        return self


Tolerations = Annotated[list[Toleration], Frozen, Expect("a list of tolerations")]
TRITON_QUANTITIES: Mapping[str, int | str] = {"cpu": 2, "memory": "8G"}


class ResourceRequirements(Model):
    """A container's resources: quantities by resource name (cpu, memory, nvidia.com/gpu, ...); Triton's defaults."""

    requests: Quantities = Field(default_factory=lambda: TRITON_QUANTITIES)
    limits: Quantities = Field(default_factory=lambda: TRITON_QUANTITIES)

    @model_validator(mode="after")
    def _as_the_api_server_checks(self) -> ResourceRequirements:
        for name, quantity in {**self.limits, **self.requests}.items():
            where = "requests" if name in self.requests else "limits"
            if not overcommit_allowed(name) and quantity_value(quantity).denominator != 1:
                raise fail_at(f"{where}.{name}", quantity, "a whole number (the API server: must be an integer)")
        for name, request in self.requests.items():
            limit = self.limits.get(name)
            native = overcommit_allowed(name)
            if limit is None and not native:
                raise fail_at(f"limits.{name}", None, "a limit equal to the request (not overcommitable)")
            if limit is not None and not native and quantity_value(request) != quantity_value(limit):
                text = "the limit ({limit}), for a resource that cannot be overcommitted"
                raise fail_at(f"requests.{name}", request, text, limit=limit)
            if limit is not None and quantity_value(request) > quantity_value(limit):
                raise fail_at(f"requests.{name}", request, "at most the limit ({limit})", limit=limit)
        return self


class ServiceMetadata(Model):
    """Labels and annotations of the headless Triton Service."""

    labels: LabelMap = empty()
    annotations: AnnotationMap = empty()


class ModelRepositorySettings(Model):
    """Where Triton finds its models."""

    enabled: bool = True
    storageType: Annotated[str, OneOf("cvmfs-pvc", "cvmfs-hostPath", "pvc", "nfs")] = "cvmfs-pvc"
    mountPath: AbsolutePath = "/cvmfs"


class TritonSettings(Model):
    """The Triton inference server pods."""

    image: Image = "nvcr.io/nvidia/tritonserver:26.04-py3"
    command: Annotated[Strings, Expect("a list of strings")] = Field(default_factory=lambda: ["/bin/sh", "-c"])
    args: Annotated[
        Strings,
        Field(min_length=1),
        Expect("a non-empty list of strings (Triton's arguments)"),
    ]
    """required per stack"""
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    nodeSelector: LabelMap = empty()
    tolerations: Tolerations = Field(default_factory=list)
    podAnnotations: AnnotationMap = empty()
    """interLink's slurm-job.vk.io/* annotations go here"""
    service: ServiceMetadata = Field(default_factory=ServiceMetadata)
    modelRepository: ModelRepositorySettings = Field(default_factory=ModelRepositorySettings)
    readinessProbe: JSONObject = empty()
    """the chart's exec probe: command, initialDelaySeconds, periodSeconds, timeoutSeconds, successThreshold,
    failureThreshold; {} keeps the chart's"""
    startupProbe: JSONObject = empty()
    """the chart's httpGet probe: httpGet {path, port}, initialDelaySeconds, periodSeconds, failureThreshold"""


class OutlierDetectionSettings(Model):
    """Outlier ejection on the Triton cluster."""

    consecutive5xx: EnvoyCount = 5
    consecutiveGatewayFailure: EnvoyCount = 5
    intervalSeconds: EnvoySeconds = 10
    baseEjectionTimeSeconds: EnvoySeconds = 30
    maxEjectionPercent: Annotated[int, Limits(1, 100, "a percentage")] = 50


class BackOff(Model):
    """A retry policy's back-off."""

    @model_validator(mode="after")
    def _back_off(self) -> BackOff:
        base, most = vars(self)["backOffBaseMs"], vars(self)["backOffMaxMs"]
        if base > most:
            raise fail_at("backOffBaseMs", base, "a value <= backOffMaxMs ({most})", most=most)
        return self


class InferenceRetrySettings(BackOff):
    """The retry policy of the inference route."""

    numRetries: EnvoyCount = 15
    hostSelectionRetryMaxAttempts: Annotated[int, Limits(1, INT64_MAX, "an Envoy int64")] = 10
    backOffBaseMs: EnvoyMillis = 200
    backOffMaxMs: EnvoyMillis = 5000


class RepositoryIndexRetrySettings(BackOff):
    """The retry policy of the RepositoryIndex route (the chart's numbers by default)."""

    numRetries: Annotated[int, Limits(0, UINT32_MAX, "an Envoy uint32")] = 15
    perTryTimeoutMs: EnvoyMillis = 2000
    backOffBaseMs: EnvoyMillis = 250
    backOffMaxMs: EnvoyMillis = 1000


class CircuitBreakerSettings(Model):
    """Default-priority circuit-breaker thresholds of the Triton cluster (see docs/envoy.md for the choice)."""

    maxConnections: EnvoyCount = 1024
    maxPendingRequests: EnvoyCount = 1024
    maxRequests: EnvoyCount = 1024
    maxRetries: EnvoyCount = 1024


class EnvoySettings(Model):
    """The Envoy proxy in front of Triton and the configuration computed for it (its ports are the chart's)."""

    image: Image = "envoyproxy/envoy:v1.39.1"
    nodeSelector: LabelMap = empty()
    tolerations: Tolerations = Field(default_factory=list)
    serviceType: Annotated[str, OneOf("LoadBalancer", "ClusterIP", "NodePort")] = "ClusterIP"
    loadBalancerPolicy: Annotated[str, OneOf("ROUND_ROBIN", "LEAST_REQUEST", "RANDOM", "RING_HASH", "MAGLEV")] = (
        "ROUND_ROBIN"
    )
    grpcRouteTimeoutSeconds: Annotated[int, Limits(0, ENVOY_DURATION_MAX_SECONDS, "seconds of an Envoy duration")] = 0
    """route timeout of both routes; 0 = none"""
    bufferMaxRequestBytes: EnvoyCount = 33554432
    """largest request body buffered (so replayable); larger gets 413"""
    connectTimeoutMs: EnvoyMillis = 2000
    dnsRefreshMs: Annotated[
        int, Limits(2, ENVOY_DURATION_MAX_SECONDS * 1000, "Envoy requires a DNS refresh rate above 1 ms")
    ] = 1000
    """DNS refresh period of the Triton cluster"""
    outlierDetection: OutlierDetectionSettings = Field(default_factory=OutlierDetectionSettings)
    inferenceRetry: InferenceRetrySettings = Field(default_factory=InferenceRetrySettings)
    repositoryIndexRetry: RepositoryIndexRetrySettings = Field(default_factory=RepositoryIndexRetrySettings)
    circuitBreakers: CircuitBreakerSettings = Field(default_factory=CircuitBreakerSettings)
    """maxRetries equal to maxRequests: Envoy's default 3 fails every further retry when a Triton restarts under load
    (docs/envoy.md)"""


class ChartSource(Model):
    """Where the SuperSONIC chart comes from: {repo, name, version}, {path}, or {git, commit, path}; a git source
    without ``commit`` renders offline but is never deployed."""

    repo: ChartRepo | None = None
    name: KubernetesName | None = None
    version: ExactVersion | None = None
    path: ChartPath | None = None
    git: GitURL | None = None
    commit: GitCommit | None = None

    @property
    def kind(self) -> str:
        return "git" if self.git is not None else "path" if self.path is not None else "repo"

    @property
    def pinned(self) -> bool:
        return self.kind != "git" or self.commit is not None

    @model_validator(mode="after")
    def _one_source(self) -> ChartSource:
        by_repo = (self.repo, self.name, self.version)
        allowed = "{repo, name, version} (version exact), {path} (a chart directory) or {git, commit, path}"
        if self.git is not None:
            if any(v is not None for v in by_repo) or not self.path:
                raise fail(f"{allowed}; a git source takes git, commit and path and nothing else")
            if self.path.startswith("/") or ".." in self.path.split("/"):
                raise fail_at("path", self.path, "the chart's directory in the repository, relative, without '..'")
        elif self.commit is not None:
            raise fail(f"{allowed}; commit goes with git")
        elif self.path is not None and any(v is not None for v in by_repo):
            raise fail(f"{allowed}, not a mix")
        elif self.path is None and any(v is None for v in by_repo):
            raise fail(allowed)
        return self


class ReleaseSettings(Model):
    """The SuperSONIC Helm release."""

    name: ReleaseName
    """required per stack. Helm release and instance name (<name>-triton, the Envoy Service <name>, the cleanup
    objects); a change replaces the release, refused unless release.removable (docs/engine.md)"""
    chart: ChartSource = Field(
        default_factory=lambda: ChartSource(
            git="https://github.com/fastmachinelearning/SuperSONIC", path="helm/supersonic"
        )
    )
    """{repo, name, version}, {path}, or {git, commit, path} with a full 40-hex commit (without it, preview and up
    refuse; `./supersonic render <stack> --pin-chart [REF]` writes one). Replaced whole, not merged"""
    maxHistory: PositiveInt32 = 10
    """Helm revisions kept for `helm rollback`"""
    adopt: bool = False
    """take over a running Helm release of this name instead of installing one (docs/takeover.md)"""
    removable: bool = False
    """false refuses pulumi destroy, a rename of release.name or namespace and the release's removal; set true in a
    reviewed change to do so on purpose (docs/engine.md)"""


class ScaleFromZeroSettings(Model):
    """Scale from zero (SuperSONIC #90): Envoy's Lua filter wakes Triton on a client's first RepositoryIndex."""

    enabled: bool = True
    """turn it on; requires keda.enabled"""
    readyTimeoutSeconds: Annotated[int, Limits(1, READY_TIMEOUT_MAX_SECONDS, READY_WHY)] = 300
    """how long a RepositoryIndex is held waiting for a healthy Triton; its idle_timeout is this + the chart's margin"""
    holdMinReplicasSeconds: PulumiExact = 300
    """how long a woken Triton is kept; at least readyTimeoutSeconds"""
    admissionImage: Image | None = None
    """image of the chart's admission sidecar; unset: the chart's default"""


class ScalingPolicy(Model):
    """One direction of KEDA's scaling behaviour (a Kubernetes HPA policy); scaling up's defaults."""

    stabilizationWindowSeconds: Annotated[
        int, Limits(0, HPA_MAX_STABILIZATION_WINDOW_SECONDS, "Kubernetes' HPA limit")
    ] = 120
    periodSeconds: Annotated[int, Limits(1, HPA_MAX_PERIOD_SECONDS, "Kubernetes' HPA limit")] = 120
    stepsize: PositiveInt32 = 1


class ScaleDownPolicy(ScalingPolicy):
    periodSeconds: Annotated[int, Limits(1, HPA_MAX_PERIOD_SECONDS, "Kubernetes' HPA limit")] = 30


class KedaSettings(Model):
    """KEDA autoscaling of the Triton Deployment."""

    enabled: bool = True
    """required while scaleFromZero.enabled"""
    minReplicaCount: Int32 = 0
    """0 only with scale from zero"""
    maxReplicaCount: PositiveInt32 = 10
    scaleUp: ScalingPolicy = Field(default_factory=ScalingPolicy)
    scaleDown: ScaleDownPolicy = Field(default_factory=ScaleDownPolicy)
    metricType: Annotated[str, OneOf("Value", "AverageValue")] = "Value"
    """Value (the whole release's load) or AverageValue (per replica); always passed: the chart's default moved"""
    pollingInterval: PositiveInt32 | None = None
    """seconds between KEDA's queries; unset: the chart's default"""
    cooldownPeriod: Int32 | None = None
    """seconds after the last load before scaling to minReplicaCount; unset: the chart's default"""

    @model_validator(mode="after")
    def _min_within_max(self) -> KedaSettings:
        if self.minReplicaCount > self.maxReplicaCount:
            text = "a value <= keda.maxReplicaCount ({max})"
            raise fail_at("minReplicaCount", self.minReplicaCount, text, max=self.maxReplicaCount)
        return self


class ServerLoadSettings(Model):
    """The load signal KEDA scales on."""

    metric: str = ""
    """PromQL for the chart's serverLoadMetric; empty keeps the chart's"""
    threshold: PulumiExact = 20
    """serverLoadThreshold"""


class PrometheusSettings(Model):
    """The cluster's Prometheus that KEDA queries (the chart's prometheus.external)."""

    url: Host
    """required per stack: host name without scheme or port"""
    port: Port = 9090
    scheme: Annotated[str, OneOf("http", "https")] = "http"


class CleanupSettings(Model):
    """The CronJob that deletes this release's Failed Triton pods, keeping the newest for diagnosis."""

    enabled: bool = True
    schedule: Cron = "*/5 * * * *"
    keep: Annotated[int, Limits(0, CLEANUP_KEEP_MAX, "the cleanup script refuses more")] = 1
    """newest Failed pods kept (0 allowed)"""
    dryRun: bool = False
    """log what would go, delete nothing"""
    image: Image = "alpine/kubectl:1.34.1"
    nodeSelector: LabelMap = empty()
    """where the cleaner runs (not on the virtual node)"""
    tolerations: Tolerations = Field(default_factory=list)


def across_keys(sfz: ScaleFromZeroSettings, keda: KedaSettings) -> list[InitErrorDetails]:
    """The rules that span top-level keys, each at the field it names."""
    broken = []
    if sfz.enabled and sfz.holdMinReplicasSeconds < sfz.readyTimeoutSeconds:
        text = "a value >= scaleFromZero.readyTimeoutSeconds ({ready}); the chart refuses a shorter hold"
        broken.append(("scaleFromZero", "holdMinReplicasSeconds", sfz.holdMinReplicasSeconds, text))
    if sfz.enabled and not keda.enabled:
        broken.append(("keda", "enabled", False, "true while scaleFromZero.enabled is true (KEDA scales it down)"))
    if keda.minReplicaCount == 0 and not sfz.enabled:
        broken.append(("keda", "minReplicaCount", 0, ">= 1 unless scaleFromZero.enabled is true"))
    return [
        InitErrorDetails(type=fail_at(field, value, text, ready=sfz.readyTimeoutSeconds), loc=(key,), input=value)
        for key, field, value, text in broken
    ]


def _keeps_chart_names(values: Mapping[str, Any]) -> Mapping[str, Any]:
    for key in CHART.name_override_values:
        if key in values:
            raise fail_at(key, values[key], "no value: it renames the chart's objects (rename with release.name)")
    return values


class Settings(Model):
    """Everything one stack deploys; its fields are the project's config keys."""

    namespace: KubernetesName
    """Namespace of the Helm release, the Envoy ConfigMap and the cleanup CronJob. Required per stack."""
    release: ReleaseSettings
    scaleFromZero: ScaleFromZeroSettings = Field(default_factory=ScaleFromZeroSettings)
    keda: KedaSettings = Field(default_factory=KedaSettings)
    serverLoad: ServerLoadSettings = Field(default_factory=ServerLoadSettings)
    prometheus: PrometheusSettings
    triton: TritonSettings
    envoy: EnvoySettings = Field(default_factory=EnvoySettings)
    cleanup: CleanupSettings = Field(default_factory=CleanupSettings)
    helmValues: Annotated[Mapping[str, Any], Frozen, AfterValidator(_keeps_chart_names), Expect("an object")] = empty()
    """Extra chart values deep-merged underneath the computed ones; overriding a computed one is an error."""
    deliberateProviderConfig: Annotated[
        Mapping[Annotated[str, OneOf(*CHANGES_UP)], Annotated[str, Field(min_length=1), Expect("the reason, as text")]],
        Frozen,
        Expect("an object: provider or engine key -> why this stack sets it"),
    ] = empty()
    """kubernetes: and pulumi: keys set on purpose although they change what pulumi up does, each with the reason;
    such a key set but not listed is refused, and one listed but not set too"""

    _secret_keys: frozenset[str] = PrivateAttr(default_factory=frozenset)
    _generation: Generation = PrivateAttr(default=NEWEST)

    @model_validator(mode="after")
    def _across_keys(self) -> Settings:
        errors = across_keys(self.scaleFromZero, self.keda)
        if errors:
            raise ValidationError.from_exception_data("Settings", errors)
        return self

    @property
    def generation(self) -> Generation:
        """The chart generation of ``release.chart``, set by ``load_settings``."""
        return self._generation

    def is_secret(self, *keys: str) -> bool:
        return any(key in self._secret_keys for key in keys)


SECRET_CAPABLE = ("helmValues", "triton", "envoy", "cleanup", "serverLoad", "prometheus", "keda", "scaleFromZero")
"""``namespace`` and ``release`` name objects and the exported endpoint: a secret there could not stay secret."""
