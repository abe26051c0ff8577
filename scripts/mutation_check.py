"""Does the unit suite notice when a rule or a derived number changes? One-line mutations of the production code,
each run against the tests that should catch it; a mutation the tests pass with has survived.

    .venv/bin/python scripts/mutation_check.py [--list FILE] [--only TEXT]

The mutations are in ``scripts/mutations.txt``, one block each:

    file: supersonic_interlink/config/envoy.py
    find: return settings.scaleFromZero.readyTimeoutSeconds + CHART.ready_timeout_margin_seconds
    into: return settings.scaleFromZero.holdMinReplicasSeconds + CHART.ready_timeout_margin_seconds
    tests: tests/test_derived_numbers.py
    why: the RepositoryIndex idle_timeout follows readyTimeoutSeconds

``find`` must occur exactly once in ``file`` (the check refuses a list that no longer fits the code). Every module
of the package that defines a function or class has a mutation, or a block saying why it holds no rule:

    file: supersonic_interlink/progress.py
    norule: prints when a long step starts and ends; nothing is decided

and a module with neither is named as a problem, so a new rule cannot arrive without its mutation. Each mutation
is applied to a copy of the tracked files in a temporary directory, never to the working tree, and its ``tests`` run
there with pytest (stopping at the first failure). Exit 0 when every mutation is killed, 1 when one survives, 2 when
the list is malformed.
"""

from __future__ import annotations

import argparse
import ast
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIST = ROOT / "scripts" / "mutations.txt"
PACKAGE = "supersonic_interlink"
FIELDS = ("file", "find", "into", "tests", "why")
NORULE = ("file", "norule")
TEST_TIMEOUT_SECONDS = 600


@dataclass(frozen=True)
class Mutation:
    file: str
    find: str
    into: str
    tests: tuple[str, ...]
    why: str
    line: int

    def name(self) -> str:
        return f"{self.file}: {self.why} (mutations.txt line {self.line})"


def parse(text: str, root: Path = ROOT, *, cover: bool = True) -> tuple[list[Mutation], list[str]]:
    """The mutations of a list file and every problem with it (a field missing, ``find`` not once in its file, a
    module of the package with neither a mutation nor a ``norule`` block)."""
    mutations: list[Mutation] = []
    problems: list[str] = []
    norules: dict[str, int] = {}
    block: dict[str, str] = {}
    start = 0

    def close() -> None:
        if not block:
            return
        if "norule" in block:
            if set(block) != set(NORULE) or not block["norule"]:
                problems.append(f"line {start}: a norule block holds file and norule only")
            elif not (root / block["file"]).is_file():
                problems.append(f"line {start}: {block['file']}: no such file")
            else:
                norules[block["file"]] = start
            return
        missing = [f for f in FIELDS if not block.get(f)]
        if missing:
            problems.append(f"line {start}: missing {', '.join(missing)}")
            return
        path = root / block["file"]
        count = path.read_text().count(block["find"]) if path.is_file() else -1
        if count != 1:
            problems.append(
                f"line {start}: {block['file']}: "
                + ("no such file" if count < 0 else f"`find` occurs {count} times, expected once")
            )
            return
        tests = tuple(block["tests"].split())
        absent = [t for t in tests if not (root / t.split("::")[0]).is_file()]
        if absent:
            problems.append(f"line {start}: no test file {', '.join(absent)}")
            return
        # pytest answers a node id it cannot find with an error exit, which would count as a kill.
        unknown = [
            t for t in tests if "::" in t and t.split("::")[-1].split("[")[0] not in defined(root / t.split("::")[0])
        ]
        if unknown:
            problems.append(f"line {start}: no such test {', '.join(unknown)}")
            return
        mutations.append(Mutation(block["file"], block["find"], block["into"], tests, block["why"], start))

    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            close()
            block = {}
            continue
        if raw.startswith("#"):
            continue
        key, sep, value = raw.partition(": ")
        if not sep or key not in FIELDS + NORULE:
            problems.append(f"line {number}: expected one of {', '.join(FIELDS + NORULE[1:])} then ': '")
            continue
        if not block:
            start = number
        block[key] = value
    close()
    return mutations, problems + (coverage(mutations, norules, root) if cover else [])


def defined(path: Path) -> set[str]:
    """The names of the functions and classes a test file defines."""
    tree = ast.parse(path.read_text())
    return {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def coverage(mutations: list[Mutation], norules: dict[str, int], root: Path) -> list[str]:
    """Each module that defines a function or class: mutated, or said to hold no rule, and not both."""
    mutated = {m.file for m in mutations}
    problems = [
        f"line {line}: {file} has a mutation and a norule block" for file, line in norules.items() if file in mutated
    ]
    for path in sorted((root / PACKAGE).rglob("*.py")):
        name = path.relative_to(root).as_posix()
        defines = any(
            isinstance(node, (ast.FunctionDef, ast.ClassDef)) for node in ast.walk(ast.parse(path.read_text()))
        )
        if defines and name not in mutated and name not in norules:
            problems.append(f"{name}: no mutation and no `norule:` block saying why it holds no rule")
    return problems


def tracked_copy(into: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, files):
        source = ROOT / name.decode()
        if source.is_file():
            target = into / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def killed(mutation: Mutation, copy: Path) -> tuple[bool, float]:
    """Apply ``mutation`` in ``copy``, run its tests, restore; (the tests failed, seconds taken)."""
    path = copy / mutation.file
    original = path.read_text()
    path.write_text(original.replace(mutation.find, mutation.into, 1))
    started = time.monotonic()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *mutation.tests],
            cwd=copy,
            capture_output=True,
            text=True,
            timeout=TEST_TIMEOUT_SECONDS,
            check=False,
        )
        # 4: a usage error (a test not found), 5: no test collected; neither is a test that noticed.
        failed = result.returncode not in (0, 4, 5)
    except subprocess.TimeoutExpired:
        failed = True  # a hang is noticed too
    finally:
        path.write_text(original)
    return failed, time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/mutation_check.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", type=Path, default=LIST, help="the mutation list (default scripts/mutations.txt)")
    parser.add_argument("--only", help="only mutations whose file or reason contains this text")
    args = parser.parse_args(argv)
    # A subset runs while other modules still lack a mutation; the whole list must cover every module.
    mutations, problems = parse(args.list.read_text(), cover=not args.only)
    for problem in problems:
        print(f"{args.list}: {problem}", file=sys.stderr)
    if problems:
        return 2
    if args.only:
        mutations = [m for m in mutations if args.only in m.file or args.only in m.why]
    survivors = []
    with tempfile.TemporaryDirectory(prefix="mutation-") as temp:
        copy = Path(temp)
        tracked_copy(copy)
        for number, mutation in enumerate(mutations, start=1):
            failed, seconds = killed(mutation, copy)
            verdict = "killed" if failed else "SURVIVED"
            print(f"[{number}/{len(mutations)}] {verdict} in {seconds:.0f} s: {mutation.name()}", flush=True)
            if not failed:
                survivors.append(mutation)
    print(f"{len(mutations) - len(survivors)} of {len(mutations)} mutations killed, {len(survivors)} survived")
    for mutation in survivors:
        print(f"  survived: {mutation.name()}: {mutation.find!r} -> {mutation.into!r}")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
