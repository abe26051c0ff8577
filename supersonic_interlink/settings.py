"""Typed stack settings: the one object every component receives, and the one declaration of every config key.

Defaults live in exactly one place, the ``config:`` block of ``Pulumi.yaml``. The Pulumi CLI passes each top-level
key either from the stack file or from that default (a stack value replaces the whole default object);
``load_settings`` then fills in the sub-keys the stack left out from the same defaults (``release.chart`` is
replaced whole), so a stack file states only what differs.

The shape of every key is declared here by pydantic models (strict: no text for numbers, no numbers for text;
unknown keys refused; frozen). Each bound comes from the value's consumer: Envoy's proto validation and its duration
limit, Kubernetes' types and validation, Helm, busybox arithmetic. Every problem is reported at once, one line each:
``supersonic-interlink:<full.key> = <value>: expected <what is allowed>``. ``Pulumi.yaml``'s ``type`` and
``description`` of each key are generated from these models (``python -m supersonic_interlink.schema``), and a test
fails when the two drift.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import re
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any

import annotated_types
from cronsim import CronSim, CronSimError
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from .contract import CHART
from .pulumi_yaml import YAMLInputError, read_pulumi_yaml

PROJECT = "supersonic-interlink"
PROJECT_FILE = Path(__file__).resolve().parent.parent / "Pulumi.yaml"

KNOWN_NAMESPACES = (PROJECT, "kubernetes", "pulumi")
"""Config namespaces the program reads or passes on: its own, the Kubernetes provider's and the engine's."""

# ---------------------------------------------------------------------------------------- consumers' limits

INT32_MAX = 2**31 - 1
"""Kubernetes' int32 fields (replica counts, HPA policy values)."""
UINT32_MAX = 2**32 - 1
"""Envoy's ``google.protobuf.UInt32Value`` fields (retry counts, circuit breakers, buffer size)."""
INT64_MAX = 2**63 - 1
CLEANUP_KEEP_MAX = 20
"""The cleanup script's own bound on KEEP (its KEEP_MAX): every kept pod adds a ``metadata.name!=`` term to the
one deletecollection request, so the request URI stays short."""
"""Envoy's int64 fields, and busybox ``sh`` arithmetic (64-bit), which the cleanup script's KEEP goes through."""
PULUMI_NUMBER_MAX = 2**53
"""Largest integer that stays exact through Pulumi: resource inputs travel as protobuf ``Struct`` numbers
(doubles), so a larger whole number reaches Helm changed."""
ENVOY_DURATION_MAX_SECONDS = 9_223_372_035
"""Longest duration Envoy 1.39.1 accepts: ``envoy --mode validate`` refuses 9223372036 s with "Duration
out-of-range" (it converts durations to int64 nanoseconds), measured on route, cluster and retry durations."""
GO_DURATION_MAX_SECONDS = 9_223_372_036
HELM_UPGRADE_MARGIN_SECONDS = 300
"""What the Helm release timeout adds to readyTimeoutSeconds: a Triton pod replaced during an upgrade queues in
Slurm like a wake does, and the five minutes cover the Envoy rollout and image pulls."""
READY_TIMEOUT_MAX_SECONDS = min(
    ENVOY_DURATION_MAX_SECONDS - CHART.ready_timeout_margin_seconds,
    GO_DURATION_MAX_SECONDS - HELM_UPGRADE_MARGIN_SECONDS,
)
"""Longest whole-second Go ``time.Duration`` (int64 nanoseconds): the Helm release timeout is one."""
HPA_MAX_PERIOD_SECONDS = 1800
HPA_MAX_STABILIZATION_WINDOW_SECONDS = 3600
"""Kubernetes' HPA behavior limits (``pkg/apis/autoscaling/validation``), where KEDA's scaling policies land."""

RELEASE_NAME_MAX = 33
"""Longest release name: the program names objects ``<release>-failed-pod-cleanup`` and a CronJob name may have at
most 52 characters."""

CRON_MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
"""The descriptors Kubernetes' CronJob validation (robfig/cron ``ParseStandard``) accepts besides five fields;
``@every`` is left out: it is no cron syntax, and ``*/N`` says the same."""


class ConfigError(Exception):
    """Raised with every problem found in a stack's config; ``problems`` holds one line each."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class Expect:
    """What a field allows, in the words of the error message (``expected <text>``)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Expect({self.text!r})"


class Why:
    """Why a field has its limits, for ``Pulumi.yaml``'s description (the type line already shows the range)."""

    def __init__(self, text: str) -> None:
        self.text = text


def _fail(text: str) -> PydanticCustomError:
    return PydanticCustomError("expected", "{expected}", {"expected": text})


def _fail_at(field: str, value: Any, text: str) -> PydanticCustomError:
    """A model rule's failure reported at one of its fields (``<key>.<field> = <value>: expected <text>``)."""
    return PydanticCustomError("at_field", "{expected}", {"expected": text, "field": field, "value": value})


def _rule(check: Callable[[Any], bool], text: str) -> AfterValidator:
    def validate(value: Any) -> Any:
        if not check(value):
            raise _fail(text)
        return value

    return AfterValidator(validate)


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


