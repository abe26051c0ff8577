"""Stack files and ``Pulumi.yaml`` read in the YAML the Pulumi CLI (yaml.v3) and YAML 1.1 read alike, the rest refused
in one line (docs/config.md); and the readers of YAML the program, Helm or kubectl wrote."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import yaml
from yaml import events as ev

from supersonic_interlink.config.rules import printable, shorten

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 100  # a Kubernetes object in helmValues nests a dozen levels
MAX_VALUES = 1_000_000  # values of an outside file with its aliases expanded


class YAMLInputError(ValueError):
    """A file the readers would refuse or read differently; one printable line without the file name."""

    def __init__(self, message: str) -> None:
        super().__init__(printable(message))


_WORDS = dict.fromkeys(("", "~", "null", "Null", "NULL")) | dict.fromkeys(("true", "True", "TRUE"), True)
_WORDS |= dict.fromkeys(("false", "False", "FALSE"), False)
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\.[0-9]*(?:[eE][-+][0-9]+)?|\.[0-9]+(?:[eE][-+][0-9]+)?")
_RANGE = (-(2**63), 2**63 - 1)  # past int64 the CLI reads a float (yaml.v3), or rounds one (a uint64 in an object)
# What yaml.v3 (resolve.go, after removing '_') reads as no text: Go's ParseInt with base 0, yamlStyleFloat, a time.
_GO_NUMBER = re.compile(
    r"[-+]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?)"
)
_GO_TIME = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ].*)?")
_YAML11 = yaml.resolver.Resolver()
_YAML11_ONLY_BOOLS = frozenset("yYnN")  # YAML 1.1's, yaml.v2's and sigs.k8s.io/yaml's; PyYAML resolves them as text


def _plain(text: str) -> Any:
    """A plain scalar as every reader reads it; ``ValueError`` where YAML 1.1 and yaml.v3 could differ."""
    if text in _WORDS:
        return _WORDS[text]
    if _INT.fullmatch(text) and len(text) <= 21 and _RANGE[0] <= int(text) <= _RANGE[1]:
        return int(text)
    number = float(text) if _FLOAT.fullmatch(text) else math.nan
    if math.isfinite(number):  # Go's JSON writes an integral float64 below 1e21 as an integer
        return int(number) if number.is_integer() and abs(number) < 1e21 else number
    yaml11 = _YAML11.resolve(yaml.ScalarNode, text, (True, False))
    cli = _GO_NUMBER.fullmatch(text.replace("_", "")) or _GO_TIME.fullmatch(text)
    if yaml11 != "tag:yaml.org,2002:str" or cli or text in _YAML11_ONLY_BOOLS:
        raise ValueError(
            f"{shorten(text, 60)} is not read alike by YAML 1.1 and the Pulumi CLI; write a decimal number (within "
            "64 bits), true or false, or quote it for text"
        )
    return text


class _Reader:
    def __init__(self, text: str) -> None:
        self.events: Iterator[Any] = yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))

    def document(self) -> Any:
        next(self.events)  # StreamStart
        start = next(self.events)
        if isinstance(start, ev.StreamEndEvent):
            return None
        if start.version or start.tags:
            raise self.refuse(start, [], "a %YAML or %TAG directive: readers take it differently; remove it")
        root = self.node(next(self.events), [], 0)
        next(self.events)  # DocumentEnd
        if not isinstance(after := next(self.events), ev.StreamEndEvent):
            raise self.refuse(after, [], "a second YAML document: the Pulumi CLI reads only the first; keep one")
        return root

    def refuse(self, event: Any, path: list[Any], what: str) -> YAMLInputError:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
        return YAMLInputError(f"line {event.start_mark.line + 1}: {where + ': ' if where else ''}{what}")

    def node(self, event: Any, path: list[Any], depth: int) -> Any:
        differently = "readers take it differently; write the value out plainly"
        if isinstance(event, ev.AliasEvent):
            raise self.refuse(event, path, f"alias *{event.anchor}: {differently}")
        if event.anchor is not None:
            raise self.refuse(event, path, f"anchor &{event.anchor}: {differently}")
        if event.tag is not None:
            raise self.refuse(event, path, f"tag {event.tag.replace('tag:yaml.org,2002:', '!!')}: {differently}")
        if isinstance(event, ev.ScalarEvent):
            if event.style:  # quoted or block: text
                return event.value
            try:
                return _plain(event.value)
            except ValueError as error:
                raise self.refuse(event, path, str(error)) from None
        if depth >= MAX_DEPTH:
            raise self.refuse(event, path, f"nested more than {MAX_DEPTH} mappings or sequences deep")
        if isinstance(event, ev.SequenceStartEvent):
            items: list[Any] = []
            while not isinstance(item := next(self.events), ev.SequenceEndEvent):
                items.append(self.node(item, [*path, len(items)], depth + 1))
            return items
        mapping: dict[str, Any] = {}
        lines: dict[str, int] = {}
        while not isinstance(key_event := next(self.events), ev.MappingEndEvent):
            key = self.key(key_event, path)
            if key in lines:
                raise self.refuse(key_event, path, f'mapping key "{key}" already defined at line {lines[key]}')
            lines[key] = key_event.start_mark.line + 1
            mapping[key] = self.node(next(self.events), [*path, key], depth + 1)
        return mapping

    def key(self, event: Any, path: list[Any]) -> str:
        if not isinstance(event, ev.ScalarEvent):
            raise self.refuse(event, path, "a mapping or sequence as a key: the Pulumi CLI takes only text keys")
        if event.value == "<<" and not event.style and event.tag is None:
            raise self.refuse(event, path, "merge key <<: YAML 1.2 has none; write the keys out (or quote '<<')")
        if not isinstance(key := self.node(event, path, 0), str):
            raise self.refuse(event, path, f"key {event.value!r} is not text to every reader; quote it")
        return key


def decode_text(data: bytes | str) -> str:
    """The CLI's reading of the bytes: a UTF-8 BOM dropped (loaders.go), UTF-16 with its BOM, else strict UTF-8."""
    if len(data) > MAX_BYTES:
        raise YAMLInputError(f"{len(data):,} bytes: more than this reader reads ({MAX_BYTES:,})")
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    try:
        return data.decode("utf-16" if data.startswith((b"\xff\xfe", b"\xfe\xff")) else "utf-8-sig")
    except UnicodeDecodeError as error:
        raise YAMLInputError(
            f"not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start}); save the file as UTF-8"
        ) from None


