"""The rules a stack value must meet, each from the value's consumer (Envoy, Kubernetes, Helm, busybox, cron),
and the value types built from them; the models in ``model`` are made of these."""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Annotated, Any

import annotated_types
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
)
from pydantic_core import PydanticCustomError

from supersonic_interlink import ROOT
from supersonic_interlink.contract import CHART

PROJECT = "supersonic-interlink"
PROJECT_FILE = ROOT / "Pulumi.yaml"

KNOWN_NAMESPACES = (PROJECT, "kubernetes", "pulumi")
"""Config namespaces the program reads or passes on: its own, the Kubernetes provider's and the engine's."""

PROVIDER_KEYS = (
    # pulumi/pulumi-kubernetes v4.25.0 (commit f47bc2d6f199), provider/cmd/pulumi-resource-kubernetes/schema.json:
    # config.variables, then the two object inputs of provider.inputProperties the default provider also takes.
    "kubernetes:cluster",
    "kubernetes:clusterIdentifier",
    "kubernetes:context",
    "kubernetes:deleteUnreachable",
    "kubernetes:enableConfigMapMutable",
    "kubernetes:enableReplaceCRD",
    "kubernetes:enableSecretMutable",
    "kubernetes:enableServerSideApply",
    "kubernetes:kubeconfig",
    "kubernetes:namespace",
    "kubernetes:renderYamlToDirectory",
    "kubernetes:skipUpdateUnreachable",
    "kubernetes:strictMode",
    "kubernetes:suppressDeprecationWarnings",
    "kubernetes:suppressHelmHookWarnings",
    "kubernetes:helmReleaseSettings",
    "kubernetes:kubeClientSettings",
    # pulumi/pulumi v3.274.1: the engine's own keys (resource/deploy/default_providers.go, cmd/pulumi/autonaming,
    # workspace/project.go PulumiTagsConfigKey, project/newcmd templateKey).
    "pulumi:autonaming",
    "pulumi:disable-default-providers",
    "pulumi:tags",
    "pulumi:template",
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


def fail_at(field: str, value: Any, text: str, **others: Any) -> PydanticCustomError:
    """A model rule's failure reported at one of its fields (``<key>.<field> = <value>: expected <text>``).

    ``text`` names other fields' values as ``{name}`` with the value in ``others``: the loader prints every value,
    and prints none of a secret key's."""
    context = {"expected": text, "field": field, "value": value, "others": others}
    return PydanticCustomError("at_field", "{expected}", context)


def rule(check: Callable[[Any], bool], text: str) -> AfterValidator:
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

        yield rule(check, self.text)
        yield Expect(self.text)


@dataclasses.dataclass(frozen=True)
class OneOf(annotated_types.GroupedMetadata):
    """One of a few strings."""

    choices: tuple[str, ...]

    def __iter__(self) -> Iterator[Any]:
        text = "one of " + ", ".join(self.choices)
        choices = self.choices
        yield rule(lambda value: value in choices, text)
        yield Expect(text)


def expanded(metadata: Iterable[Any]) -> list[Any]:
    """Annotated metadata with grouped items (``Limits``, ``Matches``, ``OneOf``) spread out."""
    return [item for m in metadata for item in (m if isinstance(m, annotated_types.GroupedMetadata) else [m])]


JSONObject = Annotated[Mapping[str, Any], Frozen, Expect("an object")]
"""A free-form object passed through as given (probes, extra Helm values)."""


class Model(BaseModel):
    """Strict (no conversions), unknown keys refused, immutable."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)
