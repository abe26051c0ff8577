"""Stack config in, ``Settings`` out: defaults from ``Pulumi.yaml`` merged under the stack's values, every problem
reported at once, one line each, and the rules that span keys."""

from __future__ import annotations

import difflib
import functools
import json
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    TypeAdapter,
    ValidationError,
)

from supersonic_interlink.config import generation
from supersonic_interlink.config.cross_checks import check_across_keys
from supersonic_interlink.config.model import (
    REPLACED_WHOLE,
    SECRET_CAPABLE,
    ChartSource,
    Settings,
)
from supersonic_interlink.config.pulumi_yaml import (
    YAMLInputError,
    read_pulumi_yaml,
)
from supersonic_interlink.config.rules import (
    CHANGES_UP,
    KNOWN_NAMESPACES,
    PROJECT,
    PROJECT_FILE,
    PROVIDER_KEYS,
    ConfigError,
    Expect,
    Model,
    expanded,
)
from supersonic_interlink.config.show import key_of, show_value

# ---------------------------------------------------------------------------------------- loading


@functools.cache
def _project_document(project_file: Path) -> Any:
    try:
        return read_pulumi_yaml(project_file.read_bytes())
    except YAMLInputError as error:
        raise ConfigError([f"{project_file.name}: {error}"]) from None


def project_defaults(project_file: Path = PROJECT_FILE) -> dict[str, Any]:
    """The ``default:`` of every key declared in ``Pulumi.yaml`` (the only place defaults are written)."""
    document = _project_document(project_file)
    declared = (document if isinstance(document, dict) else {}).get("config") or {}
    if not isinstance(document, dict) or not isinstance(declared, dict):
        raise ConfigError([f"{project_file.name}: expected a mapping with a 'config:' mapping of the project's keys"])
    defaults: dict[str, Any] = {}
    for key, declaration in declared.items():
        if isinstance(declaration, dict) and "default" in declaration:
            defaults[key] = json.loads(json.dumps(declaration["default"]))
    return defaults


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


def _problems(error: ValidationError, prefix: tuple[str, ...], secret: bool = False) -> list[str]:
    """One line per pydantic error, in the project's words; ``prefix`` is where the validated value sits, ``secret``
    whether it came from a secret (then no part of it is printed)."""
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
            problems.append(f"{key_of(path)}: missing (no default in Pulumi.yaml; set it in the stack file)")
            continue
        if kind == "extra_forbidden":
            parent = path.rsplit(".", 1)[0] if "." in path else ""
            owner = _owner(cls, loc[:-1])
            names = sorted(owner.model_fields) if owner else []
            near = difflib.get_close_matches(str(loc[-1]), names, n=1)
            hint = f"; did you mean {key_of(_join(parent, near[0]))}?" if near else ""
            problems.append(
                f"{key_of(path)}: unknown key (allowed under {key_of(parent) if parent else PROJECT}: "
                f"{', '.join(names)}){hint}"
            )
            continue
        value = item["input"]
        if kind == "at_field":
            context = item.get("ctx") or {}
            path, value = _join(path, context["field"]), context["value"]
            others = {name: show_value(other, secret) for name, other in (context.get("others") or {}).items()}
            what = context["expected"].format(**others)
        elif kind == "expected":
            what = item["msg"]
        else:
            what = _expected(cls, loc) or _TYPE_WORDS.get(kind) or item["msg"]
        if kind in ("model_type", "model_attributes_type", "dict_type") and _model_of_loc(cls, loc):
            what = "an object"
        problems.append(f"{key_of(path)} = {show_value(value, secret)}: expected {what}")
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


