"""Stack config in, ``Settings`` out: every problem at once, one line each (``<project>:<full.key> = <value>:
expected <what is allowed>``), and no secret value printed; and which chart generation (``contract.GENERATIONS``) the
stack's chart is, read from its own ``values.yaml``, a repo version by SuperSONIC's published list, a git chart not on
disk (only offline) as ``contract.NEWEST``."""

from __future__ import annotations

import contextlib
import contextvars
import difflib
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from supersonic_interlink import ROOT
from supersonic_interlink.config import rules
from supersonic_interlink.config.pulumi_yaml import load_outside_yaml
from supersonic_interlink.config.rules import KNOWN_NAMESPACES, PROJECT, ChartSource, ConfigError, Model, Settings, thaw
from supersonic_interlink.contract import NEWEST, TRITON, Generation, UnknownGeneration, generation_of_values

_TYPE_WORDS = {"bool_type": "true or false", "int_type": "a whole number", "string_type": "a string"}
_TYPE_WORDS |= dict.fromkeys(("model_type", "model_attributes_type", "dict_type"), "an object")
_TYPE_WORDS |= dict.fromkeys(("tuple_type", "list_type"), "a list")


def show_value(value: Any, secret: bool) -> str:
    """A value as a config error prints it, the one place that does: a secret never (the CLI masks only its text)."""
    return rules.SECRET_PLACEHOLDER if secret else rules.shorten(json.dumps(value, sort_keys=True, default=str), 200)


def key_of(path: str) -> str:
    return f"{PROJECT}:{path}"


def project_defaults() -> dict[str, Any]:
    """Every top-level key's default as ``Pulumi.yaml`` declares it (of an object with a required field, the rest)."""
    required = [(name, info.annotation) for name, info in Settings.model_fields.items() if info.is_required()]
    sections = {name: a.model_construct() for name, a in required if isinstance(a, type) and issubclass(a, Model)}
    return thaw(Settings.model_construct(None, **sections))


def deep_merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``, objects merged key by key."""
    merged = thaw(base)
    for key, value in top.items():
        both = isinstance(value, Mapping) and isinstance(merged.get(key), Mapping)
        merged[key] = deep_merge(merged[key], value) if both else thaw(value)
    return merged


def cli_text(value: Any) -> str:
    """How the CLI hands a value to the program: strings as they are, the rest as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _fields_at(loc: tuple[Any, ...]) -> list[str]:
    model: Any = Settings
    for part in (p for p in loc if not isinstance(p, int)):
        annotation = model.model_fields[part].annotation if part in model.model_fields else None
        found = [a for a in (annotation, *get_args(annotation)) if isinstance(a, type) and issubclass(a, Model)]
        if not found:
            return []
        model = found[0]
    return sorted(model.model_fields)


