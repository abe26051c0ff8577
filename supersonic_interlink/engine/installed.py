"""Which Pulumi CLI and Kubernetes provider the engine runs: the operator's own first (a CLI in ``SUPPORTED``, the
plugin at exactly the SDK's version), a Go build only where none is found (docs/pulumi-cli.md)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from supersonic_interlink.engine import toolchain

PROVIDER = "kubernetes"

SUPPORTED = ((3, 187, 0), (3, 274, 1))
"""Inclusive. 3.187.0 is the first to load ``type: object`` keys with object defaults (pulumi/pulumi #20132); 3.274.1
is what the end-to-end tier runs and the workflows install."""

CLI_ENV = "PULUMI_CLI"
CACHED = "built from Go modules, toolchain cache"


class EngineError(Exception):
    """The engine could not start or refused the operation; the message is the CLI's own."""


class Unusable(EngineError):
    """The CLI or provider found cannot be used, so nothing ran; the message says what to install."""


@dataclass(frozen=True)
class Found:
    path: Path
    version: str
    origin: str

    def describe(self, what: str) -> str:
        return f"{what} {self.version} ({self.origin}: {self.path})"


LOWEST, TOP = ("v" + ".".join(map(str, version)) for version in SUPPORTED)
WHAT_TO_INSTALL = (
    f"install the Pulumi CLI {TOP} (pulumi/actions with pulumi-version, or its installer), or name one from "
    f"{LOWEST} to {TOP} with --pulumi PATH or {CLI_ENV}"
)


def _checked(path: Path, origin: str, env: dict[str, str]) -> Found:
    try:
        env = {**env, "PULUMI_SKIP_UPDATE_CHECK": "true"}
        done = subprocess.run([str(path), "version"], env=env, capture_output=True, text=True, timeout=60, check=False)
        reported = done.stdout.strip() if done.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        reported = ""
    match = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)", reported)
    version = tuple(map(int, match.groups())) if match else None
    if version is None or not SUPPORTED[0] <= version <= SUPPORTED[1]:
        said = f"reports version {reported!r}" if reported else "reports no version"
        raise Unusable(
            f"pulumi CLI {path} ({origin}) {said}, outside the supported {LOWEST} to {TOP}: {WHAT_TO_INSTALL}"
        )
    return Found(path, "v" + ".".join(map(str, version)), origin)


def find_cli(explicit: str | None, env: dict[str, str]) -> tuple[Found, bool]:
    """``--pulumi``, ``PULUMI_CLI``, ``pulumi`` on PATH, the built one; and whether it must be built."""
    for named, origin in ((explicit, "--pulumi"), (env.get(CLI_ENV), CLI_ENV)):
        if named:
            return _checked(Path(named).expanduser().absolute(), origin, env), False
    built = toolchain.path("pulumi")
    if (on_path := shutil.which("pulumi", path=env.get("PATH", os.defpath))) is not None:
        origin = "on PATH, built from Go modules" if Path(on_path).resolve() == built.resolve() else "on PATH"
        return _checked(Path(on_path).absolute(), origin, env), False
    version = toolchain.version(toolchain.build_for("pulumi"))
    if built.is_file():
        return Found(built, version, CACHED), False
    return Found(built, version, f"none on PATH, {CLI_ENV} or --pulumi: building it from Go modules"), True


def _installed(binary: Path) -> bool:
    """A ``<dir>.partial`` beside it: an install not finished (pulumi/pulumi sdk/go/common/workspace/plugins.go)."""
    return binary.is_file() and not Path(f"{binary.parent}.partial").exists()


def pulumi_home(env: dict[str, str]) -> Path:
    return Path(env.get("PULUMI_HOME") or Path.home() / ".pulumi")


def find_provider(env: dict[str, str]) -> tuple[Found, Path | None]:
    """The plugin at the SDK's version in ``PULUMI_HOME``, and the file to install it from (None: installed). Only
    other versions installed is ``Unusable``: the engine loads exactly the SDK's (``SelectCompatiblePlugin``)."""
    version = toolchain.version(toolchain.build_for("pulumi-resource-kubernetes"))
    home = pulumi_home(env)
    binary = home / "plugins" / f"resource-{PROVIDER}-v{version.removeprefix('v')}" / f"pulumi-resource-{PROVIDER}"
    if _installed(binary):
        return Found(binary, version, "installed plugin"), None
    installed = (home / "plugins").glob(f"resource-{PROVIDER}*/{binary.name}")
    if others := sorted(p.parent.name for p in installed if _installed(p)):
        raise Unusable(
            f"the {PROVIDER} provider in {home / 'plugins'} is {', '.join(others)}, but this project's SDK "
            f"(pulumi-kubernetes=={version.removeprefix('v')}) runs exactly {version}: "
            f"pulumi plugin install resource {PROVIDER} {version}"
        )
    built = toolchain.path("pulumi-resource-kubernetes")
    origin = CACHED if built.is_file() else f"none in {home}: building it from Go modules"
    return Found(binary, version, f"{origin}, installed into PULUMI_HOME"), built


def install_provider(cli: Path, source: Path, version: str, env: dict[str, str], *, log: Callable[[str], None]) -> None:
    """``pulumi plugin install`` of ``version`` from the toolchain's ``source``, built first."""
    toolchain.ensure(["pulumi-resource-kubernetes"], log=log)
    command = [str(cli), "plugin", "install", "resource", PROVIDER, version, "--file", str(source)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise toolchain.ToolchainError(f"{' '.join(command[1:])} failed: {done.stderr.strip()}")
    log(f"engine: provider {PROVIDER} {version} installed into {pulumi_home(env) / 'plugins'}")
