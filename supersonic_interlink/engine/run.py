"""The real Pulumi engine for one stack, ``./supersonic pulumi <action> <stack>``: the program as an Automation API
inline program (the module proxy serves no Python language host), served to the real CLI (``pulumi up --client``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from supersonic_interlink import EXIT_FINDING, EXIT_OK, EXIT_USAGE, ROOT
from supersonic_interlink.config import PROJECT, ConfigError
from supersonic_interlink.config.stack_config import read_yaml_file
from supersonic_interlink.engine import installed, toolchain
from supersonic_interlink.engine.installed import EngineError, Unusable

ACTIONS = ("preview", "up", "refresh", "destroy")
SCRATCH_PROJECT_ENV = "SUPERSONIC_SCRATCH_PROJECT"

OFFLINE_ENV = dict.fromkeys(
    ("PULUMI_SKIP_UPDATE_CHECK", "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION", "PULUMI_IGNORE_AMBIENT_PLUGINS"), "true"
)
"""No plugin download, no update check, and no ``pulumi-resource-kubernetes`` of another version from PATH."""


class Refused(EngineError):
    """Refused before the engine ran: the message names the deliberate way to do it."""


def program() -> None:
    """What ``__main__.py`` does, as an inline program."""
    # lazy: the program loads Pulumi's SDK, which only a run of the engine needs
    from supersonic_interlink.program import build, settings_or_stop

    build(settings_or_stop())


@dataclass
class Engine:
    """One stack of the project in ``work_dir`` under the real engine."""

    stack: str
    work_dir: Path = ROOT
    env: dict[str, str] = field(default_factory=dict)
    """The CLI's environment over the process's own."""
    log: Callable[[str], None] = print
    create: bool = True
    """Create a missing stack; false for a pull-request preview, which must not create stacks in production."""
    cli: str | None = None
    """``--pulumi``."""
    _command: Any = field(default=None, init=False, repr=False)

    def _pulumi_command(self, env: dict[str, str]) -> Any:
        """The CLI and provider found (or built), named in one line."""
        # Deliberately lazy, here and below: the Automation API's import costs every verb's start-up.
        from pulumi import automation as auto
        from semver import VersionInfo

        cli, build_cli = installed.find_cli(self.cli, env)
        provider, source = installed.find_provider(env)
        self.log(f"engine: {cli.describe('pulumi CLI')}; {provider.describe(f'{installed.PROVIDER} provider')}")
        if build_cli:
            toolchain.ensure(["pulumi"], log=self.log)
        if source is not None:
            installed.install_provider(cli.path, source, provider.version, env, log=self.log)

        class Command(auto.PulumiCommand):  # the CLI at its path, its version already checked
            def __init__(self) -> None:
                self.command = str(cli.path)
                self.version = VersionInfo.parse(cli.version.removeprefix("v"))

        return Command()

    def workspace_stack(self) -> Any:
        from pulumi import automation as auto

        env = {**OFFLINE_ENV, **os.environ, **self.env}
        self._command = self._command or self._pulumi_command(env)
        options = auto.LocalWorkspaceOptions(work_dir=str(self.work_dir), env_vars=env, pulumi_command=self._command)
        select = auto.create_or_select_stack if self.create else auto.select_stack
        try:
            return select(self.stack, project_name=PROJECT, program=program, opts=options)
        except auto.CommandError as error:  # a missing stack too, in the CLI's words
            raise EngineError(_command_error_text(error)) from None

    def run(self, action: str, **kwargs: Any) -> Any:
        from pulumi import automation as auto

        try:
            return getattr(self.workspace_stack(), action)(**{"on_output": self.log, **kwargs})
        except auto.CommandError as error:
            raise EngineError(_command_error_text(error)) from None


def scratch_project(directory: Path, root: Path = ROOT) -> Path:
    """A copy of the project for a throwaway backend, so ``stacks/`` is never written: each stack's config copied
    (keeping the salt the CLI added to the copy), a relative ``release.chart.path`` made absolute (the provider
    resolves it from the project); the post-renderer and the charts linked."""
    (directory / "stacks").mkdir(parents=True, exist_ok=True)
    (directory / "Pulumi.yaml").write_bytes((root / "Pulumi.yaml").read_bytes())
    for name in ("postrender", ".charts"):
        (root / name).mkdir(exist_ok=True)
        link, target = directory / name, root / name
        if link.is_symlink() and link.readlink() != target:
            link.unlink()
        if not link.is_symlink():
            link.symlink_to(target)
    for source in sorted((root / "stacks").glob("Pulumi.*.yaml")):
        target = directory / "stacks" / source.name
        kept = (yaml.safe_load(target.read_text()) or {}) if target.exists() else {}
        config = (read_yaml_file(source) or {}).get("config") or {}
        release = config.get(f"{PROJECT}:release")
        chart = release.get("chart") if isinstance(release, dict) else None
        if isinstance(chart, dict) and isinstance(chart.get("path"), str) and "git" not in chart:
            chart["path"] = os.path.normpath(root / chart["path"])
        target.write_text(yaml.safe_dump({**kept, "config": config}, sort_keys=False))
    return directory


def gated(engine: Engine, action: str, **kwargs: Any) -> Any:
    """``action`` with this project's guards: ``destroy`` refused while ``release.removable`` is false (a plain
    destroy deletes what does not depend on the protected Release first); ``preview`` and ``up`` preview first, and
    ``gate.blocked`` may refuse the plan; ``up`` then applies."""
    from supersonic_interlink.engine import gate  # lazy: loads the components, so Pulumi's SDK

    removable = gate.stack_removable(engine.stack, root=engine.work_dir)
    if action == "destroy" and not removable:
        raise Refused(
            f"destroy of {engine.stack} refused: the Helm release is protected (release.removable is false). To "
            f"uninstall it on purpose, set release.removable: true in stacks/Pulumi.{engine.stack}.yaml in a "
            f"reviewed change, run `./supersonic pulumi up {engine.stack} --yes` (it lifts the protection), then "
            "destroy."
        )
    if action not in ("preview", "up"):
        return engine.run(action, **kwargs)
    events: list[Any] = []
    preview_kwargs = kwargs if action == "preview" else {"diff": kwargs.get("diff", False)}
    result = engine.run("preview", on_event=events.append, **preview_kwargs)
    if problems := gate.blocked(gate.steps_from_events(events), removable=removable):
        raise Refused("the preview was refused by the gate:\n" + "\n".join(f"  {line}" for line in problems))
    return engine.run("up", **kwargs) if action == "up" else result


def _command_error_text(error: Exception) -> str:
    """The CLI's ``Diagnostics:`` block and stderr; the output's tail when it has neither."""
    # CommandError's text is "code: N\n stdout: ...\n stderr: ...".
    stdout, _, stderr = str(error).partition("\n stderr: ")
    stdout = stdout.partition(" stdout: ")[2] or stdout
    diagnostics = stdout[stdout.index("Diagnostics:") :] if "Diagnostics:" in stdout else ""
    for end in ("\nOutputs:", "\nResources:"):
        diagnostics = diagnostics.partition(end)[0]
    parts = [p for p in (diagnostics.strip(), stderr.strip()) if p]
    return "\n".join(parts) if parts else stdout.strip()[-4000:]


def run_pulumi(stack: str, action: str, *, json: bool = False, cli: str | None = None, **options: Any) -> int:
    """``./supersonic pulumi``: ``action`` through the gate, in the scratch project on the local cluster; ``json``:
    the CLI's JSON preview on stdout, the log on stderr."""
    scratch = os.environ.get(SCRATCH_PROJECT_ENV)
    try:
        work_dir = scratch_project(Path(scratch)) if scratch else ROOT
        # Only `up` creates a stack in a real backend; on the local cluster's throwaway backend anything may.
        log = lambda line: print(line, file=sys.stderr if json else sys.stdout, flush=True)  # noqa: E731
        engine = Engine(stack, work_dir=work_dir, log=log, create=bool(scratch) or action == "up", cli=cli)
        result = gated(engine, action, **({"json": True} if json else {}), **options)
        if json:
            print(result.stdout)
    except ConfigError as error:
        print("\n".join(error.problems), file=sys.stderr)
        return EXIT_USAGE
    except (Unusable, Refused) as error:
        print(f"supersonic pulumi: {error}", file=sys.stderr)
        return EXIT_FINDING if isinstance(error, Refused) and action != "destroy" else EXIT_USAGE
    except (EngineError, toolchain.ToolchainError) as error:
        print(f"supersonic pulumi: {action} of {stack} failed:\n{error}", file=sys.stderr)
        return EXIT_FINDING
    return EXIT_OK
