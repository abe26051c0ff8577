"""The stack-file reader against the real Pulumi CLI (``pulumi config --json --show-secrets``, offline, private
``PULUMI_HOME``, file backend) over every stack in ``stacks/`` and every file in ``tests/fixtures/config/``: what the
reader accepts, the CLI lists key for key and value for value as the program receives it (``cli_config``); what it
refuses, the CLI refuses too or reads differently from a YAML 1.1 reader (``REFUSED``); ``SHAPE``: what the CLI does
with a file the stack checks refuse."""

from __future__ import annotations

import datetime
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError as RuamelError

from supersonic_interlink.config import ConfigError
from supersonic_interlink.config.pulumi_yaml import YAMLInputError, read_pulumi_yaml
from supersonic_interlink.config.stack_config import cli_config, read_stack_document
from supersonic_interlink.engine import toolchain
from supersonic_interlink.engine.cluster import pulumi_env

pytestmark = pytest.mark.timeout(600)

ROOT = Path(__file__).resolve().parents[2]
STACKS = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))
FIXTURES = sorted((ROOT / "tests" / "fixtures" / "config").glob("*.yaml"))
STACK = "agreement"

# File the reader refuses -> what the CLI does with it:
# "refuses": the CLI exits non-zero;
# "yaml11": the CLI lists a config that a YAML 1.1 reader (PyYAML) does not make of the file, or PyYAML refuses it;
# "yaml12": PyYAML agrees with the CLI, a YAML 1.2 reader (ruamel.yaml) does not, or refuses the file;
# "alike": both agree with the CLI here; refused all the same (the YAML 1.2 spec has no merge key, so a conforming
#          1.2 reader gives a key named '<<'; ruamel.yaml merges like 1.1).
REFUSED = {
    "alias-bomb": "refuses",  # yaml.v3's alias ratio: excessive aliasing
    "alias-key-overrides": "yaml12",  # the CLI and PyYAML keep the later value; ruamel.yaml refuses the duplicate
    "binary-not-text": "yaml11",  # PyYAML: bytes; the CLI: text with the byte replaced
    "date-as-number": "yaml11",  # the CLI: "2024-01-01 00:00:00 +0000 UTC"; PyYAML: a date
    "date-key": "yaml11",  # the CLI: key "2024-01-01 00:00:00 +0000 UTC"; PyYAML: a date
    "duplicate-key": "refuses",  # yaml.v3: mapping key already defined
    "enabled-yes": "yaml11",  # the CLI: "yes"; PyYAML: true
    "exponent-without-point": "yaml11",  # the CLI: 1e20, a number; PyYAML: text
    "local-tag": "yaml11",  # the CLI drops the tag; PyYAML refuses a tag it does not know
    "merge-key-inline": "alike",
    "merged-maps-overlap": "alike",
    "not-finite": "refuses",  # json: unsupported value +Inf
    "not-utf8": "refuses",
    "number-key": "yaml11",  # the CLI: key "1"; PyYAML: 1.0
    "octal-0o": "yaml11",  # the CLI: 3; PyYAML: text
    "past-64-bits": "yaml11",  # the CLI rounds it in an object (9223372036854776000); PyYAML: the exact integer
    "ready-timeout-leading-zero": "yaml12",  # the CLI and PyYAML: octal 384; ruamel.yaml (1.2): 600
    "second-document": "yaml11",  # the CLI reads the first document; PyYAML's safe_load refuses a second
}

# File the reader reads but the stack checks refuse -> what the CLI does: "refuses", or "reads" (it lists a config).
SHAPE = {
    "config-a-list": "refuses",
    "key-set-twice": "reads",
    "stack-file-key-typo": "reads",
    "top-level-list": "refuses",
    "top-level-scalar": "refuses",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    directory = tmp_path_factory.mktemp("agreement")
    (directory / "stacks").mkdir()
    (directory / "backend").mkdir()
    (directory / "Pulumi.yaml").write_bytes((ROOT / "Pulumi.yaml").read_bytes())
    env = {
        "PATH": "/usr/bin:/bin",
        **pulumi_env(directory / "home", f"file://{directory / 'backend'}", "config-agreement-only"),
    }
    toolchain.ensure(["pulumi"])
    created = cli(directory, env, "stack", "init", STACK)
    assert created.returncode == 0, created.stderr
    yield directory, env


def cli(directory: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(toolchain.path("pulumi")), *args, "--non-interactive"]
    return subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, timeout=120, check=False)


