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
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

try:  # hashlib's own BLAKE2 (hashlib.py imports it from here), without hashlib loading OpenSSL (~3 ms)
    from _blake2 import blake2b
except ImportError:  # an interpreter without the module
    from hashlib import blake2b

T = TypeVar("T")

# Bump when what a to-data function writes changes shape, so older entries are misses.
FORMAT = 4
MAX_ENTRY_BYTES = 32 * 1024 * 1024  # the largest entry (the rule catalog) is well under 1 MB


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
    return blake2b(repr(value).encode(), digest_size=8).hexdigest()


def entry_path(folder: Path, name: str, slot: str, key: object) -> Path:
    """`name-<slot digest>-<key digest>.json`: one slot per interpreter version, one entry per key."""
    return folder / f"{name}-{_digest((slot, sys.version_info[:2]))}-{_digest((key, FORMAT))}.json"


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
    if folder is None:
        return build()
    entry = entry_path(folder, name, slot, key)
    header = {"format": FORMAT, "name": name, "slot": slot, "key": entry.stem.rsplit("-", 1)[-1]}
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


def _read(entry: Path, header: dict[str, Any]) -> dict[str, Any] | None:
    """The entry's mapping when it is a regular file of sane size, valid JSON and has the header asked for."""
    try:
        fd = os.open(entry, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(MAX_ENTRY_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(raw) > MAX_ENTRY_BYTES:
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
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = entry.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, entry)
    except OSError:
        return
    slot_prefix = entry.name.rsplit("-", 1)[0]
    for old in folder.glob(f"{slot_prefix}-*"):
        # older entries of the slot; files of the earlier pickle format are removed, never read
        if old != entry and old.suffix in (".json", ".pickle"):
            with contextlib.suppress(OSError):  # gone already, or open elsewhere (Windows)
                old.unlink()
