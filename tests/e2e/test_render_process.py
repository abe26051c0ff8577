"""render as its own process, many times over: what only shows at an interpreter's exit, under load, or with another
hash seed (a dozen interpreters importing Pulumi's SDKs, too slow for the unit tier, which runs it in-process)."""

from __future__ import annotations

import concurrent.futures
import hashlib
import subprocess
from pathlib import Path

from e2e_harness import run_supersonic


def test_repeated_renders_under_load_exit_with_an_empty_stderr_and_no_resource_warning() -> None:
    """12 renders, two at a time: an open event loop printed `Exception ignored ... Invalid file descriptor: -1` at
    exit in about one run of six under load; ResourceWarning names that cause in every run."""
    runs = 12

    def one(_: int) -> subprocess.CompletedProcess:
        return run_supersonic("render", "hammer", env={"PYTHONWARNINGS": "always::ResourceWarning"})

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(one, range(runs)))
    noisy = [r.stderr for r in results if r.stderr]
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results if r.returncode]
    assert all("stack hammer: release" in r.stdout for r in results), "the render itself ran"
    assert noisy == [], f"{len(noisy)} of {runs} renders wrote to stderr; the first:\n{noisy[0] if noisy else ''}"


def test_rendering_is_byte_identical_across_interpreters_and_an_unshowable_out_path_is_printed_escaped(
    tmp_path: Path,
) -> None:
    """Different hash seeds: nothing may depend on set or dict iteration order. PYTHONIOENCODING=ascii and a
    non-ASCII --out: stdout's strict encoding gave a UnicodeEncodeError traceback after the first file."""
    digests = []
    for seed, out, env in (("1", tmp_path / "1", {}), ("2", tmp_path / "ümlaut", {"PYTHONIOENCODING": "ascii"})):
        result = run_supersonic("render", "hammer", "--out", str(out), env={"PYTHONHASHSEED": seed, **env})
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
        digests.append({path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(out.iterdir())})
    assert f"wrote {tmp_path}/\\xfcmlaut/manifests.yaml" in result.stdout, result.stdout
    assert sorted(digests[0]) == ["envoy.yaml", "manifests.yaml", "release.yaml"] and digests[0] == digests[1]
