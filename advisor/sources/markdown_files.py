"""Which Markdown files the project walk reads for launch commands, and which launch Documents came from
one. Kept apart from the fence parser (sources/markdown.py) and the README reader (sources/readme_launch.py)
so that a check of a project without a README imports neither (issue 18, cold start)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.core.document import Document

__all__ = ["MARKDOWN_SUFFIXES", "documented", "is_markdown", "project_markdown"]

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})  # read for the launch commands of their shell blocks


def is_markdown(path: Path) -> bool:
    return path.suffix.lower() in MARKDOWN_SUFFIXES


def documented(doc: Document) -> bool:
    """Whether a launch Document holds a Markdown file's commands (documentation, not a script)."""
    return doc.kind == "launch" and bool(getattr(doc.data, "documented", False))


def project_markdown(path: Path, top: Path) -> bool:
    """Whether the walk of folder `top` reads a Markdown file for launch commands: a README.md or
    README_*.md (any case) in `top` or a folder directly below it, or a .md file of `top`/docs/."""
    if not is_markdown(path):
        return False
    try:
        rel = Path(os.path.relpath(path, top))
    except ValueError:
        return False
    parts = rel.parts
    if not parts or parts[0] == ".." or len(parts) > 2:
        return False
    if len(parts) == 2 and parts[0].lower() == "docs":
        return True
    stem = rel.stem.lower()
    return stem == "readme" or stem.startswith("readme_") or stem.startswith("readme-")
