"""The Helm post-renderer, run as Helm runs it: the executable the Release names, manifests on stdin."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from components.supersonic_release import POSTRENDER

ROOT = Path(__file__).resolve().parent.parent
EXECUTABLE = ROOT / POSTRENDER

DEPLOYMENT = """---
# Source: supersonic/templates/triton/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: supersonic-interlink-triton
  labels:  {app.kubernetes.io/component: triton}   # odd spacing must survive untouched
spec:
  template:
    spec:
      containers:
      - name: triton-server
        args: ["tritonserver --model-repository=/cvmfs"]
"""

SCALED_OBJECT = """---
# Source: supersonic/templates/keda/so.yaml
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: supersonic-interlink-keda-so
spec:
  scaleTargetRef:
    name: supersonic-interlink-triton
  minReplicaCount: 0
  triggers:
  - type: prometheus
    metadata:
      serverAddress: http://prometheus-server.cms.svc.cluster.local:9090
      threshold: "20"
  - type: cpu
    metadata:
      value: "80"
"""


def post_render(stream: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(EXECUTABLE)], input=stream, capture_output=True, text=True, timeout=30, cwd=ROOT)


def documents(stream: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(stream) if d]


def test_the_release_names_an_executable_that_exists_relative_to_the_project() -> None:
    assert not Path(POSTRENDER).is_absolute(), "an absolute path would differ per machine and show in every preview"
    assert EXECUTABLE.is_file() and EXECUTABLE.stat().st_mode & 0o111, "Helm needs an executable file"


def test_first_trigger_of_the_scaled_object_gets_the_timeout() -> None:
    result = post_render(DEPLOYMENT + SCALED_OBJECT)
    assert result.returncode == 0, result.stderr
    scaled = [d for d in documents(result.stdout) if d["kind"] == "ScaledObject"]
    assert len(scaled) == 1
    triggers = scaled[0]["spec"]["triggers"]
    assert triggers[0]["metadata"]["timeout"] == "60000", "KEDA's default 3 s query timeout reads as no load"
    assert triggers[0]["metadata"]["threshold"] == "20", "the rest of the trigger stays as the chart made it"
    assert "timeout" not in triggers[1]["metadata"], "only the first trigger is the Prometheus query"


def test_every_other_document_is_copied_byte_for_byte() -> None:
    result = post_render(DEPLOYMENT + SCALED_OBJECT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(DEPLOYMENT), "objects other than the ScaledObject must not be rewritten"
    assert "# Source: supersonic/templates/keda/so.yaml" in result.stdout, "Helm's source comment is kept"


def test_running_twice_changes_nothing_the_second_time() -> None:
    once = post_render(DEPLOYMENT + SCALED_OBJECT)
    twice = post_render(once.stdout)
    assert twice.returncode == 0, twice.stderr
    assert twice.stdout == once.stdout, "the post-renderer must be idempotent"


def test_a_release_without_a_scaled_object_passes_through_unchanged() -> None:
    result = post_render(DEPLOYMENT)
    assert result.returncode == 0, result.stderr
    assert result.stdout == DEPLOYMENT


def test_bad_yaml_stops_the_upgrade_with_a_message() -> None:
    result = post_render(DEPLOYMENT + "---\nkind: ScaledObject\nmetadata: {name: [unclosed\n")
    assert result.returncode != 0, "Helm must not deploy what it could not patch"
    assert "document 2 is not valid YAML" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_scaled_object_under_an_unexpected_name_is_an_error_not_a_silent_skip() -> None:
    renamed = SCALED_OBJECT.replace("supersonic-interlink-keda-so", "supersonic-interlink-inference-so")
    result = post_render(renamed)
    assert result.returncode != 0, "a chart rename must not ship a ScaledObject without the timeout"
    assert "contract.py" in result.stderr


def test_without_the_project_virtualenv_it_says_what_to_run(tmp_path: Path) -> None:
    copy = tmp_path / "postrender"
    copy.mkdir()
    for name in ("keda-trigger-timeout", "keda_trigger_timeout.py"):
        (copy / name).write_bytes((ROOT / "postrender" / name).read_bytes())
    (copy / "keda-trigger-timeout").chmod(0o755)
    result = subprocess.run(
        [str(copy / "keda-trigger-timeout")], input=SCALED_OBJECT, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 1, "a post-renderer that cannot run must stop the upgrade"
    assert "run 'pulumi install'" in result.stderr
