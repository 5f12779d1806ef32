"""The recorder of advisor/core/replay.py: what one console-script check reads, through os's and
subprocess's functions and the audit hook, and its output, stored for a later identical check."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

from advisor.core.replay import (
    _CLOEXEC,
    _IFDIR,
    _IFMT,
    _IFREG,
    _NOFOLLOW,
    FORMAT,
    MAX_ENTRY_BYTES,
    _content,
    _digest,
    _entry_name,
    _hex,
    _real,
    _result_text,
    _slots,
    _stamp,
    _stat_answer,
    _stat_probe,
    _unresolved_cache_folder,
    _within,
    cache_folder,
    cacheable_arguments,
    key_text,
    untrusted,
)

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_ALTERING_EVENTS = frozenset(
    {
        "os.remove",
        "os.rename",
        "os.rmdir",
        "os.mkdir",
        "os.symlink",
        "os.link",
        "os.truncate",
        "os.chmod",
        "os.chown",
        "os.utime",
        "shutil.rmtree",
        "shutil.move",
        "shutil.copyfile",
    }
)
_UNCOVERED_EVENTS = frozenset(
    {
        "os.fork",
        "os.forkpty",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.system",
        "os.startfile",
        "socket.connect",
        "socket.getaddrinfo",
        "ctypes.dlopen",
        "mmap.__new__",
        "sqlite3.connect",
        "urllib.Request",
    }
)
# the most frequent events, which say nothing the wrappers do not (listings) or nothing read (imports)
_PASSING_EVENTS = frozenset(
    {
        "import",
        "exec",
        "compile",
        "marshal.loads",
        "builtins.id",
        "object.__setattr__",
        "object.__getattr__",
        "object.__delattr__",
        "sys._getframe",
        "os.listdir",
        "os.scandir",
        "os.walk",
        "glob.glob",
        "pathlib.Path.glob",
        "pathlib.Path.rglob",
    }
)


class _Tee:
    """A standard stream that also keeps what is written to it, in order with the other one."""

    def __init__(self, real: Any, fd: int, recorder: Recorder) -> None:
        self._real = real
        self._fd = fd
        self._recorder = recorder

    def write(self, text: str) -> int:
        try:
            n: int = self._real.write(text)
        except BaseException:  # a closed reader, a full disk: what was written is not all the answer
            self._recorder.refuse("the output could not be written")
            raise
        if isinstance(text, str):
            self._recorder.output.append((self._fd, text))
        else:
            self._recorder.refuse("bytes written to a text stream")
        return n

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        if name in ("buffer", "detach", "reconfigure", "fileno"):
            self._recorder.refuse(f"sys.std{'out' if self._fd == 1 else 'err'}.{name} used")
        return getattr(self._real, name)


class Recorder:
    """What one check reads, through os's and subprocess's functions and the audit hook."""

    def __init__(self, argv: list[str], folder: str) -> None:
        self.argv = argv
        self.folder = folder
        self.key = key_text(argv)
        self.cwd = os.getcwd()
        self.inputs: dict[tuple[str, str], str] = {}
        self.opened: dict[str, str] = {}  # path -> its stat when opened
        self.digests: dict[str, str | None] = {}  # a project file -> its digest when opened
        self.runs: list[tuple[str, str]] = []
        self.output: list[tuple[int, str]] = []
        self.refused: str | None = None
        self.active = False
        self._in_run = False
        self._in_realpath = False
        self._in_rmtree = 0
        # what the run changed outside the cache folder; allowed only in its own temporary files and
        # folders (`scratch`: the comparison with HEAD writes HEAD's files there), which are not inputs
        self.altered: list[tuple[str, str]] = []
        self.scratch: list[str] = []
        self._paths: dict[object, str | None] = {}
        self.folders = (folder, os.path.normpath(os.path.abspath(_unresolved_cache_folder())))
        self._installed: list[tuple[Any, str, Any]] = []
        self.trusted = tuple(
            _real(p) + os.sep
            for p in {
                sys.prefix,
                sys.base_prefix,
                sys.exec_prefix,
                os.path.dirname(os.path.dirname(__file__)),
            }
        )

    def refuse(self, why: str) -> None:
        if self.refused is None:
            self.refused = why

    # paths --------------------------------------------------------------------------------------

    def _path(self, path: Any) -> str | None:
        """An absolute path for a path argument, None for the cache folder's own files (derived data,
        keyed by content) and for a descriptor (not followed: refused where it matters)."""
        if isinstance(path, int):
            return None
        try:
            text = os.fsdecode(path)  # a Path's string is kept by the Path
        except (TypeError, ValueError):
            self.refuse(f"path {path!r}")
            return None
        known = self._paths.get(text, "")
        if known != "":
            return known
        full = os.path.normpath(os.path.join(os.getcwd(), text) if not os.path.isabs(text) else text)
        answer = None if any(_within(full, f) for f in self.folders) else full
        self._paths[text] = answer
        return answer

    def _cache_ancestor(self, path: str) -> bool:
        """A folder above the cache folder (made by the cache's mkdir(parents=True))."""
        return any(_within(f, path) for f in self.folders)

    def note(self, kind: str, path: Any, answer: str, arg: str = "") -> None:
        if not self.active or self._in_realpath or self._in_rmtree:  # rmtree: names relative to a descriptor
            return
        full = self._path(path)
        if full is None:
            return
        if arg:
            full = f"{full}\0{arg}"
        self.inputs.setdefault((kind, full), answer)

    # the hooks ------------------------------------------------------------------------------------

    def install(self) -> None:
        self._wrap(os, "stat", self._stat_wrapper(os.stat, "stat"))
        self._wrap(os, "lstat", self._stat_wrapper(os.lstat, "lstat"))
        self._wrap(os, "scandir", self._scandir_wrapper(os.scandir))
        self._wrap(os, "listdir", self._listdir_wrapper(os.listdir))
        self._wrap(os, "access", self._access_wrapper(os.access))
        self._wrap(os, "readlink", self._readlink_wrapper(os.readlink))
        # one input per resolved path, not one lstat per component of it (Path.resolve calls this)
        self._wrap(os.path, "realpath", self._realpath_wrapper(os.path.realpath))
        for name, patch in (("subprocess", self._patch_subprocess), ("shutil", self._patch_shutil)):
            if name in sys.modules:
                patch(sys.modules[name])
            else:  # importing subprocess costs ~10 ms, and a check outside a git work tree runs none
                sys.meta_path.insert(0, _OnImport(name, patch))
        sys.stdout = _Tee(sys.stdout, 1, self)
        sys.stderr = _Tee(sys.stderr, 2, self)
        sys.addaudithook(self._audit)
        self.active = True

    def _patch_subprocess(self, module: Any) -> None:
        self._wrap(module, "run", self._run_wrapper(module.run))

    def _patch_shutil(self, module: Any) -> None:
        real = module.rmtree

        def rmtree(path: Any, *args: Any, **kwargs: Any) -> Any:
            # removing the run's own temporary folder (tempfile.TemporaryDirectory) walks it by
            # descriptor: not inputs; anything else removed is refused at the end (os.rmdir, os.remove)
            full = self._path(path)
            inside = full is not None and any(_within(full, folder) for folder in self.scratch)
            self._in_rmtree += inside
            try:
                return real(path, *args, **kwargs)
            finally:
                self._in_rmtree -= inside

        rmtree.avoids_symlink_attacks = getattr(real, "avoids_symlink_attacks", False)  # type: ignore[attr-defined]
        self._wrap(module, "rmtree", rmtree)

    def _wrap(self, module: Any, name: str, wrapper: Any) -> None:
        self._installed.append((module, name, getattr(module, name)))
        setattr(module, name, wrapper)

    def uninstall(self) -> None:
        self.active = False
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _OnImport)]
        for module, name, real in reversed(self._installed):
            setattr(module, name, real)
        self._installed.clear()
        for stream in ("stdout", "stderr"):
            current = getattr(sys, stream)
            if isinstance(current, _Tee):
                setattr(sys, stream, current._real)

    def _stat_wrapper(self, real: Callable[..., os.stat_result], kind: str) -> Callable[..., os.stat_result]:
        def wrapper(path: Any, **kwargs: Any) -> os.stat_result:
            if kwargs.get("dir_fd") is not None and not self._in_rmtree:
                self.refuse(f"{kind} with dir_fd")
            which = "lstat" if kind == "lstat" or not kwargs.get("follow_symlinks", True) else "stat"
            try:
                st = real(path, **kwargs)
            except OSError as exc:
                self.note(which, path, f"E{exc.errno}")
                raise
            if not isinstance(path, int):
                self.note(which, path, _stat_answer(st))
            return st

        return wrapper

    def _scandir_wrapper(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(path: Any = ".") -> Any:
            if isinstance(path, int):
                if not self._in_rmtree:
                    self.refuse("scandir of a descriptor")
                return real(path)
            try:
                with real(path) as it:
                    entries = list(it)
            except OSError as exc:
                self.note("scandir", path, f"E{exc.errno}")
                raise
            listing = sorted((e.name, e.is_dir(), e.is_file(), e.is_symlink()) for e in entries)
            self.note("scandir", path, repr(listing))
            return _Listing(entries)

        return wrapper

    def _listdir_wrapper(self, real: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
        def wrapper(path: Any = ".") -> list[Any]:
            if isinstance(path, int):
                self.refuse("listdir of a descriptor")
                return real(path)
            try:
                names = real(path)
            except OSError as exc:
                self.note("listdir", path, f"E{exc.errno}")
                raise
            if isinstance(path, bytes):
                self.refuse("listdir of a bytes path")
            else:
                self.note("listdir", path, repr(sorted(names)))
            return names

        return wrapper

    def _access_wrapper(self, real: Callable[..., bool]) -> Callable[..., bool]:
        def wrapper(path: Any, mode: int, **kwargs: Any) -> bool:
            if kwargs:
                self.refuse("access with options")
            answer = real(path, mode, **kwargs)
            self.note("access", path, str(int(answer)), str(mode))
            return answer

        return wrapper

    def _readlink_wrapper(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(path: Any, *, dir_fd: int | None = None) -> Any:
            if dir_fd is not None:
                self.refuse("readlink with dir_fd")
            try:
                target = real(path, dir_fd=dir_fd)
            except OSError as exc:
                self.note("readlink", path, f"E{exc.errno}")
                raise
            if isinstance(target, str):
                self.note("readlink", path, "L" + target)
            else:
                self.refuse("readlink of a bytes path")
            return target

        return wrapper

    def _realpath_wrapper(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(path: Any, *, strict: bool = False) -> Any:
            if strict or not self.active or self._in_realpath:
                return real(path, strict=strict)
            self._in_realpath = True
            wrapped = os.lstat, os.readlink
            os.lstat, os.readlink = _os_lstat, _os_readlink  # its steps are not inputs: its answer is
            try:
                resolved = real(path)
            finally:
                os.lstat, os.readlink = wrapped
                self._in_realpath = False
            if isinstance(resolved, str):
                self.note("realpath", path, "P" + resolved)
            else:
                self.refuse("realpath of a bytes path")
            return resolved

        return wrapper

    def _run_wrapper(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            call = _call_text(args, kwargs)
            if call is None:
                self.refuse("a subprocess.run the recorder cannot repeat")
                return real(*args, **kwargs)
            self._in_run = True
            try:
                proc = real(*args, **kwargs)
            except BaseException:
                self.refuse("a subprocess that failed to run")
                raise
            finally:
                self._in_run = False
            self.runs.append((call, _result_text(proc.returncode, proc.stdout, proc.stderr)))
            return proc

        return wrapper

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if event in _PASSING_EVENTS or not self.active:
            return
        if event == "open":
            self._opened(args)
        elif event == "os.chdir":  # relative paths are the new folder's from here on
            self._paths.clear()
        elif event == "subprocess.Popen":
            if not self._in_run:
                self.refuse("a subprocess outside subprocess.run")
        elif event in _ALTERING_EVENTS and not self._in_rmtree:  # rmtree: of a scratch folder only
            for path in args[:2]:
                if not isinstance(path, (str, bytes, os.PathLike)):
                    continue
                full = self._path(path)
                if full is not None and not (event == "os.mkdir" and self._cache_ancestor(full)):
                    self.altered.append((event, full))
        elif event in ("tempfile.mkdtemp", "tempfile.mkstemp"):
            full = self._path(args[0]) if args else None
            if full is not None:
                self.scratch.append(full)
        elif event in _UNCOVERED_EVENTS or event.startswith(("os.exec", "os.spawn", "socket.")):
            self.refuse(event)

    def _opened(self, args: tuple[Any, ...]) -> None:
        path, mode, flags = (*args, None, None, None)[:3]
        if self._in_rmtree:  # removing a scratch folder opens its entries by descriptor: not inputs
            return
        if mode == "r" and _importing():
            return  # a module's source or .pyc (io.open_code): stamped with sys.modules at the end
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        if isinstance(path, int):
            if path == 0:
                self.refuse("standard input read")
            return
        full = self._path(path)
        if full is None or (self._in_run and full == os.devnull):  # subprocess's own stdin=DEVNULL
            return
        if writing:
            if isinstance(flags, int) and flags & os.O_EXCL and flags & os.O_CREAT:
                self.scratch.append(full)  # made new by this run (tempfile's own probe of /tmp)
            self.altered.append(("open for writing", full))
            return
        if full in self.opened:
            return
        try:
            st = _os_lstat(full) if isinstance(flags, int) and flags & _NOFOLLOW else _os_stat(full)
        except OSError as exc:
            self.opened[full] = f"E{exc.errno}"
            return
        self.opened[full] = f"{st.st_mode:o}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"
        if st.st_mode & _IFMT == _IFREG and not full.startswith(self.trusted):
            # hashed now, before the check reads it, and again at the end: a file rewritten meanwhile
            # (even within one timestamp tick, at the same size) is not stored with either answer
            self.digests[full] = _content(full)

    # the end -------------------------------------------------------------------------------------

    def finish(self, status: int) -> None:
        """Store the run's output for its inputs, unless something it did is not covered (see above)."""
        self.uninstall()
        for what, path in self.altered:
            if not any(_within(path, folder) for folder in self.scratch):
                self.refuse(f"{path}: {what} outside the cache folder")
        for path in self.scratch:  # a replay leaves nothing behind: neither may the run it stands for
            if os.path.lexists(path):
                self.refuse(f"{path}: made by the run and left behind")
        if self.refused is None and status not in (0, 1):
            self.refuse(f"exit status {status}")
        if self.refused is None and "typer" in sys.modules:
            self.refuse("the command went through typer (help, --fix, an option the fast path leaves)")
        if self.refused is None and untrusted(self.folder, _slots(self.argv)):
            self.refuse("the cache folder is inside a checked project")
        if self.refused is not None:
            if os.environ.get("GPU_ADVISE_REPLAY_DEBUG"):
                print(f"gpu-advise: this run is not stored: {self.refused}", file=sys.stderr)
            return
        lines = self._records()
        if lines is None:
            if os.environ.get("GPU_ADVISE_REPLAY_DEBUG"):
                print(f"gpu-advise: this run is not stored: {self.refused}", file=sys.stderr)
            return
        self._write([_hex(FORMAT), _digest(self.key, 32), str(status), *lines])

    def _records(self) -> list[str] | None:
        records: list[str] = []

        def add(kind: str, path: str, answer: str) -> None:
            if any(_within(path.partition("\0")[0], folder) for folder in self.scratch):
                return  # the run's own temporary files
            records.append("\t".join(("i", _hex(kind), _hex(path), _hex(answer))))

        for path, seen in self.opened.items():
            if any(_within(path, folder) for folder in self.scratch):
                continue
            if seen.startswith("E") or int(seen.partition(":")[0], 8) & _IFMT == _IFDIR:
                # opening it failed, or a folder opened (for its descriptor): what a stat says of it
                add("stat", path, _stat_probe("stat", path))
                continue
            if path.startswith(self.trusted):
                if _stamp(path) != seen:
                    self.refuse(f"{path} changed while the check read it")
                    return None
                add("code", path, _stamp(path))
                continue
            digest = _content(path)
            if digest is None or digest != self.digests.get(path):
                self.refuse(f"{path}: not a regular file, too large, or changed while the check read it")
                return None
            try:
                st = os.stat(path)
            except OSError:
                self.refuse(f"{path} removed while the check ran")
                return None
            if f"{st.st_mode:o}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}" != seen:
                self.refuse(f"{path} changed while the check read it")
                return None
            add("file", path, digest)
        for (kind, path), answer in self.inputs.items():
            add(kind, path, answer)
        for module in list(sys.modules.values()):
            origin = getattr(module, "__file__", None)
            if isinstance(origin, str):
                add("code", os.path.abspath(origin), _stamp(os.path.abspath(origin)))
        for call, result in self.runs:
            records.append("\t".join(("r", call, result)))
        records.extend(f"o\t{fd}\t{_hex(text)}" for fd, text in self.output)
        return records

    def _write(self, lines: list[str]) -> None:
        """The entry put in place atomically: a new O_EXCL file renamed over the name, so that nothing
        planted at the name is followed (as advisor/core/safe_write.py replace_file, without importing
        tempfile: ~10 ms on a check that wrote nothing else), then the slot's older entries removed."""
        raw = ("\n".join(lines) + "\n").encode("ascii")
        if len(raw) > MAX_ENTRY_BYTES:
            return
        prefix, name = _entry_name(self.argv, self.key)
        temporary = os.path.join(self.folder, f".{name}.{os.urandom(8).hex()}")
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
        except OSError:
            return
        try:
            try:
                view = memoryview(raw)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            os.replace(temporary, os.path.join(self.folder, name))
            for old in os.listdir(self.folder):  # one entry per slot
                if old.startswith(prefix) and old != name and old.endswith(".txt"):
                    os.unlink(os.path.join(self.folder, old))
        except OSError:
            try:
                os.unlink(temporary)
            except OSError:
                return


_os_stat = os.stat
_os_lstat = os.lstat
_os_readlink = os.readlink


class _OnImport:
    """A meta-path finder that lets the other finders find one module and calls `then` with it once it
    has been executed (to patch it), then leaves sys.meta_path."""

    def __init__(self, name: str, then: Callable[[Any], None]) -> None:
        self.name = name
        self.then = then

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _ThenLoader(spec.loader, self.then)
                return spec
        return None


class _ThenLoader:
    def __init__(self, real: Any, then: Callable[[Any], None]) -> None:
        self._real = real
        self._then = then

    def create_module(self, spec: Any) -> Any:
        return self._real.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._real.exec_module(module)
        self._then(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class _Listing:
    """os.scandir's iterator over entries already read (a context manager, as the real one)."""

    def __init__(self, entries: list[Any]) -> None:
        self._entries = iter(entries)

    def __iter__(self) -> Iterator[Any]:
        return self._entries

    def __next__(self) -> Any:
        return next(self._entries)

    def __enter__(self) -> _Listing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._entries = iter(())


def _importing() -> bool:
    """Whether the import system is what opens a file (a module's source or .pyc)."""
    # the direct caller only: a module that reads a data file while it is imported is a reader like any
    # other, with the import system further up its stack
    try:
        return sys._getframe(3).f_code.co_filename.startswith("<frozen importlib")
    except ValueError:  # no such frame
        return False


_RUN_KEYWORDS = frozenset({"cwd", "input", "capture_output", "timeout", "check", "env", "stdin"})


def _call_text(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """A subprocess.run call as text that _run_again can repeat (hex fields), or None for one it cannot."""
    if len(args) != 1 or not set(kwargs) <= _RUN_KEYWORDS or not kwargs.get("capture_output"):
        return None
    argv = args[0]
    if not isinstance(argv, (list, tuple)) or not all(isinstance(a, str) for a in argv):
        return None
    data = kwargs.get("input")
    env = kwargs.get("env")
    stdin = kwargs.get("stdin")
    if data is not None and not isinstance(data, bytes):
        return None
    if env is not None and not (
        isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
    ):
        return None
    if stdin is not None and stdin != -3:  # subprocess.DEVNULL
        return None
    cwd = kwargs.get("cwd")
    return "|".join(
        (
            _hex(os.path.abspath(os.fspath(cwd)) if cwd is not None else os.getcwd()),
            data.hex() if data is not None else "-",
            "d" if stdin == -3 else "-",
            ",".join(_hex(a) for a in argv),
            ",".join(f"{_hex(k)}={_hex(v)}" for k, v in sorted(env.items())) if env is not None else "-",
        )
    )


def start(argv: list[str]) -> Recorder | None:
    """A recorder for this console-script run of `check`, hooks installed; None when it is not stored."""
    folder = cache_folder()
    if folder is None or not cacheable_arguments(argv) or not os.environ.get("HOME"):
        return None  # without HOME, ~ is the password database's, which nothing here records
    if not os.path.isdir(folder):
        # no cache yet: a fresh machine (a CI runner), where the same check seldom runs twice; the
        # first check there pays nothing for a record that would not be used, a later one records
        return None
    try:
        recorder = Recorder(argv, folder)
    except OSError:
        return None
    recorder.install()
    return recorder
