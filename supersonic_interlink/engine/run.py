"""The real Pulumi engine for one stack: ``./supersonic pulumi <preview|up|refresh|destroy> <stack>``.

The Python language host (``pulumi-language-python``) is a Go module the module proxy does not serve, so the program
runs as an Automation API *inline* program: this process serves it to the real CLI (``pulumi up --client``), which
runs the real engine and Kubernetes provider against the cluster ``KUBECONFIG`` names. Project, stack files and
config are read by the CLI from the project directory exactly as for ``pulumi up``. The CLI and provider are the
operator's own where installed (``engine/installed.py``), built from their Go modules only where none is found.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from supersonic_interlink import EXIT_FINDING, EXIT_OK, EXIT_USAGE
from supersonic_interlink.config import ConfigError
from supersonic_interlink.config.stack_config import read_yaml_file
from supersonic_interlink.engine import installed, toolchain

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "supersonic-interlink"
ACTIONS = ("preview", "up", "refresh", "destroy")
SCRATCH_PROJECT_ENV = "SUPERSONIC_SCRATCH_PROJECT"

OFFLINE_ENV = {
    "PULUMI_SKIP_UPDATE_CHECK": "true",
    "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
    "PULUMI_IGNORE_AMBIENT_PLUGINS": "true",
}
"""The CLI never downloads a plugin (the provider is the one ``installed.find_provider`` checked), never asks for
updates, and ignores a ``pulumi-resource-kubernetes`` of another version that happens to be on PATH."""


class EngineError(Exception):
    """The engine could not be started or refused the operation; the message is the CLI's own."""


class Unusable(EngineError):
    """The CLI or provider found cannot be used (``installed.Unusable``): nothing ran; the line says what to install."""


class Refused(EngineError):
    """A guarded operation refused before the engine ran: the message names the deliberate way to do it."""


def program() -> None:
    """What ``__main__.py`` does, as an inline program (imported here: the program loads Pulumi's SDK)."""
    # lazy: the program loads Pulumi's SDK, which only a run of the engine needs
    from supersonic_interlink.program import build, settings_or_stop

    build(settings_or_stop())


@dataclass
class Engine:
    """One stack of the project in ``work_dir`` under the real engine."""

    stack: str
    work_dir: Path = ROOT
    env: dict[str, str] = field(default_factory=dict)
    """Environment of the CLI (KUBECONFIG, PULUMI_HOME, backend, passphrase, ...); the process's own otherwise."""
    log: Callable[[str], None] = print
    create: bool = True
    """Create the stack in the backend when it is not there; when false, a missing stack is an error that says so
    (a pull-request preview must not create stacks in the production backend)."""
    cli: str | None = None
    """The Pulumi CLI named by ``--pulumi``; otherwise ``installed.find_cli`` looks for one."""
    _command: Any = field(default=None, init=False, repr=False)

    def _environment(self) -> dict[str, str]:
        return {**OFFLINE_ENV, **os.environ, **self.env}

    def _pulumi_command(self, env: dict[str, str]) -> Any:
        """The CLI and provider found (or built), named in one line first."""
        # Deliberately lazy, here and below: the Automation API's import costs every verb's start-up.
        from pulumi import automation as auto
        from semver import VersionInfo

        try:
            cli, build_cli = installed.find_cli(self.cli, env)
            provider, source = installed.find_provider(env)
        except installed.Unusable as error:
            raise Unusable(str(error)) from None
        self.log(f"engine: {cli.describe('pulumi CLI')}; {provider.describe(f'{installed.PROVIDER} provider')}")
        if build_cli:
            installed.build_cli(self.log)
        if source is not None:
            installed.install_provider(cli.path, source, env, log=self.log)

        class Command(auto.PulumiCommand):  # the CLI at its path, its version already checked
            def __init__(self) -> None:
                self.command = str(cli.path)
                self.version = VersionInfo.parse(cli.version.removeprefix("v"))

        return Command()

    def workspace_stack(self) -> Any:
        """The Automation API's stack, with the CLI and provider found or built. Raises ``EngineError``."""
        from pulumi import automation as auto

        env = self._environment()
        self._command = self._command or self._pulumi_command(env)
        options = auto.LocalWorkspaceOptions(
            work_dir=str(self.work_dir), pulumi_home=env.get("PULUMI_HOME"), env_vars=env, pulumi_command=self._command
        )
        select = auto.create_or_select_stack if self.create else auto.select_stack
        try:
            return select(self.stack, project_name=PROJECT, program=program, opts=options)
        except auto.StackNotFoundError:
            backend = env.get("PULUMI_BACKEND_URL", "the logged-in one")
            raise EngineError(
                f"stack {self.stack} does not exist in the backend ({backend}); "
                f"`./supersonic pulumi up {self.stack} --yes` creates it"
            ) from None
        except auto.CommandError as error:
            raise EngineError(_command_error_text(error)) from None

    def run(self, action: str, **kwargs: Any) -> Any:
        """Run ``action`` (preview, up, refresh, destroy) with the Automation API's keyword arguments."""
        from pulumi import automation as auto

        if action not in ACTIONS:
            raise EngineError(f"unknown action {action!r}; one of {', '.join(ACTIONS)}")
        stack = self.workspace_stack()
        kwargs.setdefault("on_output", self.log)
        try:
            return getattr(stack, action)(**kwargs)
        except auto.CommandError as error:
            raise EngineError(_command_error_text(error)) from None


