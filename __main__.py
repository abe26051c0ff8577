"""Deploy SuperSONIC with scale from zero on interLink for the selected stack (one stack per cluster)."""

from supersonic_interlink.program import build, settings_or_stop

# Checked whole before any resource is registered, so a config mistake deploys nothing.
settings = settings_or_stop()
build(settings)
