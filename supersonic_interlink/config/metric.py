"""The load metric must measure this stack's release: its ``release`` and ``namespace`` selectors are checked.

``serverLoad.metric`` is PromQL that KEDA evaluates to scale Triton. The live hammer metric selects its series with
``release=~"supersonic-interlink", namespace=~"cms"``; a stack file copied for another cluster keeps those unless
someone remembers them, and KEDA would then scale the new release on the old one's queue. So every ``release`` and
``namespace`` label matcher that selects (``=`` or ``=~``; Prometheus anchors a regular expression at both ends) must
select this stack's instance name and namespace. Negative matchers (``!=``, ``!~``) select nothing and are left
alone; a metric without such selectors (the chart's own, or a secret rendered offline as its placeholder) passes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from supersonic_interlink.config.rules import PROJECT

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
    """The matcher as written, for the message."""


def _unquote(quoted: str) -> str:
    body = quoted[1:-1]
    if quoted[0] == "`":
        return body
    # PromQL strings take Go's escapes; the ones a label value uses are \\ and the quote itself.
    return re.sub(r"\\(.)", r"\1", body)


def matchers(metric: str) -> list[Matcher]:
    """The ``release`` and ``namespace`` label matchers of a PromQL expression, in order."""
    return [Matcher(m["label"], m["op"], _unquote(m["value"]), m.group(0)) for m in _MATCHER.finditer(metric)]


def _selects(matcher: Matcher, wanted: str) -> bool:
    if matcher.op == "=":
        return matcher.value == wanted
    try:
        return re.fullmatch(matcher.value, wanted) is not None
    except re.error:
        return False


def borrowed_selectors(metric: str, release: str, namespace: str, *, secret: bool = False) -> list[str]:
    """One line per selector of ``metric`` that selects another release or namespace than this stack's.

    ``secret``: the metric came from a secret, so the message names the label but not what the metric says.
    """
    wanted = {"release": release, "namespace": namespace}
    setting = {"release": "release.name", "namespace": "namespace"}
    problems = []
    for matcher in matchers(metric):
        if matcher.op not in ("=", "=~") or _selects(matcher, wanted[matcher.label]):
            continue
        shown = f"its {matcher.label} selector" if secret else matcher.text
        problems.append(
            f"{PROJECT}:serverLoad.metric: {shown} selects another {matcher.label} than this stack's "
            f'{wanted[matcher.label]!r} ({setting[matcher.label]}); expected {matcher.label}=~"{wanted[matcher.label]}"'
            f" (KEDA would scale this release on another release's load)"
        )
    return problems
