"""``python -m supersonic_interlink <verb>``, behind ``./supersonic``: the verb table. A verb's parser and package load
only when it runs; the exit codes are the package's (``supersonic_interlink/__init__.py``)."""

from __future__ import annotations

import os
import pkgutil
import sys
from typing import Any

from supersonic_interlink import EXIT_FINDING, EXIT_OK, EXIT_USAGE
from supersonic_interlink.config.rules import printable

VERBS = {
    verb: f"verbs:{verb.upper()}"
    for verb in ("render", "diff", "stack", "takeover", "cluster", "pulumi", "drift", "toolchain", "rehearse")
}
VERBS |= {"probe": "probe", "state": "state"}
"""verb -> what has its ``parser()`` and ``main(argv)``, under ``supersonic_interlink.cli``. ``./supersonic`` says what
each does, and runs ``test``, ``e2e`` and ``lint`` itself."""


def verb(name: str) -> Any:
    return pkgutil.resolve_name(f"supersonic_interlink.cli.{VERBS[name]}")


def main(argv: list[str]) -> int:
    if argv == ["--version"]:
        from supersonic_interlink.cli.verbs import version  # lazy, as every verb's parser: start-up time

        print(version())
        return EXIT_OK
    name, rest = (argv or [""])[0], argv[1:]
    if name not in VERBS:
        print(f"supersonic: no verb {name!r}; verbs: {', '.join(VERBS)} (see `./supersonic --help`)", file=sys.stderr)
        return EXIT_USAGE
    # Every verb echoes its arguments: a control character could forge a line or drive the terminal.
    for number, arg in enumerate(rest, start=1):
        if printable(arg) != arg:
            said = f"argument {number} {printable(arg)!r} holds control characters; none is allowed"
            print(f"supersonic {name}: {said}", file=sys.stderr)
            return EXIT_USAGE
    try:
        return int(verb(name).main(rest) or 0)
    except BrokenPipeError:
        # The reader went away (`| head`): nothing more to say, and no traceback for it.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FINDING
