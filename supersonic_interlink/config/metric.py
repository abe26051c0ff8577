"""The load metric must measure this stack's release: its ``release`` and ``namespace`` selectors are checked.

``serverLoad.metric`` is PromQL that KEDA evaluates to scale Triton. The live hammer metric selects its series with
``release=~"supersonic-interlink", namespace=~"cms"``; a stack file copied for another cluster keeps those unless
someone remembers them, and KEDA would then scale the new release on the old one's queue. So every ``release`` and
``namespace`` label matcher that selects (``=`` or ``=~``; Prometheus anchors a regular expression at both ends) must
select this stack's instance name and namespace and nothing else: ``="<name>"``, or ``=~`` with the name itself as the
expression (``=~"supersonic-interlink"``, as the live metric writes it); ``=~".*"`` or an alternation selects other
releases too and is refused. A metric that is set must have both a ``release`` and a ``namespace`` selector, or it
would sum every release's queue. Negative matchers (``!=``, ``!~``) select nothing and are left alone. An empty
metric (the chart's own) and a secret rendered offline as its placeholder are not checked here.
"""

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


def _selects_only(matcher: Matcher, wanted: str) -> bool:
    """Whether the matcher selects ``wanted`` and no other value: the name itself, or the name as an expression
    (a release or namespace name is a DNS label, so escaping changes nothing but ``-``)."""
    return matcher.value == wanted or (matcher.op == "=~" and matcher.value == re.escape(wanted))


def borrowed_selectors(metric: str, release: str, namespace: str, *, secret: bool = False) -> list[str]:
    """One line per selector of ``metric`` that selects another release or namespace than this stack's.

    ``secret``: the metric came from a secret, so the message names the label but not what the metric says.
    """
    if not metric.strip() or SECRET_PLACEHOLDER in metric:
        return []  # the chart's own metric; or a secret, whose text is not here offline (pulumi preview checks it)
    wanted = {"release": release, "namespace": namespace}
    setting = {"release": "release.name", "namespace": "namespace"}
    problems = []
    found = matchers(metric)
    for label in ("release", "namespace"):
        if not any(m.label == label and m.op in ("=", "=~") for m in found):
            problems.append(
                f'{PROJECT}:serverLoad.metric: no {label} selector; expected {label}=~"{wanted[label]}" in each '
                f"series selector ({setting[label]}), or KEDA would scale this release on every {label}'s load"
            )
    for matcher in found:
        if matcher.op not in ("=", "=~") or _selects_only(matcher, wanted[matcher.label]):
            continue
        shown = f"its {matcher.label} selector" if secret else matcher.text
        problems.append(
            f"{PROJECT}:serverLoad.metric: {shown} selects another {matcher.label} than this stack's "
            f'{wanted[matcher.label]!r} ({setting[matcher.label]}); expected {matcher.label}=~"{wanted[matcher.label]}"'
            f" (KEDA would scale this release on another release's load)"
        )
    return problems
