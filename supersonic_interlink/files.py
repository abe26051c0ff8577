"""Writing the files a tool is told to write (``--out``), without following a link someone planted there."""

from __future__ import annotations

import argparse
import errno
import os
from pathlib import Path


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path``; a symbolic link there, perhaps planted, is an ``OSError`` (ELOOP), never followed."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, f"{path} is a symbolic link; not followed (remove it)") from None
        raise
    with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
        stream.write(text)


def output_path(text: str) -> Path:
    """An ``--out`` argument: not empty (``Path("")`` is the current directory) and not itself a symbolic link."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is empty; expected a path to write to")
    path = Path(text)
    if path.is_symlink():
        raise argparse.ArgumentTypeError(f"{text!r} is a symbolic link; give the path it should write to itself")
    return path
