"""``./supersonic <verb>`` (and, inside .venv, ``python -m supersonic_interlink <verb>``): one verb table.

Exit codes, the same for every verb: 0 done / no changes / no findings; 1 a check found something or an
operation failed; 2 a usage or config error (nothing was run); 3 a check could not run, under ``--strict``.
Each verb's module is imported only when the verb runs, so a verb loads what it needs and no more.
"""

from __future__ import annotations

import importlib
import os
import sys

from supersonic_interlink import EXIT_FINDING, EXIT_OK, EXIT_USAGE

VERBS: dict[str, tuple[str, str]] = {
    "render": ("supersonic_interlink.cli.render", "render a stack offline and check it"),
    "diff": ("supersonic_interlink.cli.diff", "what a change deploys: the stack rendered at a base ref vs. now"),
    "stack": ("supersonic_interlink.cli.stack", "write a new cluster's stack file from an existing one, and check it"),
    "takeover": ("supersonic_interlink.cli.takeover", "take a live release over from Flux (docs/takeover.md)"),
    "probe": ("supersonic_interlink.cli.probe", "measure a cold start through Envoy; wake history and report"),
    "state": ("supersonic_interlink.cli.state", "the S3 state bucket: bootstrap, check, history, restore"),
    "cluster": ("supersonic_interlink.cli.cluster", "local control plane on 127.0.0.1: start|stop|env|status"),
    "pulumi": ("supersonic_interlink.cli.pulumi", "the real engine for a stack: preview|up|refresh|destroy"),
    "drift": ("supersonic_interlink.cli.drift", "what changed on the cluster outside Pulumi; --correct brings it back"),
    "toolchain": ("supersonic_interlink.cli.toolchain", "build the Pulumi CLI, provider and control plane"),
    "rehearse": ("supersonic_interlink.cli.rehearse", "rehearse a cold start on the local control plane, real KEDA"),
    "completion": ("supersonic_interlink.cli.completion", "print a bash or zsh completion script"),
}
"""verb -> (module with ``main(argv) -> int``, one line of help)."""

FRONT_DOOR_ONLY: dict[str, str] = {
    "test": "the unit tests (it installs what they need first)",
    "e2e": "the end-to-end tier: the real engine on a local cluster",
    "lint": "every static check CI and the pre-commit hooks run",
}
"""Verbs only ``./supersonic`` runs: they set up tools outside Python first."""


def usage() -> str:
    lines = ["usage: ./supersonic <verb> [args]   (inside .venv: python -m supersonic_interlink <verb> [args])", ""]
    lines += [f"  {verb:<11}{text}" for verb, (_module, text) in VERBS.items()]
    lines += [f"  {verb:<11}{text} (only through ./supersonic)" for verb, text in FRONT_DOOR_ONLY.items()]
    lines += [
        "",
        "`./supersonic <verb> --help` for one verb; `./supersonic --version`: the versions and the pinned charts.",
        "example: ./supersonic render hammer --out rendered/hammer --check",
        "exit codes: 0 ok, 1 a finding or a failed operation, 2 a usage or config error,",
        "            3 a check could not run under --strict",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return EXIT_OK if argv else EXIT_USAGE
    if argv == ["--version"]:
        from supersonic_interlink.cli.version import text  # lazy, as the verbs' modules: start-up time

        print(text())
        return EXIT_OK
    verb, rest = argv[0], argv[1:]
    if verb in FRONT_DOOR_ONLY:
        print(f"supersonic: {verb} runs through the front door: ./supersonic {verb}", file=sys.stderr)
        return EXIT_USAGE
    if verb not in VERBS:
        print(f"supersonic: unknown verb {verb!r}\n\n{usage()}", file=sys.stderr)
        return EXIT_USAGE
    from supersonic_interlink.config.rules import printable  # lazy: `--help` needs no settings models

    for number, arg in enumerate(rest, start=1):
        if printable(arg) != arg:
            # Every verb echoes its arguments (the stack above all) in its messages: a control character there could
            # forge an output line or drive the terminal, and no stack, path or flag needs one.
            print(
                f"supersonic {verb}: argument {number} {printable(arg)!r} holds control characters; none is allowed",
                file=sys.stderr,
            )
            return EXIT_USAGE
    module = importlib.import_module(VERBS[verb][0])
    try:
        result = module.main(rest)
    except BrokenPipeError:
        # The reader went away (`| head`): nothing more to say, and no traceback for it.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FINDING
    return int(result or 0)
