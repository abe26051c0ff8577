"""The rules a stack value must meet, each from the value's consumer (Envoy, Kubernetes, Helm, busybox, cron), the
value types built from them, and the API server's own rules for what the program writes into pod specs (label and
annotation keys and values, quantities compared as numbers). The models in ``model`` are made of these."""

from __future__ import annotations

import dataclasses
import posixpath
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from fractions import Fraction
from types import MappingProxyType
from typing import Annotated, Any

import annotated_types
from cronsim import CronSim, CronSimError
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError, core_schema

from supersonic_interlink import ROOT
from supersonic_interlink.contract import CHART

PROJECT = "supersonic-interlink"
PROJECT_FILE = ROOT / "Pulumi.yaml"

KNOWN_NAMESPACES = (PROJECT, "kubernetes", "pulumi")
"""Config namespaces the program reads or passes on: its own, the Kubernetes provider's and the engine's."""

_KUBERNETES_KEYS = (  # pulumi/pulumi-kubernetes v4.25.0 (commit f47bc2d6f199), provider/cmd/pulumi-resource-
    # kubernetes/schema.json: config.variables, then the two object inputs of provider.inputProperties the default
    # provider also takes.
    "cluster clusterIdentifier context deleteUnreachable enableConfigMapMutable enableReplaceCRD enableSecretMutable "
    "enableServerSideApply kubeconfig namespace renderYamlToDirectory skipUpdateUnreachable strictMode "
    "suppressDeprecationWarnings suppressHelmHookWarnings helmReleaseSettings kubeClientSettings"
)
# pulumi/pulumi v3.274.1: the engine's own keys (resource/deploy/default_providers.go, cmd/pulumi/autonaming,
# workspace/project.go PulumiTagsConfigKey, project/newcmd templateKey).
_ENGINE_KEYS = "autonaming disable-default-providers tags template"
PROVIDER_KEYS = tuple(
    [f"kubernetes:{key}" for key in _KUBERNETES_KEYS.split()] + [f"pulumi:{key}" for key in _ENGINE_KEYS.split()]
)
"""Every key of the Kubernetes provider's and the engine's namespaces that they read; any other is a typo."""

CHANGES_UP: Mapping[str, str] = MappingProxyType(
    {
        "kubernetes:renderYamlToDirectory": "manifests go to that directory: pulumi up deploys nothing",
        "kubernetes:deleteUnreachable": "an unreachable cluster's resources are dropped from the state",
        "kubernetes:skipUpdateUnreachable": "an unreachable cluster's updates are skipped and up still succeeds",
        "kubernetes:enableServerSideApply": "false switches the provider to client-side apply",
        "kubernetes:enableConfigMapMutable": "ConfigMaps are updated in place instead of replaced",
        "kubernetes:enableSecretMutable": "Secrets are updated in place instead of replaced",
        "kubernetes:strictMode": "the default provider this program deploys with is refused",
        "kubernetes:helmReleaseSettings": "Helm's storage driver and repositories for the release change",
        "kubernetes:clusterIdentifier": "it decides when the provider, and every resource with it, is replaced",
        "pulumi:autonaming": "the names Pulumi gives resources change",
        "pulumi:disable-default-providers": "the default provider this program deploys with is refused",
    }
)
"""Provider and engine keys that change what ``pulumi up`` does, each with how: set only when the stack lists the key
in ``deliberateProviderConfig``, so a review sees it was meant."""

# ---------------------------------------------------------------------------------------- consumers' limits

INT32_MAX = 2**31 - 1
"""Kubernetes' int32 fields (replica counts, HPA policy values)."""
UINT32_MAX = 2**32 - 1
"""Envoy's ``google.protobuf.UInt32Value`` fields (retry counts, circuit breakers, buffer size)."""
INT64_MAX = 2**63 - 1
"""Envoy's int64 fields, and busybox ``sh`` arithmetic (64-bit)."""
CLEANUP_KEEP_MAX = 20
"""The cleanup script's own bound on KEEP (its KEEP_MAX): every kept pod adds a ``metadata.name!=`` term to the
one deletecollection request, so the request URI stays short."""
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


def printable(text: str) -> str:
    """``text`` with every control or format character (escape codes, newlines, bidi overrides) written as its
    escape, so a key or value echoed in a message can neither forge output lines nor drive the terminal."""
    return "".join(
        (repr(c)[1:-1] if c.isascii() or ord(c) <= 0xFF else f"\\u{ord(c):04x}")
        if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")
        else c
        for c in text
    )


class ConfigError(Exception):
    """Raised with every problem found in a stack's config; ``problems`` holds one line each, made printable: the
    one place every config error passes, whatever it echoes."""

    def __init__(self, problems: list[str]):
        self.problems = [printable(problem) for problem in problems]
        super().__init__("\n".join(self.problems))


