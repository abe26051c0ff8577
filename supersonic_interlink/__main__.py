"""``python -m supersonic_interlink <verb> ...``: the CLI behind ``./supersonic`` (which first sets up .venv).

Exit codes, the same for every verb: 0 done / no changes / no findings; 1 a check found something or an
operation failed; 2 a usage or config error (nothing was run).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

# The command-line modules at the repository root (render, takeover, probe, state_backend) import by name from any
# working directory.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# verb -> (module with main(argv) -> int, one line of help)
VERBS: dict[str, tuple[str, str]] = {
    "render": ("render", "render a stack offline and check it"),
    "takeover": ("takeover", "take a live release over from Flux (docs/takeover.md)"),
    "probe": ("probe", "measure a cold start through Envoy; wake history and report"),
    "state": ("state_backend", "the S3 state bucket: create, check"),
    "cluster": ("supersonic_interlink.engine.cluster", "local control plane on 127.0.0.1: start|stop|env|status"),
    "pulumi": ("supersonic_interlink.engine.run", "the real engine for a stack: preview|up|refresh|destroy"),
    "toolchain": ("supersonic_interlink.engine.toolchain", "build the Pulumi CLI, provider and control plane"),
}


def usage() -> str:
    lines = ["usage: ./supersonic <verb> [args]   (or: python -m supersonic_interlink <verb> [args])", ""]
    lines += [f"  {verb:<10} {text}" for verb, (_module, text) in VERBS.items()]
    lines += [
        "  test       the unit tests (./supersonic only: it installs what they need)",
        "  e2e        the end-to-end tier on a local cluster (./supersonic only)",
        "  lint       every static check (./supersonic only)",
        "",
        "example: ./supersonic render hammer --out rendered/hammer --check",
        "exit codes: 0 ok, 1 a finding or a failed operation, 2 a usage or config error",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if argv else 2
    verb, rest = argv[0], argv[1:]
    if verb not in VERBS:
        print(f"supersonic: unknown verb {verb!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(VERBS[verb][0])
    result = module.main(rest)
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
