"""YAML nodes and scalars with the meaning gopkg.in/yaml.v3 gives them: the tags, the scalar resolver of
resolve.go (Go's integer, float and timestamp parsing), the reader's limits and the node helpers decode.go
uses. pulumi_yaml composes and decodes with these."""

from __future__ import annotations

import base64
import binascii
import functools
import math
import re
from dataclasses import dataclass, field
from typing import Any

from supersonic_interlink.config.rules import printable

_LONG = "tag:yaml.org,2002:"
STR, INT, FLOAT, BOOL, NULL, TIMESTAMP = "!!str", "!!int", "!!float", "!!bool", "!!null", "!!timestamp"
BINARY, MAP, SEQ, MERGE = "!!binary", "!!map", "!!seq", "!!merge"
_RESOLVABLE = {"", STR, INT, FLOAT, BOOL, NULL, TIMESTAMP}
_KNOWN = _RESOLVABLE | {BINARY, MAP, SEQ, MERGE}

# resolve.go: resolveMapList (YAML 1.2 core schema; no yes/no/on/off, no base-60 numbers).
_WORDS: dict[str, tuple[str, Any]] = {
    **dict.fromkeys(("true", "True", "TRUE"), (BOOL, True)),
    **dict.fromkeys(("false", "False", "FALSE"), (BOOL, False)),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), (NULL, None)),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), (FLOAT, math.nan)),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), (FLOAT, math.inf)),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), (FLOAT, -math.inf)),
    "<<": (MERGE, "<<"),
}
# resolve.go: resolveTable, the first character's hint.
_HINT = {**dict.fromkeys("+-", "S"), **dict.fromkeys("0123456789", "D"), **dict.fromkeys("yYnNtTfFoO~", "M"), ".": "."}
_YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?")  # what Go's ParseFloat takes from a text starting with '.'
_INT64 = (-(2**63), 2**63 - 1)
_DIGITS = {
    base: re.compile(f"[{chars}]+", re.ASCII) for base, chars in ((2, "01"), (8, "0-7"), (10, "0-9"), (16, "0-9a-fA-F"))
}
_UINT64_MAX = 2**64 - 1

# decode.go: allowedAliasRatio.
_ALIAS_RATIO_LOW, _ALIAS_RATIO_HIGH = 400_000, 4_000_000

MAX_BYTES = 1024 * 1024
"""Largest file read: a stack file is a few kilobytes; 1 MiB reads in a second or two and a few hundred MB at most."""
MAX_DEPTH = 100
"""Deepest nesting of mappings and sequences (a Kubernetes object in ``helmValues`` nests a dozen levels)."""
MAX_VALUES = 1_000_000
"""Most values one file may decode to, aliases expanded: yaml.v3's alias ratio alone lets a small file expand to
millions of values."""
_LEADING_ZERO = re.compile(r"[-+]?0[0-9]+")


class YAMLInputError(ValueError):
    """A file the CLI would refuse or read differently; the message is one line without the file name, whatever
    keys or values it quotes (``printable``)."""

    def __init__(self, message: str) -> None:
        super().__init__(printable(message))


@dataclass(eq=False)
class _Node:
    kind: str  # "scalar", "mapping", "sequence", "alias"
    tag: str  # short tag as yaml.v3's parser.node() sets it ("" for untagged collections)
    explicit: bool  # the tag was written in the file
    value: str = ""
    quoted: bool = False  # quoted or block style: yaml.v3's indicatedString
    line: int = 0
    content: list[_Node] = field(default_factory=list)
    alias: _Node | None = None


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_LONG) :] if tag.startswith(_LONG) else tag


# --------------------------------------------------------------------------------------------- resolve.go


def _go_digits(text: str, base: int) -> int | None:
    """The unsigned part of Go's ``strconv.ParseInt``/``ParseUint``: base 0 reads 0x/0o/0b prefixes and a leading 0
    as octal; None when a character is not a digit of the base."""
    digits = text
    if base == 0:
        base = 10
        prefix = text[:2].lower()
        if prefix in ("0x", "0o", "0b"):
            base, digits = {"0x": 16, "0o": 8, "0b": 2}[prefix], text[2:]
        elif len(text) > 1 and text[0] == "0":
            base, digits = 8, text[1:]
    if not _DIGITS[base].fullmatch(digits):
        return None
    if len(digits) > 64:
        return None  # past any int64 or uint64, in any base: no int() of thousands of digits
    return int(digits, base)


def _go_int(text: str, base: int) -> int | None:
    """Go's ``strconv.ParseInt(text, base, 64)``: an optional sign, then digits; None on failure or overflow."""
    sign, body = 1, text
    if body[:1] in ("+", "-"):
        sign, body = (-1 if body[0] == "-" else 1), body[1:]
    value = _go_digits(body, base)
    if value is None or not _INT64[0] <= sign * value <= _INT64[1]:
        return None
    return sign * value


def _go_uint(text: str, base: int) -> int | None:
    """Go's ``strconv.ParseUint(text, base, 64)``: no sign, up to 2**64 - 1."""
    if text[:1] in ("+", "-"):
        return None
    value = _go_digits(text, base)
    return value if value is not None and value <= _UINT64_MAX else None


