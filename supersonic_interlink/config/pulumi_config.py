"""A stack's settings from the config the Pulumi CLI passes (or a stack file): loaded and checked against the values
the program computes, before any resource exists. ``serverLoad.metric``'s ``release`` and ``namespace`` matchers must
select this stack's alone (Prometheus anchors ``=~``), and both be there, or KEDA scales on another release's queue;
negative matchers are left alone."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from typing import Any, NamedTuple

from supersonic_interlink.config.loading import load_settings
from supersonic_interlink.config.rules import PROJECT, SECRET_PLACEHOLDER, ChartSource, ConfigError, Settings
from supersonic_interlink.config.values import helm_values_collisions, release_values
from supersonic_interlink.contract import CHART, GENERATIONS

_MATCHER = re.compile(
    r"(?<![\w.])(?P<label>release|namespace)\s*(?P<op>=~|!~|!=|=)\s*"
    r"(?P<value>\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`[^`]*`)"
)


class Matcher(NamedTuple):
    label: str
    op: str
    value: str
    text: str


def matchers(metric: str) -> list[Matcher]:
    """Each ``release`` or ``namespace`` matcher, its value unquoted (a backquoted one as it is)."""
    found = []
    for m in _MATCHER.finditer(metric):
        body = m["value"][1:-1]
        value = body if m["value"][0] == "`" else re.sub(r"\\(.)", r"\1", body)
        found.append(Matcher(m["label"], m["op"], value, m[0]))
    return found


def borrowed_selectors(metric: str, release: str, namespace: str, *, secret: bool = False) -> list[str]:
    """One line per selector missing or selecting another release or namespace; a secret's text is not shown."""
    if not metric.strip() or SECRET_PLACEHOLDER in metric:
        return []  # the chart's own; or a secret rendered offline (pulumi preview checks it)
    wanted = {"release": release, "namespace": namespace}
    setting = {"release": "release.name", "namespace": "namespace"}
    found = matchers(metric)
    problems = [
        f'{PROJECT}:serverLoad.metric: no {label} selector; expected {label}=~"{wanted[label]}" in each series '
        f"selector ({setting[label]})"
        for label in ("release", "namespace")
        if not any(m.label == label and m.op in ("=", "=~") for m in found)
    ]
    for m in found:
        own = m.value == wanted[m.label] or (m.op == "=~" and m.value == re.escape(wanted[m.label]))
        if m.op in ("=", "=~") and not own:
            shown = f"its {m.label} selector" if secret else m.text
            problems.append(
                f"{PROJECT}:serverLoad.metric: {shown} selects another {m.label} than this stack's "
                f'{wanted[m.label]!r} ({setting[m.label]}); expected {m.label}=~"{wanted[m.label]}"'
            )
    return problems


def settings_from_config(
    config: Mapping[str, Any],
    secret_keys: Collection[str] = (),
    prepare_chart: Callable[[ChartSource], None] | None = None,
) -> Settings:
    """``load_settings``, then the checks against the computed values; ``ConfigError`` with every problem."""
    settings = load_settings(config, secret_keys=frozenset(secret_keys), prepare_chart=prepare_chart)
    problems = [
        f"{PROJECT}:helmValues.{path}: set by the program from typed settings; change the typed key instead"
        for path in helm_values_collisions(release_values(settings, "<configmap>", "<checksum>"), settings.helmValues)
    ]
    problems += [
        f"{PROJECT}:helmValues.{other.inference_values_key}: the {other.name} generation's block; expected "
        f"{settings.generation.inference_values_key} ({settings.generation.name} generation)"
        for other in GENERATIONS
        if other != settings.generation and other.inference_values_key in settings.helmValues
    ]
    if settings.release.adopt and not settings.release.chart.pinned:
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


def current_config() -> dict[str, Any]:
    """The config map the Pulumi CLI handed this process."""
    # lazy, here and below: the Pulumi SDK (grpc) is slow to import, and only the program under the engine needs it
    from pulumi.runtime import config as runtime_config

    return {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}


def current_secret_keys(config: Mapping[str, Any]) -> frozenset[str]:
    """``PULUMI_CONFIG_SECRET_KEYS`` (from the language host) and those the runtime was told (the mock engine)."""
    from pulumi.runtime import config as runtime_config

    listed = frozenset(runtime_config.get_config_secret_keys_env())
    return listed | {key for key in config if runtime_config.is_config_secret(key)}
