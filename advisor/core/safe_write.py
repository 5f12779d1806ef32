"""The one way gpu-advise writes a file it was asked to write (--output, baselines, --verify-report,
cache entries, the probe's own files).

What the name is decides how it is written:

- a regular file (or a new name) is replaced atomically: a temporary file in the same folder, created
  as ``tempfile.mkstemp`` creates one (``O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW``, mode 0600, a random
  name, another name on ``FileExistsError``: CPython 3.11 Lib/tempfile.py ``_bin_openflags`` lines
  52-58, ``_mkstemp_inner`` lines 243-270), so nothing planted at a predictable name is followed; the
  old file's mode is kept (its owner too when we are root), a new file gets 0666 less the umask, as
  ``open(name, "w")`` would give it; ``os.replace`` never follows a link at the target;
- a character device (``/dev/null``, a terminal) or a FIFO is written through, never replaced;
- a symlink is followed: its target is written by the rules above and the link stays. A link through
  ``/proc`` (``/dev/stdout``, ``/dev/fd/1``) is the open file itself: written through, appended to
  when it is a regular file (the shell's redirection owns its offset);
- a folder, a block device, a socket or a symlink loop is refused with a one-line reason.

Every failure is a ``WriteRefused`` (an ``OSError`` whose ``strerror`` is that reason) or the
``OSError`` of the system call, so callers keep one ``except OSError``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOCTTY = getattr(os, "O_NOCTTY", 0)
_MAX_HOPS = 40  # as the kernel's limit on symlinks in one lookup (MAXSYMLINKS)
_TEMPORARY_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_BINARY", 0)
_TEMPORARY_TRIES = getattr(os, "TMP_MAX", 10000)  # tempfile.TMP_MAX (Lib/tempfile.py lines 59-63)


class WriteRefused(OSError):
    """A target gpu-advise will not write (one line, in `strerror` as for any OSError)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.strerror = reason


def write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to an open descriptor (os.write may write less than it is given)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_file(path: Path, data: str | bytes, *, parents: bool = False) -> None:
    """Write `data` (text is UTF-8) to `path` as the module docstring says. `parents` creates missing
    folders above a new file. Raises OSError (WriteRefused for what it will not write)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if parents:
            path.parent.mkdir(parents=True, exist_ok=True)
        _replace(path, None, raw)
        return
    if stat.S_ISLNK(st.st_mode):
        _write_link(path, raw)
        return
    _write_kind(path, st, raw)


def replace_file(path: Path, data: str | bytes, *, durable: bool = True) -> None:
    """Put `data` at `path` itself, for files the tool owns (cache entries, the probe's files): whatever
    is at the name (a planted link, a FIFO) is replaced by the rename, never followed or written to.
    `durable=False` skips the fsync (a cache entry lost in a crash is only a miss)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        st: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        st = None
    _replace(Path(path), st if st is not None and stat.S_ISREG(st.st_mode) else None, raw, durable=durable)


def _write_kind(path: Path, st: os.stat_result, raw: bytes) -> None:
    mode = st.st_mode
    if stat.S_ISREG(mode):
        _replace(path, st, raw)
    elif stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        _write_through(path, st, raw, follow=False)
    else:
        raise WriteRefused(f"{_kind(mode)}: not written")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "is a folder"
    if stat.S_ISBLK(mode):
        return "is a block device"
    if stat.S_ISSOCK(mode):
        return "is a socket"
    return "is not a regular file"


def _link_chain(path: Path) -> tuple[bool, bool]:
    """(whether following `path` passes through /proc, whether it loops or is too long)."""
    current = os.path.abspath(path)
    for _ in range(_MAX_HOPS):
        # the folder resolved first: /dev/fd/1 is /proc/self/fd/1 through the link /dev/fd
        current = os.path.join(os.path.realpath(os.path.dirname(current)), os.path.basename(current))
        if current == "/proc" or current.startswith("/proc/"):
            return True, False
        try:
            target = os.readlink(current)
        except OSError:  # not a link (the end of the chain), or gone
            return False, False
        current = os.path.join(os.path.dirname(current), target)
    return False, True


def _write_link(path: Path, raw: bytes) -> None:
    through_proc, loops = _link_chain(path)
    if loops:
        raise WriteRefused("symlink loop: not written")
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise WriteRefused("symlink loop: not written") from None
        if exc.errno != errno.ENOENT or through_proc:
            raise
        st = None  # a dangling link: its target is created, as `echo > link` does
    if through_proc and st is not None:
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            raise WriteRefused(f"{_kind(st.st_mode)}: not written")
        _write_through(path, st, raw, follow=True, append=stat.S_ISREG(st.st_mode))
        return
    real = Path(os.path.realpath(path))
    if st is None:
        _replace(real, None, raw)
        return
    try:
        real_st = os.lstat(real)
    except OSError:
        raise WriteRefused("its target changed while it was written: not written") from None
    if stat.S_ISLNK(real_st.st_mode) or not os.path.samestat(real_st, st):
        raise WriteRefused("its target changed while it was written: not written")
    _write_kind(real, real_st, raw)


def _write_through(path: Path, st: os.stat_result, raw: bytes, *, follow: bool, append: bool = False) -> None:
    """Write into a device, FIFO or /proc link without replacing it (a FIFO waits for its reader)."""
    flags = os.O_WRONLY | _CLOEXEC | _NOCTTY | (0 if follow else _NOFOLLOW) | (os.O_APPEND if append else 0)
    fd = os.open(path, flags)
    try:
        now = os.fstat(fd)
        if stat.S_IFMT(now.st_mode) != stat.S_IFMT(st.st_mode):
            raise WriteRefused("it changed while it was written: not written")
        write_all(fd, raw)
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def make_temporary(folder: Path, prefix: str, suffix: str) -> tuple[int, str]:
    """(descriptor, name) of a new file in `folder`, made as tempfile.mkstemp makes it (see the module
    docstring) but without importing tempfile: it brings shutil, random, bz2 and lzma, ~8 ms of a cold
    check that writes its first cache entries. The name's 16 hex digits come from os.urandom."""
    folder_name = os.path.abspath(folder)
    for _ in range(_TEMPORARY_TRIES):
        name = os.path.join(folder_name, f"{prefix}{os.urandom(8).hex()}{suffix}")
        try:
            return os.open(name, _TEMPORARY_FLAGS, 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "No usable temporary file name found")


def _replace(target: Path, st: os.stat_result | None, raw: bytes, *, durable: bool = True) -> None:
    """Atomically put `raw` at `target` (a regular file, `st`, or a new name when st is None)."""
    folder = target.parent
    try:
        # a short prefix of the name keeps the temporary's name under NAME_MAX whatever the target's
        fd, tmp_name = make_temporary(folder, f".{target.name[:40]}.", ".gpu-advise.tmp")
    except PermissionError:
        raise WriteRefused(f"its folder {folder} is not writable: cannot replace it safely") from None
    tmp = Path(tmp_name)
    replaced = False
    try:
        try:
            write_all(fd, raw)
            os.fchmod(fd, stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask())
            if st is not None and os.geteuid() == 0 and (st.st_uid, st.st_gid) != (0, 0):
                with contextlib.suppress(OSError):
                    os.fchown(fd, st.st_uid, st.st_gid)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
        replaced = True
    finally:
        if not replaced:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