def _days_in(month: int, year: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


_TIMESTAMP = re.compile(
    r"(?P<y>[0-9]{4})-(?P<m>[0-9]{1,2})-(?P<d>[0-9]{1,2})"
    r"(?:(?P<sep>[Tt ])(?P<H>[0-9]{1,2}):(?P<M>[0-9]{1,2}):(?P<S>[0-9]{1,2})(?:[.,](?P<frac>[0-9]+))?"
    r"(?P<zone>Z|[+-][0-9]{2}:[0-9]{2})?)?"
)


def _parse_timestamp(text: str) -> str | None:
    """resolve.go's ``parseTimestamp``: Go's ``time.Parse`` with the four ``allowedTimestampFormats``.

    Returns the text Go's ``time.Time.String()`` prints for it (UTC), None when it is not a timestamp.
    """
    match = _TIMESTAMP.fullmatch(text)
    if not match:
        return None
    year, month, day = int(match["y"]), int(match["m"]), int(match["d"])
    sep, zone = match["sep"], match["zone"]
    if (sep == " ") == (zone is not None) and sep is not None:
        return None  # "2006-1-2T15:4:5.999999999Z07:00" needs a zone; "2006-1-2 15:4:5.999999999" has none
    if not 1 <= month <= 12 or not 1 <= day <= _days_in(month, year):
        return None
    hour = minute = second = 0
    fraction = ""
    if sep is not None:
        hour, minute, second = int(match["H"]), int(match["M"]), int(match["S"])
        if hour > 23 or minute > 59 or second > 59:
            return None
        fraction = (match["frac"] or "")[:9].rstrip("0")
        if zone not in (None, "Z"):
            hh, mm = int(zone[1:3]), int(zone[4:6])
            if hh > 24 or mm > 60:
                return None
            raise YAMLInputError(
                f"timestamp {text!r} has a zone offset: the Pulumi CLI turns it into text that depends on the time "
                f"zone of the machine running it; quote it, or write it in UTC with Z"
            )
    frac = f".{fraction}" if fraction else ""
    return f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}{frac} +0000 UTC"


def _resolve(tag: str, text: str) -> tuple[str, Any]:
    """resolve.go's ``resolve``: the tag and value yaml.v3 gives a scalar (tag "" = untagged plain scalar)."""
    if tag not in _RESOLVABLE:
        return tag, text
    rtag, value = _resolve_plain(tag, text)
    if tag in ("", rtag, STR):
        return rtag, value
    if tag == FLOAT and rtag == INT:
        return FLOAT, float(value)
    shown = text if len(text) <= 60 else f"{text[:30]}... ({len(text)} characters)"
    raise YAMLInputError(f"cannot decode {rtag} `{shown}` as a {tag}")


@functools.lru_cache(maxsize=1024)  # the composer and the decoder resolve each plain scalar one after the other
def _resolve_plain(tag: str, text: str) -> tuple[str, Any]:
    hint = _HINT.get(text[0]) if text else "N"
    if hint is None or tag == STR:
        return STR, text
    if text in _WORDS:
        return _WORDS[text]
    if hint == "." and _DOT_FLOAT.fullmatch(text):
        return FLOAT, float(text)
    if hint in ("D", "S"):
        if tag in ("", TIMESTAMP):
            stamp = _parse_timestamp(text)
            if stamp is not None:
                return TIMESTAMP, stamp
        plain = text.replace("_", "")
        for number in (_go_int(plain, 0), _go_uint(plain, 0)):
            if number is not None:
                return INT, number
        if _YAML_STYLE_FLOAT.fullmatch(plain):
            return FLOAT, float(plain)
        for prefix, base in (("0b", 2), ("0o", 8)):
            if plain.startswith(prefix):
                for number in (_go_int(plain[2:], base), _go_uint(plain[2:], base)):
                    if number is not None:
                        return INT, number
            elif plain.startswith("-" + prefix):
                number = _go_int("-" + plain[3:], base)
                if number is not None:
                    return INT, number
    return STR, text


def _through(first: _Node, second: _Node) -> str:
    aliases = [f"*{n.value}" for n in (first, second) if n.kind == "alias"]
    return f", through the alias {' and '.join(aliases)}" if aliases else ""


def _resolves_to_timestamp(node: _Node) -> bool:
    """A key yaml.v3 decodes to a ``time.Time`` (its text here is the time's string, but Go's key is no string)."""
    while node.kind == "alias" and node.alias is not None:
        node = node.alias
    return node.kind == "scalar" and node.tag == TIMESTAMP


def _check_collection_tag(node: _Node) -> None:
    wanted = MAP if node.kind == "mapping" else SEQ
    if node.explicit and node.tag != wanted:
        raise YAMLInputError(
            f"line {node.line}: tag {node.tag} on a {node.kind}: the Pulumi CLI ignores it; remove the tag"
        )


def _allowed_alias_ratio(count: int) -> float:
    if count <= _ALIAS_RATIO_LOW:
        return 0.99
    if count >= _ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * ((count - _ALIAS_RATIO_LOW) / (_ALIAS_RATIO_HIGH - _ALIAS_RATIO_LOW))


def _is_merge(node: _Node) -> bool:
    return node.kind == "scalar" and node.value == "<<" and not node.quoted and node.tag in ("", MERGE)


def _hashable(value: Any) -> Any:
    return repr(value) if isinstance(value, (dict, list)) else (type(value).__name__, value)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "a timestamp" if isinstance(value, str) else type(value).__name__


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _binary(node: _Node) -> str:
    """decode.go: ``!!binary`` is standard base64 (newlines skipped); the decoded bytes become a string."""
    data = node.value.replace("\n", "").replace("\r", "")
    stripped = data.rstrip("=")
    try:
        if "=" in stripped or len(data) % 4:
            raise binascii.Error("padding")
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise YAMLInputError(f"line {node.line}: !!binary value contains invalid base64 data") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise YAMLInputError(
            f"line {node.line}: !!binary value is not UTF-8 text; the Pulumi CLI would pass it to the program with "
            f"its bytes replaced"
        ) from None
