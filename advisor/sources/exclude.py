"""Which files a check reads: the exclusions (ruff's `exclude`, `extend-exclude`, `force-exclude`,
`respect-gitignore`) and what git ignores.

- `exclude` (settings, or `--exclude` on the command line, which replaces the settings' list) replaces
  DEFAULT_EXCLUDE; `extend-exclude` (settings and command line) adds to it.
- A pattern is a glob (advisor/sources/globs.py: `*` and `?` stay inside a name, `**` crosses folders).
  Without a `/` it matches a file or folder of that name at any depth; with one, the path relative to
  the settings file's folder (the current folder for the command line's). A trailing `/` matches
  folders only. A folder that matches is not entered.
- In a git work tree, untracked files git ignores are skipped (advisor/sources/gitignore.py), unless
  `respect-gitignore = false`.
- A path named on the command line is read whatever the patterns say, unless `force-exclude`
  (`--force-exclude`, which the pre-commit hooks pass: pre-commit names every staged file).
- Always skipped, whatever `exclude` says: the version-control folders and virtual environments
  (a folder holding pyvenv.cfg; the walkers in advisor/plan/discover.py test that).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from advisor.core.records import field, record
from advisor.sources.globs import compile_glob

if TYPE_CHECKING:
    from advisor.core.settings_types import Settings
    from advisor.sources.gitignore import WorkTree

ALWAYS_SKIPPED = frozenset({".git", ".hg", ".svn", ".bzr"})

DEFAULT_EXCLUDE: tuple[str, ...] = (
    # ruff's default list (ruff_workspace settings.rs EXCLUDE), plus the folders the walk always skipped
    ".direnv",
    ".eggs",
    ".git-rewrite",
    ".ipynb_checkpoints",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pyenv",
    ".pytest_cache",
    ".pytype",
    ".ruff_cache",
    ".tox",
    ".venv",
    "__pycache__",
    "__pypackages__",
    "_build",
    "buck-out",
    "build",
    "dist",
    "env",
    "node_modules",
    "site-packages",
    "venv",
    "*.egg-info",
    # what training writes: HF Trainer's checkpoints (trainer.py _save_checkpoint: f"checkpoint-{step}")
    # and state, the trackers' run folders (their config.yaml is a copy of a run's values), Hydra's
    # record of a composed config, Lightning's hparams
    "checkpoint-[0-9]*/",
    "trainer_state.json",
    "wandb/",
    "mlruns/",
    "mlartifacts/",
    "lightning_logs/",
    ".hydra/",
)


@record(frozen=True, slots=True)
class FileSelection:
    """What the command line says about which files are read (None: the settings decide)."""

    exclude: list[str] | None = None
    extend_exclude: list[str] = field(default_factory=list)
    force_exclude: bool = False


@record(frozen=True, slots=True)
class _Pattern:
    glob: str
    anchor: Path | None  # None: matched against names only
    dir_only: bool


def _patterns(values: list[str] | tuple[str, ...], anchor: Path) -> list[_Pattern]:
    out = []
    for value in values:
        glob = value.strip()
        if glob.startswith("./"):
            glob = glob[2:]
        dir_only = glob.endswith("/")
        glob = glob.rstrip("/")
        if not glob:
            continue
        named = "/" not in glob
        out.append(_Pattern(glob, None if named else Path(os.path.abspath(anchor)), dir_only))
    return out


class FileFilter:
    """The exclusions of one check. `skip(path, is_dir)` for what a folder walk meets (the path itself:
    a walk does not enter an excluded folder); `skip_named(path)` for a path named on the command line
    (nothing unless force-exclude; then the path and its folders up to the project root)."""

    def __init__(self, settings: Settings | None = None, selection: FileSelection | None = None) -> None:
        selection = selection or FileSelection()
        root = settings.root if settings is not None and settings.source is not None else Path.cwd()
        cwd = Path.cwd()
        patterns: list[_Pattern] = []
        if selection.exclude is not None:
            patterns += _patterns(selection.exclude, cwd)
        elif settings is not None and settings.exclude is not None:
            patterns += _patterns(settings.exclude, root)
        else:
            patterns += _patterns(DEFAULT_EXCLUDE, root)
        if settings is not None:
            patterns += _patterns(settings.extend_exclude, root)
        patterns += _patterns(selection.extend_exclude, cwd)
        self._named = [(p, compile_glob(p.glob)) for p in patterns if p.anchor is None]
        self._anchored = [(p, compile_glob(p.glob)) for p in patterns if p.anchor is not None]
        self.force = selection.force_exclude or bool(settings is not None and settings.force_exclude)
        self.gitignore = settings.respect_gitignore if settings is not None else True
        self._trees: dict[str, WorkTree | None] = {}

    def _tree(self, folder: str) -> WorkTree | None:
        """The work tree holding the (absolute) folder: the closest one with a `.git` entry."""
        if folder in self._trees:
            return self._trees[folder]
        found: WorkTree | None = None
        if os.path.lexists(os.path.join(folder, ".git")):
            from advisor.sources.gitignore import WorkTree

            found = WorkTree(Path(folder))
        else:
            parent = os.path.dirname(folder)
            found = self._tree(parent) if parent != folder else None
        self._trees[folder] = found
        return found

    def _patterned(self, path: str, name: str, is_dir: bool) -> bool:
        for pattern, glob in self._named:
            if (is_dir or not pattern.dir_only) and glob.match(name):
                return True
        for pattern, glob in self._anchored:
            if pattern.dir_only and not is_dir:
                continue
            anchor = str(pattern.anchor)
            if path.startswith(anchor + os.sep) and glob.match(path[len(anchor) + 1 :].replace(os.sep, "/")):
                return True
        return False

    def _git_ignored(self, path: str, is_dir: bool) -> bool:
        if not self.gitignore:
            return False
        tree = self._tree(os.path.dirname(path))
        if tree is None:
            return False
        rel = os.path.relpath(path, tree.root).replace(os.sep, "/")
        return not rel.startswith("../") and tree.ignored(rel, is_dir)

    def skip(self, path: Path | str, is_dir: bool) -> bool:
        """Whether a walk skips this file or folder (its own name and path; its folders were walked)."""
        absolute = os.path.abspath(path)
        name = os.path.basename(absolute)
        if is_dir and name in ALWAYS_SKIPPED:
            return True
        return self._patterned(absolute, name, is_dir) or self._git_ignored(absolute, is_dir)

    def skip_named(self, path: Path) -> bool:
        """Whether a path named on the command line is skipped: only under force-exclude, when it or a
        folder above it (below the project root) is excluded or ignored by git."""
        if not self.force:
            return False
        absolute = os.path.abspath(path)
        tree = self._tree(absolute if os.path.isdir(absolute) else os.path.dirname(absolute))
        stop = str(tree.root) if tree is not None else os.path.abspath(Path.cwd())
        name = os.path.basename(absolute)
        if self._patterned(absolute, name, os.path.isdir(absolute)) or self._git_ignored(
            absolute, os.path.isdir(absolute)
        ):
            return True
        folder = os.path.dirname(absolute)
        while folder.startswith(stop + os.sep):
            if self._patterned(folder, os.path.basename(folder), True):
                return True
            folder = os.path.dirname(folder)
        return False
