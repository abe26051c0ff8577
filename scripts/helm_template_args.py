"""Arguments for `helm template` of a rendered stack: the pinned chart, the release, and its values as a file.

    python scripts/helm_template_args.py rendered/<stack>    # prints one argument per line

Writes DIR/template-values.yaml: the release values with ``envoy.external_config.load_from_configmap`` off, since
the chart's ``lookup`` of the Envoy ConfigMap only answers in a real install.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from supersonic_interlink.settings import load_yaml


def template_args(rendered: Path) -> list[str]:
    release = load_yaml((rendered / "release.yaml").read_text())
    values = release["values"]
    values["envoy"]["external_config"]["load_from_configmap"] = False
    values_file = rendered / "template-values.yaml"
    values_file.write_text(yaml.safe_dump(values, sort_keys=True))
    chart = release["chart"]
    source = (
        [chart["path"]] if "path" in chart else [chart["name"], "--repo", chart["repo"], "--version", chart["version"]]
    )
    return [release["name"], *source, "--namespace", release["namespace"], "--values", str(values_file)]


if __name__ == "__main__":
    print("\n".join(template_args(Path(sys.argv[1]))))
