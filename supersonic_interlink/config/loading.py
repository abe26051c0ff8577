"""Stack config in, ``Settings`` out: every problem at once, one line each (``<project>:<full.key> = <value>:
expected <what is allowed>``), and no secret value printed; and which chart generation (``contract.GENERATIONS``) the
stack's chart is, read from its own ``values.yaml``, a repo version by SuperSONIC's published list, a git chart not on
disk (only offline) as ``contract.NEWEST``."""

from __future__ import annotations

import contextlib
import contextvars
import difflib
import json
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from supersonic_interlink import ROOT
from supersonic_interlink.config.model import (
    SECRET_CAPABLE,
    ChartSource,
    KedaSettings,
    ScaleFromZeroSettings,
    Settings,
    across_keys,
    thaw,
)
from supersonic_interlink.config.pulumi_yaml import load_outside_yaml
from supersonic_interlink.config.rules import (
    CHANGES_UP,
    KNOWN_NAMESPACES,
    PROJECT,
    PROVIDER_KEYS,
    SECRET_PLACEHOLDER,
    ConfigError,
    Model,
    shorten,
)
from supersonic_interlink.contract import NEWEST, TRITON, Generation, UnknownGeneration, generation_of_values

__all__ = ["cli_text", "deep_merge", "load_settings", "project_defaults", "thaw"]

SHOWN_MAX = 200
_TYPE_WORDS = {"bool_type": "true or false", "int_type": "a whole number", "string_type": "a string"}
_TYPE_WORDS |= dict.fromkeys(("model_type", "model_attributes_type", "dict_type"), "an object")
_TYPE_WORDS |= dict.fromkeys(("tuple_type", "list_type"), "a list")


def show_value(value: Any, secret: bool) -> str:
    """A value as a config error prints it, the one place that does: a secret never (the CLI masks only its exact
    text, and ``json.dumps`` escapes)."""
    if secret:
        return SECRET_PLACEHOLDER
    return shorten(json.dumps(value, sort_keys=True, default=str), SHOWN_MAX)


def key_of(path: str) -> str:
    return f"{PROJECT}:{path}"


def project_defaults() -> dict[str, Any]:
    """Every top-level key's default as ``Pulumi.yaml`` declares it: an object with a required field, the fields that
    have one."""
    defaults: dict[str, Any] = {}
    for name, info in Settings.model_fields.items():
        if not info.is_required():
            defaults[name] = thaw(info.get_default(call_default_factory=True))
        elif isinstance(info.annotation, type) and issubclass(info.annotation, Model):
            fields = info.annotation.model_fields.items()
            defaults[name] = {
                k: thaw(f.get_default(call_default_factory=True)) for k, f in fields if not f.is_required()
            }
            defaults[name] = {k: v for k, v in defaults[name].items() if v is not None}
    return defaults


def deep_merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``, objects merged key by key."""
    merged = thaw(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = thaw(value)
    return merged


def cli_text(value: Any) -> str:
    """How the CLI hands a value to the program: strings as they are, the rest as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _fields_at(loc: tuple[Any, ...]) -> list[str]:
    model: Any = Settings
    for part in loc:
        if isinstance(part, int):
            continue
        annotation = model.model_fields[part].annotation if part in model.model_fields else None
        found = [a for a in (annotation, *typing.get_args(annotation)) if isinstance(a, type) and issubclass(a, Model)]
        if not found:
            return []
        model = found[0]
    return sorted(model.model_fields)


