"""Paths as users see them: relative to the current folder when below it."""

from __future__ import annotations

import os
from pathlib import Path


def relative(path: Path | str) -> str:
    p = Path(path)
    try:
        return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return os.path.relpath(p) if p.is_absolute() else p.as_posix()
