"""Read a Pulumi stack file or ``Pulumi.yaml`` exactly as the Pulumi CLI reads it, or refuse it in one line.

The CLI decodes these files with Go's ``gopkg.in/yaml.v3`` (v3.0.1) into an ``interface{}``, keeps only string keys,
writes the result back out and decodes it again into its config values (``sdk/go/common/workspace/loaders.go``,
``sdk/go/common/resource/config/object.go`` in pulumi/pulumi). PyYAML reads YAML 1.1 and would disagree
(``yes`` a boolean, duplicate keys silently merged, unbounded alias expansion), so this module parses the text
with libyaml's parser (through PyYAML; only its event stream is used: yaml.v3's scannerc.go and parserc.go are a
line-by-line port of libyaml, and reading stays linear in the file's size) and gives each node the meaning yaml.v3
gives it: the scalar resolver of ``resolve.go``, the duplicate-key, merge and alias-expansion rules of ``decode.go``.
The result is plain data as the program receives it: a timestamp becomes the text Go's ``time.Time.String()``
prints (what Pulumi's config object stores), a float with an integral value below 1e21 an ``int`` (Go's JSON
encoding of it, which the program parses).

Where the CLI would silently give a value another meaning, the reader refuses instead and says how to write it:
an unknown or local tag (yaml.v3 drops it and keeps the text), a second document (yaml.v3 reads only the first),
a timestamp with a numeric zone offset (its text then depends on the CLI machine's time zone) and ``!!binary``
that is not UTF-8 text. ``tests/test_pulumi_yaml.py`` pins every case with the line of yaml.v3 it follows.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import yaml
from yaml import events as ev
from yaml.error import MarkedYAMLError, YAMLError
from yaml.reader import ReaderError

from supersonic_interlink.config.yaml_nodes import (
    _KNOWN,
    _LEADING_ZERO,
    BINARY,
    FLOAT,
    INT,
    MAP,
    MAX_BYTES,
    MAX_DEPTH,
    MAX_VALUES,
    MERGE,
    SEQ,
    STR,
    YAMLInputError,
    _allowed_alias_ratio,
    _binary,
    _check_collection_tag,
    _hashable,
    _is_merge,
    _kind,
    _Node,
    _quote,
    _resolve,
    _resolve_plain,
    _resolves_to_timestamp,
    _short_tag,
    _through,
)

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_VALUES", "YAMLInputError", "decode_text", "read_pulumi_yaml"]

# --------------------------------------------------------------------------------------------- parser.go


def _events(text: str) -> Iterator[Any]:
    # libyaml when PyYAML was built with it (the pure-Python parser is the same state machine, ten times slower).
    yield from yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


class _Composer:
    """Nodes from the event stream, as yaml.v3's parser builds them (first document only)."""

    def __init__(self, text: str) -> None:
        self.events = _events(text)
        self.anchors: dict[str, _Node] = {}
        self.current: Any = None
        self.depth = 0

    def next(self) -> Any:
        self.current = next(self.events)
        return self.current

    def document(self) -> _Node | None:
        self.next()  # StreamStart
        start = self.next()
        if isinstance(start, ev.StreamEndEvent):
            return None
        version = getattr(start, "version", None)
        if version is not None and tuple(version) != (1, 1):
            # parserc.go: yaml_parser_process_directives accepts only %YAML 1.1.
            raise YAMLInputError(
                f"line {start.start_mark.line + 1}: %YAML {'.'.join(map(str, version))} directive: the Pulumi CLI's "
                f"YAML reader refuses it (found incompatible YAML document); remove the directive"
            )
        root = self.node(self.next())
        self.next()  # DocumentEnd
        after = self.next()
        if not isinstance(after, ev.StreamEndEvent):
            raise YAMLInputError(
                f"line {after.start_mark.line + 1}: a second YAML document: the Pulumi CLI reads only the first "
                f"and ignores the rest; keep one document"
            )
        return root

    def _tag(self, event: Any) -> tuple[str, bool]:
        tag = event.tag
        if tag is not None and not isinstance(tag, str):
            tag = getattr(tag, "value", None) or str(tag)
        if tag and tag != "!":
            return _short_tag(tag), True
        return "", False

    def node(self, event: Any) -> _Node:
        line = event.start_mark.line + 1
        if isinstance(event, ev.AliasEvent):
            anchor = event.anchor or ""
            target = self.anchors.get(anchor)
            if target is None:
                raise YAMLInputError(f"line {line}: unknown anchor '{anchor}' referenced")
            return _Node("alias", "", False, value=anchor, line=line, alias=target)
        tag, explicit = self._tag(event)
        if isinstance(event, ev.ScalarEvent):
            quoted = bool(event.style)  # plain: None or ''
            if not explicit:
                tag = STR if quoted else ("" if event.value != "<<" else MERGE)
                if not tag:
                    try:
                        tag = _resolve_plain("", event.value)[0]
                    except YAMLInputError as error:
                        raise YAMLInputError(f"line {line}: {error}") from None
            node = _Node("scalar", tag, explicit, value=event.value, quoted=quoted, line=line)
            self._anchor(event, node)
            return node
        kind = "mapping" if isinstance(event, ev.MappingStartEvent) else "sequence"
        node = _Node(kind, tag or (MAP if kind == "mapping" else SEQ), explicit, line=line)
        self._anchor(event, node)
        end = ev.MappingEndEvent if kind == "mapping" else ev.SequenceEndEvent
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise YAMLInputError(
                f"line {line}: nested more than {MAX_DEPTH} mappings or sequences deep; this reader stops there"
            )
        while not isinstance(self.next(), end):
            node.content.append(self.node(self.current))
        self.depth -= 1
        return node

    def _anchor(self, event: Any, node: _Node) -> None:
        if event.anchor is not None:
            self.anchors[event.anchor] = node


