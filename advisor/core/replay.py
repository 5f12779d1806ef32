"""A check whose inputs are all unchanged answers with its stored output, without importing the tool.

Issue 18 item 11: a warm start-up of `gpu-advise check` is spent importing ~160 modules and using them for
the first time, far more than the check itself. A console-script run of `check` (advisor/__main__.py)
records what it reads, and a later run whose every input is unchanged writes the recorded output and exit
status instead of checking again. The inputs, so that a stored answer is never stale:

  - in the key, known before anything runs: the arguments, the current folder, the whole environment,
    the interpreter (version, executable, sys.path, flags), whether each standard stream is a terminal
    and the terminal's size, the user and group ids, the CPU count, this file's own stamp;
  - in the entry, met while the check ran: every file it opened (a project file by the BLAKE2b digest of
    its bytes; a file of the installed tool or the interpreter, as Python itself trusts them for its .pyc,
    by size, mtime, ctime and inode), every stat, lstat, access and readlink answer (mode; size and mtime
    of a file), every folder listing (names and kinds), every module imported (its stamp), and every
    subprocess (git, in a work tree) with its whole output, which is run again and compared.

A run that does anything this record does not cover is not stored: a subprocess other than a plain
subprocess.run of bytes (nvidia-smi's text=True is one), a write or removal outside the cache folder and
the run's own temporary files (made new, gone by the end: the comparison with HEAD writes HEAD's files
there), a path given as a descriptor, reading standard input, a file changed while it was read, a
stream used below its text layer, an exit status other than 0 or 1, a command that went through typer.
Nor is anything recorded while the cache folder does not exist yet (a fresh CI runner, where the same
check seldom runs twice): its first check costs what it did, and the next one records.

The entry sits in the cache folder (advisor/core/cache.py) under its rules: never in a git work tree, the
current folder or the project of a path named on the command line; owned by the reading user; the key's
full digest in its header. It is plain data, one record a line and every field hex: reading it runs
nothing and imports nothing (not even json, which imports re: ~4 ms of a ~30 ms replay). The recorder
is advisor/core/replay_record.py, imported only by a check that runs.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

try:  # as advisor/core/cache.py: BLAKE2 without hashlib loading OpenSSL
    from _blake2 import blake2b
except ImportError:
    from hashlib import blake2b

FORMAT = "gpu-advise-replay 1"
MAX_ENTRY_BYTES = 8 * 1024 * 1024
MAX_DIGESTED_BYTES = 32 * 1024 * 1024  # a project file larger than this makes the run not stored
_IFMT = 0o170000
_IFREG = 0o100000
_IFDIR = 0o040000
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _hex(text: str) -> str:
    return text.encode("utf-8", "surrogateescape").hex()


def _unhex(field: str) -> str:
    return bytes.fromhex(field).decode("utf-8", "surrogateescape")


def cacheable_arguments(argv: list[str]) -> bool:
    """`check` without an output file and without standard input as a path; what it does besides is the
    recorder's to see (a command that goes through typer, --fix or --help, is not stored: see finish)."""
    if not argv or argv[0] != "check":
        return False
    options = True
    for arg in argv[1:]:
        if arg == "--" and options:
            options = False
            continue
        if arg == "-":
            return False
        if options and (arg in ("-o", "--output") or arg.startswith(("--output=", "-o"))):
            return False
    return True


