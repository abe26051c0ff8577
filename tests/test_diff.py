"""./supersonic diff's pure parts: matching objects across the two sides and printing a change. The command itself,
run as a reviewer runs it in a git checkout (two renders in interpreters of their own per case), is tested in
tests/e2e/test_diff_command.py."""

from __future__ import annotations

import pytest

from supersonic_interlink.diff.compare import compare
from supersonic_interlink.diff.report import field_lines
from supersonic_interlink.takeover.tree_diff import Change

# --------------------------------------------------------------------------------------------- pure parts


def config_map(name: str, text: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"envoy.yaml": text}}


def test_a_content_addressed_rename_is_one_replaced_object_with_its_fields() -> None:
    found = compare(
        [config_map("r-envoy-external-0123456789", "a\n")], [config_map("r-envoy-external-abcdef0123", "b\n")]
    )
    assert (found.added, found.removed) == ((), ())
    assert [(r.old.name, r.new.name) for r in found.replaced] == [
        ("r-envoy-external-0123456789", "r-envoy-external-abcdef0123")
    ]
    assert {c.path for c in found.replaced[0].changes} == {("data", "envoy.yaml"), ("metadata", "name")}


@pytest.mark.parametrize(
    "before, after",
    [(["r-a"], ["r-b"]), (["r-0123456789", "q-0123456789"], ["r-abcdef0123", "r-fedcba9876"])],
)
def test_names_that_are_not_one_hash_apart_stay_a_removal_and_an_addition(before: list, after: list) -> None:
    found = compare([config_map(n, "") for n in before], [config_map(n, "") for n in after])
    assert found.replaced == () and len(found.removed) == len(before)


def test_a_multi_line_text_shows_only_the_lines_that_changed() -> None:
    before = "".join(f"line {i}\n" for i in range(20))
    after = before.replace("line 10\n", "line ten\n")
    lines = field_lines(Change(("data", "envoy.yaml"), before, after))
    assert lines[0] == '    data["envoy.yaml"]'
    assert "-       line 10" in lines and "+       line ten" in lines
    assert "        line 0" not in lines, "two lines of context, not the whole text"
