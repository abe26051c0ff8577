"""Read a stack file or ``Pulumi.yaml`` in the form every YAML reader reads alike, or refuse it in one line.

The Pulumi CLI reads these files with Go's yaml.v3 (YAML 1.2's resolver with some of 1.1: merge keys, octal
``0600``, timestamps); people and most tools read them as YAML 1.1 (PyYAML: ``yes`` a boolean, ``0o17`` text). This
reader does not imitate either: it takes only what both read the same way, null, true/false, decimal integers and
floats, text, mappings with text keys and sequences, and refuses the rest, naming the line and the key path, what
it found and what to write instead: tags, anchors and aliases, merge keys, directives, a second document,
timestamps, numbers with a leading zero, a base prefix, ``_`` or ``:``, numbers past 64 bits or not finite,
``yes``/``no``/``on``/``off``/``y``/``n``, keys that are not text, and a key written twice. A float with an
integral value below 1e21 is an ``int``, as Go's JSON hands it to the program. ``tests/e2e/test_config_agreement.py``
compares the result with the real CLI's ``pulumi config --json``.

The text goes through libyaml's parser (PyYAML's event stream: linear in the file's size); nothing is constructed
from a tag.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import yaml
from yaml import events as ev
from yaml.error import MarkedYAMLError, YAMLError
from yaml.reader import ReaderError
from yaml.resolver import Resolver

from supersonic_interlink.config.rules import printable

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_VALUES", "YAMLInputError", "decode_text", "read_pulumi_yaml"]

MAX_BYTES = 1024 * 1024
"""Largest file read: a stack file is a few kilobytes; 1 MiB reads in well under a second."""
MAX_DEPTH = 100
"""Deepest nesting of mappings and sequences (a Kubernetes object in ``helmValues`` nests a dozen levels)."""
MAX_VALUES = 1_000_000
"""Most values a file of outside YAML (``load_outside_yaml``) may expand to through its aliases."""


class YAMLInputError(ValueError):
    """A file the readers would refuse or read differently; one line without the file name (``printable``)."""

    def __init__(self, message: str) -> None:
        super().__init__(printable(message))


_NULL = frozenset(("", "~", "null", "Null", "NULL"))
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\.[0-9]*(?:[eE][-+][0-9]+)?|\.[0-9]+(?:[eE][-+][0-9]+)?")
_YES_NO = frozenset(w for word in ("y", "yes", "n", "no", "on", "off") for w in (word, word.title(), word.upper()))
_TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:[.,][0-9]*)?"
    r"(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::?[0-9]{2})?))?)?"
)
_NOT_FINITE = re.compile(r"[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")
_LEADING_ZERO = re.compile(r"[-+]?0[0-9_]+(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?")
# What yaml.v3 (resolve.go, after removing '_') reads as a number: Go's ParseInt with base 0, then yamlStyleFloat.
_GO_NUMBER = re.compile(
    r"[-+]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?)"
)
_YAML11 = Resolver()
_RANGE = (-(2**63), 2**63 - 1)  # past int64 the CLI reads a float (yaml.v3), or rounds one (a uint64 in an object)
_SHORT = 60
_KIND = {"str": "text", "int": "a number", "float": "a number", "merge": "a merge key", "value": "a value key"}


def _short(text: str) -> str:
    return text if len(text) <= _SHORT else f"{text[: _SHORT // 2]}... ({len(text)} characters)"


def _plain(text: str) -> Any:
    """The value of a plain scalar, or ``ValueError`` saying why the readers disagree and what to write."""
    if text in _NULL:
        return None
    if text in _BOOL:
        return _BOOL[text]
    if _INT.fullmatch(text):
        if len(text) > 21 or not _RANGE[0] <= int(text) <= _RANGE[1]:
            raise ValueError(
                f"{_short(text)} is past 64 bits (signed), which the Pulumi CLI rounds to a float; quote it for text"
            )
        return int(text)
    if _FLOAT.fullmatch(text):
        number = float(text)
        if not math.isfinite(number):
            raise ValueError(f"{_short(text)} is not a finite number; the Pulumi CLI cannot pass it to the program")
        return int(number) if number.is_integer() and abs(number) < 1e21 else number
    shown = _short(text)
    if text in _YES_NO:
        raise ValueError(
            f"{text} is a boolean in YAML 1.1 and text for the Pulumi CLI; write true or false, or quote it"
        )
    if _TIMESTAMP.fullmatch(text):
        raise ValueError(f"{shown} is a timestamp, which each YAML reader turns into text of its own; quote it")
    if _NOT_FINITE.fullmatch(text):
        raise ValueError(f"{text} is not a finite number; the Pulumi CLI cannot pass it to the program")
    if _LEADING_ZERO.fullmatch(text):
        raise ValueError(
            f"{shown} has a leading zero, which YAML 1.1 and the Pulumi CLI read as octal where the digits allow "
            f"(0600 is 384); write it without the zero, or quote it for text"
        )
    yaml11 = _YAML11.resolve(yaml.ScalarNode, text, (True, False)).rsplit(":", 1)[-1]
    cli = _GO_NUMBER.fullmatch(text.replace("_", "")) is not None
    if yaml11 != "str" or cli:
        raise ValueError(
            f"{shown} is not a plain decimal number or text to every YAML reader (YAML 1.1: {_KIND.get(yaml11, yaml11)}"
            f", the Pulumi CLI: {'a number' if cli else 'text'}); write a decimal number (1000, 1.0e+20), or quote it "
            f"for text"
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
            raise YAMLInputError(
                f"line {start.start_mark.line + 1}: a %YAML or %TAG directive: readers take it differently (the "
                f"Pulumi CLI refuses %YAML 1.2); remove it"
            )
        root = self.node(next(self.events), [], 0)
        next(self.events)  # DocumentEnd
        after = next(self.events)
        if not isinstance(after, ev.StreamEndEvent):
            raise YAMLInputError(
                f"line {after.start_mark.line + 1}: a second YAML document: the Pulumi CLI reads only the first; "
                f"keep one document"
            )
        return root

    def refuse(self, event: Any, path: list[Any], what: str) -> YAMLInputError:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
        return YAMLInputError(f"line {event.start_mark.line + 1}: {where + ': ' if where else ''}{what}")

    def node(self, event: Any, path: list[Any], depth: int) -> Any:
        aliases = "readers expand aliases within different limits; write the value out"
        if isinstance(event, ev.AliasEvent):
            raise self.refuse(event, path, f"alias *{event.anchor}: {aliases}")
        if event.anchor is not None:
            raise self.refuse(event, path, f"anchor &{event.anchor}: {aliases}, without the anchor")
        if event.tag is not None:
            tag = event.tag.replace("tag:yaml.org,2002:", "!!")
            raise self.refuse(
                event,
                path,
                f"tag {tag}: readers resolve tags differently (the Pulumi CLI drops ones it does not know); remove the "
                "tag, and quote the value for text",
            )
        if isinstance(event, ev.ScalarEvent):
            if event.style:  # quoted or block: text
                return event.value
            try:
                return _plain(event.value)
            except ValueError as error:
                raise self.refuse(event, path, str(error)) from None
        if depth >= MAX_DEPTH:
            raise self.refuse(
                event, path, f"nested more than {MAX_DEPTH} mappings or sequences deep; this reader stops there"
            )
        if isinstance(event, ev.SequenceStartEvent):
            items: list[Any] = []
            while not isinstance(item := next(self.events), ev.SequenceEndEvent):
                items.append(self.node(item, [*path, len(items)], depth + 1))
            return items
        mapping: dict[str, Any] = {}
        lines: dict[str, int] = {}
        while not isinstance(key_event := next(self.events), ev.MappingEndEvent):
            key = self.key(key_event, path)
            line = key_event.start_mark.line + 1
            if key in lines:
                raise self.refuse(
                    key_event,
                    path,
                    f'mapping key "{key}" already defined at line {lines[key]} (the '
                    "Pulumi CLI refuses the file); write it once",
                )
            lines[key] = line
            mapping[key] = self.node(next(self.events), [*path, key], depth + 1)
        return mapping

    def key(self, event: Any, path: list[Any]) -> str:
        if not isinstance(event, ev.ScalarEvent):
            raise self.refuse(event, path, "a mapping or sequence as a key: the Pulumi CLI accepts only text keys")
        if event.value == "<<" and not event.style and event.tag is None:
            raise self.refuse(
                event,
                path,
                "merge key <<: YAML 1.2 has none, YAML 1.1 and the Pulumi CLI merge; "
                "write the keys out (or quote '<<' for a key of that name)",
            )
        key = self.node(event, path, 0)
        if not isinstance(key, str):
            kind = "null" if key is None else "a boolean" if isinstance(key, bool) else "a number"
            raise self.refuse(
                event,
                path,
                f"key {event.value!r} is read as {kind}, not text: readers turn it into different text (the Pulumi "
                "CLI makes 1.0 '1' and null '<nil>'); quote it",
            )
        return key


def decode_text(data: bytes | str) -> str:
    """The CLI's reading of the bytes: a UTF-8 BOM dropped (loaders.go), UTF-16 with its BOM, else strict UTF-8."""
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as error:
            raise YAMLInputError(f"not valid UTF-16 text at byte {error.start}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise YAMLInputError(
            f"not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start}); save the file as UTF-8"
        ) from None


