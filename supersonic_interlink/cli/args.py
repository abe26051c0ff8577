"""Argument types the verbs share: an empty path or name is a usage error, not the current directory."""

from __future__ import annotations

import argparse
from pathlib import Path


def path(text: str) -> Path:
    """A path argument: ``Path("")`` would silently mean the current directory."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: expected a path")
    return Path(text)


def name(text: str) -> str:
    """A name argument (a stack to filter by): empty would match nothing and report nothing."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: expected a name")
    return text
