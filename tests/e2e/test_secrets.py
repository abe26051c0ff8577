"""A value set with ``pulumi config set --secret`` reaches the cluster and is never in clear in the state file or
in what preview and up print."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e_harness import Project, hammer_like, kubectl_json

from supersonic_interlink.config.stack_config import SECRET_PLACEHOLDER, cli_config, read_stack_document, secret_paths
from supersonic_interlink.contract import CHART
from supersonic_interlink.engine.run import gated
from supersonic_interlink.render.stack import render

pytestmark = pytest.mark.timeout(900)

STACK = "secrets-e2e"
RELEASE = "supersonic-interlink"
NAMESPACE = "e2e-secrets"
MARKER = "e2e-secret-7f3a9c"
# It selects this release and namespace (serverLoad.metric may not select another's); the marker rides in a label.
SELECTOR = f'release="{RELEASE}", namespace="{NAMESPACE}", probe="{MARKER}"'
METRIC = f"sum(rate(nv_inference_queue_duration_us{{{SELECTOR}}}[30s]))"


def test_a_secret_metric_is_deployed_and_never_written_in_clear(project: Project, chart: Path) -> None:
    cluster = project.cluster
    cluster.kubectl("create", "namespace", NAMESPACE)
    stack = hammer_like(NAMESPACE, RELEASE, chart)
    del stack["supersonic-interlink:serverLoad"]
    project.write_stack(STACK, stack)
    project.engine(STACK).workspace_stack()  # `pulumi stack init`: the encryption salt goes into the stack file

    # Step 1: the operator sets the metric as a secret, with the real CLI.
    metric = ["--secret", "supersonic-interlink:serverLoad.metric", METRIC]
    for setting in (metric, ["supersonic-interlink:serverLoad.threshold", "20"]):
        done = project.pulumi("config", "set", "--path", *setting, stack=STACK)
        assert done.returncode == 0, done.stderr
    assert MARKER not in project.stack_file(STACK).read_text(), "the stack file holds the ciphertext only"

    # Offline, the stack the real CLI encrypted renders without the passphrase: the secret is its placeholder.
    document = read_stack_document(project.stack_file(STACK))
    secrets = secret_paths(document)
    assert secrets == ["supersonic-interlink:serverLoad.metric"], secrets
    offline = render(STACK, cli_config(document), secrets)
    assert offline["release"]["values"]["serverLoadMetric"] == SECRET_PLACEHOLDER
    ciphertext = document["supersonic-interlink:serverLoad"]["metric"]["secure"]
    assert MARKER not in json.dumps(offline, default=str) and ciphertext not in json.dumps(offline, default=str)

    # Step 2: preview and up print nothing of it.
    # Through the guards, as `./supersonic pulumi` runs them: a stack holding a secret is read without decrypting.
    for action in ("preview", "up"):
        gated(project.engine(STACK), action, diff=True, on_output=project.output.append)
        printed = "\n".join(project.output)
        assert "[secret]" in printed and MARKER not in printed, f"{action} --diff shows the secret masked"
        project.output.clear()

    # It reached the cluster (so the check above is about a value that was really used)...
    scaled = kubectl_json(cluster, "get", "scaledobject", CHART.scaled_object_name(RELEASE), "-n", NAMESPACE)
    assert MARKER in scaled["spec"]["triggers"][0]["metadata"]["query"]
    # ...and is nowhere in the state file, nor in the exported state.
    state_files = list((project.directory / "backend").rglob("*.json"))
    assert state_files, "the file backend holds the stack's state"
    for path in state_files:
        assert MARKER not in path.read_text(errors="replace"), f"{path} holds the secret in clear"
    exported = project.pulumi("stack", "export", stack=STACK)
    assert exported.returncode == 0 and MARKER not in exported.stdout
