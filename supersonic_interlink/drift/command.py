"""``./supersonic drift <stack>``: the verb's work once its parser has read the command line (``cli/drift.py``): the
engine for the stack, the check (and with ``correct`` the correction and the check again), and the report printed as
text, JSON or markdown. Exit 0 no drift, 1 drift, 2 could not check (the line says why)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from supersonic_interlink import EXIT_FINDING, EXIT_OK, EXIT_USAGE
from supersonic_interlink.drift import check, rbac, report
from supersonic_interlink.engine.cluster import SCRATCH_PROJECT_ENV
from supersonic_interlink.engine.run import ROOT, Engine, EngineError, scratch_project
from supersonic_interlink.engine.toolchain import ToolchainError


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run(stack: str, *, output: str = "text", correct: bool = False, cli: str | None = None) -> int:
    """``output``: ``text``, ``json`` or ``markdown``; ``cli``: the Pulumi CLI named by ``--pulumi``."""
    scratch = os.environ.get(SCRATCH_PROJECT_ENV)
    try:
        work_dir = scratch_project(Path(scratch)) if scratch else ROOT
        engine = Engine(stack, work_dir=work_dir, log=_log, create=False, cli=cli)
        first, second = check.run(engine, check.Tools(), fix=correct, log=_log)
    except (check.CannotCheck, EngineError, ToolchainError) as error:
        why = rbac.missing_right(str(error)) or str(error)
        print(f"supersonic drift: could not check {stack}: {why}", file=sys.stderr)
        return EXIT_USAGE
    final = second or first
    if output == "json":
        document = final.as_json()
        if second is not None:
            document["corrected"] = first.as_json()
        print(json.dumps(document, indent=2))
    elif output == "markdown":
        print(report.markdown(final, correct_command=f"./supersonic drift {stack} --correct"), end="")
    else:
        if second is not None:
            print("before the correction:\n" + report.text(first) + "\nafter it:")
        print(report.text(final), end="")
        if final.drift and not correct:
            print(f"to bring it back: ./supersonic drift {stack} --correct")
    return EXIT_FINDING if final.drift else EXIT_OK
