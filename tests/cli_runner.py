"""Run a verb of the CLI in this process, as `python -m supersonic_interlink <verb> ...` does, without a new
interpreter each time: argparse's own exits become the exit code; an exception the CLI lets escape fails the test."""

from __future__ import annotations

import argparse
import contextlib
import io
import subprocess
from pathlib import Path

from supersonic_interlink.cli.main import main as cli_main


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m supersonic_interlink *args`` in this process: its exit code, stdout and stderr."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd or "."), contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = cli_main(list(args))
        except SystemExit as exited:
            code = exited.code if isinstance(exited.code, int) else (0 if exited.code is None else 1)
            if isinstance(exited.code, str):
                stderr.write(exited.code + "\n")
    return subprocess.CompletedProcess(["supersonic", *args], code, stdout.getvalue(), stderr.getvalue())


def sub_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A parser's sub-verbs and their parsers: its sub-parsers, or the choices of its first positional (``pulumi
    preview``, ``cluster start``), which take the parser's own options."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    first = next((action for action in parser._actions if not action.option_strings), None)
    return dict.fromkeys(first.choices, parser) if first is not None and first.choices else {}


def options(parser: argparse.ArgumentParser) -> list[str]:
    return [flag for action in parser._actions for flag in action.option_strings]


def verb_words() -> dict[str, dict[str, list[str]]]:
    """verb -> {"": its sub-verbs and options, sub-verb: that sub-verb's options}, read from each verb's parser (and
    ``probe report``'s, which ``probe`` reads before its parser)."""
    from supersonic_interlink.cli import main, probe

    table: dict[str, dict[str, list[str]]] = {}
    for verb in main.VERBS:
        parser = main.verb(verb).parser()
        subs = {**sub_parsers(parser), **({"report": probe.REPORT.parser()} if verb == "probe" else {})}
        table[verb] = {"": [*subs, *options(parser)], **{sub: options(p) for sub, p in subs.items()}}
    return table
