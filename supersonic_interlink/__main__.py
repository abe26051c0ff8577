"""``python -m supersonic_interlink <verb> ...``: the CLI behind ``./supersonic`` (see ``cli/main.py``)."""

import sys

from supersonic_interlink.cli.main import main

if __name__ == "__main__":
    # A path or name the terminal's encoding cannot show (PYTHONIOENCODING=ascii) is printed escaped, as Python
    # already prints it on stderr, not a UnicodeEncodeError halfway through the output.
    sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    sys.exit(main(sys.argv[1:]))
