"""Typed stack settings: the one object every component receives, and the one declaration of every config key
(docs/architecture.md names each module's part)."""

from supersonic_interlink.config.loading import deep_merge as deep_merge
from supersonic_interlink.config.loading import load_settings as load_settings
from supersonic_interlink.config.pulumi_yaml import load_yaml as load_yaml
from supersonic_interlink.config.rules import CLEANUP_KEEP_MAX as CLEANUP_KEEP_MAX
from supersonic_interlink.config.rules import HELM_UPGRADE_MARGIN_SECONDS as HELM_UPGRADE_MARGIN_SECONDS
from supersonic_interlink.config.rules import PROJECT as PROJECT
from supersonic_interlink.config.rules import RELEASE_NAME_MAX as RELEASE_NAME_MAX
from supersonic_interlink.config.rules import ChartSource as ChartSource
from supersonic_interlink.config.rules import ConfigError as ConfigError
from supersonic_interlink.config.rules import Settings as Settings
from supersonic_interlink.config.rules import thaw as thaw
