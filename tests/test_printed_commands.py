"""Every `./supersonic ...` command the project prints (README, docs/, stack comments, workflows, examples/, the
code's strings) runs as printed, in a copy of the project with nothing of .venv on PATH, when it needs nothing outside
this machine; otherwise (a cluster, the network, ``<stack>``) its ``--help`` form runs and takes every flag it names.
``test``, ``e2e`` and ``lint`` run in CI exactly as the README prints them."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from functools import cache
from itertools import takewhile
from pathlib import Path

import pytest
from cli_runner import run_cli, verb_words
from conftest import ROOT

from supersonic_interlink.cli.main import VERBS

PROSE = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "stacks").glob("*.yaml")),
    *sorted((ROOT / ".github" / "workflows").glob("*.yml")),
    *sorted((ROOT / "examples").glob("*.md")),
    ROOT / "Pulumi.yaml",
    ROOT / "supersonic",
]
CODE = sorted((ROOT / "supersonic_interlink").rglob("*.py"))
_START = re.compile(r"(?:\.\./|\./)supersonic((?: [^ \n`'\"]+)*)")
_STOP = (">", ">>", "|", "&&", ";", "||", "2>&1")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_COMMAND_LINE = re.compile(r"^[ \t]*(?:#[ \t]*|-[ \t]+|run:[ \t]*)?((?:\.\./|\./)supersonic .*)$", re.MULTILINE)
_MODULE_RUN = re.compile(r"(\S*)python3? -m (supersonic_interlink(?:\.\w+)+)")
_CODE_PATH = re.compile(r"`([\w/.-]+\.(?:py|sh))`")
EXAMPLES = ROOT / "examples"
STACKS = {p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml")}
STACK_FIRST = {"render", "probe", "takeover", "pulumi", "drift", "diff"}  # the first positional after any sub-verb
FRONT_DOOR_ONLY = ("test", "e2e", "lint")  # verbs ``./supersonic`` runs itself
NEEDS_OUTSIDE = {"--pin-chart", "--fetch-chart", "--live", "--from-cluster", "--record", "--endpoint"}
_words = cache(verb_words)


def _commands_in(text: str) -> list[tuple[str, ...]]:
    """Commands in one piece of text that is a command or holds commands: a line, a code span, a code block."""
    found = []
    for match in _START.finditer(text):
        ended = takewhile(lambda w: w and w not in _STOP and not w.startswith("#"), match.group(1).split(" ")[1:])
        words = [word.rstrip(".,:)") for word in ended]
        # Prose that names the front door without a command ("./supersonic <verb>", "for ./supersonic (...)").
        if words and re.fullmatch(r"[a-z][a-z0-9-]*|--help|-h", words[0]):
            found.append(tuple(words))
    return found


def _command_texts(text: str) -> list[str]:
    """Code spans, fenced blocks, and lines (or comment lines) that start with a command; not running prose."""
    return [*_CODE_SPAN.findall(text), *_FENCE.findall(text), *_COMMAND_LINE.findall(text)]


def _strings(path: Path) -> list[str]:
    """String literals of a module; in an f-string each replacement field reads ``{x}``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            out.append("".join(str(v.value) if isinstance(v, ast.Constant) else "{x}" for v in node.values))
    return out


def printed() -> dict[tuple[str, ...], str]:
    """Each distinct command, with one place it is printed."""
    texts = [(path, text) for path in PROSE for text in _command_texts(path.read_text())]
    for path in CODE:
        for string in _strings(path):
            texts += [(path, t) for t in ([string] if string.startswith("./supersonic") else _command_texts(string))]
    commands: dict[tuple[str, ...], str] = {}
    for path, text in texts:
        for command in _commands_in(text):
            commands.setdefault(command, str(path.relative_to(ROOT)))
    return commands


def _placeholder(word: str) -> bool:
    return bool(re.search(r"[<>\[\]{}$]|\.\.\.|^[A-Z][A-Z_:]*$", word)) or "|" in word


def runs_as_printed(words: tuple[str, ...]) -> bool:
    verb = words[0]
    if any(_placeholder(w) for w in words) or (NEEDS_OUTSIDE & set(words) and verb != "takeover"):
        return False
    if "--help" in words:
        return len(words) > 1
    if verb == "render":
        return len(words) > 1 and words[1] in STACKS and not NEEDS_OUTSIDE & set(words)
    if verb == "takeover":
        files = [w for w in words if w.endswith((".yaml", ".yml"))]
        runnable = (words[1:2] == ("steps",) and "--live" not in words) or words[1:2] == ("values",)
        return runnable and len(words) > 2 and words[2] in STACKS and all((EXAMPLES / f).is_file() for f in files)
    if verb == "cluster":  # read-only: says whether the local control plane runs, and its environment if it does
        return words[1:] in (("status",), ("env",))
    if verb == "probe":
        return words[1:2] == ("report",) and (EXAMPLES / words[2]).is_file() if len(words) > 2 else False
    return False


