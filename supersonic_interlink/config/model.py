"""The shape of every config key and its one default: the pydantic models of the stack settings (strict, unknown keys
refused, frozen), the rules within a section as its model validators and the rules across keys as ``Settings``'.
``Pulumi.yaml``'s ``type``, ``description`` (a field's docstring) and ``default`` of each key are generated from them
(``schema``). A stack's partial object is merged over the default key by key (``Section``), except ``release.chart``,
which is replaced whole."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, ConfigDict, Field, PrivateAttr, ValidationError, model_validator
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


def thaw(value: Any) -> Any:
    """Plain dicts and lists again, for YAML/JSON output and for Pulumi inputs; an optional field left unset is left
    out."""
    if isinstance(value, Model):
        fields = [n for n in type(value).model_fields if getattr(value, n) is not None or n in value.model_fields_set]
        return {name: thaw(getattr(value, name)) for name in fields}
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def first_broken(*rules: tuple[Any, str, Any, str]) -> None:
    """Raise the first of ``(broken, field, value, text)`` that is broken, at its field."""
    for broken, field, value, text in rules:
        if broken:
            raise fail_at(field, value, text)


def empty() -> Any:
    """An empty object or list as a field's default (validated, and so frozen, like a given one)."""
    return Field(default_factory=dict)


def made(cls: type[Model], **values: Any) -> Any:
    """A nested model as a field's default."""
    return Field(default_factory=lambda: cls(**values))


class Section(Model):
    """A model whose object-valued fields merge a stack's partial object over their default."""

    model_config = ConfigDict(use_attribute_docstrings=True)
    replaced_whole: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _under_defaults(cls, given: Any) -> Any:
        if not isinstance(given, dict):
            return given
        merged = dict(given)
        for name, info in cls.model_fields.items():
            default = info.get_default(call_default_factory=True)
            if isinstance(default, Model) and isinstance(merged.get(name), dict) and name not in cls.replaced_whole:
                merged[name] = {**thaw(default), **merged[name]}
        return merged


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

# ---------------------------------------------------------------------------------------- placement and Triton


class Toleration(Model):
    """A Kubernetes toleration, with the API server's rules (validation.go ``ValidateTolerations``)."""

    key: QualifiedName | None = None
    operator: Annotated[str, OneOf("Exists", "Equal")] | None = None
    value: LabelValue | None = None
    effect: Annotated[str, OneOf("NoSchedule", "PreferNoSchedule", "NoExecute")] | None = None
    tolerationSeconds: Int64Exact | None = None

    @model_validator(mode="after")
    def _as_the_api_server_checks(self) -> Toleration:
        first_broken(
            (
                not self.key and self.operator != "Exists",
                "operator",
                self.operator,
                "Exists when key is empty (the API server: an empty key with Exists matches every taint)",
            ),
            (
                self.operator == "Exists" and self.value,
                "value",
                self.value,
                "no value with operator Exists (the API server refuses one)",
            ),
            (
                self.tolerationSeconds is not None and self.effect != "NoExecute",
                "effect",
                self.effect,
                "NoExecute when tolerationSeconds is set (the API server refuses any other effect)",
            ),
        )
        return self


Tolerations = Annotated[list[Toleration], Frozen, Expect("a list of tolerations")]


class ResourceRequirements(Model):
    """A container's resources: quantities by resource name (cpu, memory, nvidia.com/gpu, ...)."""

    requests: Quantities = empty()
    limits: Quantities = empty()

    @model_validator(mode="after")
    def _as_the_api_server_checks(self) -> ResourceRequirements:
        # validation.go ValidateContainerResourceRequirements and ValidateResourceQuantityValue.
        for name, quantity in {**self.limits, **self.requests}.items():
            where = "requests" if name in self.requests else "limits"
            if not overcommit_allowed(name) and quantity_value(quantity).denominator != 1:
                raise fail_at(f"{where}.{name}", quantity, "a whole number (the API server: must be an integer)")
        for name, request in self.requests.items():
            limit = self.limits.get(name)
            native = overcommit_allowed(name)
            if limit is None and not native:
                raise fail_at(
                    f"limits.{name}",
                    None,
                    "a limit equal to the request (the API server: Limit must be set for non overcommitable resources)",
                )
            if limit is not None and not native and quantity_value(request) != quantity_value(limit):
                text = "the limit ({limit}): the API server requires a request equal to the limit of a resource that "
                raise fail_at(f"requests.{name}", request, text + "cannot be overcommitted", limit=limit)
            if limit is not None and quantity_value(request) > quantity_value(limit):
                text = "at most the limit ({limit}) (the API server: must be less than or equal to the limit)"
                raise fail_at(f"requests.{name}", request, text, limit=limit)
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


