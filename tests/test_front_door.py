"""The front door's rough edges, tried as a new user tries them."""

from __future__ import annotations

import re
import subprocess
import sys

from cli_runner import run_cli, verb_words
from conftest import ROOT

from supersonic_interlink.cli.main import VERBS


def cli(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=ROOT)


def test_the_program_run_as_a_plain_script_says_it_runs_under_pulumi_and_how_to_render() -> None:
    ran = subprocess.run([sys.executable, "__main__.py"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 1 and "Traceback" not in ran.stderr
    assert "the engine runs it" in ran.stderr and "./supersonic render hammer" in ran.stderr, ran.stderr


def test_a_report_cut_short_by_its_reader_ends_without_a_traceback() -> None:
    command = f"{sys.executable} -m supersonic_interlink probe report examples/wakes.jsonl --json | head -c 60"
    piped = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert len(piped.stdout) == 60 and piped.stderr == "", piped.stderr


def test_an_unknown_verb_is_one_line_naming_the_verbs_with_exit_code_2() -> None:
    for verb in ("nope", "test", "--help"):
        done = cli(verb)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith(f"supersonic: no verb {verb!r}; verbs: render, diff, stack,"), done.stderr


def test_every_verb_and_sub_verb_answers_help_with_its_own_usage_and_a_usage_error_in_one_line_exit_2() -> None:
    pairs = [(verb, sub) for verb, entries in verb_words().items() if verb in VERBS for sub in entries]
    assert {verb for verb, _ in pairs} == set(VERBS)
    assert {("takeover", "objects"), ("state", "check"), ("toolchain", "build"), ("probe", "report")} <= set(pairs)
    for verb, sub in pairs:
        helped = cli(verb, *([sub] if sub else []), "--help")
        assert helped.returncode == 0 and "usage" in helped.stdout.lower(), f"{verb} {sub}: {helped.stderr}"
        assert "__main__.py" not in helped.stdout, f"{verb}: the usage names the front door, not a file"
        done = cli(verb, *([sub] if sub else []), "--no-such-option")
        assert done.returncode == 2 and done.stdout == "", (verb, sub, done.stdout)
        assert len(done.stderr.splitlines()) == 1, (verb, sub, done.stderr)
        said = re.fullmatch(rf"{verb}( {sub})?: .* \(see `./supersonic {verb}( {sub})? --help`\)\n", done.stderr)
        assert said, (verb, sub, done.stderr)


def test_an_empty_path_or_name_is_a_usage_error_naming_the_argument() -> None:
    for args, argument in [
        (("probe", "report", ""), "argument FILE: is empty"),
        (("takeover", "objects", "hammer", "--live", "x", "--live-object", ""), "argument --live-object: is empty"),
        (("cluster", "status", "--dir", ""), "argument --dir: is empty"),
    ]:
        done = cli(*args)
        assert done.returncode == 2 and argument in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)
