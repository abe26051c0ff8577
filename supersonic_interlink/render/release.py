"""The chart's objects as the release deploys them: the whole release, not only what the program creates itself.

The chart is rendered once with the real Helm v3 the conformance check uses (``helm.ChartRenderer``: ``helm template
--dry-run=server`` against the stand-in API serving the stack's Envoy ConfigMap, so the chart's ``lookup`` answers as
on the cluster), with the stack's values and, when the Release runs one, the project's post-renderer executable. What
comes out is what ``pulumi up`` would install, one object each, in a stable order, so two renders compare object by
object. The data of a ``Secret`` is never written as it is: each value is replaced by its length and a digest
(``mask``), enough to see that it changed, not what it is.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from supersonic_interlink import ROOT
from supersonic_interlink.chart.helm import ChartRenderer
from supersonic_interlink.render.conformance import Expected

SECRET_DATA_FIELDS = ("data", "stringData")


def chart_objects(chart_dir: Path, rendered: Mapping[str, Any], root: Path = ROOT) -> list[dict[str, Any]]:
    """The release's chart objects, sorted (``object_order``). ``root``: the project directory the Release's relative
    post-renderer path is resolved in. Raises ``ChartRenderError`` or ``BinaryError``."""
    expected = Expected.from_rendered(rendered)
    postrender = rendered["release"]["options"].get("postrender")
    post_renderer = root / str(postrender) if postrender else None
    with ChartRenderer(
        chart_dir, expected.release_name, expected.namespace, expected.served, post_renderer
    ) as renderer:
        objects = renderer.render(expected.values)
    return sorted(objects, key=object_order)


def object_order(manifest: Mapping[str, Any]) -> tuple[str, str, str, str]:
    metadata = manifest.get("metadata") or {}
    return (
        str(manifest.get("kind", "")),
        str(manifest.get("apiVersion", "")),
        str(metadata.get("namespace") or ""),
        str(metadata.get("name", "")),
    )


def masked_value(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return f"(masked: {len(text.encode())} bytes, sha256 {digest})"


def mask(objects: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The objects with every value of a Secret's ``data`` and ``stringData`` masked (a copy)."""
    masked = []
    for manifest in objects:
        copy = dict(manifest)
        if copy.get("kind") == "Secret" and str(copy.get("apiVersion", "")) == "v1":
            for field in SECRET_DATA_FIELDS:
                if isinstance(copy.get(field), Mapping):
                    copy[field] = {key: masked_value(value) for key, value in copy[field].items()}
        masked.append(copy)
    return masked


def file_names(objects: Iterable[Mapping[str, Any]]) -> list[str]:
    """A relative file name per object, ``<Kind>[.<group>]/<name>.yaml`` (the namespace added where two would
    meet), in the objects' order."""
    names: list[str] = []
    for manifest in objects:
        api_version = str(manifest.get("apiVersion", ""))
        group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
        kind = str(manifest.get("kind", "Unknown")) + (f".{group}" if group else "")
        metadata = manifest.get("metadata") or {}
        name = f"{kind}/{metadata.get('name', 'unnamed')}.yaml"
        if name in names:
            name = f"{kind}/{metadata.get('name', 'unnamed')}.{metadata.get('namespace') or 'default'}.yaml"
        names.append(name)
    return names
