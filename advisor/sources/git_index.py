"""The paths git tracks in a work tree, read from its index file (git is never run).

git ignores only untracked files: a file a .gitignore pattern matches but that is in the index is
checked like any other (a pull request cannot hide a tracked launch script by listing it in
.gitignore). The index format is git's Documentation/gitformat-index.txt: a "DIRC" header (version
2, 3 or 4, the entry count), then per entry 40 bytes of stat data, the object id (20 bytes, 32 in a
SHA-256 repository), 16 bits of flags (v3+: 16 more when the extended bit is set) and the path:
NUL-terminated and padded to a multiple of 8 bytes (v2, v3), or prefix-compressed against the previous
path (v4). A split index (its entries in a shared file) or anything unreadable gives None: then the
caller cannot tell tracked from untracked and goes by the patterns alone.
"""

from __future__ import annotations

import os
from pathlib import Path

from advisor.core.records import record

MAX_INDEX_BYTES = 256 * 1024 * 1024


@record(frozen=True, slots=True)
class GitDirs:
    git_dir: Path  # this work tree's: its index
    common_dir: Path  # the repository's: info/exclude (the same folder except in a linked worktree)


def git_dirs(work_tree: Path) -> GitDirs | None:
    """The git folders of the work tree whose root holds `.git` (a folder, or a `gitdir:` file as in a
    submodule or a linked worktree: setup.c read_gitfile_gently)."""
    from advisor.sources.read import ReadRefused, read_bytes

    dot_git = work_tree / ".git"
    if os.path.isdir(dot_git) and not os.path.islink(dot_git):
        git_dir = dot_git
    else:
        try:
            first = read_bytes(dot_git, 4096).decode("utf-8", "replace").splitlines()
        except ReadRefused:
            return None
        if not first or not first[0].startswith("gitdir: "):
            return None
        git_dir = Path(os.path.normpath(work_tree / first[0][len("gitdir: ") :].strip()))
    common = git_dir
    try:
        named = read_bytes(git_dir / "commondir", 4096).decode("utf-8", "replace").strip()
        if named:
            common = Path(os.path.normpath(git_dir / named))
    except ReadRefused:
        pass
    return GitDirs(git_dir, common)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """git's offset encoding (varint.c decode_varint), used by index v4 for the prefix to drop."""
    c = data[pos]
    pos += 1
    value = c & 0x7F
    while c & 0x80:
        c = data[pos]
        pos += 1
        value = ((value + 1) << 7) | (c & 0x7F)
    return value, pos


def _entries(data: bytes, hash_size: int) -> set[str] | None:
    if len(data) < 12 or data[:4] != b"DIRC":
        return None
    version = int.from_bytes(data[4:8], "big")
    count = int.from_bytes(data[8:12], "big")
    if version not in (2, 3, 4):
        return None
    paths: set[str] = set()
    pos = 12
    previous = b""
    stat_and_id = 40 + hash_size
    for _ in range(count):
        flags_at = pos + stat_and_id
        if flags_at + 2 > len(data):
            return None
        flags = int.from_bytes(data[flags_at : flags_at + 2], "big")
        name_at = flags_at + 2
        if flags & 0x4000:  # extended flags (v3+)
            if version < 3:
                return None
            name_at += 2
        if version == 4:
            drop, name_at = _varint(data, name_at)
            end = data.find(b"\0", name_at)
            if end < 0 or drop > len(previous):
                return None
            name = previous[: len(previous) - drop] + data[name_at:end]
            pos = end + 1
        else:
            end = data.find(b"\0", name_at)
            if end < 0:
                return None
            name = data[name_at:end]
            pos = pos + ((name_at - pos + len(name) + 8) & ~7)
        previous = name
        paths.add(name.decode("utf-8", "surrogateescape"))
    if pos > len(data):
        return None
    rest = data[pos : len(data) - hash_size]
    while len(rest) >= 8:  # extensions: 4-byte signature, 4-byte size
        size = int.from_bytes(rest[4:8], "big")
        if rest[:4] == b"link":  # split index: most entries live in a shared index file
            return None
        if 8 + size > len(rest):
            return None
        rest = rest[8 + size :]
    return paths if not rest else None


def tracked_paths(dirs: GitDirs) -> set[str] | None:
    """The paths in the index, relative to the work tree root with `/`; None when it cannot be read.
    A sparse index's folder entries end with `/`."""
    from advisor.sources.read import ReadRefused, read_bytes

    try:
        data = read_bytes(dirs.git_dir / "index", MAX_INDEX_BYTES)
    except ReadRefused:
        return set() if not os.path.lexists(dirs.git_dir / "index") else None
    for hash_size in (20, 32):  # SHA-1, else SHA-256: the one whose entries end where they should
        found = _entries(data, hash_size)
        if found is not None:
            return found
    return None


def tracked_folders(paths: set[str]) -> set[str]:
    """Every folder that holds a tracked path, at any depth ("a", "a/b" for "a/b/c.yaml")."""
    folders: set[str] = set()
    for path in paths:
        cut = path.rstrip("/")
        while "/" in cut:
            cut = cut.rsplit("/", 1)[0]
            if cut in folders:
                break
            folders.add(cut)
        if path.endswith("/"):
            folders.add(path.rstrip("/"))
    return folders
