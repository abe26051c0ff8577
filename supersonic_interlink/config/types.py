"""The value types of the settings, each a Python type with the rule its consumer sets (names, images, cron
schedules, Kubernetes quantities), and the API server's own rules for what the program writes into pod specs
(label and annotation keys and values, quantities compared as numbers)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from datetime import datetime
from fractions import Fraction
from typing import Annotated

from cronsim import CronSim, CronSimError
from pydantic import (
    Field,
)

from supersonic_interlink.config.rules import (
    CRON_MACROS,
    PULUMI_NUMBER_MAX,
    RELEASE_NAME_MAX,
    Expect,
    Frozen,
    Matches,
    rule,
)

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
