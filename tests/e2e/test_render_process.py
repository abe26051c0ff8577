"""render as its own process, many times over: what only shows at an interpreter's exit, under load, or with another
hash seed.

Here and not in the unit tier because it starts a dozen interpreters that each import Pulumi's SDKs (half a minute of
CPU); the unit tier runs the verb in-process (tests/cli_runner.py)."""

from __future__ import annotations

import concurrent.futures
import hashlib
import subprocess
from pathlib import Path

from e2e_harness import run_supersonic


def test_repeated_renders_under_load_exit_with_an_empty_stderr() -> None:
    """12 renders, two at a time: an event loop left open printed `Exception ignored ... Invalid file descriptor:
    -1` at exit in about one run of six under load, with exit code 0."""
    runs = 12

    def one(_: int) -> subprocess.CompletedProcess:
        return run_supersonic("render", "hammer")

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(one, range(runs)))
    noisy = [r.stderr for r in results if r.stderr]
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results if r.returncode]
    assert noisy == [], f"{len(noisy)} of {runs} renders wrote to stderr; the first:\n{noisy[0] if noisy else ''}"


def test_render_gives_python_no_unclosed_event_loop_to_warn_about() -> None:
    """ResourceWarning names the cause deterministically, where the stray exit message shows only now and then."""
    result = run_supersonic("render", "hammer", env={"PYTHONWARNINGS": "always::ResourceWarning"})
    assert result.returncode == 0, result.stderr
    assert "stack hammer: release" in result.stdout, "the render itself ran"
    assert result.stderr == "", f"render must exit without resource warnings:\n{result.stderr}"


def test_rendering_is_byte_identical_across_interpreters(tmp_path: Path) -> None:
    """Two processes with different hash seeds: nothing may depend on set or dict iteration order."""
    digests = []
    for seed in ("1", "2"):
        out = tmp_path / seed
        result = run_supersonic("render", "hammer", "--out", str(out), env={"PYTHONHASHSEED": seed})
        assert result.returncode == 0, result.stderr
        digests.append({path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(out.iterdir())})
    assert len(digests[0]) == 3 and digests[0] == digests[1]


def test_an_out_path_the_terminal_encoding_cannot_show_is_printed_escaped(tmp_path: Path) -> None:
    """PYTHONIOENCODING=ascii and a non-ASCII --out: the files are written and the path printed escaped, where
    stdout's strict encoding gave a UnicodeEncodeError traceback after the first file."""
    out = tmp_path / "ümlaut"
    result = run_supersonic("render", "hammer", "--out", str(out), env={"PYTHONIOENCODING": "ascii"})
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert f"wrote {tmp_path}/\\xfcmlaut/manifests.yaml" in result.stdout, result.stdout
    assert sorted(path.name for path in out.iterdir()) == ["envoy.yaml", "manifests.yaml", "release.yaml"]
