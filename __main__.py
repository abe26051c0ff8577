"""Deploy SuperSONIC with scale from zero on interLink for the selected stack (one stack per cluster)."""

from supersonic_interlink.program import main

main()