class Expect:
    """What a value allows, in the words of the error message (``expected <text>``): any error pydantic itself raises
    for the value (a wrong type, a bound) is reported with this text; the rules' own texts pass through."""

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


class Why:
    """Why a field has its limits, for ``Pulumi.yaml``'s description (the type line already shows the range)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __get_pydantic_json_schema__(self, schema: Any, handler: Any) -> Any:
        return {**handler(schema), "x-why": self.text}


def fail(text: str) -> PydanticCustomError:
    return PydanticCustomError("expected", "{expected}", {"expected": text})


def fail_at(field: str, value: Any, text: str, **others: Any) -> PydanticCustomError:
    """A model rule's failure reported at one of its fields (``<key>.<field> = <value>: expected <text>``).

    ``text`` names other fields' values as ``{name}`` with the value in ``others``: the loader prints every value,
    and prints none of a secret key's."""
    return PydanticCustomError(
        "at_field", "{expected}", {"expected": text, "field": field, "value": value, "others": others}
    )


def rule(check: Callable[[Any], bool], text: str) -> AfterValidator:
    def validate(value: Any) -> Any:
        if not check(value):
            raise fail(text)
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
        compiled, limit = re.compile(self.pattern, re.ASCII), self.max_length
        yield rule(lambda v: compiled.fullmatch(v) is not None and (limit is None or len(v) <= limit), self.text)
        yield Expect(self.text)


class OneOf(annotated_types.GroupedMetadata):
    """One of a few strings."""

    def __init__(self, *choices: str) -> None:
        self.choices = choices

    def __iter__(self) -> Iterator[Any]:
        text, choices = "one of " + ", ".join(self.choices), self.choices
        yield rule(lambda value: value in choices, text)
        yield Expect(text)


JSONObject = Annotated[Mapping[str, Any], Frozen, Expect("an object")]
"""A free-form object passed through as given (probes, extra Helm values)."""


class Model(BaseModel):
    """Strict (no conversions), unknown keys refused, immutable; defaults pass the same rules as stack values."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, validate_default=True)


# ---------------------------------------------------------------------------------------- value types

KubernetesName = Annotated[
    str,
    Matches(
        r"[a-z0-9]([-a-z0-9]*[a-z0-9])?",
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
ABSOLUTE_PATH_TEXT = (
    "an absolute, normalized path (starting with '/', no spaces, no '.', '..' or empty parts, no trailing '/')"
)
"""The chart mounts the path as written: /cvmfs/../etc would mount CVMFS over /etc."""


def normalized_absolute_path(value: str) -> bool:
    """A path that means what it says: ``posixpath.normpath`` leaves it as it is (no ``.``, ``..``, ``//`` or
    trailing ``/``), and it starts at the root (``normpath`` keeps a leading ``//``, POSIX's implementation-defined
    root, so that is refused apart)."""
    return (
        value.startswith("/")
        and not value.startswith("//")
        and posixpath.normpath(value) == value
        and re.search(r"[\s\x00]", value) is None
    )


AbsolutePath = Annotated[str, rule(normalized_absolute_path, ABSOLUTE_PATH_TEXT), Expect(ABSOLUTE_PATH_TEXT)]
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
    rule(
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


Cron = Annotated[str, rule(valid_cron, CRON_TEXT), Expect(CRON_TEXT)]

_QUANTITY = re.compile(r"\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?", re.ASCII)
QUANTITY_TEXT = "a Kubernetes quantity such as 2, '500m' or '8Gi' (a whole number or quantity text, not negative)"
Quantity = Annotated[
    int | str,
    rule(
        lambda v: (
            (isinstance(v, int) and 0 <= v <= PULUMI_NUMBER_MAX)
            or (isinstance(v, str) and bool(_QUANTITY.fullmatch(v)))
        ),
        QUANTITY_TEXT,
    ),
    Expect(QUANTITY_TEXT),
]

NO_EMPTY_ARGUMENT_TEXT = "a list of non-empty strings (an empty one reaches the container as an empty argument)"
NoEmptyArgument = rule(all, NO_EMPTY_ARGUMENT_TEXT)
"""A container's command or args: the chart copies them into the pod spec unread, so "" would be passed on."""

StringMap = Annotated[
    Mapping[str, Annotated[str, Expect("a string (quote numbers and booleans)")]],
    Frozen,
    Expect("an object whose values are strings"),
]

# ---------------------------------------------------------------------------------------- the API server's rules
# kubernetes/kubernetes pkg/apis/core/validation/validation.go (ValidateTolerations,
# ValidateContainerResourceRequirements, ValidateResourceQuantityValue) and
# staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go (IsQualifiedName, IsValidLabelValue): what the API
# server refuses at `pulumi up`, refused here before anything is registered.

