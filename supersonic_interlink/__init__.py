"""supersonic-interlink: the Pulumi program and its tools. ``docs/architecture.md`` maps the packages."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The project directory: ``Pulumi.yaml``, ``stacks/`` and the front door ``./supersonic``."""

EXIT_OK, EXIT_FINDING, EXIT_USAGE, EXIT_SKIPPED = 0, 1, 2, 3
"""Exit codes, the same for every verb: 0 done / no changes / no findings; 1 a check found something or an operation
failed; 2 a usage or config error (nothing was run); 3 a check could not run, under ``--strict``."""