def _path(loc: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")


def _problems(error: ValidationError, secrets: frozenset[str], unread: set[str]) -> Iterator[str]:
    """One line per pydantic error; none for a top-level value in ``unread`` (reported already)."""
    for item in error.errors(include_url=False):
        loc = tuple(p for p in item["loc"] if p != "[key]")
        kind, value, secret = item["type"], item["input"], loc[0] in secrets
        if loc[0] in unread:
            continue
        if kind == "missing":
            yield f"{key_of(_path(loc))}: missing (no default in Pulumi.yaml; set it in the stack file)"
        elif kind == "extra_forbidden":
            under = key_of(_path(loc[:-1])) if loc[1:] else PROJECT
            allowed = ", ".join(_fields_at(loc[:-1]))
            yield f"{key_of(_path(loc))}: unknown key (allowed under {under}: {allowed})"
        else:
            what = item["msg"] if kind == "expected" else _TYPE_WORDS.get(kind, item["msg"])
            if kind == "at_field":
                context = item["ctx"]
                loc, value = (*loc, *context["field"].split(".", 1)), context["value"]
                what = context["expected"].format(**{k: show_value(v, secret) for k, v in context["others"].items()})
            yield f"{key_of(_path(loc))} = {show_value(value, secret)}: expected {what}"


def _other_namespace_problems(config: Mapping[str, Any]) -> Iterator[str]:
    """Keys outside the project's namespace: only ``kubernetes:`` and ``pulumi:`` keys that are read and do not
    change what ``pulumi up`` does."""
    for key in sorted(k for k in config if k.partition(":")[0] != PROJECT):
        if key not in rules.PROVIDER_KEYS:
            near = difflib.get_close_matches(key, [*rules.PROVIDER_KEYS, *map(key_of, Settings.model_fields)], n=1)
            hint = f"did you mean {near[0]}?" if near else f"this program reads only {', '.join(KNOWN_NAMESPACES)} keys"
            yield f"{key}: unknown key; {hint}"
        elif key in rules.CHANGES_UP:
            yield f"{key}: changes what pulumi up does; expected it unset"


CHART_CACHE_DIR = ".charts"  # <commit>/<path> of each fetched git chart
PUBLISHED_TRITON_VERSIONS = frozenset({"0.1.0", "0.1.1", "0.1.2", "0.2.0", "0.2.1", "0.3.0", "0.3.1"})
"""SuperSONIC's chart repository index.yaml, read 2026-11-30: every one names the inference server ``triton``."""
CHART_OVERRIDE: contextvars.ContextVar[Path | None] = contextvars.ContextVar("chart_override", default=None)
"""``render --chart DIR``: the chart an offline render uses instead of the stack's own."""


def chart_directory(chart: ChartSource, root: Path = ROOT) -> Path | None:
    """Where the chart is expected on disk (a path, or a pinned git commit's fetched copy), else None."""
    if chart.kind == "path":
        return root / str(chart.path)
    if chart.kind == "git" and chart.commit is not None:
        return root / CHART_CACHE_DIR / chart.commit / str(chart.path)
    return None


def values_on_disk(chart: ChartSource, root: Path = ROOT) -> Path | None:
    directory = chart_directory(chart, root)
    return directory / "values.yaml" if directory is not None and (directory / "values.yaml").is_file() else None


def select_generation(chart: ChartSource, root: Path = ROOT) -> Generation:
    key = f"{PROJECT}:release.chart"
    values_file = None if (override := CHART_OVERRIDE.get()) is None else override / "values.yaml"
    if values_file is None or not values_file.is_file():  # without one, Helm and the checks say what is wrong
        if chart.kind == "repo":
            if chart.version in PUBLISHED_TRITON_VERSIONS:
                return TRITON
            known = ", ".join(sorted(PUBLISHED_TRITON_VERSIONS))
            raise ConfigError([f"{key}.version = {chart.version!r}: expected a published SuperSONIC version ({known})"])
        elif (values_file := values_on_disk(chart, root)) is None:
            return NEWEST  # only offline: preview and up fetch a pinned chart first, and `render` says it assumed
    try:
        documents = load_outside_yaml(values_file.read_bytes())
        return generation_of_values(documents[0] if documents else None)
    except (OSError, UnknownGeneration, ValueError) as error:
        where = values_file.parent
        where = where.relative_to(root) if where.is_relative_to(root) else where
        raise ConfigError([f"{key}: the chart at {where} is of no supported generation: {error}"]) from None


def load_settings(
    config: Mapping[str, Any],
    secret_keys: frozenset[str] | set[str] = frozenset(),
    prepare_chart: Callable[[ChartSource], None] | None = None,
) -> Settings:
    """``Settings`` from the config map the Pulumi CLI passes, or ``ConfigError`` with every problem.

    ``secret_keys``: the full keys the CLI listed as secret; ``prepare_chart`` puts the chart on disk before its
    generation is read from it."""
    ours = {k.partition(":")[2]: v for k, v in config.items() if k.partition(":")[0] == PROJECT}
    secrets = frozenset(k.partition(":")[2] for k in secret_keys if k.partition(":")[0] == PROJECT)
    problems = [
        f"{key_of(key)}: is a secret; expected a plain value (only {', '.join(rules.SECRET_CAPABLE)})"
        for key in sorted(secrets & set(Settings.model_fields) - set(rules.SECRET_CAPABLE))
    ]
    given: dict[str, Any] = {}
    unread: set[str] = set()
    for name, value in {**project_defaults(), **ours}.items():
        # As the program reads it: the CLI's JSON text, or a stack file's value taken as the CLI passes it.
        given[name] = cli_text(value) if name == "namespace" else value  # namespace: the one text-valued key
        if name != "namespace" and name in Settings.model_fields:
            if isinstance(value, str):
                with contextlib.suppress(ValueError, RecursionError):
                    given[name] = json.loads(value)
            if not isinstance(given[name], dict):
                problems.append(f"{key_of(name)} = {show_value(value, name in secrets)}: expected an object")
                unread.add(name)
    settings = None
    try:
        settings = Settings.model_validate_json(json.dumps(given))
    except ValidationError as error:
        problems += _problems(error, secrets, unread)
    with contextlib.suppress(ValidationError):  # the cross-key rules, when both sections are valid on their own
        sfz = rules.ScaleFromZeroSettings.model_validate_json(json.dumps(given.get("scaleFromZero")))
        keda = rules.KedaSettings.model_validate_json(json.dumps(given.get("keda")))
        for path, value, text in rules.across_keys(sfz, keda):
            secret = path.split(".")[0] in secrets
            shown = text.format(ready=show_value(sfz.readyTimeoutSeconds, secret))
            problems.append(f"{key_of(path)} = {show_value(value, secret)}: expected {shown}")
    problems += _other_namespace_problems(config)
    if problems or settings is None:
        raise ConfigError(problems)
    settings._secret_keys = secrets
    if prepare_chart is not None:
        prepare_chart(settings.release.chart)
    settings._generation = select_generation(settings.release.chart)
    return settings