Frozen = AfterValidator(_freeze)


@dataclasses.dataclass(frozen=True)
class Limits(annotated_types.GroupedMetadata):
    """A whole number from ``low`` to ``high``; ``why`` names the consumer whose limits they are."""

    low: int
    high: int
    why: str

    def __iter__(self) -> Iterator[Any]:
        yield annotated_types.Ge(self.low)
        yield annotated_types.Le(self.high)
        yield Expect(f"a whole number from {self.low} to {self.high} ({self.why})")
        yield Why(self.why)


@dataclasses.dataclass(frozen=True)
class Matches(annotated_types.GroupedMetadata):
    """A string matched whole (``fullmatch``: no trailing newline slips through), ASCII only."""

    pattern: str
    text: str
    max_length: int | None = None

    def __iter__(self) -> Iterator[Any]:
        compiled = re.compile(self.pattern, re.ASCII)
        limit = self.max_length

        def check(value: str) -> bool:
            return compiled.fullmatch(value) is not None and (limit is None or len(value) <= limit)

        yield _rule(check, self.text)
        yield Expect(self.text)


@dataclasses.dataclass(frozen=True)
class OneOf(annotated_types.GroupedMetadata):
    """One of a few strings."""

    choices: tuple[str, ...]

    def __iter__(self) -> Iterator[Any]:
        text = "one of " + ", ".join(self.choices)
        choices = self.choices
        yield _rule(lambda value: value in choices, text)
        yield Expect(text)


def expanded(metadata: Iterable[Any]) -> list[Any]:
    """Annotated metadata with grouped items (``Limits``, ``Matches``, ``OneOf``) spread out."""
    return [item for m in metadata for item in (m if isinstance(m, annotated_types.GroupedMetadata) else [m])]


# ---------------------------------------------------------------------------------------- value types

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
KubernetesName = Annotated[
    str,
    Matches(
        _DNS_LABEL,
        "a Kubernetes name: lowercase letters, digits and '-', starting and ending alphanumeric, at most 63",
        max_length=63,
    ),
]
ReleaseName = Annotated[
    str,
    Matches(
        r"[a-z]([-a-z0-9]*[a-z0-9])?",
        f"a release name: lowercase letters, digits and '-', starting with a letter, at most {RELEASE_NAME_MAX} "
        f"characters (objects are named '<release>-failed-pod-cleanup', and a CronJob name may have at most 52)",
        max_length=RELEASE_NAME_MAX,
    ),
]
ExactVersion = Annotated[
    str,
    Matches(
        r"v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?",
        "an exact chart version such as 0.4.2 (no ranges, no wildcards, so every preview is reproducible)",
    ),
]
ChartRepo = Annotated[
    str, Matches(r"(https?|oci)://[^\s]+", "a chart repository URL starting with https://, http:// or oci://")
]
GitURL = Annotated[
    str, Matches(r"https://[A-Za-z0-9.-]+(:[0-9]+)?/[^\s]+", "a git repository URL starting with https://")
]
GitCommit = Annotated[
    str,
    Matches(
        r"[0-9a-f]{40}", "a full commit id: 40 lowercase hexadecimal digits (a branch, tag or short id is not a pin)"
    ),
]
ChartPath = Annotated[str, Matches(r"[^\s]+", "a chart directory: a non-empty path without spaces")]
Host = Annotated[
    str,
    Matches(
        r"[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*",
        "a host name without scheme or port (DNS labels of letters, digits and '-', joined by dots)",
        max_length=253,
    ),
]
AbsolutePath = Annotated[str, Matches(r"/[^\s\x00]*", "an absolute path (starting with '/', no spaces)")]
Port = Annotated[int, Field(ge=1, le=65535), Expect("a port from 1 to 65535")]

# The OCI reference grammar (distribution/reference): [domain[:port]/]path[:tag][@sha256:<64 hex>].
_DOMAIN = r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]+)?/)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_OCI = re.compile(
    rf"{_DOMAIN}{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*(?::(?P<tag>{_TAG}))?(?:@sha256:(?P<digest>[a-f0-9]{{64}}))?",
    re.ASCII,
)
# interLink's Slurm side runs an image unpacked on CVMFS by its path, tag included.
_UNPACKED = re.compile(rf"/[^\s:@]+:(?P<tag>{_TAG})", re.ASCII)


def _pinned_image(value: str) -> bool:
    match = _OCI.fullmatch(value) or _UNPACKED.fullmatch(value)
    if match is None or len(value) > 255 + 128 + 72:
        return False
    groups = match.groupdict()
    return groups.get("digest") is not None or (groups["tag"] is not None and groups["tag"] != "latest")


Image = Annotated[
    str,
    _rule(
        _pinned_image,
        "an image with a pinned tag or digest (repository:tag or repository@sha256:<64 hex>, not 'latest'; "
        "or an unpacked image's absolute path with its tag)",
    ),
    Expect("an image with a pinned tag or digest"),
]

