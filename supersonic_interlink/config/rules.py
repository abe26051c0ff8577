"""Every config key: its shape, its one default and its rule, each from its consumer (Envoy, Kubernetes, Helm,
busybox, cron), as pydantic models (a field's docstring is its ``Pulumi.yaml`` description); the rules within a
section as its validators, those across keys as ``Settings``'."""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from fractions import Fraction
from typing import Annotated, Any

import annotated_types
from cronsim import CronSim, CronSimError
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator
from pydantic_core import PydanticCustomError, core_schema

from supersonic_interlink import ROOT
from supersonic_interlink.contract import CHART, NEWEST, Generation

PROJECT = "supersonic-interlink"
PROJECT_FILE = ROOT / "Pulumi.yaml"

KNOWN_NAMESPACES = (PROJECT, "kubernetes", "pulumi")
SECRET_PLACEHOLDER = "[secret]"
"""Text, as a decrypted secret reaches the program, what ``pulumi preview --diff`` shows for one, and what an error
prints in place of a secret's value."""

_KUBERNETES_KEYS = (  # pulumi-kubernetes v4.25.0 (f47bc2d6f199) schema.json: config.variables, helm/kubeClientSettings
    "cluster clusterIdentifier context deleteUnreachable enableConfigMapMutable enableReplaceCRD enableSecretMutable "
    "enableServerSideApply kubeconfig namespace renderYamlToDirectory skipUpdateUnreachable strictMode "
    "suppressDeprecationWarnings suppressHelmHookWarnings helmReleaseSettings kubeClientSettings"
)
# pulumi/pulumi v3.274.1: default_providers.go, autonaming, project.go PulumiTagsConfigKey, newcmd templateKey.
_ENGINE_KEYS = "autonaming disable-default-providers tags template"
PROVIDER_KEYS = (*(f"kubernetes:{k}" for k in _KUBERNETES_KEYS.split()), *(f"pulumi:{k}" for k in _ENGINE_KEYS.split()))

_CHANGES_UP = (
    "kubernetes:renderYamlToDirectory kubernetes:deleteUnreachable kubernetes:skipUpdateUnreachable "
    "kubernetes:enableServerSideApply kubernetes:enableConfigMapMutable kubernetes:enableSecretMutable "
    "kubernetes:strictMode kubernetes:helmReleaseSettings kubernetes:clusterIdentifier pulumi:autonaming "
    "pulumi:disable-default-providers"
)
CHANGES_UP = tuple(_CHANGES_UP.split())
"""Keys that change what ``pulumi up`` does (deploy nothing, drop resources from the state, ...): refused."""

INT32_MAX = 2**31 - 1
UINT32_MAX = 2**32 - 1
INT64_MAX = 2**63 - 1
CLEANUP_KEEP_MAX = 20
"""The cleanup script's KEEP_MAX: each kept pod adds a ``metadata.name!=`` term to one deletecollection URI."""
PULUMI_NUMBER_MAX = 2**53
"""Largest integer exact through Pulumi's protobuf ``Struct`` numbers (doubles)."""
ENVOY_DURATION_MAX_SECONDS = 9_223_372_035
"""Measured: Envoy 1.39.1's ``--mode validate`` refuses 9223372036 s ("Duration out-of-range")."""
HELM_UPGRADE_MARGIN_SECONDS = 300
"""Helm timeout beyond readyTimeoutSeconds: a replaced Triton queues in Slurm, plus Envoy rollout and pulls."""
READY_TIMEOUT_MAX_SECONDS = min(
    ENVOY_DURATION_MAX_SECONDS - CHART.ready_timeout_margin_seconds,
    9_223_372_036 - HELM_UPGRADE_MARGIN_SECONDS,  # the longest whole-second Go time.Duration: the Helm timeout
)
RELEASE_NAME_MAX = 33
"""``<release>-failed-pod-cleanup`` must fit a CronJob name's 52 characters."""
CRON_MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")  # robfig, no @every