def _one_line(error: YAMLError) -> str:
    if isinstance(error, ReaderError):
        return f"not valid YAML: character #x{error.character:04x} at offset {error.position}: {error.reason}"
    if isinstance(error, MarkedYAMLError):
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        return f"not valid YAML: {where}{' '.join(p for p in (error.context, error.problem) if p)}"
    return "not valid YAML: " + " ".join(str(error).split())


def _check_size(data: bytes | str) -> None:
    if len(data) > MAX_BYTES:
        raise YAMLInputError(f"{len(data):,} bytes: more than this reader reads ({MAX_BYTES:,})")


def read_pulumi_yaml(data: bytes | str) -> Any:
    """The content of a stack file or ``Pulumi.yaml`` as plain data (None for an empty file); ``YAMLInputError`` in
    one line, without the file name, for anything the readers would refuse or read differently."""
    _check_size(data)
    try:
        return _Reader(decode_text(data)).document()
    except YAMLError as error:
        raise YAMLInputError(_one_line(error)) from None


# ---------------------------------------------------------------------------------------- YAML others wrote


def load_yaml(text: str) -> Any:
    """YAML this program wrote itself (rendered manifests, the Envoy configuration, Helm value files), through
    libyaml when PyYAML has it. Files people write (stack files, ``Pulumi.yaml``) go through ``read_pulumi_yaml``."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load_outside_yaml(data: bytes | str) -> list[Any]:
    """Every document of a YAML file this program did not write and Helm or kubectl did (``helm get values``,
    ``kubectl get -o yaml``), read as PyYAML reads it (YAML 1.1, like the Go ``yaml.v2`` behind ``sigs.k8s.io/yaml``),
    within the stack file's limits: at most ``MAX_BYTES``, nested ``MAX_DEPTH`` deep and ``MAX_VALUES`` values with
    aliases expanded. The limits are checked on the event stream before anything is built: libyaml's composer
    recurses in C (a file nested 50,000 deep crashes the interpreter), and a 300-byte alias bomb that PyYAML builds
    cheaply (aliases share one object) costs gigabytes in whatever walks it. ``YAMLInputError`` in one line."""
    _check_size(data)
    text = decode_text(data)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    sizes: dict[str, int] = {}  # anchor -> values under it, aliases expanded
    open_nodes: list[tuple[str | None, int]] = []  # (anchor, values so far) of each open collection
    total = 0  # values in the file so far, aliases expanded
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                if len(open_nodes) >= MAX_DEPTH:
                    line = event.start_mark.line + 1 if event.start_mark else "?"
                    raise YAMLInputError(
                        f"line {line}: nested more than {MAX_DEPTH} mappings or sequences deep; this reader stops there"
                    )
                open_nodes.append((event.anchor, 1))
                total += 1
                continue
            if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                anchor, size = open_nodes.pop()
                if anchor is not None:
                    sizes[anchor] = size
            elif isinstance(event, yaml.ScalarEvent):
                size = 1
                if event.anchor:
                    sizes[event.anchor] = 1
                total += 1
            elif isinstance(event, yaml.AliasEvent):
                size = sizes.get(event.anchor or "", 1)
                total += size
            else:
                continue
            if open_nodes:
                anchor, so_far = open_nodes[-1]
                open_nodes[-1] = (anchor, so_far + size)
            if total > MAX_VALUES:
                raise YAMLInputError(f"more than {MAX_VALUES:,} values with aliases expanded; this reader stops there")
        return list(yaml.load_all(text, Loader=loader))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise YAMLInputError(f"not valid YAML{where}") from None
