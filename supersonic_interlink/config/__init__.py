"""Typed stack settings: the one object every component receives, and the one declaration of every config key.

``rules`` holds each value's rule and why, ``model`` the pydantic models with every default (strict: no text for
numbers, no numbers for text; unknown keys refused; frozen), ``loading`` turns the config the Pulumi CLI passes into
``Settings``, reporting every problem at once, one line each: ``supersonic-interlink:<full.key> = <value>: expected
<what is allowed>``. ``Pulumi.yaml``'s ``type``, ``description`` and ``default`` of each key are generated from the
models (``python -m supersonic_interlink.config.schema --write``), and a test fails when the two drift.
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
)

__all__ = [
    "CLEANUP_KEEP_MAX",
    "HELM_UPGRADE_MARGIN_SECONDS",
    "PROJECT",
    "PROJECT_FILE",
    "RELEASE_NAME_MAX",
    "ChartSource",
    "ConfigError",
    "Settings",
    "deep_merge",
    "load_settings",
    "load_yaml",
    "project_defaults",
    "thaw",
]
