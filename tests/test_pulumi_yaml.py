"""The stack-file reader takes only YAML that the Pulumi CLI (yaml.v3), YAML 1.1 and YAML 1.2 read alike and refuses
the rest in one line; tests/e2e/test_config_agreement.py compares it with the real CLI."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from supersonic_interlink.config.pulumi_yaml import YAMLInputError, read_pulumi_yaml

# (YAML scalar, value the program receives)
ACCEPTED = [
    ("~", None),
    ("", None),
    ("FALSE", False),
    ("-17", -17),
    ("9223372036854775807", 9223372036854775807),
    (".5", 0.5),
    ("1.", 1),
    ("1.0", 1),  # Go's JSON writes float64 1 as 1: the program receives an integer
    ("1.0e+20", 100000000000000000000),
    ("1.0e+21", 1e21),  # from 1e21 on Go's JSON writes an exponent
    ("tRUE", "tRUE"),
    ("0x1p-2", "0x1p-2"),  # text to every reader
    ("1e", "1e"),
    ("'yes'", "yes"),
    ("'<<'", "<<"),
    ("[1, a, {b: null}]", [1, "a", {"b": None}]),
]

# one value per way YAML 1.1 and yaml.v3 differ: time, octal, leading zero, non-finite, past int64 (in an object the
# CLI rounds it to 9223372036854776000), a number only Go reads, a number or boolean only YAML 1.1 reads
READ_APART = ["2024-1-5", "0600", "08", ".nan", "1.0e+999", "9223372036854775808", "1e20", "0o17", "1_000", "1:30", "n"]
# (document, a fragment of the one-line refusal)
ALIKE = "is not read alike by YAML 1.1 and the Pulumi CLI"
REFUSED: list[tuple[str | bytes, str]] = [
    ("v: 1\nv: 2\n", 'line 2: mapping key "v" already defined at line 1'),
    ("v: !!str 12\n", "line 1: v: tag !!str: readers take it differently; write the value out plainly"),
    ("v: &a 1\n", "anchor &a: readers take it differently"),
    ("v: *nowhere\n", "alias *nowhere"),
    ("a: {<<: {b: 1}}\n", "line 1: a: merge key <<"),
    ("%YAML 1.1\n---\nv: 1\n", "line 1: a %YAML or %TAG directive"),
    ("v: 1\n---\nw: 2\n", "line 2: a second YAML document"),
    ("v: 2024-01-01\n", f"line 1: v: 2024-01-01 {ALIKE}; write a decimal number (within 64 bits), true or false"),
    *((f"v: {text}\n", ALIKE) for text in READ_APART),
    ("v: " + "0" + "7" * 5000 + "\n", "(5001 characters) " + ALIKE),
    ("v: " + "1" * 5000 + "\n", "(5000 characters) " + ALIKE),
    ("1.0: a\n", "key '1.0' is not text to every reader; quote it"),
    ("2024-01-01: a\n", ALIKE),
    ("? [a]\n: 1\n", "a mapping or sequence as a key"),
    ("v: \x01\n", "character #x0001"),
    ("v: [1\n", "not valid YAML: line"),
    ("v: " + "[" * 100 + "]" * 100 + "\n", "nested more than 100"),
    ("v:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(120)), "line 101: "),
    ("config:\n  p:k:\n    - a\n    - {b: 0600}\n", f"line 4: config.p:k[1].b: 0600 {ALIKE}"),
    (
        "config:\n" + "".join(f"  k{i}: {i}\n" for i in range(20_000)) + "  k17: 1\n",
        'line 20002: config: mapping key "k17" already defined at line 19',
    ),
    (b"v: \xff\n", "not UTF-8 text (byte 0xff at offset 3)"),
    (b"#" * (1024 * 1024 + 1), "1,048,577 bytes: more than this reader reads (1,048,576)"),  # refused before parsing
]


@pytest.mark.parametrize("text, expected", ACCEPTED, ids=[row[0] or "empty" for row in ACCEPTED])
def test_an_accepted_scalar_is_the_value_the_program_receives(text: str, expected: object) -> None:
    value = read_pulumi_yaml(f"v: {text}\n")["v"]
    assert value == expected and type(value) is type(expected), f"{text!r} -> {value!r}, not {expected!r}"


@pytest.mark.parametrize("document, complaint", REFUSED, ids=[str(row[0])[:24] for row in REFUSED])
def test_a_construct_the_readers_disagree_on_is_refused_in_one_line(document: str | bytes, complaint: str) -> None:
    with pytest.raises(YAMLInputError) as caught:
        read_pulumi_yaml(document)
    message = str(caught.value)
    assert complaint in message and "\n" not in message, message


def test_reading_is_linear_four_times_the_keys_take_about_four_times_the_work() -> None:
    """yaml.v3 compares every key with every other (quadratic). Counted, not timed: the reader's lines run."""
    reader = sys.modules["supersonic_interlink.config.pulumi_yaml"].__file__

    def lines_run(keys: int) -> int:
        document = "config:\n" + "".join(f"  k{i}: {i}\n" for i in range(keys))
        count = 0

        def trace(frame: FrameType, event: str, arg: Any) -> Callable[[FrameType, str, Any], Any] | None:
            nonlocal count
            count += event == "line"
            return trace if frame.f_code.co_filename == reader else None

        sys.settrace(trace)
        try:
            assert len(read_pulumi_yaml(document)["config"]) == keys
        finally:
            sys.settrace(None)
        return count

    small, large = lines_run(500), lines_run(2_000)
    assert small > 500, "the count saw the reader work"
    assert large < 5 * small, f"500 keys: {small} lines run, 2,000 keys: {large}: not linear"


@pytest.mark.parametrize(
    "data, expected",
    [
        (b"\xef\xbb\xbfv: 1\n", {"v": 1}),  # loaders.go readFileStripUTF8BOM
        ("v: 1\n".encode("utf-16"), {"v": 1}),  # readerc.go: a UTF-16 BOM selects UTF-16
        ("", None),  # loaders.go LoadProjectStackBytes: a nil document is an empty stack
        ("v: >-\n  a\n  b\n", {"v": "a b"}),  # folded text is joined with spaces
        pytest.param(b"#" * (1024 * 1024), None, id="exactly-the-size-limit-is-read"),
    ],
)
def test_a_whole_document_is_read_as_the_cli_reads_it(data: str | bytes, expected: object) -> None:
    assert read_pulumi_yaml(data) == expected
