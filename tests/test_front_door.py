"""The front door's rough edges, tried as a new user tries them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cli_runner import run_cli

ROOT = Path(__file__).resolve().parent.parent


def cli(*args: str) -> subprocess.CompletedProcess:
    """A verb run in this process; the two tests above the help tests start the real interpreter."""
    return run_cli(*args, cwd=ROOT)


def test_the_program_run_as_a_plain_script_says_it_runs_under_pulumi_and_how_to_render() -> None:
    ran = subprocess.run([sys.executable, "__main__.py"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 1 and "Traceback" not in ran.stderr
    assert "the engine runs it" in ran.stderr and "./supersonic render hammer" in ran.stderr, ran.stderr


def test_a_report_cut_short_by_its_reader_ends_without_a_traceback() -> None:
    piped = subprocess.run(
        f"{sys.executable} -m supersonic_interlink probe report examples/wakes.jsonl --json | head -c 60",
        shell=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert len(piped.stdout) == 60 and piped.stderr == "", piped.stderr


def test_takeover_with_the_stack_forgotten_names_what_is_missing() -> None:
    forgot = cli("takeover", "steps")
    assert forgot.returncode == 2 and "the following arguments are required: STACK" in forgot.stderr
    assert forgot.stderr.startswith("usage: ./supersonic takeover steps"), forgot.stderr
    swapped = cli("takeover", "hammer", "steps")
    assert swapped.returncode == 2
    assert swapped.stderr == "takeover: the command comes first: ./supersonic takeover steps hammer\n"


def test_every_verb_answers_help_with_its_own_usage() -> None:
    from supersonic_interlink.cli.main import VERBS

    for verb in VERBS:
        helped = cli(verb, "--help")
        assert helped.returncode == 0, f"{verb}: {helped.stderr}"
        assert "usage" in helped.stdout.lower() or verb == "completion", f"{verb}: {helped.stdout[:200]}"
        assert "__main__.py" not in helped.stdout, f"{verb}: the usage names the front door, not a file"


def test_the_completion_script_completes_verbs_sub_verbs_flags_and_stacks(tmp_path: Path) -> None:
    script = tmp_path / "supersonic.bash"
    made = cli("completion", "bash")
    assert made.returncode == 0
    script.write_text(made.stdout)

    def complete(*words: str) -> list[str]:
        line = " ".join(f'"{w}"' for w in words)
        shell = f"source {script}; COMP_WORDS=(./supersonic {line}); COMP_CWORD={len(words)}; _supersonic; "
        shell += 'printf "%s\\n" "${COMPREPLY[@]}"'
        done = subprocess.run(["bash", "-c", shell], cwd=ROOT, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert complete("ren") == ["render"]
    assert complete("takeover", "")[:4] == ["steps", "values", "objects", "--help"]
    assert set(complete("takeover", "steps", "")) >= {"--live", "hammer", "geddes-gpu"}
    assert complete("state", "restore", "hammer", "--ver") == ["--version-id"]
    assert complete("pulumi", "preview", "hammer", "--d") == ["--diff"]
    zsh = cli("completion", "zsh")
    assert zsh.returncode == 0 and "bashcompinit" in zsh.stdout and made.stdout in zsh.stdout


def test_every_sub_verb_answers_help() -> None:
    from supersonic_interlink.cli.completion import words

    table = words()
    pairs = [(verb, sub) for verb, entries in table.items() for sub in entries if sub]
    assert ("takeover", "objects") in pairs and ("state", "restore") in pairs and ("toolchain", "build") in pairs
    for verb, sub in pairs:
        helped = cli(verb, sub, "--help")
        assert helped.returncode == 0 and "usage" in helped.stdout.lower(), f"{verb} {sub}: {helped.stderr}"


def test_an_empty_path_or_name_is_a_usage_error_naming_the_argument() -> None:
    for args, argument in [
        (("probe", "report", ""), "argument FILE: is empty"),
        (("probe", "report", "examples/wakes.jsonl", "--stack", ""), "argument --stack: is empty"),
        (("takeover", "values", "hammer", "--live", ""), "argument --live: is empty"),
        (
            ("takeover", "objects", "hammer", "--live", "x.yaml", "--live-object", ""),
            "argument --live-object: is empty",
        ),
        (("diff", "hammer", "--chart", ""), "argument --chart: is empty"),
        (("cluster", "status", "--dir", ""), "argument --dir: is empty"),
    ]:
        done = cli(*args)
        assert done.returncode == 2 and argument in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)


def test_every_verb_that_takes_a_stack_checks_its_name_by_the_pulumi_clis_rule() -> None:
    for args in (("pulumi", "preview"), ("drift",), ("render",), ("takeover", "steps"), ("diff",)):
        for bad in ("", "x" * 300, "a/b"):
            done = cli(*args, bad)
            assert done.returncode == 2 and "Traceback" not in done.stderr, (args, bad, done.stderr)
            assert "not a stack name" in done.stderr or "is empty" in done.stderr, (args, bad, done.stderr)