# --------------------------------------------------------------------------------------------- decode.go


class _Decoder:
    """yaml.v3's decoder into an ``interface{}``, counting as it counts."""

    def __init__(self) -> None:
        self.decode_count = 0
        self.alias_count = 0
        self.alias_depth = 0
        self.active: set[int] = set()
        self.merged: dict[Any, _Node | None] | None = None
        """While merging: the keys already in the mapping, each with the merged map that gave it (None for the
        mapping's own keys)."""
        self.merge_source: _Node | None = None

    def count(self) -> None:
        self.decode_count += 1
        if self.alias_depth > 0:
            self.alias_count += 1
        if self.decode_count > MAX_VALUES:
            raise YAMLInputError(
                f"more than {MAX_VALUES:,} values with aliases expanded ({self.alias_count:,} of them from aliases); "
                f"this reader stops there"
            )
        if (
            self.alias_count > 100
            and self.decode_count > 1000
            and self.alias_count / self.decode_count > _allowed_alias_ratio(self.decode_count)
        ):
            raise YAMLInputError(
                f"document contains excessive aliasing (more than the Pulumi CLI's YAML reader expands; "
                f"{self.alias_count} of {self.decode_count} values came from aliases)"
            )

    def unmarshal(self, node: _Node) -> Any:
        self.count()
        if node.kind == "alias":
            return self.alias(node)
        if node.kind == "scalar":
            return self.scalar(node)
        _check_collection_tag(node)
        if node.kind == "mapping":
            return self.mapping(node, {})
        return [self.unmarshal(child) for child in node.content]

    def alias(self, node: _Node) -> Any:
        if id(node) in self.active:
            raise YAMLInputError(f"line {node.line}: anchor '{node.value}' value contains itself")
        assert node.alias is not None
        self.active.add(id(node))
        self.alias_depth += 1
        try:
            return self.unmarshal(node.alias)
        finally:
            self.alias_depth -= 1
            self.active.discard(id(node))

    def scalar(self, node: _Node) -> Any:
        if node.explicit and node.tag not in _KNOWN:
            raise YAMLInputError(
                f"line {node.line}: tag {node.tag} on {node.value!r}: the Pulumi CLI ignores tags it does not know and "
                f"reads the text; remove the tag"
            )
        if node.explicit and node.tag in (MAP, SEQ, MERGE):
            raise YAMLInputError(
                f"line {node.line}: tag {node.tag} on the scalar {node.value!r}: the Pulumi CLI ignores it and reads "
                f"the text; remove the tag"
            )
        if node.tag == STR:  # quoted, block or !!str: yaml.v3's indicatedString
            return node.value
        try:
            tag, value = _resolve(node.tag if node.explicit else "", node.value)
        except YAMLInputError as error:
            raise YAMLInputError(f"line {node.line}: {error}") from None
        if tag == BINARY:
            return _binary(node)
        if tag in (INT, FLOAT) and _LEADING_ZERO.fullmatch(node.value.replace("_", "")):
            read_as = f"; this one is {int(value)}" if tag == INT or math.isfinite(value) else ""
            raise YAMLInputError(
                f"line {node.line}: {_short(node.value)} has a leading zero, which the Pulumi CLI reads as octal where "
                f"the digits allow (0600 is 384{_short(read_as)}); write it without the zero, with 0o for octal, or "
                f"quote it for text"
            )
        if tag == FLOAT and not math.isfinite(value):
            raise YAMLInputError(
                f"line {node.line}: {_short(repr(node.value))} is not a finite number; the Pulumi CLI cannot pass it "
                f"to the program (json: unsupported value)"
            )
        if tag == FLOAT and value.is_integer() and abs(value) < 1e21:
            return int(value)  # Go's JSON writes it without a fraction; the program reads an integer
        return value

    def mapping(self, node: _Node, out: dict[Any, Any]) -> dict[Any, Any]:
        pairs = list(zip(node.content[::2], node.content[1::2], strict=True))
        written: dict[tuple[str, str], _Node] = {}
        for key, _ in pairs:
            # decode.go mapping(): uniqueKeys compares kind and text, pair by pair; a dict does it in one pass.
            first = written.setdefault((key.kind, key.value), key)
            if first is not key:
                raise YAMLInputError(
                    f"line {key.line}: mapping key {_quote(key.value)} already defined at line {first.line} "
                    f"(the Pulumi CLI refuses the file)"
                )
        merged, self.merged = self.merged, None
        source = self.merge_source
        merge_node: _Node | None = None
        own: dict[str, _Node] = {}
        for key, value in pairs:
            if _is_merge(key):
                merge_node = value
                continue
            k = self.unmarshal(key)
            if isinstance(k, (dict, list)):
                raise YAMLInputError(f"line {key.line}: invalid map key: a mapping or sequence as a key")
            if not isinstance(k, str) or _resolves_to_timestamp(key):
                # workspace/project.go SimplifyMarshalledValue: "expected only string keys".
                raise YAMLInputError(
                    f"line {key.line}: key {key.value!r} is read as {_kind(k)}, not text: the Pulumi CLI accepts only "
                    f"string keys; quote it"
                )
            if k in own:
                # An alias (or an escape) the CLI does not compare: it keeps the later value without a word.
                raise YAMLInputError(
                    f"line {key.line}: key {_quote(k)} is written twice in this mapping (lines {own[k].line} and "
                    f"{key.line}{_through(own[k], key)}); the Pulumi CLI silently keeps the later one; write it once"
                )
            own[k] = key
            if merged is not None:
                marker = _hashable(k)
                if marker in merged:
                    earlier = merged[marker]
                    if earlier is not None and source is not None and earlier is not source:
                        raise YAMLInputError(
                            f"line {key.line}: key {_quote(k)} comes from two merged maps (lines {earlier.line} and "
                            f"{source.line}); the Pulumi CLI silently takes the first; merge maps that do not overlap"
                        )
                    continue
                merged[marker] = source
            out[k] = self.unmarshal(value)
        self.merged = merged
        if merge_node is not None:
            self.merge(node, merge_node, out)
        return out

    def merge(self, parent: _Node, merge: _Node, out: dict[Any, Any]) -> None:
        outer = self.merged
        if outer is None:
            self.merged = dict.fromkeys(_hashable(self.unmarshal(k)) for k in parent.content[::2])
        target = merge.alias if merge.kind == "alias" else merge
        if target is not None and target.kind == "mapping":
            self._merge_one(merge, out)
        elif merge.kind == "sequence":
            for item in merge.content:
                resolved = item.alias if item.kind == "alias" else item
                if resolved is None or resolved.kind != "mapping":
                    raise YAMLInputError(f"line {item.line}: map merge requires map or sequence of maps as the value")
                self._merge_one(item, out)
        else:
            raise YAMLInputError(f"line {merge.line}: map merge requires map or sequence of maps as the value")
        self.merged = outer

    def _merge_one(self, node: _Node, out: dict[Any, Any]) -> None:
        self.count()  # decode.go unmarshals the merged node (and an alias to it) into the same map
        if node.kind == "alias":
            assert node.alias is not None
            self.alias_depth += 1
            try:
                self._merge_one(node.alias, out)
            finally:
                self.alias_depth -= 1
            return
        outer_source, self.merge_source = self.merge_source, node
        try:
            self.mapping(node, out)
        finally:
            self.merge_source = outer_source


