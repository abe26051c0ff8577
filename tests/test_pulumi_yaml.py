"""The stack-file reader agrees with the Pulumi CLI, case by case, as the CLI's own source decides each case.

Sources (read at these commits):
- go-yaml/yaml branch v3 @ f6f7691b1fdeb513f56608cd2c32c51f8194bf51 (v3.0.1, the version pulumi's sdk/go.mod pins):
  resolve.go (resolveMapList, resolve, parseTimestamp), decode.go (scalar, mapping, merge, alias,
  allowedAliasRatio), parserc.go (version directive), readerc.go (encoding), yaml.go (unmarshal).
- pulumi/pulumi @ 1b5949891b3cefcb9974752b24a5ecef0acc86c8: sdk/go/common/workspace/loaders.go (BOM, the decode /
  encode / decode round trip), workspace/project.go (SimplifyMarshalledValue), resource/config/object.go
  (unmarshalObject: a time.Time becomes its String()), go-yaml encode.go (a time.Time is written as RFC 3339).

Each expectation is what the CLI hands the program for ``v: <text>``, or the refusal; "refused" rows where the CLI
would accept the file are marked as this project's choice and say what the CLI would do instead.
"""

from __future__ import annotations

import pytest

from supersonic_interlink.config.pulumi_yaml import read_pulumi_yaml
from supersonic_interlink.config.yaml_nodes import YAMLInputError

# (YAML scalar, value the program receives, where the rule is)
SCALARS = [
    # resolveMapList: YAML 1.2 core booleans only.
    ("yes", "yes", "resolve.go resolveMapList has no yes/no/on/off/y/n"),
    ("no", "no", "resolve.go resolveMapList"),
    ("on", "on", "resolve.go resolveMapList"),
    ("off", "off", "resolve.go resolveMapList"),
    ("y", "y", "resolve.go resolveMapList"),
    ("n", "n", "resolve.go resolveMapList"),
    ("True", True, "resolve.go resolveMapList {true, True, TRUE}"),
    ("FALSE", False, "resolve.go resolveMapList {false, False, FALSE}"),
    ("tRUE", "tRUE", "resolve.go: not in the map, hint 'M' resolves nothing else"),
    ("~", None, "resolve.go resolveMapList null"),
    ("Null", None, "resolve.go resolveMapList null"),
    ("", None, "resolve.go resolveMapList: the empty plain scalar is null"),
    # Integers: strconv.ParseInt(plain, 0, 64) after removing '_', then ParseUint.
    ("0x1F", 31, "resolve.go: ParseInt base 0 reads 0x"),
    ("0o17", 15, "resolve.go: ParseInt base 0 reads 0o"),
    ("0b101", 5, "resolve.go: ParseInt base 0 reads 0b"),
    ("1_000", 1000, "resolve.go: strings.Replace(in, '_', '', -1) before ParseInt"),
    ("+5", 5, "resolve.go: hint 'S', ParseInt takes the sign"),
    ("18446744073709551615", 18446744073709551615, "resolve.go: ParseUint after ParseInt overflows"),
    ("0", 0, "a lone zero has no leading zero"),
    ("0.5", 0.5, "a fraction after a zero is no leading zero"),
    ("00.5", 0.5, "resolve.go: ParseInt fails, yamlStyleFloat reads 0.5, as the text says"),
    # Floats: yamlStyleFloat; an integral float below 1e21 reaches the program as a JSON integer.
    ("1.5", 1.5, "resolve.go yamlStyleFloat"),
    (".5", 0.5, "resolve.go hint '.': ParseFloat"),
    ("1.0", 1, "encode.go writes float64 1 as '1'; config/object.go passes it as the JSON number 1"),
    ("1.0e+20", 100000000000000000000, "Go's JSON writes float64 1e20 as 100000000000000000000"),
    ("1e21", 1e21, "Go's JSON writes 1e+21 from 1e21 on"),
    ("1.", 1, "resolve.go yamlStyleFloat accepts '1.'"),
    ("1_0.5", 10.5, "resolve.go: '_' removed before yamlStyleFloat"),
    ("0x1p-2", "0x1p-2", "resolve.go: no rule takes a hex float; it stays text"),
    ("1e", "1e", "resolve.go: yamlStyleFloat needs exponent digits"),
    # Timestamps: parseTimestamp with allowedTimestampFormats; the value is time.Time, which Pulumi's config
    # object stores as its String() (config/object.go unmarshalObject), after an RFC 3339 round trip.
    ("2024-01-01", "2024-01-01 00:00:00 +0000 UTC", "resolve.go '2006-1-2'; object.go time.Time.String()"),
    ("2024-1-5", "2024-01-05 00:00:00 +0000 UTC", "resolve.go '2006-1-2' takes one-digit month and day"),
    ("2001-12-14 21:59:43.10", "2001-12-14 21:59:43.1 +0000 UTC", "resolve.go '2006-1-2 15:4:5.999999999'"),
    ("2001-12-14t21:59:43.10Z", "2001-12-14 21:59:43.1 +0000 UTC", "resolve.go '2006-1-2t15:4:5.999999999Z07:00'"),
    ("2024-02-30", "2024-02-30", "time.Parse refuses day 30 of February: text"),
    ("2024-02-29", "2024-02-29 00:00:00 +0000 UTC", "2024 is a leap year"),
    ("2024-01-01T10:00:00", "2024-01-01T10:00:00", "'T' formats need a zone; without one it is text"),
    ("24-01-01", "24-01-01", "parseTimestamp's quick check: four digits, then '-'"),
    # Quoting and explicit tags.
    ("'yes'", "yes", "quoted: indicatedString"),
    ('"2024-01-01"', "2024-01-01", "quoted: indicatedString, never a timestamp"),
    ("!!str 12", "12", "resolve.go: tag !!str takes any text"),
    ("!!int '12'", 12, "an explicit tag resolves a quoted scalar too (indicatedString is false)"),
    ("!!float 1", 1, "resolve.go: an int under !!float becomes float64, written back as 1"),
    ("! 12", 12, "parser.go node(): the non-specific tag '!' on a plain scalar resolves as untagged"),
    ("!!binary aGVsbG8=", "hello", "decode.go scalar(): base64, the bytes become a string"),
    ("!!timestamp 2024-01-01", "2024-01-01 00:00:00 +0000 UTC", "resolve.go: tag !!timestamp"),
]

