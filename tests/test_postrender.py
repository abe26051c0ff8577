"""The Helm post-renderer: the executable run as Helm runs it, and its ``main()`` run in this process."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from supersonic_interlink import postrender
from supersonic_interlink.components.supersonic_release import POSTRENDER

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


def run_executable(stream: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(EXECUTABLE)], input=stream, capture_output=True, text=True, timeout=30, cwd=ROOT)


def post_render(stream: str | bytes) -> subprocess.CompletedProcess:
    """``main()`` in this process, ``stream`` on its stdin: the exit code, stdout and stderr the executable gives."""
    data = stream if isinstance(stream, bytes) else stream.encode()
    stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    stderr = io.StringIO()
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    try:
        code = postrender.main()
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    stdout.flush()
    return subprocess.CompletedProcess([str(EXECUTABLE)], code, stdout.buffer.getvalue().decode(), stderr.getvalue())


def documents(stream: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(stream) if d]


def test_the_release_names_an_executable_relative_to_the_project_that_parses_with_libyaml() -> None:
    assert not Path(POSTRENDER).is_absolute(), "an absolute path would differ per machine and show in every preview"
    assert EXECUTABLE.is_file() and EXECUTABLE.stat().st_mode & 0o111, "Helm needs an executable file"
    assert postrender.LOADER is yaml.CSafeLoader and postrender.DUMPER is yaml.CSafeDumper, (
        "the pure-Python parser took minutes on a large release (benchmarks/postrender_throughput.py)"
    )


def test_the_first_trigger_gets_the_timeout_every_other_document_is_copied_and_running_twice_changes_nothing() -> None:
    result = run_executable(DEPLOYMENT + SCALED_OBJECT)
    assert result.returncode == 0, result.stderr
    (scaled,) = [d for d in documents(result.stdout) if d["kind"] == "ScaledObject"]
    triggers = scaled["spec"]["triggers"]
    assert triggers[0]["metadata"]["timeout"] == "60000", "KEDA's default 3 s query timeout reads as no load"
    assert triggers[0]["metadata"]["threshold"] == "20", "the rest of the trigger stays as the chart made it"
    assert "timeout" not in triggers[1]["metadata"], "only the first trigger is the Prometheus query"
    once = post_render(DEPLOYMENT + SCALED_OBJECT)
    assert (once.returncode, once.stdout) == (0, result.stdout), "main() in this process is the executable Helm runs"
    assert once.stdout.startswith(DEPLOYMENT), "objects other than the ScaledObject must not be rewritten"
    assert "# Source: supersonic/templates/keda/so.yaml" in once.stdout, "Helm's source comment is kept"
    twice = post_render(once.stdout)
    assert (twice.returncode, twice.stdout) == (0, once.stdout), "the post-renderer must be idempotent"
    alone = post_render(DEPLOYMENT)
    assert alone.returncode == 0 and alone.stdout == DEPLOYMENT, "a release without a ScaledObject passes through"


def test_without_the_project_virtualenv_it_says_what_to_run(tmp_path: Path) -> None:
    copy = tmp_path / "postrender" / EXECUTABLE.name
    copy.parent.mkdir()
    copy.write_bytes(EXECUTABLE.read_bytes())
    copy.chmod(0o755)
    result = subprocess.run([str(copy)], input=SCALED_OBJECT, capture_output=True, text=True, timeout=30)
    assert result.returncode == 1, "a post-renderer that cannot run must stop the upgrade"
    assert "run 'pulumi install'" in result.stderr


def assert_one_line_error(result: subprocess.CompletedProcess, *phrases: str) -> None:
    assert result.returncode != 0, "Helm must not deploy what the post-renderer could not patch"
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("keda-trigger-timeout post-renderer: "), result.stderr
    for phrase in phrases:
        assert phrase in lines[0], f"{phrase!r} missing from {lines[0]!r}"
    assert result.stdout == "", "nothing half-patched reaches Helm"


MALFORMED = {
    # A chart rename must not ship a ScaledObject without the timeout.
    "renamed": (
        SCALED_OBJECT.replace("supersonic-interlink-keda-so", "supersonic-interlink-inference-so"),
        "which does not end in -keda-so: the chart's naming changed; update supersonic_interlink/contract.py",
    ),
    "metadata null": (
        SCALED_OBJECT.replace("metadata:\n  name: supersonic-interlink-keda-so\n", "metadata: null\n"),
        "document 2 (supersonic/templates/keda/so.yaml), ScaledObject: metadata is null; expected a mapping",
    ),
    "triggers a mapping": (
        SCALED_OBJECT.partition("  triggers:\n")[0] + "  triggers:\n    type: prometheus\n",
        "ScaledObject 'supersonic-interlink-keda-so': spec.triggers is a mapping; expected a list of triggers",
    ),
    "first trigger a string": (
        SCALED_OBJECT.partition("  triggers:\n")[0] + "  triggers:\n  - prometheus\n",
        "spec.triggers[0] is 'prometheus'; expected a mapping",
    ),
    "no spec": (
        SCALED_OBJECT.partition("spec:\n")[0],
        "ScaledObject 'supersonic-interlink-keda-so': spec is missing; expected a mapping",
    ),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_scaled_object_is_one_line_naming_the_document_and_the_field(case: str) -> None:
    scaled_object, message = MALFORMED[case]
    assert scaled_object != SCALED_OBJECT, "the case really changes the object"
    assert_one_line_error(post_render(DEPLOYMENT + scaled_object), message)


def as_list(*objects: str) -> str:
    """Objects as the items of a ``kind: List`` document, as a chart template can render them."""
    items = [yaml.safe_load(o) for o in objects]
    return "---\n# Source: supersonic/templates/all.yaml\n" + yaml.safe_dump(
        {"apiVersion": "v1", "kind": "List", "items": items}, sort_keys=False
    )


def test_a_scaled_object_inside_a_list_is_patched_there() -> None:
    result = post_render(DEPLOYMENT + as_list(DEPLOYMENT, SCALED_OBJECT))
    assert result.returncode == 0, result.stderr
    (_, listed) = documents(result.stdout)
    assert listed["kind"] == "List" and [i["kind"] for i in listed["items"]] == ["Deployment", "ScaledObject"]
    assert listed["items"][1]["spec"]["triggers"][0]["metadata"]["timeout"] == "60000", (
        "Kubernetes deploys each item of a list: an unpatched ScaledObject there would ship without the timeout"
    )
    assert listed["items"][0] == yaml.safe_load(DEPLOYMENT), "the other item is left as it was"
    assert result.stdout.startswith(DEPLOYMENT), "documents outside the list are copied byte for byte"
    assert post_render(result.stdout).stdout == result.stdout, "idempotent inside lists too"


def test_a_malformed_scaled_object_inside_a_list_names_the_item() -> None:
    broken = SCALED_OBJECT.partition("spec:\n")[0] + "spec:\n- 1\n"
    listed = "document 1 (supersonic/templates/all.yaml), items[1], ScaledObject"
    assert_one_line_error(post_render(as_list(DEPLOYMENT, broken)), listed, "spec is a list")


def crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def test_crlf_input_is_patched_and_every_other_document_keeps_its_bytes() -> None:
    result = post_render(crlf(DEPLOYMENT + SCALED_OBJECT))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith(crlf(DEPLOYMENT)), "the Deployment comes out byte for byte, CRLF and all"
    patched = out[len(crlf(DEPLOYMENT)) :]
    assert patched.startswith("---\r\n# Source: supersonic/templates/keda/so.yaml\r\n"), "header kept as it came"
    assert "\n" not in patched.replace("\r\n", ""), "the rewritten document keeps CRLF: no mixed line endings"
    (scaled,) = [d for d in documents(out) if d["kind"] == "ScaledObject"]
    assert scaled["spec"]["triggers"][0]["metadata"]["timeout"] == "60000"
    assert post_render(out).stdout == out, "idempotent on CRLF input"


@pytest.mark.parametrize(
    "scaled_object",
    [
        # Documents without the word ScaledObject are copied unparsed; an escape could spell it without the word.
        SCALED_OBJECT.replace("kind: ScaledObject", 'kind: "Scaled\\x4Fbject"'),
        "--- " + json.dumps(yaml.safe_load(SCALED_OBJECT)) + "\n",
    ],
    ids=["kind-spelled-with-an-escape", "document-marker-with-content-on-its-line"],
)
def test_a_scaled_object_however_spelled_is_found_and_patched(scaled_object: str) -> None:
    result = post_render(DEPLOYMENT + scaled_object)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(DEPLOYMENT + "---\n"), "the rewritten document gets a bare separator"
    (scaled,) = [d for d in documents(result.stdout) if d["kind"] == "ScaledObject"]
    assert scaled["spec"]["triggers"][0]["metadata"]["timeout"] == "60000"


@pytest.mark.parametrize(
    ("stream", "message"),
    [
        (DEPLOYMENT.encode() + b"\xff\xfe", f"the rendered manifests are not UTF-8 (byte {len(DEPLOYMENT.encode())})"),
        (
            "kind: ConfigMap\n...\n" + SCALED_OBJECT.removeprefix("---\n"),
            "document 1 is not valid YAML: did not find expected <document start>",
        ),
        (DEPLOYMENT + "---\nkind: ScaledObject\nmetadata: {name: [unclosed\n", "document 2 is not valid YAML"),
    ],
    ids=["not-utf8", "document-after-an-end-marker", "bad-yaml"],
)
def test_a_stream_that_cannot_be_read_is_one_line(stream: str | bytes, message: str) -> None:
    assert_one_line_error(post_render(stream), message)
