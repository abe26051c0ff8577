"""The rules that span keys (scale from zero against KEDA, back-off against timeouts, ...): each problem one line,
with secret values shown by the caller's show."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from supersonic_interlink.config.model import (
    KedaSettings,
    ScaleFromZeroSettings,
)
from supersonic_interlink.config.show import key_of, show_value

# ---------------------------------------------------------------------------------------- cross-key rules


Show = Callable[[str, Any], str]
"""How a cross-key rule prints a value: ``show(top_level_key, value)`` (``[secret]`` for a secret key's)."""


def _check_scaling(sfz: ScaleFromZeroSettings, keda: KedaSettings, show: Show) -> list[str]:
    problems: list[str] = []
    if sfz.enabled and sfz.holdMinReplicasSeconds < sfz.readyTimeoutSeconds:
        hold, ready = show("scaleFromZero", sfz.holdMinReplicasSeconds), show("scaleFromZero", sfz.readyTimeoutSeconds)
        problems.append(
            f"{key_of('scaleFromZero.holdMinReplicasSeconds')} = {hold}: expected a value >= "
            f"scaleFromZero.readyTimeoutSeconds ({ready}); the chart refuses a hold shorter than the wake it protects"
        )
    if sfz.enabled and not keda.enabled:
        problems.append(
            f"{key_of('keda.enabled')} = {show('keda', False)}: expected true while scaleFromZero.enabled is true "
            f"(KEDA is what scales Triton back down)"
        )
    if keda.minReplicaCount > keda.maxReplicaCount:
        problems.append(
            f"{key_of('keda.minReplicaCount')} = {show('keda', keda.minReplicaCount)}: expected a value <= "
            f"keda.maxReplicaCount ({show('keda', keda.maxReplicaCount)})"
        )
    if keda.minReplicaCount == 0 and not sfz.enabled:
        problems.append(
            f"{key_of('keda.minReplicaCount')} = {show('keda', 0)}: expected >= 1 unless scaleFromZero.enabled is true "
            f"(nothing would wake Triton from zero)"
        )
    return problems


_CROSS_CHECKS: tuple[tuple[tuple[str, ...], Callable[..., list[str]]], ...] = (
    (("scaleFromZero", "keda"), _check_scaling),
)
"""Rules that relate several top-level keys, with the sections each needs. A rule runs whenever its sections
parsed, so a type error in one section does not hide a conflict in another. Rules within one section are model
validators of that section."""


def check_across_keys(sections: Mapping[str, Any], secrets: frozenset[str] = frozenset()) -> list[str]:
    def show(key: str, value: Any) -> str:
        return show_value(value, key in secrets)

    problems: list[str] = []
    for needs, check in _CROSS_CHECKS:
        if all(sections.get(name) is not None for name in needs):
            problems.extend(check(*(sections[name] for name in needs), show))
    return problems
