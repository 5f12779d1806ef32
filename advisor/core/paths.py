"""Paths as users see them: relative to the current folder when below it."""

from __future__ import annotations

import os
from pathlib import Path


def resolved(path: Path | str) -> Path:
    """Absolute with symlinks followed as far as they go; unlike Path.resolve() on Python 3.11, a
    symlink loop does not raise (the loop is reported where the file is read)."""
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError):
        return Path(os.path.abspath(path))


def relative(path: Path | str) -> str:
    p = Path(path)
    try:
        return resolved(p).relative_to(resolved(Path.cwd())).as_posix()
    except (ValueError, OSError):
        return os.path.relpath(p) if p.is_absolute() else p.as_posix()
