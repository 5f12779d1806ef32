"""A small on-disk cache for data that is expensive to validate and rarely changes.

A pre-commit hook starts gpu-advise on every commit; parsing and validating the shipped rule
catalog and GPU catalog costs more than checking a typical project. Entries are pickles keyed by
what they were built from (file names, sizes and mtimes, the text, the Python version), written
atomically; a missing, stale or unreadable entry is rebuilt, never trusted. Each entry sits in a
slot (the folder or file it was built from): writing one removes the older entries of its slot,
so the cache holds one entry per thing, not one per edit of it. GPU_ADVISE_NO_CACHE=1 turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

# Bump when a cached class changes shape, so older entries are not unpickled into it.
FORMAT = 3


def cache_dir() -> Path | None:
    if os.environ.get("GPU_ADVISE_NO_CACHE"):
        return None
    base = os.environ.get("GPU_ADVISE_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "gpu-advise"


def file_stamps(files: Iterable[Path]) -> list[tuple[str, int, int]]:
    out = []
    for p in files:
        st = p.stat()
        out.append((str(p), st.st_mtime_ns, st.st_size))
    return out


def _digest(value: object) -> str:
    return hashlib.sha256(repr(value).encode()).hexdigest()[:16]


def entry_path(folder: Path, name: str, slot: str, key: object) -> Path:
    """`name-<slot digest>-<key digest>.pickle`: one slot per interpreter version, one entry per key."""
    return folder / f"{name}-{_digest((slot, sys.version_info[:2]))}-{_digest((key, FORMAT))}.pickle"


def cached(name: str, slot: str, key: object, build: Callable[[], T]) -> T:
    """build(), or its pickled result from an earlier call with the same name, slot and key.

    `slot` says which thing this is (e.g. the absolute path it was read from), `key` which version of it."""
    folder = cache_dir()
    if folder is None:
        return build()
    entry = entry_path(folder, name, slot, key)
    if entry.is_file():
        try:
            with entry.open("rb") as fh:
                return pickle.load(fh)
        except Exception:  # corrupt or from an incompatible version: rebuild
            pass
    value = build()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = entry.with_suffix(f".{os.getpid()}.tmp")
        with tmp.open("wb") as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, entry)
    except (OSError, pickle.PicklingError):
        return value
    slot_prefix = entry.name.rsplit("-", 1)[0]
    for old in folder.glob(f"{slot_prefix}-*.pickle"):
        if old != entry:
            with contextlib.suppress(OSError):  # gone already, or open elsewhere (Windows)
                old.unlink()
    return value
