"""The takeover runbook for one stack: ``runbook.md`` filled with the names ``pulumi up`` registers, what ``takeover
steps`` prints; docs/takeover.md holds it for hammer (``.venv/bin/python -m supersonic_interlink.takeover.steps``)."""

from __future__ import annotations

import shlex
from pathlib import Path
from string import Template

from supersonic_interlink.components import supersonic_release as release
from supersonic_interlink.components.envoy_config import config_checksum, config_map_name, envoy_config_text
from supersonic_interlink.components.failed_pod_cleanup import object_name as cleanup_object_name
from supersonic_interlink.config import PROJECT, Settings
from supersonic_interlink.config.pulumi_config import settings_from_config
from supersonic_interlink.config.stack_config import ROOT, load_stack, stack_file
from supersonic_interlink.contract import CHART
from supersonic_interlink.program import RELEASE_COMPONENT

HEADER, RUNBOOK = map(Template, Path(__file__).with_name("runbook.md").read_text().split("<!-- the steps -->\n"))
DOCS = ROOT / "docs" / "takeover.md"
DOCS_BEGIN = "<!-- made from takeover/runbook.md by `.venv/bin/python -m supersonic_interlink.takeover.steps` -->"
DOCS_END = "<!-- end of the steps -->"


def names(stack: str, settings: Settings) -> dict[str, str]:
    """Every ``$name`` of the runbook for one stack."""
    ns, rel, chart = settings.namespace, settings.release.name, settings.release.chart
    pinned = chart.kind == "git" and chart.pinned
    # The engine's URN: the ancestors' types and the resource's own joined by $, the root stack left out (pulumi/pulumi
    # Deployment.generateURN, urn.New).
    prefix = f"urn:pulumi:{stack}::{PROJECT}::{release.TYPE}"
    release_urn = f"{prefix}${release.HELM_RELEASE_TYPE}::{release.helm_release_resource_name(RELEASE_COMPONENT)}"
    return {
        "stack": shlex.quote(stack),  # a stack name is checked where it is read; quoted here too, as every word
        "stack_name": stack,
        "stack_path": str(stack_file(stack).relative_to(ROOT)),
        "ns": ns,
        "rel": rel,
        "component_urn": f"{prefix}::{RELEASE_COMPONENT}",
        "release_urn": release_urn,
        "urn": shlex.quote(release_urn),
        "import_id": release.live_release_id(settings),
        "envoy_service": CHART.instance_name(rel),
        "envoy_deployment": CHART.envoy_object_name(rel),
        "triton_deployment": settings.generation.inference_object_name(rel),
        "scaled_object": CHART.scaled_object_name(rel),
        "hold_seconds": str(settings.scaleFromZero.holdMinReplicasSeconds),
        "new_envoy_config_map": config_map_name(rel, config_checksum(envoy_config_text(settings))),
        "cleanup_cronjob": cleanup_object_name(rel),
        "adopt": "on" if settings.release.adopt else "off (step 2 turns it on)",
        "chart": "a pinned git commit." if pinned else "not pinned yet: pin it first (docs/chart.md).",
    }


def format_steps(stack: str, settings: Settings) -> str:
    """What ``takeover steps`` prints: the URNs, what is still to do, then the runbook."""
    given = names(stack, settings)
    return HEADER.substitute(given) + RUNBOOK.substitute(given)


def docs_text(current: str) -> str:
    """docs/takeover.md with the runbook for hammer, the same on every machine: the Envoy ConfigMap hash ``<hash>``."""
    hammer = load_stack("hammer")
    settings = settings_from_config(hammer.config, hammer.secret_keys)
    given = {**names("hammer", settings), "new_envoy_config_map": config_map_name(settings.release.name, "<hash>")}
    head, _, rest = current.partition(DOCS_BEGIN + "\n")
    tail = rest.partition(DOCS_END)[2]
    return f"{head}{DOCS_BEGIN}\n\n{RUNBOOK.substitute(given)}\n{DOCS_END}{tail}"


if __name__ == "__main__":
    DOCS.write_text(docs_text(DOCS.read_text()))
