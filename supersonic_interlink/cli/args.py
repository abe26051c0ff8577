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


def unknown_stack(stack: str) -> str | None:
    """Why ``stack`` names no stack file here (the Pulumi CLI's name rule first), or None when it does."""
    from supersonic_interlink.config import ConfigError
    from supersonic_interlink.config.stack_config import check_stack_name, stack_names

    try:
        check_stack_name(stack)
    except ConfigError as error:
        return error.problems[0]
    if stack not in stack_names():
        return f"no stack {stack!r}; stacks: {', '.join(stack_names())}"
    return None
