"""What the verbs share (the parser whose usage error is one line with exit 2, the verb record, the argument types that
refuse an empty or unknown value), the verbs whose parsers need only the program's own requirements, and
``--version``."""

from __future__ import annotations

import argparse
import inspect
import pkgutil
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from supersonic_interlink import EXIT_USAGE, ROOT
from supersonic_interlink.chart.binaries import BINARIES
from supersonic_interlink.config import ConfigError
from supersonic_interlink.config.stack_config import load_stack, stack_file, stack_names
from supersonic_interlink.engine import toolchain
from supersonic_interlink.engine.cluster import default_dir, run_cluster
from supersonic_interlink.engine.installed import CLI_ENV
from supersonic_interlink.engine.run import ACTIONS, run_pulumi
from supersonic_interlink.files import output_path
from supersonic_interlink.rehearse.delays import FORMS


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog.removeprefix('./supersonic ')}: {message} (see `{self.prog} --help`)\n")


@dataclass(frozen=True)
class Verb:
    """A verb: the function adding its arguments (its docstring the help), what it refuses across them, and what runs
    it: a ``module:function`` called with the arguments, imported when the verb runs."""

    name: str
    arguments: Callable[[Parser], object]
    run: str | Callable[[argparse.Namespace], int]
    problem: Callable[[argparse.Namespace], str | None] = lambda args: None

    def parser(self) -> Parser:
        parser = Parser(prog=f"./supersonic {self.name}", description=inspect.getdoc(self.arguments))
        self.arguments(parser)
        return parser

    def main(self, argv: list[str]) -> int:
        parser = self.parser()
        args = parser.parse_args(argv)
        if why := self.problem(args):
            parser.error(why)
        return int(pkgutil.resolve_name(self.run)(**vars(args))) if isinstance(self.run, str) else self.run(args)


def given(allowed: str, kind: Callable[[str], Any] = str) -> Callable[[str], Any]:
    """An argument type that refuses an empty value (``Path("")`` would mean the current directory)."""

    def parse(text: str) -> Any:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"is empty: expected {allowed}")
        return kind(text)

    return parse


path, name, ref = given("a path", Path), given("a name"), given("a branch, a tag or a commit")


def chart_dir(text: str) -> Path:
    if not (path(text) / "Chart.yaml").is_file():
        raise argparse.ArgumentTypeError(f"{text!r} is not a chart directory (no Chart.yaml in it)")
    return Path(text)


def known_stack(stack: str) -> str:
    """A stack with a file under ``stacks/``, named by the Pulumi CLI's rule."""
    try:
        found = stack_file(stack).is_file()
    except ConfigError as error:
        raise argparse.ArgumentTypeError(error.problems[0]) from None
    if not found:
        raise argparse.ArgumentTypeError(f"no stack {stack!r}; stacks: {', '.join(stack_names())}")
    return stack


def add_stack(parser: argparse.ArgumentParser, more: str = "", **kwargs: object) -> None:
    """The stack positional: its help lists the stacks, then ``more``."""
    parser.add_argument("stack", help=f"stack name ({', '.join(stack_names())}{more})", **kwargs)  # type: ignore[arg-type]


PULUMI_CLI = f"the Pulumi CLI to run (default: ${CLI_ENV}, else `pulumi` on PATH, else one built from Go modules)"


def _render(parser: Parser) -> None:
    """Render a stack offline: what `pulumi up` would deploy, as reviewable files, with optional checks."""
    add_stack(parser)
    add = parser.add_argument
    add("--out", type=output_path, help="directory to write manifests.yaml, release.yaml, envoy.yaml")
    add("--check", action="store_true", help="validate the output; exit 1 on any finding")
    add("--strict", action="store_true", help="with --check: a check that could not run fails the run (exit 3)")
    add("--chart", type=chart_dir, dest="chart_dir", metavar="DIR", help="with --check or --out: this chart instead")
    add("--json", action="store_true", dest="as_json", help="the render and --check's outcome as one JSON document")
    add("--fetch-chart", action="store_true", help="fetch the stack's pinned git chart into .charts/ (needs network)")
    add("--pin-chart", nargs="?", const="main", type=ref, metavar="REF", help="pin the commit of REF (default main)")


def _render_problem(args: argparse.Namespace) -> str | None:
    if args.chart_dir is not None and not (args.check or args.out):
        return "--chart DIR names the chart --check checks and --out renders: give --check or --out too"
    if args.strict and not args.check:
        return "--strict fails a check that could not run: give --check too"
    changes = [flag for flag, given in (("--pin-chart", args.pin_chart), ("--fetch-chart", args.fetch_chart)) if given]
    if changes and (args.check or args.out or args.as_json or len(changes) > 1):
        return f"{' and '.join(changes)} only changes the chart: run --check / --out / --json as a second command"
    return None


