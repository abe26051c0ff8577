"""Does the unit suite notice when a rule or a derived number changes? One-line mutations of the production code,
each run against the tests that should catch it; a mutation the tests pass with has survived.

    .venv/bin/python scripts/mutation_check.py [--list FILE] [--only TEXT]

The mutations are in ``scripts/mutations.txt``, one block each:

    file: supersonic_interlink/config/envoy.py
    find: return settings.scaleFromZero.readyTimeoutSeconds + CHART.ready_timeout_margin_seconds
    into: return settings.scaleFromZero.holdMinReplicasSeconds + CHART.ready_timeout_margin_seconds
    tests: tests/test_derived_numbers.py
    why: the RepositoryIndex idle_timeout follows readyTimeoutSeconds

``find`` must occur exactly once in ``file`` (the check refuses a list that no longer fits the code). Each mutation
is applied to a copy of the tracked files in a temporary directory, never to the working tree, and its ``tests`` run
there with pytest (stopping at the first failure). Exit 0 when every mutation is killed, 1 when one survives, 2 when
the list is malformed.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIST = ROOT / "scripts" / "mutations.txt"
FIELDS = ("file", "find", "into", "tests", "why")
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


def parse(text: str, root: Path = ROOT) -> tuple[list[Mutation], list[str]]:
    """The mutations of a list file and every problem with it (a field missing, ``find`` not once in its file)."""
    mutations: list[Mutation] = []
    problems: list[str] = []
    block: dict[str, str] = {}
    start = 0

    def close() -> None:
        if not block:
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
        mutations.append(Mutation(block["file"], block["find"], block["into"], tests, block["why"], start))

    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            close()
            block = {}
            continue
        if raw.startswith("#"):
            continue
        key, sep, value = raw.partition(": ")
        if not sep or key not in FIELDS:
            problems.append(f"line {number}: expected one of {', '.join(FIELDS)} then ': '")
            continue
        if not block:
            start = number
        block[key] = value
    close()
    return mutations, problems


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
        failed = result.returncode != 0
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
    mutations, problems = parse(args.list.read_text())
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