def printable(text: str) -> str:
    """``text`` with control and format characters escaped, so an echoed value cannot forge lines or drive a tty."""
    return "".join(
        (repr(c)[1:-1] if c.isascii() or ord(c) <= 0xFF else f"\\u{ord(c):04x}")
        if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")
        else c
        for c in text
    )


def shorten(text: str, most: int) -> str:
    """``text``, or its first ``most // 2`` characters and its length when longer than ``most``."""
    return text if len(text) <= most else f"{text[: most // 2]}... ({len(text)} characters)"


class ConfigError(Exception):
    """Every problem found in a stack's config, one printable line each in ``problems``."""

    def __init__(self, problems: list[str]):
        self.problems = [printable(problem) for problem in problems]
        super().__init__("\n".join(self.problems))


class Expect:
    """What a value allows (``expected <text>``), in place of any error pydantic itself raises for it."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        return core_schema.no_info_wrap_validator_function(self._validate, handler(source))

    def __get_pydantic_json_schema__(self, schema: Any, handler: Any) -> Any:
        return {**handler(schema), "x-expected": self.text}

    def _validate(self, value: Any, handler: Callable[[Any], Any]) -> Any:
        try:
            return handler(value)
        except ValidationError as error:
            if any(e["loc"] or e["type"] in ("expected", "at_field") for e in error.errors()):
                raise
            raise fail(self.text) from None


def fail(text: str) -> PydanticCustomError:
    return PydanticCustomError("expected", "{expected}", {"expected": text})


def fail_at(field: str, value: Any, text: str, **others: Any) -> PydanticCustomError:
    """A model rule's failure at one of its fields; ``{name}`` in ``text`` is shown from ``others``."""
    context = {"expected": text, "field": field, "value": value, "others": others}
    return PydanticCustomError("at_field", "{expected}", context)


def rule(check: Callable[[Any], bool], text: str) -> AfterValidator:
    def validate(value: Any) -> Any:
        if not check(value):
            raise fail(text)
        return value

    return AfterValidator(validate)


class Group(tuple[Any, ...], annotated_types.GroupedMetadata):
    """Several constraints as one ``Annotated`` item."""


def Limits(low: int, high: int, why: str) -> Group:
    return Group((Field(ge=low, le=high), Expect(f"a whole number from {low} to {high} ({why})")))


def checked(check: Callable[[Any], bool], text: str) -> Group:
    return Group((rule(check, text), Expect(text)))


def Matches(pattern: str, text: str) -> Group:
    return checked(lambda value: re.fullmatch(pattern, value, re.ASCII) is not None, text)


def OneOf(*choices: str) -> Group:
    return checked(lambda value: value in choices, "one of " + ", ".join(choices))


JSONObject = Annotated[Mapping[str, Any], Expect("an object")]


class Model(BaseModel):
    model_config = ConfigDict(
        strict=True, extra="forbid", frozen=True, validate_default=True, use_attribute_docstrings=True
    )


KubernetesName = Annotated[
    str,
    Matches(
        r"(?=.{1,63}\Z)[a-z0-9]([-a-z0-9]*[a-z0-9])?",
        "a Kubernetes name: lowercase letters, digits and '-', starting and ending alphanumeric, at most 63",
    ),
]
ReleaseName = Annotated[
    str,
    Matches(
        rf"(?=.{{1,{RELEASE_NAME_MAX}}}\Z)[a-z]([-a-z0-9]*[a-z0-9])?",
        f"a release name: lowercase letters, digits and '-', starting with a letter, at most {RELEASE_NAME_MAX} "
        "characters (the CronJob '<release>-failed-pod-cleanup' may have at most 52)",
    ),
]
ExactVersion = Annotated[
    str,
    Matches(r"v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?", "an exact chart version such as 0.4.2"),
]
ChartRepo = Annotated[str, Matches(r"(https?|oci)://\S+", "a chart repository URL (https://, http:// or oci://)")]
GitURL = Annotated[str, Matches(r"https://[A-Za-z0-9.-]+(:[0-9]+)?/\S+", "a git repository URL starting with https://")]
GitCommit = Annotated[str, Matches(r"[0-9a-f]{40}", "a full commit id: 40 lowercase hexadecimal digits")]
ChartPath = Annotated[str, Matches(r"\S+", "a chart directory: a non-empty path without spaces")]
_LABEL = r"[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?"
Host = Annotated[
    str,
    Matches(rf"(?=.{{1,253}}\Z){_LABEL}(\.{_LABEL})*", "a host name without scheme or port (DNS labels, dots between)"),
]
AbsolutePath = Annotated[
    str,
    checked(  # the chart mounts it as written (/cvmfs/../etc is /etc); normpath keeps POSIX's leading //
        lambda v: v.startswith("/") and v[1:2] != "/" and posixpath.normpath(v) == v and re.search(r"\s|\0", v) is None,
        "an absolute, normalized path (starting with '/', no spaces, no '.', '..' or empty parts, no trailing '/')",
    ),
]
Port = Annotated[int, Field(ge=1, le=65535), Expect("a port from 1 to 65535")]

