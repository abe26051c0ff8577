"""``serverLoad.metric``'s ``release`` and ``namespace`` matchers must select this stack's alone (Prometheus anchors
``=~``), and both be there, or KEDA scales on another release's queue; negative matchers are left alone."""

from __future__ import annotations

import re
from dataclasses import dataclass

from supersonic_interlink.config.rules import PROJECT
from supersonic_interlink.config.stack_config import SECRET_PLACEHOLDER

_MATCHER = re.compile(
    r"(?<![\w.])(?P<label>release|namespace)\s*(?P<op>=~|!~|!=|=)\s*"
    r"(?P<value>\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`[^`]*`)"
)


@dataclass(frozen=True)
class Matcher:
    label: str
    op: str
    value: str
    text: str


def _unquote(quoted: str) -> str:
    body = quoted[1:-1]
    if quoted[0] == "`":
        return body
    return re.sub(r"\\(.)", r"\1", body)


def matchers(metric: str) -> list[Matcher]:
    return [Matcher(m["label"], m["op"], _unquote(m["value"]), m.group(0)) for m in _MATCHER.finditer(metric)]


def _selects_only(matcher: Matcher, wanted: str) -> bool:
    return matcher.value == wanted or (matcher.op == "=~" and matcher.value == re.escape(wanted))


def borrowed_selectors(metric: str, release: str, namespace: str, *, secret: bool = False) -> list[str]:
    """One line per selector missing or selecting another release or namespace; a secret's text is not shown."""
    if not metric.strip() or SECRET_PLACEHOLDER in metric:
        return []  # the chart's own; or a secret rendered offline (pulumi preview checks it)
    wanted = {"release": release, "namespace": namespace}
    setting = {"release": "release.name", "namespace": "namespace"}
    problems = []
    found = matchers(metric)
    for label in ("release", "namespace"):
        if not any(m.label == label and m.op in ("=", "=~") for m in found):
            problems.append(
                f'{PROJECT}:serverLoad.metric: no {label} selector; expected {label}=~"{wanted[label]}" in each '
                f"series selector ({setting[label]})"
            )
    for matcher in found:
        if matcher.op not in ("=", "=~") or _selects_only(matcher, wanted[matcher.label]):
            continue
        shown = f"its {matcher.label} selector" if secret else matcher.text
        problems.append(
            f"{PROJECT}:serverLoad.metric: {shown} selects another {matcher.label} than this stack's "
            f'{wanted[matcher.label]!r} ({setting[matcher.label]}); expected {matcher.label}=~"{wanted[matcher.label]}"'
        )
    return problems