_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
QUALIFIED_NAME_TEXT = (
    "a Kubernetes qualified name: an optional DNS-subdomain prefix (at most 253) and '/', then at most 63 letters, "
    "digits, '-', '_' or '.', starting and ending alphanumeric"
)
LABEL_VALUE_TEXT = (
    "a Kubernetes label value: empty, or at most 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric"
)


def qualified_name(value: str) -> bool:
    """apimachinery ``IsQualifiedName``: label and annotation keys, toleration keys."""
    prefix, slash, name = value.rpartition("/")
    if slash and not (len(prefix) <= 253 and re.fullmatch(_DNS_SUBDOMAIN, prefix, re.ASCII)):
        return False
    return len(name) <= 63 and re.fullmatch(_LABEL_NAME, name, re.ASCII) is not None


def label_value(value: str) -> bool:
    """apimachinery ``IsValidLabelValue``."""
    return value == "" or (len(value) <= 63 and re.fullmatch(_LABEL_NAME, value, re.ASCII) is not None)


QualifiedName = Annotated[str, rule(qualified_name, QUALIFIED_NAME_TEXT), Expect(QUALIFIED_NAME_TEXT)]
LabelValue = Annotated[str, rule(label_value, LABEL_VALUE_TEXT), Expect("a string (quote numbers and booleans)")]
LabelMap = Annotated[
    Mapping[QualifiedName, LabelValue],
    Frozen,
    Expect("an object of Kubernetes labels (qualified names to label values)"),
]
"""Labels and node selectors, as the API server checks them."""
ANNOTATIONS_MAX_BYTES = 256 * 1024
"""apimachinery ``TotalAnnotationSizeLimitB``: an object's annotations, keys and values together, in bytes."""
ANNOTATIONS_TEXT = (
    f"annotations of at most {ANNOTATIONS_MAX_BYTES} bytes in all, keys and values (the API server's limit)"
)


def annotations_size(value: Mapping[str, str]) -> bool:
    """apimachinery ``ValidateAnnotationsSize``: the keys' and values' lengths summed."""
    return sum(len(k.encode()) + len(v.encode()) for k, v in value.items()) <= ANNOTATIONS_MAX_BYTES


AnnotationMap = Annotated[
    Mapping[QualifiedName, Annotated[str, Expect("a string (quote numbers and booleans)")]],
    Frozen,
    rule(annotations_size, ANNOTATIONS_TEXT),
    Expect("an object of Kubernetes annotations (qualified names to strings)"),
]

_SUFFIX = {
    **{s: Fraction(1024) ** (i + 1) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
    **{s: Fraction(1000) ** (i + 1) for i, s in enumerate(("k", "M", "G", "T", "P", "E"))},
    "m": Fraction(1, 1000),
    "": Fraction(1),
}


def quantity_value(value: int | str) -> Fraction:
    """A Kubernetes quantity (``resource.ParseQuantity``) as an exact number, for comparing requests with limits."""
    if isinstance(value, int):
        return Fraction(value)
    match = re.fullmatch(r"\+?([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(.*)", value)
    if match is None:
        raise ValueError(value)
    number, suffix = Fraction(match[1]), match[2]
    if suffix[:1] in ("e", "E"):
        exponent = int(suffix[1:])
        if abs(exponent) > 100:  # the API server caps quantities far below this; no 10**huge here
            raise ValueError(value)
        return number * Fraction(10) ** exponent
    return number * _SUFFIX[suffix]


STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
CONTAINER_RESOURCE_TEXT = (
    "a container resource name: cpu, memory, ephemeral-storage, hugepages-<size>, or a name with a domain such as "
    "nvidia.com/gpu (the API server refuses any other)"
)


def container_resource_name(value: str) -> bool:
    """core validation ``validateContainerResourceName``: without a domain, only the standard container resources
    (``memroy`` and ``CPU`` are refused); with one, a qualified name outside kubernetes.io unless native."""
    if "/" not in value:
        return value in STANDARD_CONTAINER_RESOURCES or (
            value.startswith("hugepages-") and _QUANTITY.fullmatch(value.removeprefix("hugepages-")) is not None
        )
    domain = value.rpartition("/")[0]
    native = domain == "kubernetes.io" or domain.endswith(".kubernetes.io")
    return qualified_name(value) and (not native or value.rpartition("/")[2] in STANDARD_CONTAINER_RESOURCES)


ContainerResource = Annotated[
    str, rule(container_resource_name, CONTAINER_RESOURCE_TEXT), Expect(CONTAINER_RESOURCE_TEXT)
]


def overcommit_allowed(resource: str) -> bool:
    """core/helper ``IsOvercommitAllowed``: native resources (no domain, or kubernetes.io) other than hugepages."""
    domain, slash, _ = resource.rpartition("/")
    native = not slash or domain == "kubernetes.io" or domain.endswith(".kubernetes.io")
    return native and not resource.startswith("hugepages-")