def _one_line(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    what = " ".join(p for p in (getattr(error, "context", None), getattr(error, "problem", None)) if p)
    return f"not valid YAML: {where}{what or ' '.join(str(error).split())}"


def read_pulumi_yaml(data: bytes | str) -> Any:
    """A stack file or ``Pulumi.yaml`` as plain data (None when empty), or ``YAMLInputError``."""
    try:
        return _Reader(decode_text(data)).document()
    except yaml.YAMLError as error:
        raise YAMLInputError(_one_line(error)) from None


def load_yaml(text: str) -> Any:
    """YAML this program wrote itself (never a file people write)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load_outside_yaml(data: bytes | str) -> list[Any]:
    """Every document of YAML Helm or kubectl wrote, as YAML 1.1 (like ``sigs.k8s.io/yaml``), within the limits,
    checked on the event stream first: libyaml's composer recurses in C (50,000 deep crashes the interpreter), and a
    300-byte alias bomb costs gigabytes in whatever walks it."""
    text = decode_text(data)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    sizes: dict[str, int] = {}  # anchor -> values under it, aliases expanded
    open_nodes: list[list[Any]] = []  # [anchor, values so far] of each open collection
    total = 0  # values in the file so far, aliases expanded
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                if len(open_nodes) >= MAX_DEPTH:
                    line = event.start_mark.line + 1 if event.start_mark else "?"
                    raise YAMLInputError(
                        f"line {line}: nested more than {MAX_DEPTH} mappings or sequences deep; this reader stops there"
                    )
                open_nodes.append([event.anchor, 1])
                total += 1
                continue
            if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                anchor, size = open_nodes.pop()
            elif isinstance(event, yaml.AliasEvent):
                anchor, size = None, sizes.get(event.anchor or "", 1)
                total += size
            elif isinstance(event, yaml.ScalarEvent):
                anchor, size = event.anchor, 1
                total += 1
            else:
                continue
            if anchor is not None:
                sizes[anchor] = size
            if open_nodes:
                open_nodes[-1][1] += size
            if total > MAX_VALUES:
                raise YAMLInputError(f"more than {MAX_VALUES:,} values with aliases expanded; this reader stops there")
        return list(yaml.load_all(text, Loader=loader))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise YAMLInputError(f"not valid YAML{where}") from None
