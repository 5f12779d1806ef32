"""A small on-disk cache for data that is expensive to validate and rarely changes.

A pre-commit hook starts gpu-advise on every commit; parsing and validating the shipped rule
catalog and GPU catalog costs more than checking a typical project. Entries are JSON files (plain
data: reading one cannot run code, unlike a pickle) keyed by what they were built from (file names,
sizes and mtimes, the text, the Python version), written atomically. Each caller gives a to-data /
from-data pair; the from-data side checks the shape of what it reads, and a missing, stale,
unreadable, oversized, corrupt or wrong-shaped entry is a miss that is rebuilt, never trusted and
never a crash. Each entry sits in a slot (the folder or file it was built from): writing one
removes the older entries of its slot, so the cache holds one entry per thing, not one per edit of
it. GPU_ADVISE_NO_CACHE=1 turns it off.

An entry says what the checked files mean (the settings that ignore a rule, the compiled rules), so a
pull request must not be able to supply one: a cache folder inside a git work tree, inside the current
folder or inside the project of the file an entry is for (XDG_CACHE_HOME under the CI workspace) is
never read nor written; an entry must be owned by the user reading it; keys are content (the text,
or a digest of each file's bytes, never only names and mtimes) and the header holds the key's full
BLAKE2b-256 digest.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import time
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from advisor import PACKAGE_DIR

try:  # hashlib's own BLAKE2 (hashlib.py imports it from here), without hashlib loading OpenSSL (~3 ms)
    from _blake2 import blake2b
except ImportError:  # an interpreter without the module
    from hashlib import blake2b

T = TypeVar("T")

# Bump when what a to-data function writes changes shape, so older entries are misses.
FORMAT = 5
MAX_ENTRY_BYTES = 32 * 1024 * 1024  # the largest entry (the rule catalog) is well under 1 MB


def cache_dir() -> Path | None:
    if os.environ.get("GPU_ADVISE_NO_CACHE"):
        return None
    base = os.environ.get("GPU_ADVISE_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "gpu-advise"


def _real(path: Path | str) -> Path:
    try:
        return Path(os.path.realpath(os.path.expanduser(path)))
    except (OSError, ValueError, RuntimeError):
        return Path(os.path.abspath(path))


def _work_tree(start: Path) -> Path | None:
    """The closest folder at or above `start` with a `.git` entry (as advisor/sources/boundary.py finds
    it)."""
    for folder in (start, *start.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return None


def _shared(folder: Path, home: Path) -> bool:
    """/, the home folder and its parents: never taken for a project (a dotfiles repository in ~ does
    not make ~/.cache a checkout's file), as advisor/sources/boundary.py never takes them for a project
    root."""
    return folder == Path(folder.anchor) or home.is_relative_to(folder)


def _folder_untrusted(folder: Path, cwd: Path, home: Path) -> bool:
    """A cache folder in a git work tree or under the current folder may be a checkout's own files."""
    tree = _work_tree(folder)
    if tree is not None and not _shared(tree, home):
        return True
    return folder.is_relative_to(cwd) and not _shared(cwd, home)


def untrusted(folder: Path, slot: str) -> bool:
    """Whether entries in `folder` could have been written by the project being checked (see above)."""
    real = _real(folder)
    try:
        cwd, home = _real(Path.cwd()), _real(Path.home())
    except (OSError, RuntimeError):  # the current folder was removed, no home folder
        return True
    if _folder_untrusted(real, cwd, home):
        return True
    if os.path.isabs(slot):
        source = _real(slot)
        project = _work_tree(source.parent) or source.parent
        return real.is_relative_to(project) and not _shared(project, home)
    return False


def _content_digest(path: Path) -> str | None:
    """BLAKE2b of a regular file's bytes (bounded, never blocking on a FIFO); None for anything else."""
    data = _regular_bytes(path, getattr(os, "O_CLOEXEC", 0))
    return None if data is None else blake2b(data, digest_size=32).hexdigest()


def _regular_bytes(path: Path, flags: int, *, owner: bool = False) -> bytes | None:
    """The bytes of a regular file of at most MAX_ENTRY_BYTES (read up to one more: a file that grew is
    the caller's to refuse), opened without blocking on a FIFO; with `owner`, only one the reading user
    owns. None for anything else or an error."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_size > MAX_ENTRY_BYTES
            or (owner and st.st_uid != os.geteuid())
        ):
            return None
        # os.read on the descriptor, without a buffered file object around it: this reads every rule
        # file of a cold start's catalog key (~50), where building that object was most of the cost
        chunks, left = [], MAX_ENTRY_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, max(st.st_size + 1, 1 << 16)))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def file_stamps(files: Iterable[Path]) -> list[tuple[str, int, int | str]]:
    """A key for files: each one's path, size and content digest (mtime only when it cannot be read,
    so the file's own reader reports it and a changed file is still a miss)."""
    out: list[tuple[str, int, int | str]] = []
    for p in files:
        st = p.stat()
        out.append((str(p), st.st_size, _content_digest(p) or st.st_mtime_ns))
    return out


def _digest(value: object) -> str:
    return blake2b(repr(value).encode(), digest_size=8).hexdigest()


def _full_digest(value: object) -> str:
    return blake2b(repr(value).encode(), digest_size=32).hexdigest()


def value_digest(value: object) -> str:
    """A digest of plain data (tuples, lists, strings, numbers) by its repr, without importing hashlib."""
    return _full_digest(value)


def entry_path(folder: Path, name: str, slot: str, key: object) -> Path:
    """`name-<slot digest>-<key digest>.json`: one slot per interpreter version, one entry per key."""
    return folder / f"{name}-{_digest((slot, sys.version_info[:2]))}-{_digest((key, FORMAT))}.json"


# What the build writes into the package (setup.py, build_py): the entries whose source files ship with it
# (the rule catalog, the GPU catalog, the built-in machines), so a fresh CI runner's first check is as fast
# as a warm one. Package data: as trusted as the code beside it, never the checked project's.
PREBUILT_FILE = PACKAGE_DIR / "_prebuilt.json"


def prebuilt_key(key: object) -> str:
    """The digest an entry of PREBUILT_FILE is stored under (the key's full digest, with FORMAT)."""
    return _full_digest((key, FORMAT))


# PREBUILT_FILE's document as a Python literal, written by the build from that file's text (setup.py): the
# installer compiles it, and loading its .pyc takes about half of json.loads' time on the 330 KB document
# (a cold start: 2.3 vs 4.7 ms). Package code like this module; the JSON file is read when it is missing.
PREBUILT_MODULE = "advisor._prebuilt"
PREBUILT_HEADER = {"format": FORMAT, "name": "prebuilt"}


@lru_cache(maxsize=1)
def _prebuilt_entries() -> dict[str, Any]:
    if os.environ.get("GPU_ADVISE_NO_PREBUILT"):
        return {}
    stored = _prebuilt_literal()
    if stored is None:
        stored = _read(PREBUILT_FILE, PREBUILT_HEADER, owner=False)
    data = stored.get("data") if stored is not None else None
    return data if isinstance(data, dict) else {}


def _prebuilt_literal() -> dict[str, Any] | None:
    """The document of PREBUILT_MODULE when the package has one with PREBUILT_HEADER's header."""
    from importlib import import_module

    try:
        stored = getattr(import_module(PREBUILT_MODULE), "DOCUMENT", None)
    except ImportError:  # a source checkout, or a wheel built before the literal was
        return None
    if not isinstance(stored, dict) or any(stored.get(k) != v for k, v in PREBUILT_HEADER.items()):
        return None
    return stored


def has_prebuilt(name: str) -> bool:
    """Whether the package holds a prebuilt entry `name` (computing its key is then worth it)."""
    return name in _prebuilt_entries()


def prebuilt(name: str, key: object) -> Any | None:
    """The data the build stored as `name` for exactly this key, or None (no such file, a source
    checkout, another key: the files changed since the build). GPU_ADVISE_NO_PREBUILT=1 ignores it."""
    entry = _prebuilt_entries().get(name)
    if not isinstance(entry, dict) or entry.get("key") != prebuilt_key(key):
        return None
    return entry.get("data")


def prebuilt_document(entries: dict[str, tuple[object, Any]]) -> str:
    """PREBUILT_FILE's text for {name: (key, data)} (what the build writes; `prebuilt` reads it)."""
    data = {name: {"key": prebuilt_key(key), "data": value} for name, (key, value) in entries.items()}
    return json.dumps({**PREBUILT_HEADER, "data": data}, separators=(",", ":"))


def prebuilt_module_source(document: str) -> str:
    """PREBUILT_MODULE's source for PREBUILT_FILE's text: the same value (tests/core/test_wheel.py compares
    the two in the built wheel)."""
    from advisor.core.literal import literal_source

    return (
        '"""Generated by the build (setup.py) from _prebuilt.json: the same document, as a literal."""\n\n'
        f"DOCUMENT = {literal_source(json.loads(document))}\n"
    )


# Package files' digests met in this process, by (path, size, mtime, ctime, inode): the GPU catalog's
# (~90 KB) is asked for by its own key and by every built-in machine's.
_DIGESTS: dict[tuple[str, int, int, int, int], str | None] = {}
_MANY = 8  # from this many files on, their digests are looked up in the cache rather than hashed again
_SETTLED_NS = 2_000_000_000  # a file changed this recently may change again within its mtime's tick


def content_stamps(files: Iterable[Path]) -> list[tuple[str, int, str | None]]:
    """A key for files that ship with the package: each one's name, size and content digest (no folder,
    so the build's copy and the installed copy have the same key).

    Hashing the 46 rule files costs ~3 ms of every start-up, so their digests are kept in the cache under
    each file's size, mtime, ctime and inode, as git's index keeps them: an edit changes the ctime, which
    no user can set. Files changed in the last two seconds are hashed and not kept (git's racy case: a
    second edit within the same timestamp tick would look unchanged)."""
    paths = list(files)
    stats = [p.stat() for p in paths]
    marks = [
        (str(p), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        for p, st in zip(paths, stats, strict=True)
    ]
    digests = [_DIGESTS.get(m, "") for m in marks]
    if "" in digests:
        settled = time.time_ns() - _SETTLED_NS
        if any(max(m[2], m[3]) > settled for m in marks):
            return [(p.name, st.st_size, _content_digest(p)) for p, st in zip(paths, stats, strict=True)]
        digests = _digests(paths, marks)
        _DIGESTS.update(zip(marks, digests, strict=True))
    return [(p.name, st.st_size, d) for p, st, d in zip(paths, stats, digests, strict=True)]


def _digests(paths: list[Path], marks: list[tuple[str, int, int, int, int]]) -> list[str | None]:
    def build() -> list[str | None]:
        return [_content_digest(p) for p in paths]

    if len(paths) < _MANY:
        return build()

    def from_data(data: Any) -> list[str | None]:
        if not isinstance(data, list) or len(data) != len(paths):
            raise ValueError("not one digest per file")
        for d in data:
            if d is not None and not (isinstance(d, str) and len(d) == 64 and d.isalnum() and d.isascii()):
                raise ValueError("not a digest")
        return data

    return cached("digests", str(paths[0].parent), marks, build, from_data=from_data)


def _identity(value: Any) -> Any:
    return value


def cached(
    name: str,
    slot: str,
    key: object,
    build: Callable[[], T],
    *,
    to_data: Callable[[T], Any] = _identity,
    from_data: Callable[[Any], T] = _identity,
) -> T:
    """build(), or from_data() of what to_data() stored on an earlier call with the same name, slot and key.

    `slot` says which thing this is (e.g. the absolute path it was read from), `key` which version of it.
    The defaults suit values that are JSON data already. from_data() raising anything is a miss."""
    folder = cache_dir()
    if folder is None or untrusted(folder, slot):
        return build()
    entry = entry_path(folder, name, slot, key)
    header = {"format": FORMAT, "name": name, "slot": slot, "key": _full_digest((key, FORMAT))}
    stored = _read(entry, header)
    if stored is not None:
        try:
            return from_data(stored["data"])
        except Exception:  # wrong shape, or a value its builder would refuse: rebuild
            pass
    value = build()
    try:
        text = json.dumps({**header, "data": to_data(value)}, separators=(",", ":"))
    except (TypeError, ValueError):  # nothing plain to store: use the value, cache nothing
        return value
    _write(folder, entry, text)
    return value


def _read(entry: Path, header: dict[str, Any], *, owner: bool = True) -> dict[str, Any] | None:
    """The entry's mapping when it is a regular file of sane size, valid JSON and has the header asked for
    (and, with `owner`, is owned by the user reading it: package data belongs to whoever installed it)."""
    raw = _regular_bytes(entry, getattr(os, "O_NOFOLLOW", 0), owner=owner)
    if raw is None or len(raw) > MAX_ENTRY_BYTES:
        return None
    try:
        stored = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested too deeply
        return None
    if not isinstance(stored, dict) or "data" not in stored:
        return None
    if any(stored.get(k) != v for k, v in header.items()):
        return None
    return stored


def _write(folder: Path, entry: Path, text: str) -> None:
    from advisor.core.safe_write import replace_file

    try:
        folder.mkdir(parents=True, exist_ok=True)
        # a random O_EXCL temporary renamed over the name: nothing planted there is followed
        replace_file(entry, text, durable=False)
    except OSError:
        return
    # older entries of the slot (the names `folder.glob(f"{slot}-*")` gives, matched without compiling a
    # glob pattern for each write); files of the earlier pickle format are removed, never read
    slot = entry.name.rsplit("-", 1)[0] + "-"
    try:
        with os.scandir(folder) as listing:
            older = [
                e.name
                for e in listing
                if e.name.startswith(slot) and e.name != entry.name and e.name.endswith((".json", ".pickle"))
            ]
    except OSError:
        return
    for name in older:
        with contextlib.suppress(OSError):  # gone already, or open elsewhere (Windows)
            (folder / name).unlink()
