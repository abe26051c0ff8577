"""Helm post-renderer: give the ScaledObject's first trigger ``metadata.timeout: "60000"``.

Helm pipes the rendered manifests through this program on every install and upgrade of the release. It sets
``spec.triggers[0].metadata.timeout`` on the release's ScaledObject (``<instance>-keda-so``) and copies every
other document through byte for byte. Running it on its own output changes nothing. Bad YAML, or a ScaledObject
under a name the chart contract does not expect, stops the upgrade with a message instead of deploying a
ScaledObject without the timeout.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from supersonic_interlink.contract import CHART

# KEDA's Prometheus scaler gives up on a query after 3 s by default; the external Prometheus on Geddes answers
# the serverLoadMetric query more slowly under load, and a timed-out query reads as "no load", scaling Triton
# down mid-burst. The old release carried the same patch.
TRIGGER_TIMEOUT_MS = "60000"

_SEPARATOR = re.compile(r"^---[ \t]*(?:#.*)?$", re.MULTILINE)


class PostRenderError(Exception):
    pass


def _split(stream: str) -> list[str]:
    """Documents with their own text, each keeping the separator line that opened it."""
    starts = [m.start() for m in _SEPARATOR.finditer(stream)]
    if not starts or starts[0] != 0:
        starts = [0] + starts
    return [stream[a:b] for a, b in zip(starts, starts[1:] + [len(stream)]) if stream[a:b]]


def _header(chunk: str) -> str:
    """The separator and leading comment lines (``# Source: ...``) of a document chunk."""
    lines = chunk.splitlines(keepends=True)
    kept = []
    for line in lines:
        if _SEPARATOR.match(line.rstrip("\n")) or line.startswith("#") or not line.strip():
            kept.append(line)
        else:
            break
    return "".join(kept)


def patch(stream: str) -> str:
    """The rendered stream with the trigger timeout set; raises PostRenderError on bad input."""
    out = []
    for index, chunk in enumerate(_split(stream)):
        try:
            document = yaml.safe_load(chunk)
        except yaml.YAMLError as error:
            raise PostRenderError(f"document {index + 1} is not valid YAML: {error}") from None
        if not isinstance(document, dict) or document.get("kind") != "ScaledObject":
            out.append(chunk)
            continue
        name = (document.get("metadata") or {}).get("name", "")
        if not name.endswith(f"-{CHART.scaled_object_suffix}"):
            raise PostRenderError(
                f"ScaledObject {name!r} does not end in -{CHART.scaled_object_suffix}: the chart's naming changed; "
                f"update supersonic_interlink/contract.py"
            )
        triggers = (document.get("spec") or {}).get("triggers") or []
        if not triggers or not isinstance(triggers[0], dict):
            raise PostRenderError(f"ScaledObject {name!r} has no triggers to set the timeout on")
        metadata = triggers[0].setdefault("metadata", {})
        if metadata.get("timeout") == TRIGGER_TIMEOUT_MS:
            out.append(chunk)
            continue
        metadata["timeout"] = TRIGGER_TIMEOUT_MS
        out.append(_header(chunk) + yaml.safe_dump(document, sort_keys=False, default_flow_style=False))
    return "".join(out)


def main() -> int:
    try:
        sys.stdout.write(patch(sys.stdin.read()))
    except PostRenderError as error:
        print(f"keda-trigger-timeout post-renderer: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
