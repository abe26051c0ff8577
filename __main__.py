"""Deploy SuperSONIC with scale from zero on interLink for the selected stack (one stack per cluster)."""

from supersonic_interlink.program import build, settings_or_stop

# The whole stack config, checked before any resource is registered; every problem is reported at once.
settings = settings_or_stop()
# The Envoy ConfigMap, the SuperSONIC release and the failed-pod cleanup, and the stack's exports.
build(settings)
