"""A stack's settings from the config the Pulumi CLI passes (or a stack file): loaded and checked against the values
the program computes, before any resource exists. ``serverLoad.metric``'s ``release`` and ``namespace`` matchers must
select this stack's alone (Prometheus anchors ``=~``), and both be there, or KEDA scales on another release's queue;
negative matchers are left alone."""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from supersonic_interlink.config.loading import load_settings
from supersonic_interlink.config.model import ChartSource, Settings
from supersonic_interlink.config.rules import PROJECT, SECRET_PLACEHOLDER, ConfigError, shorten
from supersonic_interlink.config.values import helm_values_collisions, release_values
from supersonic_interlink.contract import CHART, GENERATIONS

_MATCHER = re.compile(
    r"(?<![\w.])(?P<label>release|namespace)\s*(?P<op>=~|!~|!=|=)\s*"
    r"(?P<value>\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`[^`]*`)"
)


@dataclass(frozen=True)
class Matcher:
    label: str
    op: str
    value: str
    text: str


def _unquote(quoted: str) -> str:
    body = quoted[1:-1]
    if quoted[0] == "`":
        return body
    return re.sub(r"\\(.)", r"\1", body)


def matchers(metric: str) -> list[Matcher]:
    return [Matcher(m["label"], m["op"], _unquote(m["value"]), m.group(0)) for m in _MATCHER.finditer(metric)]


def _selects_only(matcher: Matcher, wanted: str) -> bool:
    return matcher.value == wanted or (matcher.op == "=~" and matcher.value == re.escape(wanted))


def borrowed_selectors(metric: str, release: str, namespace: str, *, secret: bool = False) -> list[str]:
    """One line per selector missing or selecting another release or namespace; a secret's text is not shown."""
    if not metric.strip() or SECRET_PLACEHOLDER in metric:
        return []  # the chart's own; or a secret rendered offline (pulumi preview checks it)
    wanted = {"release": release, "namespace": namespace}
    setting = {"release": "release.name", "namespace": "namespace"}
    problems = []
    found = matchers(metric)
    for label in ("release", "namespace"):
        if not any(m.label == label and m.op in ("=", "=~") for m in found):
            problems.append(
                f'{PROJECT}:serverLoad.metric: no {label} selector; expected {label}=~"{wanted[label]}" in each '
                f"series selector ({setting[label]})"
            )
    for matcher in found:
        if matcher.op not in ("=", "=~") or _selects_only(matcher, wanted[matcher.label]):
            continue
        shown = f"its {matcher.label} selector" if secret else matcher.text
        problems.append(
            f"{PROJECT}:serverLoad.metric: {shown} selects another {matcher.label} than this stack's "
            f'{wanted[matcher.label]!r} ({setting[matcher.label]}); expected {matcher.label}=~"{wanted[matcher.label]}"'
        )
    return problems


def settings_from_config(
    config: Mapping[str, Any],
    secret_keys: Collection[str] = (),
    prepare_chart: Callable[[ChartSource], None] | None = None,
) -> Settings:
    """``load_settings``, then the checks against the computed values; ``ConfigError`` with every problem."""
    settings = load_settings(config, secret_keys=frozenset(secret_keys), prepare_chart=prepare_chart)
    collisions = helm_values_collisions(release_values(settings, "<configmap>", "<checksum>"), settings.helmValues)
    problems = [
        f"{PROJECT}:helmValues.{path}: set by the program from typed settings; change the typed key instead"
        for path in collisions
    ]
    for other in GENERATIONS:
        if other != settings.generation and other.inference_values_key in settings.helmValues:
            problems.append(
                f"{PROJECT}:helmValues.{other.inference_values_key}: the {other.name} generation's block; expected "
                f"{settings.generation.inference_values_key} ({settings.generation.name} generation)"
            )
    chart = settings.release.chart
    if settings.release.adopt and not chart.pinned:
        # Adopting upgrades the live release at once: with a moving chart that upgrade could be any commit.
        problems.append(
            f"{PROJECT}:release.adopt = true: expected a pinned chart (release.chart.commit) to adopt with "
            "(docs/takeover.md)"
        )
    problems += borrowed_selectors(
        settings.serverLoad.metric,
        CHART.instance_name(settings.release.name),
        settings.namespace,
        secret=settings.is_secret("serverLoad"),
    )
    if problems:
        raise ConfigError(problems)
    return settings


def _environment_json(name: str, shape: type[dict[str, Any]] | type[list[Any]], expected: str) -> Any:
    """``$name`` as JSON of ``shape`` (absent: empty), where the SDK's own ``json.loads`` would raise a traceback."""
    text = os.environ.get(name)
    if text is None:
        return shape()
    value: Any = None
    with contextlib.suppress(ValueError, RecursionError):
        value = json.loads(text)
    if not isinstance(value, shape) or (shape is list and not all(isinstance(key, str) for key in value)):
        shown = shorten(text, 80)
        raise ConfigError([f"environment variable {name} = {shown!r}: expected {expected}, as the Pulumi CLI sets it"])
    return value


def current_config() -> dict[str, Any]:
    """The config map the Pulumi CLI handed this process."""
    # lazy, here and below: the Pulumi SDK (grpc) is slow to import, and only the program under the engine needs it
    from pulumi.runtime import config as runtime_config

    merged = dict(_environment_json("PULUMI_CONFIG", dict, "a JSON object of config keys to values"))
    merged.update(runtime_config.CONFIG.get())
    return merged


def current_secret_keys(config: Mapping[str, Any]) -> frozenset[str]:
    """``PULUMI_CONFIG_SECRET_KEYS`` (from the language host) and those the runtime was told (the mock engine)."""
    from pulumi.runtime import config as runtime_config

    listed = set(_environment_json("PULUMI_CONFIG_SECRET_KEYS", list, "a JSON list of config keys"))
    return frozenset(listed | {key for key in config if runtime_config.is_config_secret(key)})
