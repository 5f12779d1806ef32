"""What git ignores in a work tree, decided as git decides it (git/dir.c), without running git.

Read: each folder's `.gitignore` and the repository's `info/exclude`. Not read: `core.excludesFile`
(by default ~/.config/git/ignore): it lies outside the project and differs between machines, so the
same commit would be checked differently on a laptop and in CI.

The rules (gitignore(5), dir.c):
- a line is a pattern; blank lines and lines starting with `#` are none; `\\#`, `\\!` and `\\ ` escape;
  trailing spaces are dropped unless escaped, a CR before the line's end too;
- `!` negates: a later match that re-includes; a file whose folder is ignored cannot be re-included
  (git does not look inside an ignored folder, not even at its .gitignore);
- a trailing `/` matches folders only; a pattern with no other `/` matches a name at any depth, one
  with a `/` (leading or inside) matches the path relative to the .gitignore's folder;
- patterns are wildmatch patterns (advisor/sources/wildmatch.py): `*`, `?`, `[...]`, `**/`, `/**`;
- precedence: the .gitignore closest to the path first, then farther ones, then info/exclude; within
  one file the last matching line wins.
A tracked file is never ignored (advisor/sources/git_index.py): only untracked files are.
"""

from __future__ import annotations

import os
from pathlib import Path

from advisor.core.records import record
from advisor.sources.wildmatch import Wildmatch

MAX_IGNORE_BYTES = 1024 * 1024  # a larger .gitignore is not read (its files are then checked)
MAX_PATTERNS = 20_000  # per work tree: each costs a test per walked folder and file


@record(frozen=True, slots=True)
class Pattern:
    matcher: Wildmatch
    negative: bool
    dir_only: bool
    basename: bool  # no `/` but a trailing one: matched against the name at any depth


def _trim_trailing_spaces(line: str) -> str:
    """dir.c trim_trailing_spaces: unescaped spaces at the end go."""
    last_space = None
    i = 0
    while i < len(line):
        c = line[i]
        if c == " ":
            if last_space is None:
                last_space = i
        elif c == "\\":
            i += 1
            if i >= len(line):
                return line
            last_space = None
        else:
            last_space = None
        i += 1
    return line if last_space is None else line[:last_space]


def parse_patterns(text: str) -> list[Pattern]:
    """The patterns of one .gitignore (dir.c add_patterns_from_buffer, parse_path_pattern)."""
    out: list[Pattern] = []
    text = text.removeprefix("\ufeff")
    for raw in text.split("\n"):
        if not raw or raw.startswith("#"):
            continue
        line = _trim_trailing_spaces(raw.removesuffix("\r"))
        negative = line.startswith("!")
        if negative:
            line = line[1:]
        dir_only = line.endswith("/")
        if dir_only:
            line = line[:-1]
        if not line:
            continue
        basename = "/" not in line
        if line.startswith("/"):
            line = line[1:]
        out.append(Pattern(Wildmatch(line), negative, dir_only, basename))
    return out


class _Lists:
    """The patterns of one work tree, by folder (relative to the root: "" is the root)."""

    def __init__(self, root: Path, exclude: list[Pattern]) -> None:
        self.root = root
        self.exclude = exclude
        self.count = len(exclude)
        self._by_folder: dict[str, list[Pattern]] = {}

    def of(self, folder: str) -> list[Pattern]:
        found = self._by_folder.get(folder)
        if found is None:
            found = self._by_folder[folder] = self._read(self.root / folder / ".gitignore")
        return found

    def _read(self, path: Path, in_tree: bool = True) -> list[Pattern]:
        from advisor.sources.read import ReadRefused, read_bytes

        if not os.path.lexists(path) or self.count >= MAX_PATTERNS:
            return []
        if in_tree and os.path.islink(path):  # git opens an in-tree .gitignore O_NOFOLLOW (dir.c, 2.32)
            return []
        try:
            data = read_bytes(path, MAX_IGNORE_BYTES)
        except ReadRefused:  # a folder, FIFO, link loop, too large: git would not read it either
            return []
        patterns = parse_patterns(data.decode("utf-8", "surrogateescape"))[: MAX_PATTERNS - self.count]
        self.count += len(patterns)
        return patterns


def _last_match(patterns: list[Pattern], rel: str, name: str, is_dir: bool) -> Pattern | None:
    for pattern in reversed(patterns):
        if pattern.dir_only and not is_dir:
            continue
        if pattern.matcher.match(name if pattern.basename else rel):
            return pattern
    return None


class WorkTree:
    """One git work tree: `ignored(rel, is_dir)` for a path relative to its root, `/`-separated."""

    def __init__(self, root: Path) -> None:
        from advisor.sources.git_index import git_dirs

        self.root = root
        self._dirs = git_dirs(root)
        self._lists = _Lists(root, [])
        if self._dirs is not None:
            self._lists.exclude = self._lists._read(self._dirs.common_dir / "info" / "exclude", in_tree=False)
        self._dir_verdicts: dict[str, bool] = {}
        self._tracked: set[str] | None = None
        self._tracked_folders: set[str] | None = None
        self._index_read = False

    def _matched(self, rel: str, is_dir: bool) -> bool:
        """Whether the patterns ignore `rel` itself (its folders not looked at)."""
        folder, _, name = rel.rpartition("/")
        while True:
            patterns = self._lists.of(folder)
            if patterns:
                inside = rel[len(folder) + 1 :] if folder else rel
                hit = _last_match(patterns, inside, name, is_dir)
                if hit is not None:
                    return not hit.negative
            if not folder:
                break
            folder = folder.rpartition("/")[0]
        hit = _last_match(self._lists.exclude, rel, name, is_dir)
        return hit is not None and not hit.negative

    def _folder_ignored(self, folder: str) -> bool:
        """Whether a folder is ignored by the patterns, itself or through one of its parents."""
        if not folder:
            return False
        verdict = self._dir_verdicts.get(folder)
        if verdict is None:
            parent = folder.rpartition("/")[0]
            verdict = self._folder_ignored(parent) or self._matched(folder, True)
            self._dir_verdicts[folder] = verdict
        return verdict

    def _index(self) -> tuple[set[str], set[str]] | None:
        if not self._index_read:
            from advisor.sources.git_index import tracked_folders, tracked_paths

            self._index_read = True
            self._tracked = tracked_paths(self._dirs) if self._dirs is not None else None
            if self._tracked is not None:
                self._tracked_folders = tracked_folders(self._tracked)
        if self._tracked is None or self._tracked_folders is None:
            return None
        return self._tracked, self._tracked_folders

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether git ignores the file or folder at `rel`: the patterns say so and it is untracked (a
        folder: nothing under it is tracked). Without a readable index the patterns alone decide."""
        if not rel or rel == ".git" or rel.startswith(".git/"):
            return False
        parent = rel.rpartition("/")[0]
        if not (self._folder_ignored(parent) or self._matched(rel, is_dir)):
            return False
        index = self._index()
        if index is None:
            return True
        tracked, folders = index
        if is_dir:
            return rel not in folders and f"{rel}/" not in tracked
        return rel not in tracked
