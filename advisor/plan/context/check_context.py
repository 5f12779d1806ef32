"""One check's context: what the stages read about the project, found once per check and carried down.

Before it, each stage found its own: the project boundary was computed at nine call sites, the settings
that govern a file were looked up by the facts, by the plan and by the pipeline, and the facts read
training scripts and walked folders for pins through module-level caches keyed by path (stale in a
long-lived process: `versions.clear_caches()`). A `CheckContext` is built by the pipeline at the start
of a check (`advisor.pipeline.check`), carried on each run's plan (`plan.context`) and handed to each
document's facts (`advisor.facts.document_names(doc, context)`): no fact looks for it elsewhere. What it
finds it keeps for that check only, so a second check in the same process reads the files again.

The reads themselves stay in the sources layer (the safe reader, the pins reader, the settings
loader): this module only decides when they happen (once per thing per check) and keeps the answer.
Its memo can be filled up front (`CheckContext.preset`), so a fact's unit test needs no file system.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from advisor.core.records import field, record

if TYPE_CHECKING:
    from advisor.sources.boundary import ProjectBoundary
    from advisor.sources.pins import Pin
    from advisor.sources.settings import Settings, SettingsScope

T = TypeVar("T")


@record(frozen=True, slots=True)
class CheckContext:
    """The settings (and the per-file scope), the project boundary, the current folder, and the memo
    of what was read or derived from the project's files during this check (keys are (kind, what))."""

    scope: SettingsScope
    boundary: ProjectBoundary
    cwd: Path
    memo: dict[tuple[Any, ...], Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def build(cls, scope: SettingsScope, seeds: Sequence[Path]) -> CheckContext:
        """The context of a check of `seeds` under `scope` (its boundary: the seeds' projects plus the
        top settings' allowed roots, advisor.sources.boundary.project_boundary)."""
        context = cls(scope, _boundary(scope.top, seeds), _cwd())
        context.memo[_boundary_key(scope.top, seeds)] = (scope.top, context.boundary)
        return context

    @classmethod
    def with_boundary(cls, scope: SettingsScope, boundary: ProjectBoundary) -> CheckContext:
        """A context whose boundary is computed elsewhere (the base revision's tree:
        advisor.pipeline.check)."""
        return cls(scope, boundary, _cwd())

    @classmethod
    def standalone(cls, path: Path | None = None) -> CheckContext:
        """The one fallback, for a public entry point called outside a check (a test, a library user):
        advisor.plan.run_plan.build_plan and advisor.facts.document.document_facts without a context. The
        default settings and the boundary of `path`'s project (or the current folder's)."""
        from advisor.sources.settings import Settings, SettingsScope

        return cls.build(SettingsScope.single(Settings()), [path] if path is not None else [])

    @classmethod
    def preset(
        cls,
        boundary: ProjectBoundary,
        *,
        cwd: Path = Path("/"),
        settings: dict[Path, Settings | None] | None = None,
        pins: dict[Path, dict[str, Pin]] | None = None,
        texts: dict[Path, str | None] | None = None,
        listings: dict[tuple[Path, tuple[str, ...]], Sequence[Path]] | None = None,
    ) -> CheckContext:
        """A context whose answers are given, not read (unit tests of facts): settings by folder, the
        pins that apply to a folder, script texts by path, the project files under a root by suffixes
        (`project_files`). Anything not given is read as usual."""
        from advisor.sources.settings import Settings, SettingsScope

        context = cls(SettingsScope.single(Settings()), boundary, cwd)
        for folder, found in (settings or {}).items():
            context.memo[("settings", str(folder))] = found
        for folder, folder_pins in (pins or {}).items():
            context.memo[("pins", folder)] = dict(folder_pins)
        for path, text in (texts or {}).items():
            context.memo[("text", path)] = text
        for (root, suffixes), paths in (listings or {}).items():
            context.memo[("project-files", (root, suffixes))] = tuple(paths)
        return context

    @property
    def settings(self) -> Settings:
        """The settings of the check as a whole (the checked paths' common folder)."""
        return self.scope.top

    def derived(self, kind: str, key: Any, build: Callable[[], T]) -> T:
        """build(), once per (kind, key) in this check: a parsed script, an analysis of one."""
        slot = (kind, key)
        if slot not in self.memo:
            self.memo[slot] = build()
        value: T = self.memo[slot]
        return value

    def boundary_for(self, settings: Settings | None, seeds: Sequence[Path]) -> ProjectBoundary:
        """The boundary of `seeds` under `settings` (a run's own or a file's nearest settings: their
        allowed roots may differ from the check's), computed once per settings and seeds."""
        from advisor.sources.settings import Settings

        chosen = settings if settings is not None else self.derived("default-settings", None, Settings)
        key = _boundary_key(chosen, seeds)
        found = self.memo.get(key)
        if found is None:
            found = (chosen, _boundary(chosen, seeds))  # the settings kept: their id is part of the key
            self.memo[key] = found
        boundary: ProjectBoundary = found[1]
        return boundary

    def settings_near(self, path: Path | str) -> Settings | None:
        """The settings file found from the folder of the file at `path` upwards (advisor.sources.settings
        .find_settings), or None when it cannot be read; once per folder."""
        folder = os.path.dirname(os.path.abspath(path))
        return self.derived("settings", folder, lambda: _find_settings(self.scope, folder))

    def pins_near(self, folder: Path) -> dict[str, Pin]:
        """The nearest pin per package from `folder` up to its project root (the folder holding `.git`,
        at most advisor.sources.pins.MAX_FOLDERS_UP folders, never above the check's boundary), each folder
        read once per check."""
        here = folder.resolve()
        if ("pins", here) in self.memo:
            found: dict[str, Pin] = self.memo[("pins", here)]
            return found
        out: dict[str, Pin] = {}
        for each in _project_folders(here):
            if not self.boundary.contains(each):
                break  # above the check's project: its files are not read (nor /tmp's scripts, say)
            if ("folder-pins", each) not in self.memo:
                self.memo[("folder-pins", each)] = _read_pins(each)
            for name, pin in self.memo[("folder-pins", each)].items():
                out.setdefault(name, pin)
        self.memo[("pins", here)] = out
        return out

    def script_text(self, path: Path, limit: int) -> str | None:
        """A script's text through the safe reader (None when it cannot be read), once per check."""
        return self.derived("text", path, lambda: _read_text(path, limit))

    def launched_script(self, launch: Path, raw: str, settings: Settings | None, workdir: Any) -> Path | None:
        """The file a command in `launch` names as `raw` (after the launch's `cd` to `workdir`), resolved
        as discovery resolves a run's script (plan.reference_paths.resolve_reference from the command's
        bases, never the current folder), within the boundary of `settings`; once per check."""
        from advisor.plan.reference_paths import command_bases, resolve_reference

        def resolve() -> Path | None:
            boundary = self.boundary_for(settings, [launch])
            bases = command_bases(launch, workdir, boundary)
            path, _outside = resolve_reference(raw, launch, bases, boundary)
            return path

        return self.derived("launched-script", (launch, raw, id(settings), str(workdir)), resolve)

    def real_path(self, path: Path) -> Path:
        """`path` with its links resolved (as discovery resolves the files it reads), once per check."""
        return self.derived("real-path", path, path.resolve)

    def project_root_of(self, path: Path) -> Path | None:
        """The boundary root (the project's work tree) that holds the file at `path`, or None."""
        from advisor.sources.project_walk import project_root_of

        return self.derived("project-root", path, lambda: project_root_of(path, self.boundary))

    def project_files(self, root: Path, suffixes: tuple[str, ...]) -> tuple[Path, ...]:
        """The project's files under `root` ending in one of `suffixes` that the check's own walk would
        read (advisor.sources.project_walk: bounded, hidden, installed, git-ignored and excluded folders
        skipped under the settings found from `root`), walked once per check."""
        return self.derived("project-files", (root, suffixes), lambda: self._walk(root, suffixes))

    def _walk(self, root: Path, suffixes: tuple[str, ...]) -> tuple[Path, ...]:
        from advisor.sources.exclude import FileFilter
        from advisor.sources.project_walk import walk_project_files

        skipped = FileFilter(self.settings_near(root / "any"))  # the settings found from root upwards
        return tuple(walk_project_files(root, suffixes, self.boundary, skipped))


def _boundary_key(settings: Settings, seeds: Sequence[Path]) -> tuple[str, int, tuple[Path, ...]]:
    """A boundary depends on each seed only through the folder it resolves into (advisor.sources.boundary
    .project_root: the work tree above it, or that folder): files of one folder share it."""
    return "boundary", id(settings), tuple(_seed_folder(s) for s in seeds)


def _seed_folder(seed: Path) -> Path:
    try:
        real = Path(os.path.realpath(os.path.expanduser(seed)))
        return real if real.is_dir() else real.parent
    except (OSError, ValueError, RuntimeError):
        return Path(os.path.abspath(seed))


def _boundary(settings: Settings, seeds: Sequence[Path]) -> ProjectBoundary:
    from advisor.sources.boundary import project_boundary

    return project_boundary(settings, seeds)


def _cwd() -> Path:
    try:
        return Path.cwd()
    except OSError:  # the current folder was removed
        return Path("/")


def _find_settings(scope: SettingsScope, folder: str) -> Settings | None:
    from advisor.sources.settings import SettingsError

    try:
        return scope.found_near(folder)  # the scope's lookup: each folder's settings file read once
    except (SettingsError, OSError, ValueError):
        return None


def _project_folders(start: Path) -> list[Path]:
    from advisor.sources.pins import MAX_FOLDERS_UP  # a file deeper than this below its root: no pins

    out = []
    for folder in (start, *start.parents)[:MAX_FOLDERS_UP]:
        out.append(folder)
        try:
            if (folder / ".git").exists():
                break
        except OSError:
            break
    return out


def _read_pins(folder: Path) -> dict[str, Pin]:
    from advisor.sources.pins import read_folder_pins

    return read_folder_pins(folder)


def _read_text(path: Path, limit: int) -> str | None:
    from advisor.sources.read import ReadRefused, read_text_file

    try:
        return read_text_file(path, limit)
    except (ReadRefused, OSError, UnicodeDecodeError):
        return None
