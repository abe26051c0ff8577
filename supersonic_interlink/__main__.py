"""``python -m supersonic_interlink <verb> ...``: the CLI behind ``./supersonic`` (see ``cli/main.py``)."""

import sys

from supersonic_interlink.cli.main import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
