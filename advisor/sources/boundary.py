"""The project boundary: the folders gpu-advise may read (and --fix may write) when a file names another.

A config from an untrusted pull request may name `/etc/shadow`, `../outside/ds.json`, `~/.ssh/id_rsa`
or a symlink that leaves the checkout. Only files inside the project root, or inside a root the
settings allow by name (`allowed-roots`), are opened because another file names them. Paths the user
gives on the command line are not judged here: the user asked for them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from advisor.core.records import record

if TYPE_CHECKING:
    from advisor.sources.settings import Settings


def _resolved(path: Path) -> Path:
    """Absolute, `..` collapsed and symlinks followed (as far as they exist); never raises."""
    try:
        return Path(os.path.realpath(os.path.expanduser(path)))
    except (OSError, ValueError, RuntimeError):
        return Path(os.path.abspath(path))


@record(frozen=True, slots=True)
class ProjectBoundary:
    roots: tuple[Path, ...]  # resolved absolute folders

    def contains(self, path: Path) -> bool:
        """Whether `path`, resolved (symlinks followed), lies in one of the roots."""
        target = _resolved(path)
        return any(target == root or target.is_relative_to(root) for root in self.roots)

    def outside_reason(self, path: Path) -> str | None:
        """None when `path` is inside; else one line naming the path (never its content)."""
        if self.contains(path):
            return None
        target = _resolved(path)
        shown = str(path)
        via = f" (resolves to {target})" if str(target) != shown else ""
        roots = ", ".join(str(r) for r in self.roots)
        return f"'{shown}'{via} is outside the project ({roots}); not read"


def find_work_tree(start: Path) -> Path | None:
    """The git work tree holding `start`: the closest folder at or above it with a `.git` entry.

    `.git` may be a folder or a file (worktrees, submodules); git itself is never run."""
    here = _resolved(start)
    if not here.is_dir():
        here = here.parent
    for folder in (here, *here.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return None


# Files that mark a folder as a Python project's root (a checkout without .git: a release tarball)
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt")


def project_root(settings: Settings, seeds: Sequence[Path]) -> Path:
    """The git work tree of the checked paths, else the settings file's folder, else the current folder
    when the checked path is inside it and it is a project's root (`gpu-advise check examples/train.sh`
    from a release tarball's root: the script names files from there), else the checked folder.

    The current folder counts only with a project marker file, and never as the home folder or `/`:
    a downloaded repository checked from `~` must not make the whole home folder readable to the
    references it writes (`--hostfile ../../.netrc`)."""
    first = seeds[0] if seeds else Path.cwd()
    tree = find_work_tree(first)
    if tree is not None:
        return tree
    if settings.source is not None:
        return _resolved(settings.source.parent)
    resolved = _resolved(first)
    folder = resolved if resolved.is_dir() else resolved.parent
    cwd = _resolved(Path.cwd())
    if folder != cwd and folder.is_relative_to(cwd) and _is_project_root(cwd):
        return cwd
    return folder


def _is_project_root(folder: Path) -> bool:
    if folder == Path(folder.anchor) or folder == _resolved(Path.home()):
        return False
    return any((folder / name).is_file() for name in PROJECT_MARKERS)


def project_boundary(settings: Settings, seeds: Sequence[Path]) -> ProjectBoundary:
    """The roots for one check: the project root of every seed plus the settings' `allowed-roots`."""
    roots: list[Path] = []
    # run from a superproject, a seed inside one of its submodules still belongs to the superproject
    outer = find_work_tree(Path.cwd())
    for seed in seeds or [Path.cwd()]:
        root = project_root(settings, [seed])
        if outer is not None and root.is_relative_to(outer):
            root = outer
        if root not in roots:
            roots.append(root)
    base = _resolved(settings.source.parent) if settings.source is not None else _resolved(Path.cwd())
    for entry in getattr(settings, "allowed_roots", ()):
        extra = Path(os.path.expanduser(entry))
        extra = _resolved(extra if extra.is_absolute() else base / extra)
        if extra not in roots:
            roots.append(extra)
    return ProjectBoundary(tuple(roots))


def local_path_outside(raw: str, boundary: ProjectBoundary) -> str | None:
    """For a value that may be a local path or a name (a model: a folder or a hub id): why it is not
    read when it is a path outside the boundary, else None. Written like a path (absolute, `~`,
    `./`, `../`) is judged without looking; otherwise only a path that exists is one."""
    written = raw.strip()
    if not written:
        return None
    try:
        path = Path(os.path.expanduser(written))
        looks_like_path = path.is_absolute() or written.startswith(("./", "../", "~"))
        if not looks_like_path and not os.path.lexists(path):
            return None
    except (OSError, ValueError, RuntimeError):
        return None
    return boundary.outside_reason(path)
