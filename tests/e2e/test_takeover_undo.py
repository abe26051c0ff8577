"""Step 4's undo as `takeover steps` prints it, against the real Pulumi CLI: the protected Release leaves the state.
The state is what the takeover's `pulumi up` leaves, by the URNs the steps print, imported into a file backend;
forgetting a resource needs no provider, so no cluster either."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from supersonic_interlink.config import PROJECT
from supersonic_interlink.config.pulumi_config import settings_from_config
from supersonic_interlink.config.stack_config import load_stack
from supersonic_interlink.engine import toolchain
from supersonic_interlink.takeover.steps import format_steps, names

pytestmark = pytest.mark.timeout(300)


def test_the_printed_state_delete_forgets_the_protected_release(tmp_path: Path) -> None:
    hammer = load_stack("hammer")
    settings = settings_from_config(hammer.config, hammer.secret_keys)
    printed = format_steps("hammer", settings).splitlines()
    command = next(line for line in printed if line.startswith("- pulumi state delete"))[2:].split("   (")[0]
    plan = names("hammer", settings)
    pulumi = toolchain.path("pulumi")
    env = {
        **os.environ,
        "PATH": f"{pulumi.parent}:/usr/bin:/bin",
        "PULUMI_HOME": str(tmp_path / "home"),
        "PULUMI_BACKEND_URL": f"file://{tmp_path / 'backend'}",
        "PULUMI_CONFIG_PASSPHRASE": "takeover-undo",
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
    }
    (tmp_path / "backend").mkdir()
    (tmp_path / "Pulumi.yaml").write_text(f"name: {PROJECT}\nruntime: python\n")

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    root = f"urn:pulumi:hammer::{PROJECT}::pulumi:pulumi:Stack::{PROJECT}-hammer"
    provider = f"urn:pulumi:hammer::{PROJECT}::pulumi:providers:kubernetes::default_4_25_0"
    provider_id = "0b5c1c0a-0000-4000-8000-000000000000"
    resources = [
        {"urn": root, "custom": False, "type": "pulumi:pulumi:Stack"},
        {"urn": provider, "custom": True, "id": provider_id, "type": "pulumi:providers:kubernetes"},
        {
            "urn": plan["component_urn"],
            "custom": False,
            "type": "supersonic-interlink:index:SupersonicRelease",
            "parent": root,
        },
        {
            "urn": plan["release_urn"],
            "custom": True,
            "id": plan["import_id"],
            "type": "kubernetes:helm.sh/v3:Release",
            "protect": True,
            "parent": plan["component_urn"],
            "provider": f"{provider}::{provider_id}",
        },
    ]
    state = {"version": 3, "deployment": {"manifest": {"time": "2026-12-03T00:00:00Z"}, "resources": resources}}
    (tmp_path / "state.json").write_text(json.dumps(state))
    assert run("pulumi", "stack", "init", "hammer", "--non-interactive").returncode == 0
    imported = run("pulumi", "stack", "import", "--file", "state.json", "--stack", "hammer", "--non-interactive")
    assert imported.returncode == 0, imported.stderr

    unforced = run(*[word for word in shlex.split(command) if word != "--force"])
    assert unforced.returncode != 0 and "protected" in unforced.stdout + unforced.stderr, (
        "without --force the CLI refuses: the undo would stop in the middle of a rollback"
    )
    forced = subprocess.run(["/bin/sh", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert forced.returncode == 0, forced.stdout + forced.stderr
    exported = json.loads(run("pulumi", "stack", "export", "--stack", "hammer").stdout)
    left = [r["urn"] for r in exported["deployment"]["resources"]]
    assert plan["release_urn"] not in left and plan["component_urn"] in left, left