_ROBFIG_VALUE = r"(?:[0-9]+|[A-Za-z]{3})"
_ROBFIG_FIELD = re.compile(
    rf"(?:(?:\*|\?|{_ROBFIG_VALUE}(?:-{_ROBFIG_VALUE})?)(?:/[0-9]+)?)(?:,(?:(?:\*|\?|{_ROBFIG_VALUE}"
    rf"(?:-{_ROBFIG_VALUE})?)(?:/[0-9]+)?))*",
    re.ASCII,
)
CRON_TEXT = (
    "a Kubernetes CronJob schedule: five fields (minute 0-59, hour 0-23, day of month 1-31, month 1-12, "
    "day of week 0-6) such as '*/5 * * * *', or one of " + ", ".join(CRON_MACROS)
)


def valid_cron(value: str) -> bool:
    """Kubernetes' schedule syntax (robfig/cron's standard parser, without TZ= and @every), checked by cronsim.

    robfig accepts per field ``*``, ``?``, numbers and three-letter names, ``a-b`` ranges and ``/step``; cronsim (a
    maintained parser) then refuses what is out of range, a zero step or a backward range. cronsim alone would also
    take ``L``, ``#``, a seconds field and day-of-week 7, which Kubernetes refuses.
    """
    if value in CRON_MACROS:
        return True
    fields = value.split(" ")
    if len(fields) != 5 or not all(_ROBFIG_FIELD.fullmatch(f) for f in fields):
        return False
    if re.search(r"(?<![0-9])7(?![0-9])", fields[4]):
        return False  # robfig's day of week is 0-6
    try:
        CronSim(" ".join(f.replace("?", "*") for f in fields), datetime(2026, 1, 1))
    except (CronSimError, ValueError):
        return False
    return True


Cron = Annotated[str, _rule(valid_cron, CRON_TEXT), Expect(CRON_TEXT)]

_QUANTITY = re.compile(r"\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?", re.ASCII)
QUANTITY_TEXT = "a Kubernetes quantity such as 2, '500m' or '8Gi' (a whole number or quantity text, not negative)"
Quantity = Annotated[
    int | str,
    _rule(
        lambda v: (
            (isinstance(v, int) and 0 <= v <= PULUMI_NUMBER_MAX)
            or (isinstance(v, str) and bool(_QUANTITY.fullmatch(v)))
        ),
        QUANTITY_TEXT,
    ),
    Expect(QUANTITY_TEXT),
]

StringMap = Annotated[
    Mapping[str, Annotated[str, Expect("a string (quote numbers and booleans)")]],
    Frozen,
    Expect("an object whose values are strings"),
]
JSONObject = Annotated[Mapping[str, Any], Frozen, Expect("an object")]
"""A free-form object passed through as given (probes, extra Helm values)."""