# The OCI reference grammar (distribution/reference): [domain[:port]/]path[:tag][@sha256:<64 hex>]; or, for
# interLink's Slurm side, an image unpacked on CVMFS by its path, tag included.
_DOMAIN = rf"(?:{_LABEL}(?:\.{_LABEL})*(?::[0-9]+)?/)?"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_TAG = r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))"
_OCI = re.compile(rf"{_DOMAIN}{_COMPONENT}(?:/{_COMPONENT})*{_TAG}?(?:@sha256:(?P<digest>[a-f0-9]{{64}}))?", re.ASCII)
_UNPACKED = re.compile(rf"/[^\s:@]+{_TAG}", re.ASCII)


def _pinned_image(value: str) -> bool:
    match = _OCI.fullmatch(value) or _UNPACKED.fullmatch(value)
    if match is None or len(value) > 255 + 128 + 72:
        return False
    return match.groupdict().get("digest") is not None or match["tag"] not in (None, "latest")


Image = Annotated[
    str,
    checked(
        _pinned_image,
        "an image with a pinned tag or digest (repository:tag, not 'latest', or repository@sha256:<64 hex>; or an "
        "unpacked image's absolute path with its tag)",
    ),
]

_CRON_VALUE = r"(?:[0-9]+|[A-Za-z]{3})"
_CRON_TERM = rf"(?:\*|\?|{_CRON_VALUE}(?:-{_CRON_VALUE})?)(?:/[0-9]+)?"
_CRON = re.compile(rf"{_CRON_TERM}(?:,{_CRON_TERM})*(?: {_CRON_TERM}(?:,{_CRON_TERM})*){{4}}", re.ASCII)


def valid_cron(value: str) -> bool:
    """robfig/cron's standard syntax (Kubernetes'), ranges checked by cronsim, which alone would also take ``L``,
    ``#``, a seconds field and day-of-week 7 (robfig's is 0-6)."""
    if value in CRON_MACROS:
        return True
    if not _CRON.fullmatch(value) or re.search(r"(?<![0-9])7(?![0-9])", value.split(" ")[4]):
        return False
    try:
        CronSim(value.replace("?", "*"), datetime(2026, 1, 1))
    except (CronSimError, ValueError):
        return False
    return True


Cron = Annotated[
    str,
    checked(
        valid_cron,
        "a Kubernetes CronJob schedule: five fields (minute 0-59, hour 0-23, day of month 1-31, month 1-12, day of "
        "week 0-6) such as '*/5 * * * *', or one of " + ", ".join(CRON_MACROS),
    ),
]

_QUANTITY = re.compile(r"\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?", re.ASCII)
Quantity = Annotated[
    int | str,
    checked(
        lambda v: 0 <= v <= PULUMI_NUMBER_MAX if isinstance(v, int) else _QUANTITY.fullmatch(v) is not None,
        "a Kubernetes quantity such as 2, '500m' or '8Gi' (a whole number or quantity text, not negative)",
    ),
]
NoEmptyArgument = rule(all, "a list of non-empty strings (an empty one reaches the container as an empty argument)")

