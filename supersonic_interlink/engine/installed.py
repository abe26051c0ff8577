"""Which Pulumi CLI and Kubernetes provider the engine runs: the operator's own first, a Go build only where none is.

The CLI, in this order: ``--pulumi PATH``, ``PULUMI_CLI``, the ``pulumi`` on ``PATH``, the one ``toolchain`` built
into its cache; with none of them, ``toolchain`` builds it. One that is named or found but reports a version outside
``SUPPORTED`` is refused (``Unusable``), never passed over for the next.

The provider: the plugin at exactly the Python SDK's version where ``pulumi plugin install resource kubernetes
v<V>`` puts it, ``$PULUMI_HOME/plugins/resource-kubernetes-v<V>/`` (``~/.pulumi`` without ``PULUMI_HOME``; a
``<dir>.partial`` file beside it marks an install that has not finished, pulumi/pulumi
``sdk/go/common/workspace/plugins.go``). Where ``PULUMI_HOME`` is another directory (the local cluster's), the
operator's plugin in ``~/.pulumi`` is installed into it from that file; with no plugin of that version anywhere,
the one ``toolchain`` builds, with ``pulumi plugin install --file``. Only other versions installed: refused, since
the engine loads exactly the version the SDK asks for (``SelectCompatiblePlugin``) and would fail later with a
less useful message.
"""

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
"""The CLI versions this project runs under, inclusive. 3.187.0 is the first that loads ``Pulumi.yaml``'s
``type: object`` keys with object defaults (pulumi/pulumi #20132, "Support parsing object types in Pulumi.yaml":
``ValidateConfigValue`` accepts a map for ``object`` from that tag on; 3.186.0 lists the type but rejects every
object default). 3.274.1 is the version the end-to-end tier runs and the workflows install."""

CLI_ENV = "PULUMI_CLI"


class Unusable(Exception):
    """A CLI or provider plugin was found but cannot be used; the one-line message says what to install."""


@dataclass(frozen=True)
class Found:
    """A binary the engine runs: its version and where it came from, as the first line of every run says."""

    path: Path
    version: str
    origin: str

    def describe(self, what: str) -> str:
        return f"{what} {self.version} ({self.origin}: {self.path})"


def _text(version: tuple[int, int, int]) -> str:
    return "v" + ".".join(map(str, version))


WHAT_TO_INSTALL = (
    f"install the Pulumi CLI {_text(SUPPORTED[1])} (pulumi/actions with pulumi-version, or its installer), or name "
    f"one from {_text(SUPPORTED[0])} to {_text(SUPPORTED[1])} with --pulumi PATH or {CLI_ENV}"
)


def cli_version(path: Path, env: dict[str, str]) -> str:
    """What ``pulumi version`` prints (``v3.274.1``), asked without an update check; empty when it prints nothing or
    does not run."""
    env = {**env, "PULUMI_SKIP_UPDATE_CHECK": "true"}
    try:
        done = subprocess.run([str(path), "version"], env=env, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def _checked(path: Path, origin: str, env: dict[str, str]) -> Found:
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise Unusable(f"pulumi CLI {path} ({origin}) is not an executable file: {WHAT_TO_INSTALL}")
    reported = cli_version(path, env)
    match = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)", reported)
    version = (int(match[1]), int(match[2]), int(match[3])) if match else None
    if version is None or not SUPPORTED[0] <= version <= SUPPORTED[1]:
        said = f"reports version {reported!r}" if reported else "reports no version"
        raise Unusable(
            f"pulumi CLI {path} ({origin}) {said}, outside the supported {_text(SUPPORTED[0])} to "
            f"{_text(SUPPORTED[1])}: {WHAT_TO_INSTALL}"
        )
    return Found(path, _text(version), origin)