def _git_files(*options: str) -> list[str]:
    listed = subprocess.run(["git", "ls-files", *options], cwd=ROOT, capture_output=True, text=True, check=True)
    return listed.stdout.splitlines()


@pytest.fixture(scope="module")
def project_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("printed") / "project"
    for name in _git_files("--cached", "--others", "--exclude-standard"):
        if (ROOT / name).is_file() and not name.startswith("tests/"):
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, root / name)
    return root


COMMANDS = printed()


def test_the_collection_finds_the_commands_the_readme_starts_with() -> None:
    assert ("render", "hammer", "--out", "rendered/hammer", "--check") in COMMANDS
    assert ("test",) in COMMANDS
    assert len(COMMANDS) > 40, sorted(COMMANDS)


@pytest.mark.parametrize("words", sorted(COMMANDS), ids=lambda w: " ".join(w)[:80])
def test_a_printed_command_runs(words: tuple[str, ...], project_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    where = COMMANDS[words]
    verb = words[0]
    if verb in FRONT_DOOR_ONLY:
        assert f"  {verb})" in (ROOT / "supersonic").read_text() or f"|{verb}" in (ROOT / "supersonic").read_text()
        assert all(not w.startswith("-") or w in ("-k", "-q", "-x") for w in words[1:]), f"{where}: {words}"
        return
    if verb.startswith("-"):
        assert words[0] in ("--help", "-h"), f"{where}: {words}"
        return
    assert verb in VERBS, f"{where}: ./supersonic {' '.join(words)}: no verb {verb!r}"
    # In this process (cli_runner), with the PATH a newcomer's shell has: nothing of .venv on it.
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    if runs_as_printed(words):
        cwd = project_copy / "examples" if any((EXAMPLES / w).is_file() for w in words) else project_copy
        ran = run_cli(*words, cwd=cwd)
        # 0: it did what the text says. Only `cluster status|env` may answer 1 ("not running") on this machine.
        allowed = (0, 1) if verb == "cluster" else (0,)
        assert ran.returncode in allowed and "Traceback" not in ran.stderr, f"{where}: {words}\n{ran.stderr}"
        return
    subs = [key for key in _words()[verb] if key]
    sub = next((w for w in words[1:] if w in subs), None)
    code, err = _help_form(project_copy, verb, sub)
    assert code == 0, f"{where}: {words}\n{err}"
    taken = set(_words()[verb][sub] if sub else _words()[verb][""])
    for flag in (w.split("=")[0] for w in words if w.startswith("--")):
        assert flag in taken, f"{where}: ./supersonic {' '.join(words)}: {flag} is not an option of {verb} {sub or ''}"
    # The stack a command names must be one of this project's (it comes first, or after the sub-verb).
    positional = [w for w in words[1:] if not w.startswith("-") and w != sub]
    if verb in STACK_FIRST and positional and not _placeholder(positional[0]) and sub != "report":
        assert positional[0] in STACKS, f"{where}: ./supersonic {' '.join(words)}: no stack {positional[0]!r}"


@cache
def _help_form(project: Path, verb: str, sub: str | None) -> tuple[int, str]:
    """``./supersonic <verb> [<sub>] --help`` run once per worker, in this process: (exit code, stderr)."""
    helped = run_cli(verb, *([sub] if sub else []), "--help", cwd=project)
    return helped.returncode, helped.stderr


def test_a_module_printed_in_the_docs_runs_without_an_activated_venv() -> None:
    loose = [
        f"{path.name}: {match.group(0)}"
        for path in PROSE
        for match in _MODULE_RUN.finditer(path.read_text())
        if not match.group(1).endswith(".venv/bin/")
    ]
    assert loose == [], "outside .venv `python -m` has none of the project's requirements: print .venv/bin/python"
    done = subprocess.run(
        [".venv/bin/python", "-m", "supersonic_interlink.config.schema"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def _ours(name: str) -> bool:
    """A bare file name, or a path under one of the project's directories (not the chart's ``cfg/``, say)."""
    first = name.split("/", maxsplit=1)[0]
    return "/" not in name or (ROOT / first).is_dir() or (ROOT / "supersonic_interlink" / first).is_dir()


def test_every_file_the_docs_name_exists() -> None:
    # A name the docs give with or without its directories.
    files = [f"/{name}" for name in _git_files()]
    missing = [
        f"{path.name}: {name}"
        for path in PROSE
        for name in _CODE_PATH.findall(path.read_text())
        if _ours(name) and not any(file.endswith(f"/{name}") for file in files)
    ]
    assert missing == [], "a file the docs point a reader to must be there"