# The API server's rules: pkg/apis/core/validation/validation.go and apimachinery pkg/util/validation/validation.go.
_LABEL_NAME = re.compile(r"(?=.{1,63}\Z)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", re.ASCII)
_DNS_SUBDOMAIN = re.compile(r"(?=.{1,253}\Z)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", re.ASCII)


def qualified_name(value: str) -> bool:
    """apimachinery ``IsQualifiedName``: label and annotation keys, toleration keys."""
    prefix, slash, name = value.rpartition("/")
    return (not slash or _DNS_SUBDOMAIN.fullmatch(prefix) is not None) and _LABEL_NAME.fullmatch(name) is not None


_TEXT = Expect("a string (quote numbers and booleans)")
QualifiedName = Annotated[
    str,
    checked(
        qualified_name,
        "a Kubernetes qualified name: an optional DNS-subdomain prefix (at most 253) and '/', then at most 63 "
        "letters, digits, '-', '_' or '.', starting and ending alphanumeric",
    ),
]
LabelValue = Annotated[
    str,
    rule(  # apimachinery IsValidLabelValue
        lambda v: v == "" or _LABEL_NAME.fullmatch(v) is not None,
        "a Kubernetes label value: empty, or at most 63 letters, digits, '-', '_' or '.', starting and "
        "ending alphanumeric",
    ),
    _TEXT,
]
LabelMap = Annotated[Mapping[QualifiedName, LabelValue], Expect("an object of Kubernetes labels")]
ANNOTATIONS_MAX_BYTES = 256 * 1024  # apimachinery TotalAnnotationSizeLimitB
ANNOTATIONS_TEXT = f"annotations of at most {ANNOTATIONS_MAX_BYTES} bytes in all, keys and values (the API server's)"


def annotations_size(value: Mapping[str, str]) -> bool:
    """apimachinery ``ValidateAnnotationsSize``: the keys' and values' lengths summed."""
    return sum(len(k.encode()) + len(v.encode()) for k, v in value.items()) <= ANNOTATIONS_MAX_BYTES


