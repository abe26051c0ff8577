"""supersonic-interlink: the Pulumi program and its tools. ``docs/architecture.md`` maps the packages."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The project directory: ``Pulumi.yaml``, ``stacks/`` and the front door ``./supersonic``."""
