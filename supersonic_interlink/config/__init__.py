"""Typed stack settings: the one object every component receives, and the one declaration of every config key.
The modules ``rules``, ``model`` and ``loading`` hold them; their public names are re-exported here.

Defaults live in exactly one place, the ``config:`` block of ``Pulumi.yaml``. The Pulumi CLI passes each top-level
key either from the stack file or from that default (a stack value replaces the whole default object);
``load_settings`` then fills in the sub-keys the stack left out from the same defaults (``release.chart`` is
replaced whole), so a stack file states only what differs.

The shape of every key is declared here by pydantic models (strict: no text for numbers, no numbers for text;
unknown keys refused; frozen). Each bound comes from the value's consumer: Envoy's proto validation and its duration
limit, Kubernetes' types and validation, Helm, busybox arithmetic. Every problem is reported at once, one line each:
``supersonic-interlink:<full.key> = <value>: expected <what is allowed>``. ``Pulumi.yaml``'s ``type`` and
``description`` of each key are generated from these models
(``python -m supersonic_interlink.config.schema``), and a test fails when the two drift.
"""

from supersonic_interlink.config.loading import deep_merge, load_settings, project_defaults, thaw
from supersonic_interlink.config.model import ChartSource, Settings
from supersonic_interlink.config.pulumi_yaml import load_yaml
from supersonic_interlink.config.rules import (
    CLEANUP_KEEP_MAX,
    HELM_UPGRADE_MARGIN_SECONDS,
    PROJECT,
    PROJECT_FILE,
    RELEASE_NAME_MAX,
    ConfigError,
    Expect,
    Model,
    Why,
    expanded,
)

__all__ = [
    "CLEANUP_KEEP_MAX",
    "HELM_UPGRADE_MARGIN_SECONDS",
    "PROJECT",
    "PROJECT_FILE",
    "RELEASE_NAME_MAX",
    "ChartSource",
    "ConfigError",
    "Expect",
    "Model",
    "Settings",
    "Why",
    "deep_merge",
    "expanded",
    "load_settings",
    "load_yaml",
    "project_defaults",
    "thaw",
]