def _diff(parser: Parser) -> None:
    """What a change deploys, object by object: the stack rendered at a base ref and in the working tree."""
    add_stack(parser, ", or one only the base has")
    add = parser.add_argument
    add("--base", type=ref, metavar="REF", help="git ref to compare with (default: merge base with main)")
    add("--chart", type=chart_dir, metavar="DIR", help="render both sides with this chart directory")
    add("--strict", action="store_true", help="exit 3 when the chart's objects could not be compared")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--markdown", action="store_true", help="the same text as a pull request comment section")
    output.add_argument("--json", action="store_true", help="the same as one JSON document (docs/json.md)")


def _stack(parser: Parser) -> None:
    """Write stacks/Pulumi.NAME.yaml from another stack's with NAME's own names, then render and check it."""
    new = parser.add_subparsers(required=True, metavar="{new}").add_parser("new", help="write and check a stack file")
    new.add_argument("name", metavar="NAME", type=name, help="the new stack's name (an existing file is kept)")
    new.add_argument("--namespace", required=True, type=name, help="the release's namespace on that cluster")
    new.add_argument("--release", required=True, type=name, help="the Helm release name")
    new.add_argument("--node", required=True, type=name, help="the interLink virtual node Triton runs on")
    new.add_argument("--from", dest="source", default="hammer", type=name, help="the stack to start from")


def _takeover(parser: Parser) -> None:
    """Take over a live Flux-managed release with a stack (docs/takeover.md)."""
    commands = parser.add_subparsers(dest="command", required=True)
    steps = commands.add_parser("steps", help="print the takeover steps with this stack's URNs and names")
    values = commands.add_parser("values", help="the live values against this stack's, as a markdown table")
    objects = commands.add_parser("objects", help="what the upgrade deletes, creates and changes, object by object")
    for command in (steps, values, objects):
        add_stack(command, metavar="STACK")
    live = "the live release's values: `helm get values -o yaml` output"
    steps.add_argument("--live", dest="check_live", action="store_true", help="first check the live release")
    values.add_argument("--live", type=path, required=True, help=live)
    source = objects.add_mutually_exclusive_group(required=True)
    source.add_argument("--live", type=path, help=live)
    source.add_argument("--from-cluster", action="store_true", help="read the live release from the cluster")
    add = objects.add_argument
    looked_up = "an object the chart looks up (kubectl get -o yaml)"
    add("--live-object", type=path, action="append", default=[], dest="live_objects", metavar="FILE", help=looked_up)
    add("--live-manifest", type=path, metavar="FILE", help="with --live: its stored manifest (helm get manifest)")
    add("--chart", type=path, metavar="DIR", help="render this chart instead of the stack's pinned one")
    for command in (values, objects):
        command.add_argument("--out", type=output_path, help="write the report here instead of standard output")
        command.add_argument("--json", action="store_true", help="the comparison as one JSON document (docs/json.md)")


def _cluster(parser: Parser) -> None:
    """A local Kubernetes control plane on 127.0.0.1 by kwokctl, with the interLink virtual node."""
    parser.add_argument("action", choices=["start", "stop", "env", "status"])
    parser.add_argument("--dir", type=path, default=default_dir(), help="where its files live (default %(default)s)")


PULUMI_FLAGS = {
    "--yes": (("up", "destroy"), "required: it changes the cluster (review a preview --diff first)"),
    "--diff": (("preview", "up", "refresh"), "show the property-level diff"),
    "--json": (("preview",), "the CLI's JSON output"),
    "--expect-no-changes": (("preview", "up", "refresh"), "fail if anything would change"),
}


def _pulumi(parser: Parser) -> None:
    """Run the real Pulumi engine for a stack against the cluster KUBECONFIG names."""
    actions = parser.add_subparsers(dest="action", required=True)
    for action in ACTIONS:
        sub = actions.add_parser(action, help=f"pulumi {action}, through the preview gate")
        add_stack(sub, type=known_stack)
        sub.add_argument("--pulumi", metavar="PATH", help=PULUMI_CLI)
        for flag, (flag_actions, text) in PULUMI_FLAGS.items():
            if action in flag_actions:
                sub.add_argument(flag, action="store_true", required=flag == "--yes", help=text)
    gate = actions.add_parser("gate", help="the preview gate on `pulumi preview --json` output from any CLI")
    add_stack(gate, type=known_stack)
    gate.add_argument("file", type=path, help="e.g. ./supersonic pulumi gate hammer preview.json")


def _run_pulumi(args: argparse.Namespace) -> int:
    if args.action == "gate":  # the gate loads the program's components (the Pulumi SDK): imported when it runs
        return pkgutil.resolve_name("supersonic_interlink.engine.gate:main")([args.stack, str(args.file)])
    flags = {flag: True for flag in ("diff", "expect_no_changes", "json") if getattr(args, flag, False)}
    return run_pulumi(args.stack, args.action, cli=args.pulumi, **flags)