# --------------------------------------------------------------------------------------------- entry point


def decode_text(data: bytes | str) -> str:
    """loaders.go's readFileStripUTF8BOM, then yaml.v3's reader: UTF-16 with its BOM, else strict UTF-8."""
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
        what = " ".join(p for p in (error.context, error.problem) if p)
        return f"not valid YAML: {where}{what}"
    return "not valid YAML: " + " ".join(str(error).split())


def read_pulumi_yaml(data: bytes | str) -> Any:
    """The content of a Pulumi YAML file as the CLI hands it on (None for an empty file).

    Raises ``YAMLInputError`` with a one-line message (without the file name) for anything the CLI refuses or
    would read differently from what the text suggests.
    """
    if len(data) > MAX_BYTES:
        raise YAMLInputError(f"{len(data):,} bytes: more than this reader reads ({MAX_BYTES:,})")
    text = decode_text(data)
    try:
        root = _Composer(text).document()
    except YAMLError as error:
        raise YAMLInputError(_one_line(error)) from None
    if root is None:
        return None
    decoder = _Decoder()
    decoder.decode_count += 1  # the document node
    return decoder.unmarshal(root)


_SHORT = 60


def _short(text: str) -> str:
    """A value as an error quotes it: whole up to 60 characters, else its start and its length."""
    return text if len(text) <= _SHORT else f"{text[: _SHORT // 2]}... ({len(text)} characters)"