class TritonSettings(Section):
    """The Triton inference server pods."""

    image: Image = "nvcr.io/nvidia/tritonserver:26.04-py3"
    command: Annotated[Strings, Expect("a list of strings")] = Field(default_factory=lambda: ["/bin/sh", "-c"])
    args: Annotated[
        Strings,
        Field(min_length=1),
        Expect("a non-empty list of strings (Triton's arguments; [] would start the image without a model repository)"),
    ]
    """required per stack"""
    resources: ResourceRequirements = made(
        ResourceRequirements, requests={"cpu": 2, "memory": "8G"}, limits={"cpu": 2, "memory": "8G"}
    )
    nodeSelector: LabelMap = empty()
    tolerations: Tolerations = Field(default_factory=list)
    podAnnotations: AnnotationMap = empty()
    """interLink's slurm-job.vk.io/* annotations go here"""
    service: ServiceMetadata = made(ServiceMetadata)
    modelRepository: ModelRepositorySettings = made(ModelRepositorySettings)
    readinessProbe: JSONObject = empty()
    """the chart's exec probe, in the form the chart renders it: command (list of strings), initialDelaySeconds,
    periodSeconds, timeoutSeconds, successThreshold, failureThreshold (the chart renders no grpc or httpGet handler);
    {} keeps the chart's"""
    startupProbe: JSONObject = empty()
    """the chart's httpGet probe: httpGet {path, port}, initialDelaySeconds, periodSeconds, failureThreshold; {} keeps
    the chart's"""


# ---------------------------------------------------------------------------------------- Envoy


class OutlierDetectionSettings(Model):
    """Outlier ejection on the Triton cluster."""

    consecutive5xx: EnvoyCount = 5
    consecutiveGatewayFailure: EnvoyCount = 5
    intervalSeconds: EnvoySeconds = 10
    baseEjectionTimeSeconds: EnvoySeconds = 30
    maxEjectionPercent: Annotated[int, Limits(1, 100, "a percentage")] = 50


class BackOff(Model):
    """A retry policy's back-off, which Envoy refuses with a base interval above the maximum."""

    @model_validator(mode="after")
    def _back_off(self) -> BackOff:
        base, most = vars(self)["backOffBaseMs"], vars(self)["backOffMaxMs"]
        if base > most:
            text = "a value <= backOffMaxMs ({backOffMaxMs}); Envoy refuses a base interval above the maximum"
            raise fail_at("backOffBaseMs", base, text, backOffMaxMs=most)
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


