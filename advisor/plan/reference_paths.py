"""Where a path written in a project file points: the folders a relative path may start from (the naming
file's folder and its parents up to the project root, then a launch script's `cd`), and the file it names
there, judged against the project boundary before anything outside is touched. Discovery resolves every
reference through these; the check context asks them for the launched script (advisor/plan/context)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from advisor.core.paths import resolved
from advisor.sources.boundary import ProjectBoundary

__all__ = ["command_bases", "names_file", "resolve_reference", "start_folders"]


def _lexically_inside(base: Path, candidate: Path, boundary: ProjectBoundary) -> bool:
    """Whether base/candidate lies in a root with `..` collapsed but no link in `candidate` followed
    (the base is a real folder: resolved, so a linked /tmp or home folder compares right)."""
    flat = Path(os.path.normpath(os.path.join(resolved(base), candidate)))
    return any(flat == root or flat.is_relative_to(root) for root in boundary.roots)


def resolve_reference(
    raw: str, named_in: Path, bases: list[Path], boundary: ProjectBoundary | None
) -> tuple[Path | None, str | None]:
    """The file a reference names, or (None, why it is not read) when it leaves the boundary.

    A path outside the boundary is judged before anything touches it: not even its existence is
    looked up. An absolute path, `~`, `..` that climbs out of the naming file's folder, and a
    symlink inside the project that points out all count as outside."""
    try:
        candidate = Path(os.path.expanduser(raw))
    except (RuntimeError, ValueError):
        candidate = Path(raw)
    if candidate.is_absolute():
        if boundary is not None and not boundary.contains(candidate):
            return None, boundary.outside_reason(candidate)
        return (candidate if names_file(candidate) else None), None
    outside: Path | None = None
    for base in bases:
        p = base / candidate
        if boundary is None or boundary.contains(p):
            if names_file(p):
                return p, None
            continue
        # outside: a link in the project that points out, or a path climbing out of the naming folder
        if outside is None and (
            (_lexically_inside(base, candidate, boundary) and os.path.lexists(p))
            or os.path.abspath(base) == os.path.abspath(named_in.parent)
        ):
            outside = p
    if outside is not None and boundary is not None:
        return None, boundary.outside_reason(outside)
    return None, None


def names_file(path: Path) -> bool:
    """Something that is there and is not a folder: a FIFO or a device is returned too, so that the
    reader refuses it by name (GA001) instead of calling it missing."""
    try:
        return not stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def start_folders(doc_path: Path) -> list[Path]:
    """Where a relative path written in a file may point: the file's folder and its parents up to the
    project root (scripts are usually started from the repo root). Never the folder `check` is started
    from: the answer must not depend on it. The file's folder is made absolute first: `Path("x.sh").parent`
    is `.`, whose parent is itself, so a file named relative to the current folder would climb nowhere
    (`cd qwen/finetune && check x.sh`)."""
    bases = []
    here = Path(os.path.abspath(doc_path)).parent
    for _ in range(6):
        bases.append(here)
        if (here / ".git").exists() or (here / "pyproject.toml").exists() or here.parent == here:
            break
        here = here.parent
    return bases


def command_bases(doc_path: Path, workdir: Any, boundary: ProjectBoundary | None) -> list[Path]:
    """The folders a launch command of `doc_path` may run in: a launch script is started from its own
    folder or a parent up to the project root (`_bases`), then the script's `cd` moves it (`workdir`,
    advisor/sources/shell/workdir.py). A `cd` whose folder is not known, or that leaves the project,
    leaves the folders it may start from."""
    starts = start_folders(doc_path)
    path = getattr(workdir, "path", None)
    if path is None:
        return starts
    if workdir.script_dir:
        return [Path(os.path.normpath(starts[0] / path))]
    if os.path.isabs(path):
        inside = boundary is None or boundary.contains(Path(path))
        return [Path(path)] if inside else starts
    return list(dict.fromkeys(Path(os.path.normpath(s / path)) for s in starts))
