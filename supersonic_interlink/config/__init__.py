"""Typed stack settings: the one object every component receives, and the one declaration of every config key
(docs/architecture.md names each module's part)."""

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