class EnvoySettings(Section):
    """The Envoy proxy in front of Triton and the configuration this program computes for it. Envoy's ports are the
    chart's (8001, 9901, 8080), not settings: the chart takes no value for them."""

    image: Image = "envoyproxy/envoy:v1.39.1"
    nodeSelector: LabelMap = empty()
    tolerations: Tolerations = Field(default_factory=list)
    serviceType: Annotated[str, OneOf("LoadBalancer", "ClusterIP", "NodePort")] = "ClusterIP"
    loadBalancerPolicy: Annotated[str, OneOf("ROUND_ROBIN", "LEAST_REQUEST", "RANDOM", "RING_HASH", "MAGLEV")] = (
        "ROUND_ROBIN"
    )
    """of the Triton cluster in the computed Envoy configuration"""
    grpcRouteTimeoutSeconds: Annotated[int, Limits(0, ENVOY_DURATION_MAX_SECONDS, "seconds of an Envoy duration")] = 0
    """route timeout of both routes; 0 = none"""
    bufferMaxRequestBytes: EnvoyCount = 33554432
    """largest request body buffered (and so replayable); larger gets 413"""
    connectTimeoutMs: EnvoyMillis = 2000
    dnsRefreshMs: Annotated[
        int, Limits(2, ENVOY_DURATION_MAX_SECONDS * 1000, "Envoy requires a DNS refresh rate above 1 ms")
    ] = 1000
    """DNS refresh period of the Triton cluster"""
    outlierDetection: OutlierDetectionSettings = made(OutlierDetectionSettings)
    inferenceRetry: InferenceRetrySettings = made(InferenceRetrySettings)
    repositoryIndexRetry: RepositoryIndexRetrySettings = made(RepositoryIndexRetrySettings)
    circuitBreakers: CircuitBreakerSettings = made(CircuitBreakerSettings)
    """with Envoy's default maxRetries (3), when a Triton restarts under load every retry beyond the third concurrent
    one fails at once; maxRetries equal to maxRequests refuses a retry only when a new request would be refused too
    (docs/envoy.md)"""


# ---------------------------------------------------------------------------------------- the release and KEDA


class ChartSource(Model):
    """Where the SuperSONIC chart comes from.

    One of: a chart repository with an exact version (``repo``, ``name``, ``version``); a local chart directory
    (``path`` alone); or a git repository (``git`` URL, ``commit`` as a full 40-hex id, ``path`` of the chart
    inside it). A git source without ``commit`` is unpinned: it renders offline but is never deployed.
    """

    repo: ChartRepo | None = None
    name: KubernetesName | None = None
    version: ExactVersion | None = None
    path: ChartPath | None = None
    git: GitURL | None = None
    commit: GitCommit | None = None

    @property
    def kind(self) -> str:
        """``repo``, ``path`` or ``git``: which of the three sources this is."""
        return "git" if self.git is not None else "path" if self.path is not None else "repo"

    @property
    def pinned(self) -> bool:
        """Whether the source names one exact chart (a git source needs its commit)."""
        return self.kind != "git" or self.commit is not None

    @model_validator(mode="after")
    def _one_source(self) -> ChartSource:
        by_repo = (self.repo, self.name, self.version)
        allowed = "{repo, name, version} (version exact), {path} (a chart directory) or {git, commit, path}"
        if self.git is not None:
            if any(v is not None for v in by_repo) or not self.path:
                raise fail(
                    f"{allowed}; a git source takes git, commit and path (the chart's directory in the repository) "
                    f"and nothing else"
                )
            if self.path.startswith("/") or ".." in self.path.split("/"):
                text = "the chart's directory inside the git repository, relative and without '..' (for example "
                raise fail_at("path", self.path, text + "helm/supersonic)")
        elif self.commit is not None:
            raise fail(f"{allowed}; commit goes with git")
        elif self.path is not None and any(v is not None for v in by_repo):
            raise fail(f"{allowed}, not a mix")
        elif self.path is None and any(v is None for v in by_repo):
            raise fail(allowed)
        return self


class ReleaseSettings(Section):
    """The SuperSONIC Helm release."""

    replaced_whole = frozenset({"chart"})

    name: ReleaseName
    """required per stack. Helm release name and the chart's instance name: it names the Triton Deployment/Service
    (<name>-triton), the Envoy Service clients use (<name>) and the cleanup objects. Changing it (or namespace)
    replaces the release: refused unless release.removable (docs/engine.md: Removing or renaming a release)"""
    chart: ChartSource = made(
        ChartSource, git="https://github.com/fastmachinelearning/SuperSONIC", path="helm/supersonic"
    )
    """{repo, name, version} with an exact version, {path} to a chart directory, or {git, commit, path}: an https git
    URL, a full 40-hex commit and the chart's directory in it (without commit it renders offline, but preview and up
    refuse it; `./supersonic render <stack> --pin-chart [REF]` writes the commit). Replaced whole, not merged"""
    maxHistory: PositiveInt32 = 10
    """Helm revisions kept for `helm rollback`"""
    adopt: bool = False
    """take over a Helm release of this name that already runs in the namespace instead of installing one
    (docs/takeover.md)"""
    removable: bool = False
    """false protects the release: pulumi destroy, a rename of release.name or namespace, and removing it from the
    program are refused, and the pull-request preview fails on them. Set true in a reviewed change to uninstall or
    rename on purpose (docs/engine.md: Removing or renaming a release)"""