# (document, a fragment of the one-line refusal, why)
REFUSED = [
    ("v: 1\nv: 2\n", 'line 2: mapping key "v" already defined at line 1', "decode.go mapping(): uniqueKeys"),
    ("v: 1\n'v': 2\n", "already defined", "decode.go: keys compare by kind and text, so quoting does not help"),
    ("v: !!int abc\n", "cannot decode !!str `abc` as a !!int", "resolve.go: the deferred tag check"),
    ("v: !!bool yes\n", "cannot decode !!str `yes` as a !!bool", "resolve.go: yes is text in YAML 1.2"),
    ("v: !!binary 'a b'\n", "!!binary value contains invalid base64 data", "decode.go scalar()"),
    ("v: *nowhere\n", "unknown anchor 'nowhere' referenced", "decode.go parser.alias()"),
    ("v: &a [*a]\n", "anchor 'a' value contains itself", "decode.go alias()"),
    ("v: {<<: 1}\n", "map merge requires map or sequence of maps as the value", "decode.go merge()"),
    ("%YAML 1.2\n---\nv: 1\n", "found incompatible YAML document", "parserc.go: only %YAML 1.1 is accepted"),
    ("1: a\n", "accepts only string keys", "project.go SimplifyMarshalledValue: 'expected only string keys'"),
    ("true: a\n", "accepts only string keys", "project.go SimplifyMarshalledValue"),
    ("~: a\n", "accepts only string keys", "project.go SimplifyMarshalledValue (a nil key)"),
    ("2024-01-01: a\n", "accepts only string keys", "project.go SimplifyMarshalledValue (a time.Time key)"),
    ("? [a]\n: 1\n", "invalid map key", "decode.go mapping(): a slice key"),
    ("v: .nan\n", "not a finite number", "config/object.go MarshalJSON: json: unsupported value NaN"),
    ("v: .inf\n", "not a finite number", "config/object.go MarshalJSON: json: unsupported value +Inf"),
    ("v: \x01\n", "character #x0001", "readerc.go: 'control characters are not allowed'"),
    ("v: [1\n", "not valid YAML: line", "parser errors become one line"),
    # This project's choices where the CLI would silently read something other than the text suggests:
    ("v: !vault token\n", "the Pulumi CLI ignores tags it does not know", "choice: yaml.v3 would pass 'token'"),
    ("v: !!str [a]\n", "the Pulumi CLI ignores it", "choice: yaml.v3 ignores a collection's tag"),
    ("v: 1\n---\nw: 2\n", "the Pulumi CLI reads only the first", "choice: yaml.go unmarshal parses one document"),
    ("v: 2001-12-14t21:59:43.10-05:00\n", "depends on the time zone", "choice: time.Parse picks the local zone"),
    ("v: !!binary /w==\n", "not UTF-8 text", "choice: Go's JSON would replace the byte with U+FFFD"),
    ("v: 0600\n", "0600 has a leading zero", "choice: resolve.go decodes 'Octals from the 1.1 spec' (384)"),
    ("v: 017\n", "this one is 15", "choice: ParseInt base 0 reads a leading 0 as octal"),
    ("v: 08\n", "this one is 8", "choice: octal fails, yamlStyleFloat reads 8; the zero still misleads"),
    ("v: -0_600\n", "this one is -384", "choice: '_' is removed first, the sign kept"),
    ("v: +0600\n", "leading zero", "choice: ParseInt takes the sign, then base 0"),
    ("v: !!float 0600\n", "leading zero", "choice: an int under !!float is the octal int made float"),
    ("v: !!int 0600\n", "leading zero", "choice: the explicit tag resolves the same text"),
    # Keys written twice where the CLI does not compare them (decode.go compares kind and text only):
    (
        "k: &k a\nm:\n  a: 900\n  *k : 30\n",
        'key "a" is written twice in this mapping (lines 3 and 4, through the alias *k)',
        "choice: the alias key is an alias node, so uniqueKeys misses it and the map keeps 30",
    ),
    ("k: &k a\nm:\n  *k : 30\n  a: 900\n", "silently keeps the later one", "choice: either order"),
    ("k: &k a\nj: &j a\nm:\n  *k : 1\n  *j : 2\n", "through the alias *k and *j", "choice: two aliases"),
    (
        "x: &x {b: 1}\ny: &y {b: 2}\nz: {<<: [*x, *y]}\n",
        'key "b" comes from two merged maps (lines 1 and 2)',
        "choice: decode.go merge() keeps the first map's value; the text does not say which wins",
    ),
    ("z: {<<: [{b: 1}, {c: 1, b: 2}]}\n", "comes from two merged maps", "choice: inline maps too"),
    # Limits of this reader (README: Limits), past which yaml.v3 would go on or stop differently:
    ("v: " + "[" * 100 + "]" * 100 + "\n", "nested more than 100", "limit: recursion and output stay small"),
    (
        "v:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(120)),
        "line 101: nested more than 100",
        "limit: block mappings count the same",
    ),
]


