"""A bounded walk of the project that holds a file, for facts about files no launch connects to it: the
scripts whose parser may read a lone config (advisor.facts.script_flags), the sharding launch configs a lone
training file may be launched with (advisor.facts.run). Installed trees and hidden folders are skipped, and
so is what the check's own folder walk skips (advisor/sources/exclude.py: `exclude`, `extend-exclude` of the
settings near the root, and what git ignores): a file the check does not read must not decide a fact.

The facts never walk: they ask the check's context (`CheckContext.project_files`), which walks once per
root and suffixes and keeps the listing for the check (or is given one: `CheckContext.preset`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.sources.boundary import ProjectBoundary
    from advisor.sources.exclude import FileFilter

MAX_PROJECT_FILES = 2_000
# installed packages (transformers' own hf_argparser.py) and other trees that are not the project's files
_NOT_PROJECT_FOLDERS = frozenset(
    {"node_modules", "venv", "env", "site-packages", "dist-packages", "__pycache__"}
)


def project_root_of(path: Path, boundary: ProjectBoundary) -> Path | None:
    """The boundary root that holds ``path`` (the project's work tree), or None."""
    here = path.resolve()
    roots = [r for r in boundary.roots if r == here or r in here.parents]
    return max(roots, key=lambda r: len(r.parts)) if roots else None


def walk_project_files(
    root: Path, suffixes: tuple[str, ...], boundary: ProjectBoundary, skipped: FileFilter
) -> Iterator[Path]:
    """The files under ``root`` whose names end in one of ``suffixes``, in a stable order, that
    ``skipped`` does not skip; at most MAX_PROJECT_FILES of them, so a root that is a home folder stays
    cheap. A symlink that leaves the boundary is passed by unopened (os.walk does not follow symlinked
    folders)."""
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".")
            and d not in _NOT_PROJECT_FOLDERS
            and not skipped.skip(os.path.join(dirpath, d), True)
        )
        for name in sorted(filenames):
            if not name.endswith(suffixes) or skipped.skip(os.path.join(dirpath, name), False):
                continue
            seen += 1
            if seen > MAX_PROJECT_FILES:
                return
            path = Path(dirpath, name)
            if not os.path.islink(path) or boundary.contains(path):
                yield path