def _path(loc: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")


def _problems(error: ValidationError, secrets: frozenset[str], unread: set[str]) -> list[str]:
    """One line per pydantic error; none for a top-level value in ``unread`` (reported already)."""
    problems: list[str] = []
    for item in error.errors(include_url=False):
        loc = tuple(p for p in item["loc"] if p != "[key]")
        if loc[0] in unread:
            continue
        kind, value, secret = item["type"], item["input"], loc[0] in secrets
        if kind == "missing":
            problems.append(f"{key_of(_path(loc))}: missing (no default in Pulumi.yaml; set it in the stack file)")
            continue
        if kind == "extra_forbidden":
            names = _fields_at(loc[:-1])
            near = difflib.get_close_matches(str(loc[-1]), names, n=1)
            hint = f"; did you mean {key_of(_path((*loc[:-1], near[0])))}?" if near else ""
            problems.append(
                f"{key_of(_path(loc))}: unknown key (allowed under {key_of(_path(loc[:-1])) if loc[1:] else PROJECT}: "
                f"{', '.join(names)}){hint}"
            )
            continue
        what = item["msg"] if kind == "expected" else _TYPE_WORDS.get(kind, item["msg"])
        if kind == "at_field":
            context = item["ctx"]
            loc, value = (*loc, *context["field"].split(".", 1)), context["value"]
            what = context["expected"].format(**{k: show_value(v, secret) for k, v in context["others"].items()})
        problems.append(f"{key_of(_path(loc))} = {show_value(value, secret)}: expected {what}")
    return problems


def _as_the_program_reads(name: str, value: Any, secret: bool) -> tuple[Any, str | None]:
    """A top-level value as the program reads it: the CLI's JSON text, or a stack file's value taken as the CLI passes
    it."""
    if name == "namespace":  # the one text-valued key
        return (value if isinstance(value, str) else cli_text(value)), None
    parsed = value
    if isinstance(value, str):
        with contextlib.suppress(ValueError, RecursionError):
            parsed = json.loads(value)
    if not isinstance(parsed, dict):
        return None, f"{key_of(name)} = {show_value(value, secret)}: expected an object"
    return parsed, None


_INFO = Settings.model_fields["deliberateProviderConfig"]
_DELIBERATE: TypeAdapter[Any] = TypeAdapter(typing.Annotated[(_INFO.annotation, *_INFO.metadata)])  # type: ignore[arg-type]


def _other_namespace_problems(config: Mapping[str, Any], deliberate: Mapping[str, str] | None) -> list[str]:
    """Keys outside the project's namespace: only ``kubernetes:`` and ``pulumi:`` keys that are read, and listed in
    ``deliberate`` if they change ``pulumi up`` (None: it did not parse)."""
    problems = []
    for full_key in sorted(k for k in config if k.partition(":")[0] != PROJECT):
        namespace, _, name = full_key.partition(":")
        known = [k.partition(":")[2] for k in PROVIDER_KEYS if k.startswith(f"{namespace}:")]
        if namespace not in KNOWN_NAMESPACES:
            near = difflib.get_close_matches(namespace, KNOWN_NAMESPACES, n=1, cutoff=0.6)
            if near and near[0] == PROJECT:
                guess = difflib.get_close_matches(name, list(Settings.model_fields), n=1) or [name]
                hint = f"did you mean {key_of(guess[0])}?"
            elif near:
                hint = f"did you mean {near[0]}:{name}?"
            else:
                hint = f"this program reads only the namespaces {', '.join(KNOWN_NAMESPACES)}"
            problems.append(f"{full_key}: unknown config namespace {namespace!r}; {hint}")
        elif full_key not in PROVIDER_KEYS:
            near = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {namespace}:{near[0]}?" if near else f"{namespace}: takes only {', '.join(known)}"
            problems.append(f"{full_key}: unknown key; {hint}")
        elif full_key in CHANGES_UP and deliberate is not None and full_key not in deliberate:
            problems.append(
                f"{full_key}: changes what pulumi up does ({CHANGES_UP[full_key]}); list it in "
                f"{key_of('deliberateProviderConfig')} if that is meant, or remove it"
            )
    for listed in sorted(set(deliberate or ()) - set(config)):  # a stale entry would later allow it unseen
        problems.append(
            f"{key_of('deliberateProviderConfig')} lists {listed}, which the stack does not set; "
            "remove it from the list"
        )
    return problems


def _across_parsed_sections(given: Mapping[str, Any], error: ValidationError, secrets: frozenset[str]) -> list[str]:
    """The cross-key rules, when the sections they relate validate on their own."""
    if any(e["loc"][0] in ("scaleFromZero", "keda") for e in error.errors()):
        return []
    sfz = ScaleFromZeroSettings.model_validate_json(json.dumps(given.get("scaleFromZero", {})))
    keda = KedaSettings.model_validate_json(json.dumps(given.get("keda", {})))
    broken = across_keys(sfz, keda)
    return _problems(ValidationError.from_exception_data("Settings", broken), secrets, set()) if broken else []


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
    values_file = None if directory is None else directory / "values.yaml"
    return values_file if values_file is not None and values_file.is_file() else None


def select_generation(chart: ChartSource, root: Path = ROOT) -> Generation:
    key = f"{PROJECT}:release.chart"
    override = CHART_OVERRIDE.get()
    if override is not None and (override / "values.yaml").is_file():
        return _read(override / "values.yaml", key, root)  # without one, Helm and the checks say what is wrong
    if chart.kind == "repo":
        if chart.version in PUBLISHED_TRITON_VERSIONS:
            return TRITON
        published = ", ".join(sorted(PUBLISHED_TRITON_VERSIONS))
        raise ConfigError([f"{key}.version = {chart.version!r}: expected a published SuperSONIC version ({published})"])
    values_file = values_on_disk(chart, root)
    if values_file is None:
        # Only offline: preview and up fetch a pinned chart first, and `render` says it assumed.
        return NEWEST
    return _read(values_file, key, root)


def _read(values_file: Path, key: str, root: Path) -> Generation:
    try:
        documents = load_outside_yaml(values_file.read_bytes())
        return generation_of_values(documents[0] if documents else None)
    except (OSError, UnknownGeneration, ValueError) as error:
        chart = values_file.parent.relative_to(root) if values_file.parent.is_relative_to(root) else values_file.parent
        raise ConfigError([f"{key}: the chart at {chart} is of no supported generation: {error}"]) from None


def load_settings(
    config: Mapping[str, Any],
    secret_keys: frozenset[str] | set[str] = frozenset(),
    prepare_chart: Callable[[ChartSource], None] | None = None,
) -> Settings:
    """``Settings`` from the config map the Pulumi CLI passes, or ``ConfigError`` with every problem.

    ``secret_keys``: the full keys the CLI listed as secret; ``prepare_chart`` puts the chart on disk before its
    generation is read from it."""
    problems = []
    ours = {k.partition(":")[2]: v for k, v in config.items() if k.partition(":")[0] == PROJECT}
    ours = {**project_defaults(), **ours}
    secrets = frozenset(k.partition(":")[2] for k in secret_keys if k.partition(":")[0] == PROJECT)
    for key in sorted(secrets & set(Settings.model_fields) - set(SECRET_CAPABLE)):
        problems.append(f"{key_of(key)}: is a secret; expected a plain value (only {', '.join(SECRET_CAPABLE)})")
    given: dict[str, Any] = {}
    unread: set[str] = set()
    for name, value in ours.items():
        if name not in Settings.model_fields:
            given[name] = value  # reported as an unknown key
            continue
        given[name], problem = _as_the_program_reads(name, value, name in secrets)
        if problem:
            problems.append(problem)
            unread.add(name)
    settings, deliberate = None, None
    try:
        settings = Settings.model_validate_json(json.dumps(given))
        deliberate = settings.deliberateProviderConfig
    except ValidationError as error:
        problems.extend(_problems(error, secrets, unread))
        problems.extend(_across_parsed_sections(given, error, secrets))
        with contextlib.suppress(ValidationError):
            deliberate = _DELIBERATE.validate_json(json.dumps(given.get("deliberateProviderConfig", {})))
    problems.extend(_other_namespace_problems(config, deliberate))
    if problems or settings is None:
        raise ConfigError(problems)
    settings._secret_keys = secrets
    if prepare_chart is not None:
        prepare_chart(settings.release.chart)
    settings._generation = select_generation(settings.release.chart)
    return settings
