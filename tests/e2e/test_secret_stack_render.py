"""The stack with secrets, rendered and checked end to end as a newcomer runs it: `render --check --strict` against a
conforming chart (the real Helm) in a fresh interpreter, from a copy of the project holding that stack file; the
secrets' paths through the program are tested in tests/test_secrets.py."""

from __future__ import annotations

from pathlib import Path

from project_copies import CIPHERTEXTS, ROOT, SECRET_STACK, project_with, render_in

P = "supersonic-interlink"


def test_a_stack_with_secrets_renders_and_passes_every_check_with_no_ciphertext_anywhere(tmp_path: Path) -> None:
    root = project_with(tmp_path, "secret-example", SECRET_STACK.read_text())
    out = tmp_path / "rendered"
    chart = ROOT / "tests" / "charts" / "conforming"

    checked = render_in(root, "secret-example", "--out", str(out), "--check", "--strict", "--chart", str(chart))
    summary = render_in(root, "secret-example")

    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert (
        "stack secret-example: check deferred: load metric selectors: serverLoad is a secret, whose text is not here "
        "offline; pulumi preview checks it"
    ) in checked.stdout, "the one check of the secret's own text is named, not counted as passed"
    assert (
        "stack secret-example: checks passed, except load metric selectors, which pulumi preview runs"
    ) in checked.stdout, "every other check ran: none was skipped"
    assert (
        f"secrets rendered as [secret]: {P}:serverLoad.metric, {P}:triton.podAnnotations.example.org/pull-token"
    ) in summary.stdout
    written = {path: path.read_text() for path in out.rglob("*.yaml")}
    scaled = written[out / "chart" / "ScaledObject.keda.sh" / "supersonic-interlink-keda-so.yaml"]
    triton = written[out / "chart" / "Deployment.apps" / "supersonic-interlink-triton.yaml"]
    assert "query: '[secret]'" in scaled, "the secret metric lands in the ScaledObject as its placeholder"
    assert "example.org/pull-token: '[secret]'" in triton, "and the secret annotation on the Triton pods"
    printed = checked.stdout + checked.stderr + summary.stdout + summary.stderr + "".join(written.values())
    assert not [c for c in CIPHERTEXTS if c in printed], "no ciphertext in any output or file"