AnnotationMap = Annotated[
    Mapping[QualifiedName, Annotated[str, _TEXT]],
    rule(annotations_size, ANNOTATIONS_TEXT),
    Expect("an object of Kubernetes annotations"),
]
_SUFFIX = {"": Fraction(1), "m": Fraction(1, 1000)}
_SUFFIX |= {s: Fraction(1024) ** i for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"), 1)}
_SUFFIX |= {s: Fraction(1000) ** i for i, s in enumerate(("k", "M", "G", "T", "P", "E"), 1)}


def quantity_value(value: int | str) -> Fraction:
    """A Kubernetes quantity (``resource.ParseQuantity``) of ``Quantity``'s form as an exact number."""
    if isinstance(value, int):
        return Fraction(value)
    match = re.fullmatch(r"\+?([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(.*)", value)
    number, suffix = Fraction(match[1]), match[2]  # type: ignore[index]
    if suffix[:1] in ("e", "E"):
        return number * Fraction(10) ** max(-100, min(100, int(suffix[1:])))  # far past the API server's cap
    return number * _SUFFIX[suffix]


STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
CONTAINER_RESOURCE_TEXT = (
    "a container resource name: cpu, memory, ephemeral-storage, hugepages-<size>, or a name with a domain such as "
    "nvidia.com/gpu (the API server refuses any other)"
)


def container_resource_name(value: str) -> bool:
    """core validation ``validateContainerResourceName``."""
    domain, slash, name = value.rpartition("/")
    if not slash:
        return value in STANDARD_CONTAINER_RESOURCES or (
            value.startswith("hugepages-") and _QUANTITY.fullmatch(value.removeprefix("hugepages-")) is not None
        )
    return qualified_name(value) and (not _native_domain(domain) or name in STANDARD_CONTAINER_RESOURCES)


def _native_domain(domain: str) -> bool:
    return domain == "kubernetes.io" or domain.endswith(".kubernetes.io")


ContainerResource = Annotated[str, checked(container_resource_name, CONTAINER_RESOURCE_TEXT)]


def overcommit_allowed(resource: str) -> bool:
    """core/helper ``IsOvercommitAllowed``."""
    domain, slash, _ = resource.rpartition("/")
    return (not slash or _native_domain(domain)) and not resource.startswith("hugepages-")


def thaw(value: Any) -> Any:
    """Plain dicts and lists again; an optional field left unset is left out."""
    if isinstance(value, Model):
        return {name: thaw(field) for name, field in value if field is not None or name in value.model_fields_set}
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    return [thaw(v) for v in value] if isinstance(value, (list, tuple)) else value


Int32 = Annotated[int, Limits(0, INT32_MAX, "a Kubernetes int32")]
PositiveInt32 = Annotated[int, Limits(1, INT32_MAX, "a Kubernetes int32")]
PulumiExact = Annotated[int, Limits(1, PULUMI_NUMBER_MAX, "exact through Pulumi")]
EnvoyMillis = Annotated[int, Limits(1, ENVOY_DURATION_MAX_SECONDS * 1000, "milliseconds of an Envoy duration")]
EnvoySeconds = Annotated[int, Limits(1, ENVOY_DURATION_MAX_SECONDS, "seconds of an Envoy duration")]
EnvoyCount = Annotated[int, Limits(1, UINT32_MAX, "an Envoy uint32")]
Int64Exact = Annotated[
    int, Limits(-PULUMI_NUMBER_MAX, PULUMI_NUMBER_MAX, "a Kubernetes int64 that stays exact through Pulumi's numbers")
]
Quantities = Annotated[Mapping[ContainerResource, Quantity], Expect("an object of Kubernetes quantities")]
Strings = Annotated[list[str], NoEmptyArgument]


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


Tolerations = Annotated[list[Toleration], Expect("a list of tolerations")]
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

    labels: LabelMap = Field(default_factory=dict)
    annotations: AnnotationMap = Field(default_factory=dict)


class ModelRepositorySettings(Model):
    """Where Triton finds its models."""

    enabled: bool = True
    storageType: Annotated[str, OneOf("cvmfs-pvc", "cvmfs-hostPath", "pvc", "nfs")] = "cvmfs-pvc"
    mountPath: AbsolutePath = "/cvmfs"


class TritonSettings(Model):
    """The Triton inference server pods."""

    image: Image = "nvcr.io/nvidia/tritonserver:26.04-py3"
    command: Annotated[Strings, Expect("a list of strings")] = Field(default_factory=lambda: ["/bin/sh", "-c"])
    args: Annotated[Strings, Field(min_length=1), Expect("a non-empty list of strings (Triton's arguments)")]
    """required per stack"""
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    nodeSelector: LabelMap = Field(default_factory=dict)
    tolerations: Tolerations = Field(default_factory=list)
    podAnnotations: AnnotationMap = Field(default_factory=dict)
    """interLink's slurm-job.vk.io/* annotations go here"""
    service: ServiceMetadata = Field(default_factory=ServiceMetadata)
    modelRepository: ModelRepositorySettings = Field(default_factory=ModelRepositorySettings)
    readinessProbe: JSONObject = Field(default_factory=dict)
    """the chart's exec probe: command, initialDelaySeconds, periodSeconds, timeoutSeconds, successThreshold,
    failureThreshold; {} keeps the chart's"""
    startupProbe: JSONObject = Field(default_factory=dict)
    """the chart's httpGet probe: httpGet {path, port}, initialDelaySeconds, periodSeconds, failureThreshold"""


class OutlierDetectionSettings(Model):
    """Outlier ejection on the Triton cluster."""

    consecutive5xx: EnvoyCount = 5
    consecutiveGatewayFailure: EnvoyCount = 5
    intervalSeconds: EnvoySeconds = 10
    baseEjectionTimeSeconds: EnvoySeconds = 30
    maxEjectionPercent: Annotated[int, Limits(1, 100, "a percentage")] = 50


class BackOff(Model):
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
    nodeSelector: LabelMap = Field(default_factory=dict)
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
    chart: ChartSource = ChartSource(git="https://github.com/fastmachinelearning/SuperSONIC", path="helm/supersonic")
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
    readyTimeoutSeconds: Annotated[
        int,
        Limits(
            1,
            READY_TIMEOUT_MAX_SECONDS,
            f"the Helm timeout, this + {HELM_UPGRADE_MARGIN_SECONDS} s, is a Go duration, and the RepositoryIndex "
            f"idle_timeout, this + {CHART.ready_timeout_margin_seconds} s, an Envoy duration",
        ),
    ] = 300
    """how long a RepositoryIndex is held waiting for a healthy Triton; its idle_timeout is this + the chart's margin"""
    holdMinReplicasSeconds: PulumiExact = 300
    """how long a woken Triton is kept; at least readyTimeoutSeconds"""
    admissionImage: Image | None = None
    """image of the chart's admission sidecar; unset: the chart's default"""


class ScalingPolicy(Model):
    """One direction of KEDA's scaling behaviour (a Kubernetes HPA policy, pkg/apis/autoscaling/validation's limits);
    scaling up's defaults."""

    stabilizationWindowSeconds: Annotated[int, Limits(0, 3600, "Kubernetes' HPA limit")] = 120
    periodSeconds: Annotated[int, Limits(1, 1800, "Kubernetes' HPA limit")] = 120
    stepsize: PositiveInt32 = 1


class ScaleDownPolicy(ScalingPolicy):
    periodSeconds: Annotated[int, Limits(1, 1800, "Kubernetes' HPA limit")] = 30


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
    nodeSelector: LabelMap = Field(default_factory=dict)
    """where the cleaner runs (not on the virtual node)"""
    tolerations: Tolerations = Field(default_factory=list)


def across_keys(sfz: ScaleFromZeroSettings, keda: KedaSettings) -> Iterator[tuple[str, Any, str]]:
    """The rules that span top-level keys: (the key each names, its value, what is allowed, ``{ready}`` to show)."""
    if sfz.enabled and sfz.holdMinReplicasSeconds < sfz.readyTimeoutSeconds:
        text = "a value >= scaleFromZero.readyTimeoutSeconds ({ready}); the chart refuses a shorter hold"
        yield "scaleFromZero.holdMinReplicasSeconds", sfz.holdMinReplicasSeconds, text
    if sfz.enabled and not keda.enabled:
        yield "keda.enabled", False, "true while scaleFromZero.enabled is true (KEDA scales it down)"
    if keda.minReplicaCount == 0 and not sfz.enabled:
        yield "keda.minReplicaCount", 0, ">= 1 unless scaleFromZero.enabled is true"


def _keeps_chart_names(values: Mapping[str, Any]) -> Mapping[str, Any]:
    for key in CHART.name_override_values:
        if key in values:
            raise fail_at(key, values[key], "no value: it renames the chart's objects (rename with release.name)")
    return values


class Settings(Model):
    """Everything one stack deploys; its fields are the project's config keys (``across_keys`` checked on loading)."""

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
    helmValues: Annotated[JSONObject, AfterValidator(_keeps_chart_names)] = Field(default_factory=dict)
    """Extra chart values deep-merged underneath the computed ones; overriding a computed one is an error."""

    _secret_keys: frozenset[str] = PrivateAttr(default_factory=frozenset)
    _generation: Generation = PrivateAttr(default=NEWEST)

    @property
    def generation(self) -> Generation:
        """The chart generation of ``release.chart``, set by ``load_settings``."""
        return self._generation

    def is_secret(self, *keys: str) -> bool:
        return any(key in self._secret_keys for key in keys)


SECRET_CAPABLE = ("helmValues", "triton", "envoy", "cleanup", "serverLoad", "prometheus", "keda", "scaleFromZero")
"""``namespace`` and ``release`` name objects and the exported endpoint: a secret there could not stay secret."""