def cli_config_of(project: tuple[Path, dict[str, str]], file: Path) -> subprocess.CompletedProcess[str]:
    """``pulumi config --json --show-secrets`` with ``file`` as the stack's file, byte for byte."""
    directory, env = project
    (directory / "stacks" / f"Pulumi.{STACK}.yaml").write_bytes(file.read_bytes())
    return cli(directory, env, "config", "--json", "--show-secrets", "--stack", STACK)


def canonical(texts: dict[str, str]) -> dict[str, str]:
    """Config as the program receives it (text per key), with JSON objects and lists compared as values: the CLI
    and Python format JSON differently. Type-strict: 1, 1.0 and true stay apart."""

    def one(text: str) -> str:
        try:
            value = json.loads(text)
        except ValueError:
            return "text:" + text
        return "json:" + json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else "text:" + text

    return {key: one(text) for key, text in texts.items()}


def other_reader(file: Path, load: Callable[[bytes], Any]) -> dict[str, str] | None:
    """The config another YAML reader makes of the file, merged as the CLI merges; None if it refuses the file."""

    def text(key: Any) -> str:  # a key that is not text: the text Python's json gives it (a date: its ISO text)
        return key if isinstance(key, str) else str(key) if isinstance(key, datetime.date) else json.dumps(key)

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {text(k): plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return str(value) if isinstance(value, (datetime.date, bytes)) else value

    try:
        document = load(file.read_bytes())
        return canonical(cli_config(plain((document or {}).get("config") or {})))
    except (yaml.YAMLError, RuamelError, ConfigError, AttributeError):  # AttributeError: no mapping at the top
        return None


def what_the_cli_does(file: Path, listed: subprocess.CompletedProcess[str]) -> str:
    if listed.returncode != 0:
        return "refuses"
    cli_view = canonical({key: entry["value"] for key, entry in json.loads(listed.stdout).items()})
    if other_reader(file, yaml.safe_load) != cli_view:
        return "yaml11"
    return "yaml12" if other_reader(file, YAML(typ="safe", pure=True).load) != cli_view else "alike"


def reader_view(file: Path) -> dict[str, str] | str:
    """The config the program receives from the file, or "refused" (by the reader) or "shape" (by the stack checks)."""
    try:
        read_pulumi_yaml(file.read_bytes())
    except YAMLInputError:
        return "refused"
    try:
        return cli_config(read_stack_document(file))
    except ConfigError:
        return "shape"


@pytest.mark.parametrize("file", STACKS + FIXTURES, ids=[f.stem for f in STACKS + FIXTURES])
def test_the_cli_lists_what_the_reader_reads_and_refuses_or_misreads_what_it_refuses(
    project: tuple[Path, dict[str, str]], file: Path
) -> None:
    listed = cli_config_of(project, file)
    texts = reader_view(file)
    if texts == "refused":
        assert what_the_cli_does(file, listed) == REFUSED[file.stem], listed.stderr
        return
    assert file.stem not in REFUSED, f"{file.name}: the reader accepts it now"
    if isinstance(texts, str):  # "shape": the stack checks refuse it
        assert ("refuses" if listed.returncode != 0 else "reads") == SHAPE[file.stem], listed.stderr
        return
    assert listed.returncode == 0, f"{file.name}: the reader reads it, the CLI refuses it: {listed.stderr}"
    entries = json.loads(listed.stdout)
    assert not any(entry["secret"] for entry in entries.values())
    assert canonical(texts) == canonical({key: entry["value"] for key, entry in entries.items()}), file.name


def test_every_refused_and_shape_file_is_listed() -> None:
    views = {file.stem: reader_view(file) for file in FIXTURES}
    assert {stem for stem, view in views.items() if view == "refused"} == set(REFUSED)
    assert {stem for stem, view in views.items() if view == "shape"} == set(SHAPE)


def test_each_accepted_form_reaches_the_program_as_the_cli_hands_it_on(
    project: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """Every row of the unit tests' ACCEPTED table, as a top-level value and inside an object."""
    from test_pulumi_yaml import ACCEPTED

    lines = ["config:"]
    lines += [f"  acceptance:v{i}: {text}" for i, (text, _) in enumerate(ACCEPTED)]
    lines += ["  supersonic-interlink:helmValues:"]
    lines += [f"    v{i}: {text}" for i, (text, _) in enumerate(ACCEPTED)]
    file = tmp_path / "Pulumi.accepted.yaml"
    file.write_text("\n".join(lines) + "\n")
    listed = cli_config_of(project, file)
    assert listed.returncode == 0, listed.stderr
    texts = cli_config(read_stack_document(file))
    cli_view = canonical({key: entry["value"] for key, entry in json.loads(listed.stdout).items()})
    assert len(texts) > len(ACCEPTED)
    assert canonical(texts) == cli_view