def _drift(parser: Parser) -> None:
    """What changed on the cluster KUBECONFIG names outside Pulumi, read-only without --correct: exit 0 no
    drift, 1 drift, 2 could not check."""
    add_stack(parser, type=known_stack)
    one = parser.add_mutually_exclusive_group().add_argument
    one("--json", dest="output", action="store_const", const="json", help="the report as JSON")
    one("--markdown", dest="output", action="store_const", const="markdown", help="the report as markdown (the issue)")
    parser.add_argument("--correct", action="store_true", help="bring drifted objects back, then check again")
    parser.add_argument("--pulumi", dest="cli", metavar="PATH", help=PULUMI_CLI)
    parser.set_defaults(output="text")


def _binary(text: str) -> str:
    try:
        toolchain.build_for(text)
    except toolchain.ToolchainError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def _toolchain(parser: Parser) -> None:
    """The Pulumi CLI, provider and local control plane, built from the Go modules under tools/."""
    names = [name for build in toolchain.BUILDS for name in build.packages]
    build = parser.add_subparsers(dest="command", required=True).add_parser("build", help="build what is missing")
    build.add_argument("names", nargs="*", type=_binary, metavar="NAME", help=f"(default all) {', '.join(names)}")


def _run_toolchain(args: argparse.Namespace) -> int:
    try:
        toolchain.ensure(args.names or None, log=lambda line: print(line, flush=True))
    except toolchain.ToolchainError as error:
        print(f"toolchain: {error}", file=sys.stderr)
        return 1
    return 0


def _rehearse(parser: Parser) -> None:
    """A cold start on a local control plane (real Envoy and KEDA, kwok holding Triton Pending for a Slurm
    queue delay) and the share of cold sessions readyTimeoutSeconds serves."""
    add_stack(parser, type=known_stack)
    add = parser.add_argument
    add("--queue-delay", required=True, metavar="SPEC", help=f"the Slurm queue delay: {FORMS}")
    add("--dir", dest="directory", type=Path, metavar="DIR", help="where the local cluster's files live")
    add("--chart", type=Path, metavar="DIR", help="the chart whose Lua filter and sidecar run (default: the stack's)")


def chart_pin(stack: str) -> str:
    """What ``release.chart`` in the stack file names: a git commit, ``unpinned``, or a chart directory."""
    try:
        chart = (load_stack(stack).config.get("supersonic-interlink:release") or {}).get("chart") or {}
    except ConfigError as error:
        return f"unreadable ({error.problems[0]})"
    if "path" in chart and "git" not in chart:
        return f"directory {chart['path']}"
    return f"{chart.get('git', 'the default')} {chart.get('commit') or 'unpinned'}"


def version() -> str:
    """``./supersonic --version``: pyproject.toml's (the project runs from its tree, never installed) with the git
    commit, each stack's pinned chart, and the pinned engine, Helm and kubectl."""
    git = ["git", "-C", str(ROOT), "describe", "--always", "--abbrev=12", "--dirty=.dirty", "--exclude=*"]
    commit = subprocess.run(git, capture_output=True, text=True) if shutil.which("git") else None  # else none to add
    pulumi, provider = (toolchain.version(toolchain.build_for(n)) for n in ("pulumi", "pulumi-resource-kubernetes"))
    release = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    described = f"+g{commit.stdout.strip()}" if commit and commit.returncode == 0 else ""
    lines = [f"supersonic-interlink {release}{described}"]
    lines += [f"  stack {stack}: chart {chart_pin(stack)}" for stack in stack_names()]
    lines.append(f"  Pulumi CLI {pulumi}, Kubernetes provider {provider} (tools/*/go.mod)")
    lines.append(f"  Helm {BINARIES['helm'].version}, kubectl {BINARIES['kubectl'].version} (chart/binaries.py)")
    return "\n".join(lines)


RENDER = Verb("render", _render, "supersonic_interlink.render.stack:run", _render_problem)
DIFF = Verb("diff", _diff, "supersonic_interlink.diff.report:run")
STACK = Verb("stack", _stack, "supersonic_interlink.render.stack:new_stack")
TAKEOVER = Verb("takeover", _takeover, "supersonic_interlink.takeover.run:run")
CLUSTER = Verb("cluster", _cluster, lambda args: run_cluster(args.action, args.dir.resolve()))
PULUMI = Verb("pulumi", _pulumi, _run_pulumi)
DRIFT = Verb("drift", _drift, "supersonic_interlink.drift.check:run")
TOOLCHAIN = Verb("toolchain", _toolchain, _run_toolchain)
REHEARSE = Verb("rehearse", _rehearse, "supersonic_interlink.rehearse.measure:run")