def scratch_project(directory: Path, root: Path = ROOT) -> Path:
    """A copy of the project at ``root`` in ``directory`` for a throwaway backend: ``Pulumi.yaml``, the post-renderer,
    the fetched charts and every chart a stack names by a relative ``release.chart.path`` linked at the same relative
    path (the provider resolves it from the project directory), and each stack file's config copied from ``stacks/``
    on every run (what the CLI added to the copy, its encryption salt, is kept), so ``stacks/`` is never written."""
    (directory / "stacks").mkdir(parents=True, exist_ok=True)
    (directory / "Pulumi.yaml").write_bytes((root / "Pulumi.yaml").read_bytes())
    for name in ("postrender", ".charts"):
        (root / name).mkdir(exist_ok=True)
        _link(directory / name, root / name)
    for source in sorted((root / "stacks").glob("Pulumi.*.yaml")):
        target = directory / "stacks" / source.name
        kept = (yaml.safe_load(target.read_text()) or {}) if target.exists() else {}
        document = {**kept, "config": (read_yaml_file(source) or {}).get("config") or {}}
        target.write_text(yaml.safe_dump(document, sort_keys=False))
        release = document["config"].get(f"{PROJECT}:release")
        chart = release.get("chart") if isinstance(release, dict) else None
        path = chart.get("path") if isinstance(chart, dict) and "git" not in chart else None
        if not isinstance(path, str) or Path(path).is_absolute():
            continue
        link = Path(os.path.normpath(directory / path))
        if not link.is_relative_to(directory):
            raise EngineError(
                f"{source.name}: release.chart.path {path!r} leaves the project directory; on the local cluster "
                "name a chart inside the project or by an absolute path"
            )
        link.parent.mkdir(parents=True, exist_ok=True)
        _link(link, Path(os.path.normpath(root / path)))
    return directory


def _link(link: Path, target: Path) -> None:
    if link.is_symlink() and link.readlink() != target:
        link.unlink()
    if not link.is_symlink():
        link.symlink_to(target)


def gated(engine: Engine, action: str, **kwargs: Any) -> Any:
    """``preview``/``up``/``destroy``/``refresh`` with this project's guards, as ``./supersonic pulumi`` runs them
    (and the pull-request preview, and the end-to-end tier): ``destroy`` is refused while the stack's
    ``release.removable`` is false (a plain destroy may delete what does not depend on the protected Release before
    the engine refuses it); ``preview`` and ``up`` first preview, and ``gate.blocked`` refuses a plan that uninstalls
    or replaces a release or deletes the Envoy ConfigMap in use; ``up`` then applies. Raises ``Refused``."""
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
    preview_kwargs = dict(kwargs) if action == "preview" else {"diff": kwargs.get("diff", False)}
    user_events = preview_kwargs.pop("on_event", None)

    def record(event: Any) -> None:
        events.append(event)
        if user_events is not None:
            user_events(event)

    result = engine.run("preview", on_event=record, **preview_kwargs)
    problems = gate.blocked(gate.steps_from_events(events), removable=removable)
    if problems:
        raise Refused("the preview was refused by the gate:\n" + "\n".join(f"  {line}" for line in problems))
    return engine.run("up", **kwargs) if action == "up" else result


def _command_error_text(error: Exception) -> str:
    """What the CLI said went wrong: its ``Diagnostics:`` block (where the engine and the provider report errors),
    and anything on stderr; the whole output's tail when it has neither."""
    # CommandError's text is "code: N\n stdout: ...\n stderr: ...".
    stdout, _, stderr = str(error).partition("\n stderr: ")
    stdout = stdout.partition(" stdout: ")[2] or stdout
    diagnostics = stdout[stdout.index("Diagnostics:") :] if "Diagnostics:" in stdout else ""
    for end in ("\nOutputs:", "\nResources:"):
        diagnostics = diagnostics.partition(end)[0]
    parts = [p for p in (diagnostics.strip(), stderr.strip()) if p]
    return "\n".join(parts) if parts else stdout.strip()[-4000:]


def run_pulumi(stack: str, action: str, *, json: bool = False, cli: str | None = None, **options: Any) -> int:
    """``./supersonic pulumi``: ``action`` on ``stack`` through the gate; ``json``: the CLI's JSON preview on stdout,
    the log on stderr; ``cli``: the CLI named by ``--pulumi``. On the local cluster (``SCRATCH_PROJECT_ENV`` set)
    the engine runs in its throwaway project copy. Exit codes as ``cli/main.py`` states them."""
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