def cli_text(value: Any) -> str:
    """How the CLI hands a value to the program: strings as they are, everything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _parse_top(name: str, value: Any, annotation: Any, secret: bool) -> tuple[Any, str | None]:
    """A top-level value as the program reads it. The CLI passes objects as JSON text and everything else as text;
    a stack file read without the CLI (``render``) gives the values themselves, taken as the CLI would pass them."""
    if _model_of(annotation) is None and not _is_object(annotation):
        return (value if isinstance(value, str) else cli_text(value)), None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # JSONDecodeError, and Python's 4,300-digit limit on integers
            return None, f"{key_of(name)} = {show_value(value, secret)}: expected an object"
    if not isinstance(value, dict):
        return None, f"{key_of(name)} = {show_value(value, secret)}: expected an object"
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
            hint = f"did you mean {key_of(guess[0])}?"
        elif near:
            hint = f"did you mean {near[0]}:{name}?"
        else:
            hint = f"this program reads only the namespaces {', '.join(KNOWN_NAMESPACES)}"
        problems.append(f"{full_key}: unknown config namespace {namespace!r}; {hint}")
    return problems


def _provider_key_problems(config: Mapping[str, Any], deliberate: Mapping[str, str] | None) -> list[str]:
    """``kubernetes:`` and ``pulumi:`` keys: known to the provider or the engine, and those that change what
    ``pulumi up`` does only when listed in ``deliberateProviderConfig`` (None: that list did not parse)."""
    problems = []
    for full_key in sorted(k for k in config if k.partition(":")[0] in ("kubernetes", "pulumi")):
        if full_key not in PROVIDER_KEYS:
            namespace, _, name = full_key.partition(":")
            known = [k.partition(":")[2] for k in PROVIDER_KEYS if k.startswith(f"{namespace}:")]
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


def load_settings(
    config: Mapping[str, Any],
    defaults: Mapping[str, Any] | None = None,
    secret_keys: frozenset[str] | set[str] = frozenset(),
    prepare_chart: Callable[[ChartSource], None] | None = None,
) -> Settings:
    """Build ``Settings`` from the config map the Pulumi CLI passes (``"supersonic-interlink:key" -> text``).

    ``secret_keys`` are the full keys the CLI listed in ``PULUMI_CONFIG_SECRET_KEYS``. Keys of the Kubernetes
    provider and the engine (``kubernetes:``, ``pulumi:``) are passed over; any other namespace is an error (a typo
    in the project prefix would otherwise silently fall back to defaults). Raises ``ConfigError`` listing every
    problem. ``prepare_chart`` puts the chart on disk first (``pulumi preview`` and ``up`` fetch a pinned git chart),
    so that its generation is read from the chart itself (``config.generation.select``).
    """
    defaults = project_defaults() if defaults is None else defaults
    problems = _namespace_problems(config)
    ours: dict[str, Any] = {}
    for full_key, text in config.items():
        namespace, _, key = full_key.partition(":")
        if namespace == PROJECT:
            ours[key] = text
    secrets = frozenset(k.partition(":")[2] for k in secret_keys if k.partition(":")[0] == PROJECT)
    # A secret under a key the config does not have is reported as the unknown key it is (below), nothing more.
    for key in sorted(secrets & set(Settings.model_fields) - set(SECRET_CAPABLE)):
        problems.append(
            f"{key_of(key)}: is a secret; expected a plain value (it names objects and the exported endpoint, so it "
            f"could not stay secret; only {', '.join(SECRET_CAPABLE)} may be secrets)"
        )
    fields = Settings.model_fields
    for unknown in sorted(set(ours) - set(fields)):
        near = difflib.get_close_matches(unknown, sorted(fields), n=1)
        hint = f"; did you mean {key_of(near[0])}?" if near else ""
        problems.append(f"{key_of(unknown)}: unknown key (allowed under {PROJECT}: {', '.join(sorted(fields))}){hint}")
    sections: dict[str, Any] = {}
    for name, info in fields.items():
        if name not in ours and name not in defaults:
            problems.append(f"{key_of(name)}: missing (no default in Pulumi.yaml; set it in the stack file)")
            continue
        secret = name in secrets
        raw, problem = _parse_top(name, ours[name], info.annotation, secret) if name in ours else (defaults[name], None)
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
            problems.extend(_problems(error, (name,), secret))
    problems.extend(check_across_keys(sections, secrets))
    problems.extend(_provider_key_problems(config, sections.get("deliberateProviderConfig")))
    if problems:
        raise ConfigError(problems)
    settings = Settings(**sections)
    settings._secret_keys = secrets
    if prepare_chart is not None:
        prepare_chart(settings.release.chart)
    settings._generation = generation.select(settings.release.chart)
    return settings


@functools.cache
def _adapter(name: str) -> TypeAdapter[Any]:
    """A validator for a top-level key that is not an object model, with its declared constraints."""
    info = Settings.model_fields[name]
    annotated: Any = Annotated[(info.annotation, *info.metadata)]
    return TypeAdapter(annotated, config=ConfigDict(strict=True))