def find_cli(explicit: str | None, env: dict[str, str]) -> tuple[Found, bool]:
    """The CLI to run, looked for in the engine's environment ``env``, and whether it still has to be built (then
    ``build_cli`` builds it)."""
    if explicit:
        return _checked(Path(explicit).expanduser().absolute(), "--pulumi", env), False
    if env.get(CLI_ENV):
        return _checked(Path(env[CLI_ENV]).expanduser().absolute(), CLI_ENV, env), False
    on_path = shutil.which("pulumi", path=env.get("PATH", os.defpath))
    built = toolchain.path("pulumi")
    if on_path is not None:
        origin = "on PATH, built from Go modules" if Path(on_path).resolve() == built.resolve() else "on PATH"
        return _checked(Path(on_path).absolute(), origin, env), False
    version = toolchain.version(toolchain.build_for("pulumi"))
    if built.is_file():
        return Found(built, version, "built from Go modules, toolchain cache"), False
    return Found(built, version, f"none on PATH, {CLI_ENV} or --pulumi: building it from Go modules"), True


def plugin_dir(home: Path, version: str) -> Path:
    """Where ``pulumi plugin install resource kubernetes <version>`` puts the plugin (``PluginDescriptor.Dir``)."""
    return home / "plugins" / f"resource-{PROVIDER}-v{version.removeprefix('v')}"


def _installed(directory: Path) -> bool:
    return (directory / f"pulumi-resource-{PROVIDER}").is_file() and not Path(f"{directory}.partial").exists()


def pulumi_home(env: dict[str, str]) -> Path:
    return Path(env.get("PULUMI_HOME") or Path.home() / ".pulumi")


def find_provider(env: dict[str, str]) -> tuple[Found, Path | None]:
    """The provider plugin at the SDK's version in ``PULUMI_HOME``, and the file ``install_provider`` installs it
    from first (None: installed already): the operator's plugin in ``~/.pulumi`` when ``PULUMI_HOME`` is another
    directory (the local cluster's), else the toolchain's build. Raises ``Unusable`` when only other versions are
    installed."""
    version = toolchain.version(toolchain.build_for("pulumi-resource-kubernetes"))
    home = pulumi_home(env)
    wanted = plugin_dir(home, version)
    binary = wanted / f"pulumi-resource-{PROVIDER}"
    if _installed(wanted):
        return Found(binary, version, "installed plugin"), None
    own = plugin_dir(Path.home() / ".pulumi", version)
    if own != wanted and _installed(own):
        origin = f"installed plugin in {own.parent}, installed into PULUMI_HOME"
        return Found(binary, version, origin), own / binary.name
    others = sorted(p.name for p in (home / "plugins").glob(f"resource-{PROVIDER}*") if p.is_dir() and _installed(p))
    if others:
        raise Unusable(
            f"the {PROVIDER} provider in {home / 'plugins'} is {', '.join(others)}, but this project's SDK "
            f"(pulumi-kubernetes=={version.removeprefix('v')}) runs exactly {version}: "
            f"pulumi plugin install resource {PROVIDER} {version}"
        )
    built = toolchain.path("pulumi-resource-kubernetes")
    if built.is_file():
        return Found(binary, version, "built from Go modules, toolchain cache, installed into PULUMI_HOME"), built
    origin = f"none in {home / 'plugins'}: building it from Go modules and installing it there"
    return Found(binary, version, origin), built


def build_cli(log: Callable[[str], None]) -> Path:
    return toolchain.ensure(["pulumi"], log=log)["pulumi"]


def install_provider(cli: Path, source: Path, env: dict[str, str], *, log: Callable[[str], None]) -> None:
    """Install the provider into ``PULUMI_HOME`` from ``source`` (built first if it is the toolchain's and not
    there yet), as ``pulumi plugin install`` does from a download."""
    if source == toolchain.path("pulumi-resource-kubernetes"):
        toolchain.ensure(["pulumi-resource-kubernetes"], log=log)
    version = toolchain.version(toolchain.build_for("pulumi-resource-kubernetes"))
    done = subprocess.run(
        [str(cli), "plugin", "install", "resource", PROVIDER, version, "--file", str(source)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise toolchain.ToolchainError(
            f"pulumi plugin install resource {PROVIDER} {version} --file {source} failed: {done.stderr.strip()}"
        )
    log(f"engine: provider {PROVIDER} {version} installed into {pulumi_home(env) / 'plugins'}")
