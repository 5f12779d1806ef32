"""The paths named on the command line: which of them gpu-advise reads (advisor.sources.classify.read_as).

Kept light (the classifier and the safe reader only): the hook names every staged file, and a commit
that touches none gpu-advise reads ends here, before the checker is imported.
"""

from __future__ import annotations

import os
from pathlib import Path

from advisor.core.records import record
from advisor.sources.read import ReadRefused, read_head


def _is_file(path: Path) -> bool:
    try:
        return os.path.isfile(path)
    except (OSError, ValueError):
        return False


def reads_as(path: Path) -> str | None:
    """What gpu-advise reads the file as (advisor.sources.classify.read_as), its head read safely."""
    from advisor.sources.classify import read_as

    def head() -> bytes | None:
        try:
            return read_head(path, 4096)
        except ReadRefused:
            return None

    return read_as(path.name, head)


@record(slots=True)
class NamedPaths:
    """The paths named on the command line, split: those to check, and the files gpu-advise does not
    read (a README.md, a Makefile, a model's weights)."""

    kept: list[Path]
    unread: list[Path]


def named_paths(paths: list[Path]) -> NamedPaths:
    """Split the named paths by whether gpu-advise reads them (by name, suffix, shebang, `#SBATCH`,
    hostfile lines): a folder, a missing path and a file it reads are kept (the check then says what
    is wrong with them); `check README.md` is a note, not "invalid YAML". Cheap: no import beyond the
    classifier, at most 4 KB read of a file without a suffix."""
    kept: list[Path] = []
    unread: list[Path] = []
    for path in paths:
        if _is_file(path) and reads_as(path) is None:
            unread.append(path)
        else:
            kept.append(path)
    return NamedPaths(kept, unread)