class ScaleFromZeroSettings(Section):
    """Scale from zero (SuperSONIC #90): Envoy's Lua filter wakes Triton on a client's first RepositoryIndex."""

    enabled: bool = True
    """turn it on; requires keda.enabled"""
    readyTimeoutSeconds: Annotated[
        int,
        Limits(
            1,
            READY_TIMEOUT_MAX_SECONDS,
            f"the Helm timeout, this + {HELM_UPGRADE_MARGIN_SECONDS} s, is a Go duration, and the RepositoryIndex "
            f"idle_timeout, this + {MARGIN} s, an Envoy duration",
        ),
        Field(
            description="how long a RepositoryIndex is held waiting for a healthy Triton; the RepositoryIndex "
            f"route's idle_timeout follows at this + {MARGIN} s, derived, never set separately"
        ),
    ] = 300
    holdMinReplicasSeconds: PulumiExact = 300
    """how long a woken Triton is kept; at least readyTimeoutSeconds"""
    admissionImage: Image | None = None
    """image of the chart's admission sidecar (scaleFromZero.admissionImage); unset: the chart's own default"""


class ScalingPolicy(Model):
    """One direction of KEDA's scaling behaviour (a Kubernetes HPA policy)."""

    stabilizationWindowSeconds: Annotated[int, Limits(0, HPA_MAX_STABILIZATION_WINDOW_SECONDS, "Kubernetes' HPA limit")]
    periodSeconds: Annotated[int, Limits(1, HPA_MAX_PERIOD_SECONDS, "Kubernetes' HPA limit")]
    stepsize: PositiveInt32


class KedaSettings(Section):
    """KEDA autoscaling of the Triton Deployment."""

    enabled: bool = True
    """required while scaleFromZero.enabled"""
    minReplicaCount: Int32 = 0
    """0 only with scale from zero"""
    maxReplicaCount: PositiveInt32 = 10
    scaleUp: ScalingPolicy = made(ScalingPolicy, stabilizationWindowSeconds=120, periodSeconds=120, stepsize=1)
    scaleDown: ScalingPolicy = made(ScalingPolicy, stabilizationWindowSeconds=120, periodSeconds=30, stepsize=1)
    # The live release's: the chart's template once hard-coded Value, and a later values.yaml defaults to
    # AverageValue, which would divide the load by the replica count.
    metricType: Annotated[str, OneOf("Value", "AverageValue")] = "Value"
    """how KEDA compares serverLoad with its threshold: Value (the whole release's load) or AverageValue (per replica);
    always passed, since the chart's default moved from Value to AverageValue"""
    pollingInterval: PositiveInt32 | None = None
    """seconds between KEDA's queries of the load metric; unset: the chart's own default"""
    cooldownPeriod: Int32 | None = None
    """seconds KEDA waits after the last active load before scaling to minReplicaCount; unset: the chart's own
    default"""

    @model_validator(mode="after")
    def _min_within_max(self) -> KedaSettings:
        if self.minReplicaCount > self.maxReplicaCount:
            text = "a value <= keda.maxReplicaCount ({max})"
            raise fail_at("minReplicaCount", self.minReplicaCount, text, max=self.maxReplicaCount)
        return self


class ServerLoadSettings(Section):
    """The load signal KEDA scales on."""

    metric: str = ""
    """PromQL for the chart's serverLoadMetric; empty keeps the chart's"""
    threshold: PulumiExact = 20
    """serverLoadThreshold"""


class PrometheusSettings(Section):
    """The cluster's Prometheus that KEDA queries (the chart's prometheus.external)."""

    url: Host
    """required per stack: host name without scheme or port"""
    port: Port = 9090
    scheme: Annotated[str, OneOf("http", "https")] = "http"


