"""One ComponentResource per module."""
