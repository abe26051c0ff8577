"""The rules a stack value must meet, each from its consumer (Envoy, Kubernetes, Helm, busybox, cron), and the value
types built from them, of which ``model`` is made."""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Callable, Mapping
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
PROVIDER_KEYS = tuple(
    [f"kubernetes:{key}" for key in _KUBERNETES_KEYS.split()] + [f"pulumi:{key}" for key in _ENGINE_KEYS.split()]
)

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
"""Keys that change what ``pulumi up`` does: allowed only when listed in ``deliberateProviderConfig``."""

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
HPA_MAX_PERIOD_SECONDS = 1800  # pkg/apis/autoscaling/validation
HPA_MAX_STABILIZATION_WINDOW_SECONDS = 3600
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
    """What a value allows (``expected <text>``), in place of any error pydantic itself raises for it; ``why`` it has
    its limits goes to ``Pulumi.yaml``'s description."""

    def __init__(self, text: str, why: str | None = None) -> None:
        self.text, self.why = text, why

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        return core_schema.no_info_wrap_validator_function(self._validate, handler(source))

    def __get_pydantic_json_schema__(self, schema: Any, handler: Any) -> Any:
        return {**handler(schema), "x-expected": self.text, **({"x-why": self.why} if self.why else {})}

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


class Group(tuple[Any, ...], annotated_types.GroupedMetadata):
    """Several constraints as one ``Annotated`` item."""


def Limits(low: int, high: int, why: str) -> Group:
    text = f"a whole number from {low} to {high} ({why})"
    return Group((annotated_types.Ge(low), annotated_types.Le(high), Expect(text, why)))


def checked(check: Callable[[Any], bool], text: str) -> Group:
    return Group((rule(check, text), Expect(text)))


def Matches(pattern: str, text: str, max_length: int | None = None) -> Group:
    compiled = re.compile(pattern, re.ASCII)
    return checked(lambda v: compiled.fullmatch(v) is not None and (max_length is None or len(v) <= max_length), text)


def OneOf(*choices: str) -> Group:
    return checked(lambda value: value in choices, "one of " + ", ".join(choices))


JSONObject = Annotated[Mapping[str, Any], Frozen, Expect("an object")]


class Model(BaseModel):
    model_config = ConfigDict(
        strict=True, extra="forbid", frozen=True, validate_default=True, use_attribute_docstrings=True
    )


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


def normalized_absolute_path(value: str) -> bool:
    """The chart mounts it as written (/cvmfs/../etc is /etc); ``normpath`` keeps POSIX's leading ``//``."""
    return (
        value.startswith("/")
        and not value.startswith("//")
        and posixpath.normpath(value) == value
        and re.search(r"[\s\x00]", value) is None
    )


AbsolutePath = Annotated[
    str,
    checked(
        normalized_absolute_path,
        "an absolute, normalized path (starting with '/', no spaces, no '.', '..' or empty parts, no trailing '/')",
    ),
]
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
_ROBFIG_TERM = rf"(?:\*|\?|{_ROBFIG_VALUE}(?:-{_ROBFIG_VALUE})?)(?:/[0-9]+)?"
_ROBFIG_FIELD = re.compile(rf"{_ROBFIG_TERM}(?:,{_ROBFIG_TERM})*", re.ASCII)
CRON_TEXT = (
    "a Kubernetes CronJob schedule: five fields (minute 0-59, hour 0-23, day of month 1-31, month 1-12, "
    "day of week 0-6) such as '*/5 * * * *', or one of " + ", ".join(CRON_MACROS)
)


def valid_cron(value: str) -> bool:
    """robfig/cron's standard syntax (Kubernetes'), ranges checked by cronsim, which alone would also take ``L``,
    ``#``, a seconds field and day-of-week 7."""
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


Cron = Annotated[str, checked(valid_cron, CRON_TEXT)]

_QUANTITY = re.compile(r"\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?", re.ASCII)
Quantity = Annotated[
    int | str,
    checked(
        lambda v: 0 <= v <= PULUMI_NUMBER_MAX if isinstance(v, int) else _QUANTITY.fullmatch(v) is not None,
        "a Kubernetes quantity such as 2, '500m' or '8Gi' (a whole number or quantity text, not negative)",
    ),
]

NO_EMPTY_ARGUMENT_TEXT = "a list of non-empty strings (an empty one reaches the container as an empty argument)"
NoEmptyArgument = rule(all, NO_EMPTY_ARGUMENT_TEXT)

# The API server's rules: pkg/apis/core/validation/validation.go and apimachinery pkg/util/validation/validation.go.

_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"


def qualified_name(value: str) -> bool:
    """apimachinery ``IsQualifiedName``: label and annotation keys, toleration keys."""
    prefix, slash, name = value.rpartition("/")
    if slash and not (len(prefix) <= 253 and re.fullmatch(_DNS_SUBDOMAIN, prefix, re.ASCII)):
        return False
    return len(name) <= 63 and re.fullmatch(_LABEL_NAME, name, re.ASCII) is not None


def label_value(value: str) -> bool:
    """apimachinery ``IsValidLabelValue``."""
    return value == "" or (len(value) <= 63 and re.fullmatch(_LABEL_NAME, value, re.ASCII) is not None)


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
    rule(
        label_value,
        "a Kubernetes label value: empty, or at most 63 letters, digits, '-', '_' or '.', starting and "
        "ending alphanumeric",
    ),
    Expect("a string (quote numbers and booleans)"),
]
LabelMap = Annotated[
    Mapping[QualifiedName, LabelValue],
    Frozen,
    Expect("an object of Kubernetes labels (qualified names to label values)"),
]
ANNOTATIONS_MAX_BYTES = 256 * 1024  # apimachinery TotalAnnotationSizeLimitB
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
    """A Kubernetes quantity (``resource.ParseQuantity``) as an exact number."""
    if isinstance(value, int):
        return Fraction(value)
    match = re.fullmatch(r"\+?([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(.*)", value)
    if match is None:
        raise ValueError(value)
    number, suffix = Fraction(match[1]), match[2]
    if suffix[:1] in ("e", "E"):
        exponent = int(suffix[1:])
        if abs(exponent) > 100:  # far past the API server's cap; no 10**huge
            raise ValueError(value)
        return number * Fraction(10) ** exponent
    return number * _SUFFIX[suffix]


STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
CONTAINER_RESOURCE_TEXT = (
    "a container resource name: cpu, memory, ephemeral-storage, hugepages-<size>, or a name with a domain such as "
    "nvidia.com/gpu (the API server refuses any other)"
)


def container_resource_name(value: str) -> bool:
    """core validation ``validateContainerResourceName``."""
    if "/" not in value:
        return value in STANDARD_CONTAINER_RESOURCES or (
            value.startswith("hugepages-") and _QUANTITY.fullmatch(value.removeprefix("hugepages-")) is not None
        )
    native = _native_domain(value.rpartition("/")[0])
    return qualified_name(value) and (not native or value.rpartition("/")[2] in STANDARD_CONTAINER_RESOURCES)


def _native_domain(domain: str) -> bool:
    return domain == "kubernetes.io" or domain.endswith(".kubernetes.io")


ContainerResource = Annotated[str, checked(container_resource_name, CONTAINER_RESOURCE_TEXT)]


def overcommit_allowed(resource: str) -> bool:
    """core/helper ``IsOvercommitAllowed``."""
    domain, slash, _ = resource.rpartition("/")
    return (not slash or _native_domain(domain)) and not resource.startswith("hugepages-")
