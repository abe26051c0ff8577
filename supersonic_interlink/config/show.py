"""How a config error shows a key and a value: the one place that prints a stack value, so a secret never
reaches an error."""

from __future__ import annotations

import json
from typing import Any

from supersonic_interlink.config.rules import (
    PROJECT,
)

SHOWN_MAX = 200
"""Longest value an error prints whole; a longer one is cut, with its length."""
SECRET_SHOWN = "[secret]"
"""What an error prints in place of any part of a secret key's value."""


def show_value(value: Any, secret: bool) -> str:
    """A value as a config error prints it: the one place that does, so a secret is never printed (not even
    escaped: the CLI masks a secret by its exact text, and ``json.dumps`` escapes ``"``, ``\\`` and non-ASCII, which
    also keeps control characters in other values from reaching the terminal)."""
    if secret:
        return SECRET_SHOWN
    try:
        shown = json.dumps(value, sort_keys=True, default=str)
    except (ValueError, RecursionError):  # an integer past 4,300 digits, or nesting past the interpreter's
        shown = f"<{type(value).__name__} too large to print>"
    if len(shown) > SHOWN_MAX:
        shown = f"{shown[: SHOWN_MAX // 2]}... ({len(shown)} characters)"
    return shown


def key_of(path: str) -> str:
    return f"{PROJECT}:{path}"