@pytest.mark.parametrize("text, expected, source", SCALARS, ids=[row[0] or "empty" for row in SCALARS])
def test_a_scalar_means_what_yaml_v3_and_the_pulumi_cli_make_of_it(text: str, expected: object, source: str) -> None:
    value = read_pulumi_yaml(f"v: {text}\n")["v"]
    assert value == expected and type(value) is type(expected), f"{text!r} -> {value!r}, not {expected!r} ({source})"


@pytest.mark.parametrize("document, complaint, source", REFUSED, ids=[row[0][:24] for row in REFUSED])
def test_a_document_the_cli_refuses_or_misreads_is_refused_in_one_line(document: str, complaint: str, source: str):
    with pytest.raises(YAMLInputError) as caught:
        read_pulumi_yaml(document)
    message = str(caught.value)
    assert complaint in message, f"{message!r} ({source})"
    assert "\n" not in message, "one line per problem"


def test_merge_keys_follow_yaml_v3_the_mapping_wins_then_the_first_merged_map() -> None:
    """decode.go merge(): keys already in the mapping stay; in a merged list, earlier maps win."""
    assert read_pulumi_yaml("a: {<<: [{b: 1}, {b: 2, c: 3}], b: 0}\n") == {"a": {"b": 0, "c": 3}}
    assert read_pulumi_yaml("x: &x {b: 1, c: 1}\ny:\n  <<: *x\n  c: 2\n") == {
        "x": {"b": 1, "c": 1},
        "y": {"c": 2, "b": 1},
    }


def test_a_quoted_merge_key_is_an_ordinary_key() -> None:
    assert read_pulumi_yaml("a: {'<<': 1}\n") == {"a": {"<<": 1}}


@pytest.mark.timeout(60)  # a hang guard: without the limit the expansion runs for minutes and dies of MemoryError
def test_an_alias_bomb_is_refused_at_yaml_v3s_expansion_limit() -> None:
    """decode.go: past 1000 decodes with more than 100 from aliases, at most 99 % may come from aliases."""
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    with pytest.raises(YAMLInputError, match="excessive aliasing"):
        read_pulumi_yaml("\n".join(lines) + "\n")


def test_an_alias_bomb_under_yaml_v3s_ratio_is_stopped_at_the_values_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """yaml.v3's ratio allows 99 % aliases below 400,000 values, so a small file still expands far; this reader
    counts as it expands and stops at its budget (lowered here to 100,000 to keep the test fast)."""
    from supersonic_interlink.config import pulumi_yaml

    monkeypatch.setattr(pulumi_yaml, "MAX_VALUES", 100_000)
    base = "b0: &b0 [" + ",".join(["x"] * 2_000) + "]\n"
    document = base + "".join(f"r{i}: *b0\n" for i in range(60))  # 4 kB, 122,000 values expanded, 98 % aliases
    with pytest.raises(YAMLInputError, match="more than 100,000 values with aliases expanded"):
        read_pulumi_yaml(document)
    assert len(read_pulumi_yaml(base + "".join(f"r{i}: *b0\n" for i in range(40)))) == 41, "82,000 values: within"