def _unresolved_cache_folder() -> str:
    base = os.environ.get("GPU_ADVISE_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return os.path.join(os.path.expanduser(base), "gpu-advise")


def cache_folder() -> str | None:
    """The folder advisor/core/cache.py's cache_dir names (same variables), as a real path."""
    if os.environ.get("GPU_ADVISE_NO_CACHE"):
        return None
    return _real(_unresolved_cache_folder())


def _real(path: str) -> str:
    try:
        return os.path.realpath(os.path.expanduser(path))
    except (OSError, ValueError, RuntimeError):
        return os.path.abspath(path)


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def work_tree(start: str) -> str | None:
    """The closest folder at or above `start` with a `.git` entry (as advisor/sources/boundary.py)."""
    folder = start
    while True:
        if os.path.lexists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def shared(folder: str, home: str) -> bool:
    """/, the home folder and its parents: never taken for a project."""
    return os.path.dirname(folder) == folder or _within(home, folder)


def folder_untrusted(folder: str, cwd: str, home: str) -> bool:
    """A cache folder in a git work tree or under the current folder may be a checkout's own files."""
    tree = work_tree(folder)
    if tree is not None and not shared(tree, home):
        return True
    return _within(folder, cwd) and not shared(cwd, home)


def untrusted(folder: str, slots: list[str]) -> bool:
    """Whether entries in `folder` could have been written by a project being checked: one holding the
    cache folder, the current folder, or one of `slots` (absolute paths: the files an entry is for)."""
    real = _real(folder)
    try:
        cwd, home = _real(os.getcwd()), _real(os.path.expanduser("~"))
    except (OSError, RuntimeError):
        return True
    if folder_untrusted(real, cwd, home):
        return True
    for slot in slots:
        source = _real(slot)
        base = source if os.path.isdir(source) else os.path.dirname(source)
        project = work_tree(base) or base
        if _within(real, project) and not shared(project, home):
            return True
    return False


def _terminal(fd: int) -> str:
    try:
        size = os.get_terminal_size(fd)
    except (OSError, ValueError):
        return "-"
    return f"{size.columns}x{size.lines}"


def _streams() -> list[str]:
    out = []
    for fd in (0, 1, 2):
        try:
            out.append(f"{int(os.isatty(fd))}:{_terminal(fd)}")
        except OSError:
            out.append("closed")
    return out


def _cpus() -> tuple[int | None, int | None]:
    affinity = getattr(os, "sched_getaffinity", None)
    try:
        usable = len(affinity(0)) if affinity is not None else None
    except OSError:
        usable = None
    return os.cpu_count(), usable


def key_text(argv: list[str]) -> str:
    """Everything the answer may depend on that is known before the check runs (module docstring)."""
    here = os.path.abspath(__file__)
    parts: list[object] = [
        FORMAT,
        argv,
        os.getcwd(),
        sorted(os.environ.items()),
        sys.version,
        sys.executable,
        sys.path,
        repr(sys.flags),
        _streams(),
        (os.getuid(), os.geteuid(), os.getgid(), os.getegid()),
        _cpus(),  # the machine's own CPUs, when it describes itself (advisor/sources/nvidia_smi.py)
        here,
        _stamp(here),
    ]
    return repr(parts)


def _digest(text: str, size: int) -> str:
    return blake2b(text.encode("utf-8", "surrogateescape"), digest_size=size).hexdigest()


def _entry_name(argv: list[str], key: str) -> tuple[str, str]:
    """(`result-<slot>-`, the entry's file name): one entry per current folder and arguments."""
    prefix = f"result-{_digest(repr((os.getcwd(), argv, sys.version_info[:2])), 8)}-"
    return prefix, f"{prefix}{_digest(key, 8)}.txt"


def _slots(argv: list[str]) -> list[str]:
    """Every argument taken as a path: the projects of the checked files (an option's value is taken too,
    which only makes the check stricter)."""
    return [os.path.abspath(a) for a in argv[1:] if a and not a.startswith("-")]


# ---------------------------------------------------------------------------------------------------
# Stamps: what an input looked like


def _stamp(path: str) -> str:
    """A file of the tool or the interpreter: size, mtime, ctime and inode (an edit changes the ctime)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"E{exc.errno}"
    return f"{st.st_mode:o}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"


def _stat_answer(st: os.stat_result) -> str:
    """What a stat tells the check: the mode, and for anything but a folder the size. Not the times: no
    answer depends on them (they key cache entries only; tests/core/test_replay.py fails when advisor/
    reads one elsewhere), and a file written again with the same bytes is unchanged."""
    if st.st_mode & _IFMT == _IFDIR:
        return f"{st.st_mode:o}"
    return f"{st.st_mode:o}:{st.st_size}"


def _content(path: str) -> str | None:
    """The BLAKE2b digest of a regular file's bytes, or None for anything else (not stored then)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC)
    except OSError as exc:
        return f"E{exc.errno}"
    try:
        st = os.fstat(fd)
        if st.st_mode & _IFMT != _IFREG or st.st_size > MAX_DIGESTED_BYTES:
            return None
        h = blake2b(digest_size=32)
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def _listing(path: str) -> str | None:
    """A folder's entries with their kinds (folder, file, link), sorted; `E<errno>` when it cannot be
    listed."""
    try:
        with os.scandir(path) as it:
            entries = sorted((e.name, e.is_dir(), e.is_file(), e.is_symlink()) for e in it)
    except OSError as exc:
        return f"E{exc.errno}"
    return repr(entries)


def _names(path: str) -> str:
    try:
        return repr(sorted(os.listdir(path)))
    except OSError as exc:
        return f"E{exc.errno}"


def _stat_probe(kind: str, path: str) -> str:
    try:
        st = os.lstat(path) if kind == "lstat" else os.stat(path)
    except OSError as exc:
        return f"E{exc.errno}"
    return _stat_answer(st)


def _access(path: str, mode: int) -> str:
    try:
        return str(int(os.access(path, mode)))
    except (OSError, ValueError) as exc:
        return f"E{exc}"


def _readlink(path: str) -> str:
    try:
        return "L" + os.readlink(path)
    except OSError as exc:
        return f"E{exc.errno}"


def _realpath(path: str) -> str:
    try:
        return "P" + os.path.realpath(path)
    except (OSError, ValueError) as exc:
        return f"E{exc}"


def _probe(kind: str, path: str, arg: str) -> str | None:
    """The answer an input gives now, in the form the recorder stored it."""
    if kind == "realpath":
        return _realpath(path)
    if kind == "file":
        return _content(path)
    if kind == "code":
        return _stamp(path)
    if kind in ("stat", "lstat"):
        return _stat_probe(kind, path)
    if kind == "scandir":
        return _listing(path)
    if kind == "listdir":
        return _names(path)
    if kind == "access":
        return _access(path, int(arg))
    if kind == "readlink":
        return _readlink(path)
    return None


# ---------------------------------------------------------------------------------------------------
# Replay


def _read_entry(path: str) -> bytes | None:
    """The entry's bytes when it is a regular file the reading user owns, of sane size, not a link."""
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _NOFOLLOW | _CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_mode & _IFMT != _IFREG or st.st_size > MAX_ENTRY_BYTES or st.st_uid != os.geteuid():
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _parse(raw: bytes, key: str) -> tuple[int, list[list[str]], list[tuple[int, str]]] | None:
    """(exit status, input records, output chunks) of an entry for exactly this key, or None."""
    try:
        lines = raw.decode("ascii").split("\n")
    except UnicodeDecodeError:
        return None
    if len(lines) < 3 or lines[0] != _hex(FORMAT) or lines[1] != _digest(key, 32) or lines[-1] != "":
        return None
    try:
        status = int(lines[2])
        inputs: list[list[str]] = []
        output: list[tuple[int, str]] = []
        for line in lines[3:-1]:
            tag, *fields = line.split("\t")
            if tag == "i" and len(fields) == 3:
                inputs.append([_unhex(f) for f in fields])
            elif tag == "r" and len(fields) == 2:
                inputs.append(["run", fields[0], fields[1]])
            elif tag == "o" and len(fields) == 2 and fields[0] in ("1", "2"):
                output.append((int(fields[0]), _unhex(fields[1])))
            else:
                return None
    except ValueError:
        return None
    return status, inputs, output


def _unchanged(inputs: list[list[str]]) -> bool:
    runs = []
    for kind, path, answer in inputs:
        if kind == "run":
            runs.append((path, answer))
            continue
        arg = ""
        if kind == "access":
            path, _, arg = path.rpartition("\0")
        if _probe(kind, path, arg) != answer:
            return _changed(kind, path)
    # subprocesses last, after the cheap probes: each one is run again and its output compared
    for call, result in runs:
        if _run_again(call) != result:
            return _changed("run", call)
    return True


def _changed(kind: str, what: str) -> bool:
    if os.environ.get("GPU_ADVISE_REPLAY_DEBUG"):
        print(f"gpu-advise: not replayed: {kind} {what[:200]} changed", file=sys.stderr)
    return False


def replay(argv: list[str]) -> int | None:
    """Write the stored output of this very check and return its exit status, or None: no entry, an
    untrusted cache folder, or an input that changed (then the check runs, and records itself)."""
    folder = cache_folder()
    if folder is None or not cacheable_arguments(argv):
        return None
    try:
        key = key_text(argv)
        _, name = _entry_name(argv, key)
    except OSError:
        return None
    raw = _read_entry(os.path.join(folder, name))
    if raw is None or untrusted(folder, _slots(argv)):
        return None
    entry = _parse(raw, key)
    if entry is None or not _unchanged(entry[1]):
        return None
    status, _, output = entry
    streams = {1: sys.stdout, 2: sys.stderr}
    last = None
    try:
        for fd, text in output:
            stream = streams[fd]
            if last is not None and last is not stream:
                last.flush()
            stream.write(text)
            last = stream
    except (OSError, ValueError):  # a closed reader (`| head`): answered all the same, never twice
        return 1
    return status


def _result_text(code: int, out: Any, err: Any) -> str:
    if not isinstance(out, bytes) or not isinstance(err, bytes):
        return "x"  # never equal to a repeated run's text: such a run is never replayed
    return f"{code}:{out.hex()}:{err.hex()}"


def _run_again(call_text: str) -> str:
    """The result of repeating a recorded subprocess.run call, in _result_text's form."""
    import subprocess

    try:
        cwd, data, stdin, argv, env = call_text.split("|")
        args = [_unhex(a) for a in argv.split(",")] if argv else []
        environment = None
        if env != "-":
            environment = dict(
                (_unhex(k), _unhex(v)) for k, v in (item.split("=") for item in env.split(",") if item)
            )
        proc = subprocess.run(
            args,
            cwd=_unhex(cwd),
            input=bytes.fromhex(data) if data != "-" else None,
            capture_output=True,
            timeout=60,
            check=False,
            env=environment,
            stdin=subprocess.DEVNULL if stdin == "d" else None,
        )
    except (OSError, ValueError, subprocess.SubprocessError):
        return "failed"
    return _result_text(proc.returncode, proc.stdout, proc.stderr)
