"""Run a verb of the CLI in this process, as `python -m supersonic_interlink <verb> ...` runs it, without paying for a
new interpreter and its imports each time.

``cli_main`` is the same ``main(argv)`` the module entry point calls; argparse's own exits (``--help``, a usage error)
become the exit code, as they do in a process. An exception the CLI lets escape is not caught: it fails the test,
as a traceback on stderr would. A handful of tests still start the real process (test_front_door.py), so the entry
point itself stays covered.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from pathlib import Path

from supersonic_interlink.cli.main import main as cli_main


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m supersonic_interlink *args`` in this process: its exit code, stdout and stderr."""
    stdout, stderr = io.StringIO(), io.StringIO()
    previous = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                code = cli_main(list(args))
            except SystemExit as exited:
                code = exited.code if isinstance(exited.code, int) else (0 if exited.code is None else 1)
                if isinstance(exited.code, str):
                    stderr.write(exited.code + "\n")
    finally:
        os.chdir(previous)
    return subprocess.CompletedProcess(["supersonic", *args], code, stdout.getvalue(), stderr.getvalue())