def test_a_merge_that_overrides_with_the_mappings_own_key_is_accepted() -> None:
    """The override idiom: the mapping's own key wins over the merged one, wherever it is written."""
    assert read_pulumi_yaml("x: &x {b: 1, c: 1}\ny:\n  c: 2\n  <<: *x\n")["y"] == {"c": 2, "b": 1}


def test_reading_is_linear_four_times_the_keys_take_about_four_times_the_work() -> None:
    """decode.go compares every key with every other (quadratic: four times the keys, sixteen times the work); a
    1.2 MB stack file took minutes. The work is counted, not timed: the lines the reader's own modules execute, which
    a pairwise loop would multiply by sixteen whatever the machine's load."""
    import sys
    from collections.abc import Callable
    from types import FrameType
    from typing import Any

    reader_files = {
        sys.modules["supersonic_interlink.config.pulumi_yaml"].__file__,
        sys.modules["supersonic_interlink.config.yaml_nodes"].__file__,
    }

    def lines_run(keys: int) -> int:
        document = "config:\n" + "".join(f"  k{i}: {i}\n" for i in range(keys))
        count = 0

        def trace(frame: FrameType, event: str, arg: Any) -> Callable[[FrameType, str, Any], Any] | None:
            nonlocal count
            if frame.f_code.co_filename not in reader_files:
                return None
            if event == "line":
                count += 1
            return trace

        sys.settrace(trace)
        try:
            assert len(read_pulumi_yaml(document)["config"]) == keys
        finally:
            sys.settrace(None)
        return count

    small, large = lines_run(500), lines_run(2_000)
    assert small > 500, "the count saw the reader work"
    assert large < 5 * small, f"500 keys: {small} lines run, 2,000 keys: {large}: not linear"


def test_a_duplicate_among_twenty_thousand_keys_is_found() -> None:
    document = "config:\n" + "".join(f"  k{i}: {i}\n" for i in range(20_000)) + "  k17: 1\n"
    with pytest.raises(YAMLInputError, match='line 20002: mapping key "k17" already defined at line 19'):
        read_pulumi_yaml(document)


def test_a_file_over_the_size_limit_is_refused_before_it_is_parsed() -> None:
    with pytest.raises(YAMLInputError, match=r"1,048,577 bytes: more than this reader reads \(1,048,576\)"):
        read_pulumi_yaml(b"#" * (1024 * 1024 + 1))
    assert read_pulumi_yaml(b"#" * (1024 * 1024)) is None, "a file of exactly the limit is read"


def test_modest_aliasing_within_the_limit_is_expanded() -> None:
    document = "base: &b {cpu: 2}\n" + "".join(f"k{i}: *b\n" for i in range(50))
    value = read_pulumi_yaml(document)
    assert value["k49"] == {"cpu": 2} and len(value) == 51


@pytest.mark.parametrize(
    "data, expected",
    [
        (b"\xef\xbb\xbfv: 1\n", {"v": 1}),  # loaders.go readFileStripUTF8BOM
        ("v: 1\n".encode("utf-16"), {"v": 1}),  # readerc.go: a UTF-16 BOM selects UTF-16
    ],
)
def test_byte_order_marks_are_read_as_the_cli_reads_them(data: bytes, expected: object) -> None:
    assert read_pulumi_yaml(data) == expected


def test_bytes_that_are_not_utf8_are_refused_with_their_offset() -> None:
    with pytest.raises(YAMLInputError, match=r"not UTF-8 text \(byte 0xff at offset 3\)"):
        read_pulumi_yaml(b"v: \xff\n")


def test_an_empty_file_or_one_with_only_comments_is_no_document() -> None:
    """loaders.go LoadProjectStackBytes: a nil document is an empty stack."""
    assert read_pulumi_yaml("") is None and read_pulumi_yaml("# nothing\n") is None


def test_folded_text_is_joined_with_spaces_as_yaml_says() -> None:
    assert read_pulumi_yaml("v: >-\n  a\n  b\n") == {"v": "a b"}


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ("0" + "7" * 400, "has a leading zero"),  # octal past int64: Go reads a float, here infinite
        ("-0" + "7" * 400, "has a leading zero"),
        ("0" + "7" * 5000, "has a leading zero"),
        ("9" * 400 + ".5e999", "is not a finite number"),
        ("!!float " + "x" * 5000, "cannot decode"),
    ],
)
def test_a_huge_number_is_one_short_line_naming_its_length(value: str, complaint: str) -> None:
    with pytest.raises(YAMLInputError) as refused:
        read_pulumi_yaml(f"config:\n  supersonic-interlink:scaleFromZero:\n    readyTimeoutSeconds: {value}\n")
    message = str(refused.value)
    assert complaint in message and "characters)" in message and len(message) < 300, message