class CleanupSettings(Section):
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
    """The rules that span top-level keys, each at the field it names. ``load_settings`` runs them whenever their
    sections parsed, so an error in another section does not hide them."""
    shorter = (
        "a value >= scaleFromZero.readyTimeoutSeconds ({ready}); the chart refuses a hold shorter than the wake it "
        "protects"
    )
    rules = (
        (
            sfz.enabled and sfz.holdMinReplicasSeconds < sfz.readyTimeoutSeconds,
            ("scaleFromZero", "holdMinReplicasSeconds", sfz.holdMinReplicasSeconds),
            shorter,
        ),
        (
            sfz.enabled and not keda.enabled,
            ("keda", "enabled", False),
            "true while scaleFromZero.enabled is true (KEDA is what scales Triton back down)",
        ),
        (
            keda.minReplicaCount == 0 and not sfz.enabled,
            ("keda", "minReplicaCount", 0),
            ">= 1 unless scaleFromZero.enabled is true (nothing would wake Triton from zero)",
        ),
    )
    return [
        InitErrorDetails(type=fail_at(field, value, text, ready=sfz.readyTimeoutSeconds), loc=(key,), input=value)
        for broken, (key, field, value), text in rules
        if broken
    ]


def _keeps_chart_names(values: Mapping[str, Any]) -> Mapping[str, Any]:
    for key in CHART.name_override_values:
        if key in values:
            raise fail_at(
                key,
                values[key],
                "no value: it renames the chart's objects, and Envoy's route to Triton, the cleanup's selector and "
                "the exported endpoint are computed from release.name alone (rename with release.name)",
            )
    return values


class Settings(Section):
    """Everything one stack deploys. Top-level fields are the project's config keys."""

    namespace: KubernetesName
    """Namespace of the Helm release, the Envoy ConfigMap and the cleanup CronJob. Required per stack."""
    release: ReleaseSettings
    scaleFromZero: ScaleFromZeroSettings = made(ScaleFromZeroSettings)
    keda: KedaSettings = made(KedaSettings)
    serverLoad: ServerLoadSettings = made(ServerLoadSettings)
    prometheus: PrometheusSettings
    triton: TritonSettings
    envoy: EnvoySettings = made(EnvoySettings)
    cleanup: CleanupSettings = made(CleanupSettings)
    helmValues: Annotated[Mapping[str, Any], Frozen, AfterValidator(_keeps_chart_names), Expect("an object")] = empty()
    """Extra chart values for what the keys above do not model, deep-merged underneath the computed values. A key
    here that the program computes is an error, never a silent override."""
    deliberateProviderConfig: Annotated[
        Mapping[Annotated[str, OneOf(*CHANGES_UP)], Annotated[str, Field(min_length=1), Expect("the reason, as text")]],
        Frozen,
        Expect("an object: provider or engine key -> why this stack sets it"),
    ] = empty()
    """kubernetes: and pulumi: keys this stack sets on purpose although they change what pulumi up does
    (kubernetes:renderYamlToDirectory deploys nothing, kubernetes:deleteUnreachable drops resources from the state,
    ...), each with the reason; such a key set but not listed here is refused, and one listed but not set too"""

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
        """The chart generation of ``release.chart`` (``config.generation.select``): the names the chart gives the
        inference server. ``load_settings`` always sets it from the chart."""
        return self._generation

    @property
    def secret_keys(self) -> frozenset[str]:
        """Top-level keys whose value the CLI passed as a secret (``pulumi config set --secret``)."""
        return self._secret_keys

    def is_secret(self, *keys: str) -> bool:
        """Whether any of these top-level keys came from a secret."""
        return any(key in self._secret_keys for key in keys)


SECRET_CAPABLE = ("helmValues", "triton", "envoy", "cleanup", "serverLoad", "prometheus", "keda", "scaleFromZero")
"""Top-level keys that may be secrets. ``namespace`` and ``release`` name objects, URNs' neighbours and the exported
endpoint: a secret there could not stay secret, so it is refused."""