class Model(BaseModel):
    """Strict (no conversions), unknown keys refused, immutable."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


# ---------------------------------------------------------------------------------------- the schema


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
        if self.git is not None:
            return "git"
        return "path" if self.path is not None else "repo"

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
                raise _fail(
                    f"{allowed}; a git source takes git, commit and path (the chart's directory in the repository) "
                    f"and nothing else"
                )
            if self.path.startswith("/") or ".." in self.path.split("/"):
                raise _fail_at(
                    "path",
                    self.path,
                    "the chart's directory inside the git repository, relative and without '..' "
                    "(for example helm/supersonic)",
                )
        elif self.commit is not None:
            raise _fail(f"{allowed}; commit goes with git")
        elif self.path is not None:
            if any(v is not None for v in by_repo):
                raise _fail(f"{allowed}, not a mix")
        elif any(v is None for v in by_repo):
            raise _fail(allowed)
        return self


class ReleaseSettings(Model):
    """The SuperSONIC Helm release."""

    name: Annotated[
        ReleaseName,
        Field(
            description="required per stack. Helm release name and the chart's instance name: it names the Triton "
            "Deployment/Service (<name>-triton), the Envoy Service clients use (<name>) and the cleanup objects. "
            "Changing it (or namespace) replaces the release: refused unless release.removable (README: Removing or "
            "renaming a release)"
        ),
    ]
    chart: Annotated[
        ChartSource,
        Field(
            description="{repo, name, version} with an exact version, {path} to a chart directory, or {git, commit, "
            "path}: an https git URL, a full 40-hex commit and the chart's directory in it (without commit it renders "
            "offline, but preview and up refuse it; `python render.py <stack> --pin-chart [REF]` writes the commit). "
            "Replaced whole, not merged"
        ),
    ]
    maxHistory: Annotated[
        Annotated[int, Limits(1, INT32_MAX, "Helm revisions")],
        Field(description="Helm revisions kept for `helm rollback`"),
    ]
    adopt: Annotated[
        bool,
        Field(
            description="take over a Helm release of this name that already runs in the namespace instead of "
            "installing one (docs/takeover.md)"
        ),
    ]
    removable: Annotated[
        bool,
        Field(
            description="false protects the release: pulumi destroy, a rename of release.name or namespace, and "
            "removing it from the program are refused, and the pull-request preview fails on them. Set true in a "
            "reviewed change to uninstall or rename on purpose (README: Removing or renaming a release)"
        ),
    ]


class ScaleFromZeroSettings(Model):
    """Scale from zero (SuperSONIC #90): Envoy's Lua filter wakes Triton on a client's first RepositoryIndex."""

    enabled: Annotated[bool, Field(description="turn it on; requires keda.enabled")]
    readyTimeoutSeconds: Annotated[
        Annotated[
            int,
            Limits(
                1,
                READY_TIMEOUT_MAX_SECONDS,
                f"the Helm timeout, this + {HELM_UPGRADE_MARGIN_SECONDS} s, is a Go duration, and the RepositoryIndex "
                f"idle_timeout, this + {CHART.ready_timeout_margin_seconds} s, an Envoy duration",
            ),
        ],
        Field(
            description="how long a RepositoryIndex is held waiting for a healthy Triton; the RepositoryIndex "
            f"route's idle_timeout follows at this + {CHART.ready_timeout_margin_seconds} s, derived, never set "
            "separately"
        ),
    ]
    holdMinReplicasSeconds: Annotated[
        Annotated[int, Limits(1, PULUMI_NUMBER_MAX, "exact through Pulumi")],
        Field(description="how long a woken Triton is kept; at least readyTimeoutSeconds"),
    ]


class ScalingPolicy(Model):
    """One direction of KEDA's scaling behaviour (a Kubernetes HPA policy)."""

    stabilizationWindowSeconds: Annotated[int, Limits(0, HPA_MAX_STABILIZATION_WINDOW_SECONDS, "Kubernetes' HPA limit")]
    periodSeconds: Annotated[int, Limits(1, HPA_MAX_PERIOD_SECONDS, "Kubernetes' HPA limit")]
    stepsize: Annotated[int, Limits(1, INT32_MAX, "a Kubernetes int32")]


class KedaSettings(Model):
    """KEDA autoscaling of the Triton Deployment."""

    enabled: Annotated[bool, Field(description="required while scaleFromZero.enabled")]
    minReplicaCount: Annotated[
        Annotated[int, Limits(0, INT32_MAX, "a Kubernetes int32")], Field(description="0 only with scale from zero")
    ]
    maxReplicaCount: Annotated[int, Limits(1, INT32_MAX, "a Kubernetes int32")]
    scaleUp: ScalingPolicy
    scaleDown: ScalingPolicy


class ServerLoadSettings(Model):
    """The load signal KEDA scales on."""

    metric: Annotated[str, Field(description="PromQL for the chart's serverLoadMetric; empty keeps the chart's")]
    threshold: Annotated[
        Annotated[int, Limits(1, PULUMI_NUMBER_MAX, "exact through Pulumi")], Field(description="serverLoadThreshold")
    ]


class PrometheusSettings(Model):
    """The cluster's Prometheus that KEDA queries (the chart's prometheus.external)."""

    url: Annotated[Host, Field(description="required per stack: host name without scheme or port")]
    port: Port
    scheme: Annotated[str, OneOf(("http", "https"))]


class ModelRepositorySettings(Model):
    """Where Triton finds its models."""

    enabled: bool
    storageType: Annotated[str, OneOf(("cvmfs-pvc", "cvmfs-hostPath", "pvc", "nfs"))]
    mountPath: AbsolutePath


class ServiceMetadata(Model):
    """Labels and annotations of the headless Triton Service."""

    labels: StringMap
    annotations: StringMap


class ResourceRequirements(Model):
    """A container's resources: quantities by resource name (cpu, memory, nvidia.com/gpu, ...)."""

    requests: Annotated[Mapping[str, Quantity], Frozen, Expect("an object of Kubernetes quantities")] = Field(
        default_factory=dict
    )
    limits: Annotated[Mapping[str, Quantity], Frozen, Expect("an object of Kubernetes quantities")] = Field(
        default_factory=dict
    )


class Toleration(Model):
    """A Kubernetes toleration."""

    key: str | None = None
    operator: Annotated[str, OneOf(("Exists", "Equal"))] | None = None
    value: str | None = None
    effect: Annotated[str, OneOf(("NoSchedule", "PreferNoSchedule", "NoExecute"))] | None = None
    tolerationSeconds: Annotated[int, Limits(-(2**63), INT64_MAX, "a Kubernetes int64")] | None = None


Tolerations = Annotated[tuple[Toleration, ...], Frozen, Expect("a list of tolerations")]
Args = Annotated[
    tuple[str, ...],
    Field(min_length=1),
    Frozen,
    Expect("a non-empty list of strings (Triton's arguments; [] would start the image without a model repository)"),
]
Command = Annotated[tuple[str, ...], Frozen, Expect("a list of strings")]


class TritonSettings(Model):
    """The Triton inference server pods."""

    image: Image
    command: Command
    args: Annotated[Args, Field(description="required per stack")]
    resources: ResourceRequirements
    nodeSelector: StringMap
    tolerations: Tolerations
    podAnnotations: Annotated[StringMap, Field(description="interLink's slurm-job.vk.io/* annotations go here")]
    service: ServiceMetadata
    modelRepository: ModelRepositorySettings
    readinessProbe: Annotated[
        JSONObject,
        Field(
            description="the chart's exec probe, in the form the chart renders it: command (list of strings), "
            "initialDelaySeconds, periodSeconds, timeoutSeconds, successThreshold, failureThreshold (the chart "
            "renders no grpc or httpGet handler); {} keeps the chart's"
        ),
    ]
    startupProbe: Annotated[
        JSONObject,
        Field(
            description="the chart's httpGet probe: httpGet {path, port}, initialDelaySeconds, periodSeconds, "
            "failureThreshold; {} keeps the chart's"
        ),
    ]


_ENVOY_MS_MAX = ENVOY_DURATION_MAX_SECONDS * 1000


EnvoyMillis = Annotated[int, Limits(1, _ENVOY_MS_MAX, "milliseconds of an Envoy duration")]
EnvoySeconds = Annotated[int, Limits(1, ENVOY_DURATION_MAX_SECONDS, "seconds of an Envoy duration")]
EnvoySecondsOrZero = Annotated[int, Limits(0, ENVOY_DURATION_MAX_SECONDS, "seconds of an Envoy duration")]
EnvoyCount = Annotated[int, Limits(1, UINT32_MAX, "an Envoy uint32")]


class OutlierDetectionSettings(Model):
    """Outlier ejection on the Triton cluster."""

    consecutive5xx: EnvoyCount
    consecutiveGatewayFailure: EnvoyCount
    intervalSeconds: EnvoySeconds
    baseEjectionTimeSeconds: EnvoySeconds
    maxEjectionPercent: Annotated[int, Limits(1, 100, "a percentage")]


class InferenceRetrySettings(Model):
    """The retry policy of the inference route."""

    numRetries: EnvoyCount
    hostSelectionRetryMaxAttempts: Annotated[int, Limits(1, INT64_MAX, "an Envoy int64")]
    backOffBaseMs: EnvoyMillis
    backOffMaxMs: EnvoyMillis

    @model_validator(mode="after")
    def _back_off(self) -> InferenceRetrySettings:
        _check_back_off(self)
        return self


class RepositoryIndexRetrySettings(Model):
    """The retry policy of the RepositoryIndex route (the chart's numbers by default)."""

    numRetries: Annotated[int, Limits(0, UINT32_MAX, "an Envoy uint32")]
    perTryTimeoutMs: EnvoyMillis
    backOffBaseMs: EnvoyMillis
    backOffMaxMs: EnvoyMillis

    @model_validator(mode="after")
    def _back_off(self) -> RepositoryIndexRetrySettings:
        _check_back_off(self)
        return self


def _check_back_off(retry: InferenceRetrySettings | RepositoryIndexRetrySettings) -> None:
    if retry.backOffBaseMs > retry.backOffMaxMs:
        raise _fail_at(
            "backOffBaseMs",
            retry.backOffBaseMs,
            f"a value <= backOffMaxMs ({retry.backOffMaxMs}); Envoy refuses a base interval above the maximum",
        )


class CircuitBreakerSettings(Model):
    """Default-priority circuit-breaker thresholds of the Triton cluster (see docs/envoy.md for the choice)."""

    maxConnections: EnvoyCount
    maxPendingRequests: EnvoyCount
    maxRequests: EnvoyCount
    maxRetries: EnvoyCount


class EnvoySettings(Model):
    """The Envoy proxy in front of Triton and the configuration this program computes for it. Envoy's ports are the
    chart's (8001, 9901, 8080), not settings: the chart takes no value for them."""

    image: Image
    nodeSelector: StringMap
    tolerations: Tolerations
    serviceType: Annotated[str, OneOf(("LoadBalancer", "ClusterIP", "NodePort"))]
    loadBalancerPolicy: Annotated[
        Annotated[str, OneOf(("ROUND_ROBIN", "LEAST_REQUEST", "RANDOM", "RING_HASH", "MAGLEV"))],
        Field(description="of the Triton cluster in the computed Envoy configuration"),
    ]
    grpcRouteTimeoutSeconds: Annotated[EnvoySecondsOrZero, Field(description="route timeout of both routes; 0 = none")]
    bufferMaxRequestBytes: Annotated[
        EnvoyCount, Field(description="largest request body buffered (and so replayable); larger gets 413")
    ]
    connectTimeoutMs: EnvoyMillis
    dnsRefreshMs: Annotated[
        Annotated[int, Limits(2, _ENVOY_MS_MAX, "Envoy requires a DNS refresh rate above 1 ms")],
        Field(description="DNS refresh period of the Triton cluster"),
    ]
    outlierDetection: OutlierDetectionSettings
    inferenceRetry: InferenceRetrySettings
    repositoryIndexRetry: RepositoryIndexRetrySettings
    circuitBreakers: Annotated[
        CircuitBreakerSettings,
        Field(
            description="with Envoy's default maxRetries (3), when a Triton restarts under load every retry beyond "
            "the third concurrent one fails at once; maxRetries equal to maxRequests refuses a retry only when a "
            "new request would be refused too (docs/envoy.md)"
        ),
    ]


class CleanupSettings(Model):
    """The CronJob that deletes this release's Failed Triton pods, keeping the newest for diagnosis."""

    enabled: bool
    schedule: Cron
    keep: Annotated[
        Annotated[int, Limits(0, CLEANUP_KEEP_MAX, "the cleanup script refuses more")],
        Field(description="newest Failed pods kept (0 allowed)"),
    ]
    dryRun: Annotated[bool, Field(description="log what would go, delete nothing")]
    image: Image
    nodeSelector: Annotated[StringMap, Field(description="where the cleaner runs (not on the virtual node)")]
    tolerations: Tolerations


class Settings(Model):
    """Everything one stack deploys. Top-level fields are the project's config keys."""

    namespace: Annotated[
        KubernetesName,
        Field(
            description=(
                "Namespace of the Helm release, the Envoy ConfigMap and the cleanup CronJob. Required per stack."
            )
        ),
    ]
    release: ReleaseSettings
    scaleFromZero: ScaleFromZeroSettings
    keda: KedaSettings
    serverLoad: ServerLoadSettings
    prometheus: PrometheusSettings
    triton: TritonSettings
    envoy: EnvoySettings
    cleanup: CleanupSettings
    helmValues: Annotated[
        JSONObject,
        Field(
            description="Extra chart values for what the keys above do not model, deep-merged underneath the computed "
            "values. A key here that the program computes is an error, never a silent override."
        ),
    ]

    _secret_keys: frozenset[str] = PrivateAttr(default_factory=frozenset)

    @property
    def secret_keys(self) -> frozenset[str]:
        """Top-level keys whose value the CLI passed as a secret (``pulumi config set --secret``)."""
        return self._secret_keys

    def is_secret(self, *keys: str) -> bool:
        """Whether any of these top-level keys came from a secret."""
        return any(key in self._secret_keys for key in keys)


REPLACED_WHOLE = {("release", "chart")}
"""Object fields a stack value replaces instead of merging into the default."""

SECRET_CAPABLE = ("helmValues", "triton", "envoy", "cleanup", "serverLoad", "prometheus", "keda", "scaleFromZero")
"""Top-level keys that may be secrets. ``namespace`` and ``release`` name objects, URNs' neighbours and the exported
endpoint: a secret there could not stay secret, so it is refused."""


# ---------------------------------------------------------------------------------------- loading


def load_yaml(text: str) -> Any:
    """YAML this program wrote itself (rendered manifests, the Envoy configuration, Helm value files), through
    libyaml when PyYAML has it. Files people write (stack files, ``Pulumi.yaml``) go through ``read_pulumi_yaml``."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@functools.cache
def _project_document(project_file: Path) -> Any:
    try:
        return read_pulumi_yaml(project_file.read_bytes())
    except YAMLInputError as error:
        raise ConfigError([f"{project_file.name}: {error}"]) from None


def project_defaults(project_file: Path = PROJECT_FILE) -> dict[str, Any]:
    """The ``default:`` of every key declared in ``Pulumi.yaml`` (the only place defaults are written)."""
    document = _project_document(project_file)
    defaults: dict[str, Any] = {}
    for key, declaration in ((document or {}).get("config") or {}).items():
        if isinstance(declaration, dict) and "default" in declaration:
            defaults[key] = json.loads(json.dumps(declaration["default"]))
    return defaults


def _show(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _key(path: str) -> str:
    return f"{PROJECT}:{path}"


def thaw(value: Any) -> Any:
    """Plain dicts and lists again, for YAML/JSON output and for Pulumi inputs."""
    if isinstance(value, BaseModel):
        # What the stack (or Pulumi.yaml) wrote, without the optional fields it left out.
        return {name: thaw(getattr(value, name)) for name in type(value).model_fields if name in value.model_fields_set}
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def deep_merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``: objects on both sides merge key by key, anything else in ``top`` wins."""
    merged = thaw(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = thaw(value)
    return merged


def _model_of(annotation: Any) -> type[Model] | None:
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, Model):
            return candidate
    return None


def _merge_defaults(cls: type[Model], given: Any, default: Any, path: tuple[str, ...] = ()) -> Any:
    """The stack's object over the default, model fields key by key (except those replaced whole)."""
    if not isinstance(given, dict) or not isinstance(default, dict):
        return given
    merged = dict(given)
    for name, info in cls.model_fields.items():
        sub = _model_of(info.annotation)
        if name not in default:
            continue
        if name not in merged:
            merged[name] = default[name]
        elif sub is not None and (*path, name) not in REPLACED_WHOLE:
            merged[name] = _merge_defaults(sub, merged[name], default[name], (*path, name))
    return merged


def _expected(cls: type[Model], loc: tuple[Any, ...]) -> str | None:
    """The ``Expect`` text declared for the value at ``loc``."""
    annotation: Any = cls
    metadata: list[Any] = []
    for part in loc:
        model = _model_of(annotation) if not isinstance(part, int) else None
        if model is not None and isinstance(part, str) and part in model.model_fields:
            info = model.model_fields[part]
            annotation, metadata = info.annotation, list(info.metadata)
        else:
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if typing.get_origin(annotation) in (tuple, list):
                annotation = args[0]
            elif typing.get_origin(annotation) in (Mapping, dict, typing.Mapping):
                annotation = args[1]
            elif len(args) == 1:
                annotation = args[0]
            metadata = []
        while typing.get_origin(annotation) is Annotated:
            inner, *extra = typing.get_args(annotation)
            annotation, metadata = inner, [*extra, *metadata]
        if typing.get_origin(annotation) in (typing.Union, type(int | None)):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(args) == 1:
                annotation = args[0]
                while typing.get_origin(annotation) is Annotated:
                    inner, *extra = typing.get_args(annotation)
                    annotation, metadata = inner, [*extra, *metadata]
    return next((m.text for m in reversed(expanded(metadata)) if isinstance(m, Expect)), None)


_TYPE_WORDS = {
    "bool_type": "true or false",
    "int_type": "a whole number",
    "string_type": "a string",
    "model_type": "an object",
    "dict_type": "an object",
    "tuple_type": "a list",
    "list_type": "a list",
    "model_attributes_type": "an object",
}


def _join(path: str, part: Any) -> str:
    if isinstance(part, int):
        return f"{path}[{part}]"
    return f"{path}.{part}" if path else str(part)


def _problems(error: ValidationError, prefix: tuple[str, ...]) -> list[str]:
    """One line per pydantic error, in the project's words; ``prefix`` is where the validated value sits."""
    cls = Settings
    problems: list[str] = []
    for item in error.errors(include_url=False):
        loc = tuple(p for p in item["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        loc = prefix + tuple(p for p in loc if p not in ("int", "str", "[key]"))
        path = ""
        for part in loc:
            path = _join(path, part)
        kind = item["type"]
        if kind == "missing":
            problems.append(f"{_key(path)}: missing (no default in Pulumi.yaml; set it in the stack file)")
            continue
        if kind == "extra_forbidden":
            parent = path.rsplit(".", 1)[0] if "." in path else ""
            owner = _owner(cls, loc[:-1])
            names = sorted(owner.model_fields) if owner else []
            near = difflib.get_close_matches(str(loc[-1]), names, n=1)
            hint = f"; did you mean {_key(_join(parent, near[0]))}?" if near else ""
            problems.append(
                f"{_key(path)}: unknown key (allowed under {_key(parent) if parent else PROJECT}: "
                f"{', '.join(names)}){hint}"
            )
            continue
        value = item["input"]
        if kind == "at_field":
            context = item.get("ctx") or {}
            path, value, what = _join(path, context["field"]), context["value"], context["expected"]
        elif kind == "expected":
            what = item["msg"]
        else:
            what = _expected(cls, loc) or _TYPE_WORDS.get(kind) or item["msg"]
        if kind in ("model_type", "model_attributes_type", "dict_type") and _model_of_loc(cls, loc):
            what = "an object"
        problems.append(f"{_key(path)} = {_show(value)}: expected {what}")
    return problems


def _owner(cls: type[Model], loc: tuple[Any, ...]) -> type[Model] | None:
    model: type[Model] | None = cls
    for part in loc:
        if model is None or isinstance(part, int) or part not in model.model_fields:
            if isinstance(part, int) and model is not None:
                continue
            return None
        annotation = model.model_fields[part].annotation
        model = _model_of(annotation)
        if model is None:
            for arg in typing.get_args(annotation):
                model = _model_of(arg) or model
    return model


def _model_of_loc(cls: type[Model], loc: tuple[Any, ...]) -> bool:
    return bool(loc) and _owner(cls, loc) is not None and not any(isinstance(p, int) for p in loc[-1:])


def _parse_top(name: str, text: Any, annotation: Any) -> tuple[Any, str | None]:
    """The CLI passes objects as JSON text and strings as they are."""
    if _model_of(annotation) is None and not _is_object(annotation):
        return text, None
    if not isinstance(text, str):
        return text, None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None, f"{_key(name)} = {_show(text)}: expected an object"
    if not isinstance(value, dict):
        return None, f"{_key(name)} = {_show(value)}: expected an object"
    return value, None


def _is_object(annotation: Any) -> bool:
    while typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    return typing.get_origin(annotation) in (Mapping, dict, typing.Mapping)


def _namespace_problems(config: Mapping[str, Any]) -> list[str]:
    problems = []
    ours = sorted(Settings.model_fields)
    for full_key in sorted(config):
        namespace, _, name = full_key.partition(":")
        if namespace in KNOWN_NAMESPACES:
            continue
        near = difflib.get_close_matches(namespace, KNOWN_NAMESPACES, n=1, cutoff=0.6)
        if near and near[0] == PROJECT:
            guess = difflib.get_close_matches(name, ours, n=1) or [name]
            hint = f"did you mean {_key(guess[0])}?"
        elif near:
            hint = f"did you mean {near[0]}:{name}?"
        else:
            hint = f"this program reads only the namespaces {', '.join(KNOWN_NAMESPACES)}"
        problems.append(f"{full_key}: unknown config namespace {namespace!r}; {hint}")
    return problems


def load_settings(
    config: Mapping[str, Any],
    defaults: Mapping[str, Any] | None = None,
    secret_keys: frozenset[str] | set[str] = frozenset(),
) -> Settings:
    """Build ``Settings`` from the config map the Pulumi CLI passes (``"supersonic-interlink:key" -> text``).

    ``secret_keys`` are the full keys the CLI listed in ``PULUMI_CONFIG_SECRET_KEYS``. Keys of the Kubernetes
    provider and the engine (``kubernetes:``, ``pulumi:``) are passed over; any other namespace is an error (a typo
    in the project prefix would otherwise silently fall back to defaults). Raises ``ConfigError`` listing every
    problem.
    """
    defaults = project_defaults() if defaults is None else defaults
    problems = _namespace_problems(config)
    ours: dict[str, Any] = {}
    for full_key, text in config.items():
        namespace, _, key = full_key.partition(":")
        if namespace == PROJECT:
            ours[key] = text
    secrets = frozenset(k.partition(":")[2] for k in secret_keys if k.partition(":")[0] == PROJECT)
    for key in sorted(secrets - set(SECRET_CAPABLE)):
        problems.append(
            f"{_key(key)}: is a secret; expected a plain value (it names objects and the exported endpoint, so it "
            f"could not stay secret; only {', '.join(SECRET_CAPABLE)} may be secrets)"
        )
    fields = Settings.model_fields
    for unknown in sorted(set(ours) - set(fields)):
        near = difflib.get_close_matches(unknown, sorted(fields), n=1)
        hint = f"; did you mean {_key(near[0])}?" if near else ""
        problems.append(f"{_key(unknown)}: unknown key (allowed under {PROJECT}: {', '.join(sorted(fields))}){hint}")
    sections: dict[str, Any] = {}
    for name, info in fields.items():
        if name not in ours and name not in defaults:
            problems.append(f"{_key(name)}: missing (no default in Pulumi.yaml; set it in the stack file)")
            continue
        raw, problem = _parse_top(name, ours[name], info.annotation) if name in ours else (defaults[name], None)
        if problem:
            problems.append(problem)
            continue
        model = _model_of(info.annotation)
        try:
            if model is not None:
                raw = _merge_defaults(model, raw, defaults.get(name), (name,))
                sections[name] = model.model_validate_json(json.dumps(raw))
            else:
                sections[name] = _adapter(name).validate_json(json.dumps(raw))
        except ValidationError as error:
            problems.extend(_problems(error, (name,)))
    problems.extend(_cross_checks(sections))
    if problems:
        raise ConfigError(problems)
    settings = Settings(**sections)
    settings._secret_keys = secrets
    return settings


@functools.cache
def _adapter(name: str) -> TypeAdapter[Any]:
    """A validator for a top-level key that is not an object model, with its declared constraints."""
    info = Settings.model_fields[name]
    annotated: Any = Annotated[(info.annotation, *info.metadata)]
    return TypeAdapter(annotated, config=ConfigDict(strict=True))


# ---------------------------------------------------------------------------------------- cross-key rules


def _check_scaling(sfz: ScaleFromZeroSettings, keda: KedaSettings) -> list[str]:
    problems: list[str] = []
    if sfz.enabled and sfz.holdMinReplicasSeconds < sfz.readyTimeoutSeconds:
        problems.append(
            f"{_key('scaleFromZero.holdMinReplicasSeconds')} = {sfz.holdMinReplicasSeconds}: expected a value >= "
            f"scaleFromZero.readyTimeoutSeconds ({sfz.readyTimeoutSeconds}); the chart refuses a hold shorter "
            f"than the wake it protects"
        )
    if sfz.enabled and not keda.enabled:
        problems.append(
            f"{_key('keda.enabled')} = false: expected true while scaleFromZero.enabled is true "
            f"(KEDA is what scales Triton back down)"
        )
    if keda.minReplicaCount > keda.maxReplicaCount:
        problems.append(
            f"{_key('keda.minReplicaCount')} = {keda.minReplicaCount}: expected a value <= "
            f"keda.maxReplicaCount ({keda.maxReplicaCount})"
        )
    if keda.minReplicaCount == 0 and not sfz.enabled:
        problems.append(
            f"{_key('keda.minReplicaCount')} = 0: expected >= 1 unless scaleFromZero.enabled is true "
            f"(nothing would wake Triton from zero)"
        )
    return problems


_CROSS_CHECKS: tuple[tuple[tuple[str, ...], Callable[..., list[str]]], ...] = (
    (("scaleFromZero", "keda"), _check_scaling),
)
"""Rules that relate several top-level keys, with the sections each needs. A rule runs whenever its sections
parsed, so a type error in one section does not hide a conflict in another. Rules within one section are model
validators of that section."""


def _cross_checks(sections: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    for needs, check in _CROSS_CHECKS:
        if all(sections.get(name) is not None for name in needs):
            problems.extend(check(*(sections[name] for name in needs)))
    return problems
