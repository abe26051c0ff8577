"""Deploy SuperSONIC with scale from zero on interLink for the selected stack (one stack per cluster)."""

import sys

import pulumi

from supersonic_interlink.program import build, settings_or_stop

if pulumi.runtime.get_root_resource() is None:
    # Run as a plain script: no engine, so no stack to register under and no stack config to read.
    sys.exit(
        "__main__.py is the Pulumi program: the engine runs it (`pulumi preview --stack hammer`, or "
        "`./supersonic pulumi preview hammer`). To see what it deploys without a cluster: `./supersonic render hammer`."
    )

# Checked whole before any resource is registered, so a config mistake deploys nothing.
settings = settings_or_stop()
build(settings)
