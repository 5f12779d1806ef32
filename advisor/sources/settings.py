"""Project settings: `[tool.gpu-advise]` in pyproject.toml or `.gpu-advise.toml`, found by walking up."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

# The types live in a leaf that advisor.sources.schema.settings builds without importing this module;
# re-exported here, where most callers name them.
from advisor.core.settings_types import RunSettings as RunSettings
from advisor.core.settings_types import Settings as Settings
from advisor.core.settings_types import Thresholds as Thresholds
from advisor.core.suggest import close_matches

SETTINGS_FILES = (".gpu-advise.toml", "pyproject.toml")
MAX_SETTINGS_BYTES = 1024 * 1024
MAX_PATH_CHARS = 1024  # a path-valued setting (hardware, baseline, extend-rules, runs.path, allowed-roots)
MAX_NAME_CHARS = 255  # one folder or file name in it (NAME_MAX of Linux and macOS)


class SettingsError(Exception):
    pass


def _line_of(text: str, key: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith((key, f'"{key}"')):
            return i
    return 1


def _value_line(text: str, key: str, value: str) -> int:
    """The line that writes `value` (quoted, as TOML writes strings), else the line of its key."""
    for i, line in enumerate(text.splitlines(), 1):
        if f'"{value}"' in line or f"'{value}'" in line:
            return i
    return _line_of(text, key)


# error paths only: compiled (through re's own cache) when a settings file does not parse
_TOML_AT = r"^(?P<msg>.*) \(at line (?P<line>\d+), column (?P<col>\d+)\)$"
_LONG_NUMBER = r"[0-9_]{4000,}"


def _loads(text: str, path: Path) -> dict[str, Any]:
    from advisor.sources.toml_subset import loads

    plain = loads(text)  # most settings files: the same result without tomllib's ~4.6 ms import
    if plain is not None:
        return plain
    import tomllib  # only here: cached settings are not parsed again

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        m = re.match(_TOML_AT, message, re.S)
        if m:
            where, message = f"{path}:{m['line']}:{m['col']}", m["msg"]
        elif message.endswith(" (at end of document)"):
            where, message = (
                f"{path}:{text.rstrip().count(chr(10)) + 1}:1",
                message.removesuffix(" (at end of document)"),
            )
        else:
            where = str(path)
        raise SettingsError(f"{where}: invalid TOML: {message}") from None
    except ValueError:  # int() of a number past Python's 4,300 digits, which tomllib does not catch
        long = re.search(_LONG_NUMBER, text)
        line = text.count("\n", 0, long.start()) + 1 if long else 1
        raise SettingsError(f"{path}:{line}: a number of more than 4,300 digits; not a setting") from None


def parse_settings(text: str, path: Path) -> Settings:
    data: Any = _loads(text, path)
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("gpu-advise")
        if data is None:
            raise LookupError
    from advisor.sources.settings_quick import quick_settings

    quick = quick_settings(data, path)  # the common keys with plain values, without the validator
    if quick is not None:
        _check_bounds(quick, text, path)
        return quick
    from advisor.core.datacodec import Invalid
    from advisor.sources.schema.settings import known_keys, validate_settings

    try:
        settings = validate_settings(data, path)
    except Invalid as exc:
        err = exc.errors()[0]
        loc = [str(p) for p in err["loc"]]
        key = loc[-1] if loc else ""
        if err["type"] == "extra_forbidden":
            section = loc[0] if len(loc) > 1 and loc[0] in ("thresholds", "runs") else ""
            close = close_matches(key, known_keys(section), n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise SettingsError(
                f"{path}:{_line_of(text, key)}: unknown setting '{'.'.join(loc)}'{hint}"
            ) from None
        raise SettingsError(
            f"{path}:{_line_of(text, key)}: setting '{'.'.join(loc)}': {err['msg']}"
        ) from None
    _check_bounds(settings, text, path)
    return settings


def _check_bounds(settings: Settings, text: str, path: Path) -> None:
    """Values the schema's types accept but no file system or matcher should be handed: a path or name
    over the system's limits (stat raised ENAMETOOLONG), a NUL byte, a glob past MAX_GLOB_CHARS."""
    from advisor.sources.globs import MAX_GLOB_CHARS

    paths = [("hardware", settings.hardware), ("baseline", settings.baseline)]
    paths += [("extend-rules", v) for v in settings.extend_rules]
    paths += [("allowed-roots", v) for v in settings.allowed_roots]
    for run in settings.runs:
        paths += [("runs.path", run.path), ("runs.hardware", run.hardware), ("runs.model", run.model)]
    for key, value in paths:
        if value is None:
            continue
        problem = None
        if "\0" in value:
            problem = "a NUL character"
        elif len(value) > MAX_PATH_CHARS:
            problem = f"{len(value)} characters, over the {MAX_PATH_CHARS} a path may have"
        elif any(len(part.encode()) > MAX_NAME_CHARS for part in value.split("/")):
            problem = f"a name longer than the {MAX_NAME_CHARS} bytes a file or folder name may have"
        if problem:
            line = _value_line(text, key.rsplit(".", 1)[-1], value)
            raise SettingsError(f"{path}:{line}: setting '{key}': {problem}")
    globs = [("per-file-ignores", g) for g in settings.per_file_ignores]
    globs += [("key-ignores", g) for g in settings.key_ignores]
    globs += [("exclude", g) for g in settings.exclude or ()]
    globs += [("extend-exclude", g) for g in settings.extend_exclude]
    for key, glob in globs:
        if len(glob) > MAX_GLOB_CHARS:
            line = _line_of(text, key) if len(glob) > 200 else _value_line(text, key, glob)
            raise SettingsError(
                f"{path}:{line}: setting '{key}': a glob of {len(glob)} characters, over the "
                f"{MAX_GLOB_CHARS} a path glob may have"
            )


def run_setting_position(settings: Settings, run: RunSettings, key: str) -> tuple[int, int]:
    """The line and column of the value of `key` of `run` in its settings file ((1, 1) when it cannot be
    told): inside the [[runs]] table whose `path` is the run's, else the line that writes the value."""
    value = getattr(run, key.replace("-", "_"), None)
    if settings.source is None or not isinstance(value, str):
        return 1, 1
    try:
        text = read_settings_text(settings.source)
    except SettingsError:
        return 1, 1
    header = re.compile(r"^\s*\[\[\s*(?:tool\.gpu-advise\.)?runs\s*\]\]")
    path_line = re.compile(r"^\s*path\s*=\s*['\"](?P<path>[^'\"]*)['\"]")
    key_line = re.compile(rf"^\s*{re.escape(key)}\s*=\s*")
    lines = text.splitlines()
    start = None
    for i, line in enumerate(lines):
        if header.match(line):
            start = i
            continue
        m = path_line.match(line)
        if start is not None and m is not None and m["path"] == run.path:
            for j in range(start + 1, len(lines)):
                if lines[j].lstrip().startswith("["):  # the next table
                    break
                k = key_line.match(lines[j])
                if k is not None:
                    return j + 1, k.end() + 1
    return _value_line(text, key, value), 1


def read_settings_text(path: Path, root: Path | None = None) -> str:
    """The text of a settings file, read by the one safe reader (a regular file, size-limited).

    `root`: the tree the file belongs to; a settings file that is a link leading out of it is refused
    without being opened, so its keys are never printed. Raises SettingsError, one line naming the file
    and line, for a file that cannot be read or is not UTF-8 (UTF-16 is named as such)."""
    from advisor.core.paths import resolved
    from advisor.sources.read import ReadRefused, read_bytes

    if root is not None:
        target, inside = resolved(path), resolved(root)
        if not target.is_relative_to(inside):
            raise SettingsError(f"{path}: settings file is a link to {target}, outside {inside}; not read")
    try:
        raw = read_bytes(path, MAX_SETTINGS_BYTES)
    except ReadRefused as exc:
        raise SettingsError(f"{path}: settings file {exc.reason}") from None
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SettingsError(f"{path}:1: settings file is UTF-16; TOML files are UTF-8 (save it as UTF-8)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SettingsError(
            f"{path}:{line}: settings file is not valid UTF-8 (byte 0x{raw[exc.start]:02x}); "
            "TOML files are UTF-8"
        ) from None
    if "\0" in text:
        line = text.count("\n", 0, text.index("\0")) + 1
        raise SettingsError(
            f"{path}:{line}: settings file holds a NUL byte (UTF-16 without a BOM?); not read"
        )
    return text


def load_settings(folder: Path, root: Path) -> Settings:
    """The settings that govern `folder` of the tree at `root`: the closest settings file at or above the
    folder, never above `root` (ruff's rule: the closest wins, nothing is merged), else the defaults.

    For a tree other than the checkout (the base revision of `--base`, materialised by
    advisor.plan.revision) as for the checkout itself; a settings file that leads out of `root` is an
    error."""
    root = Path(os.path.realpath(root))
    here = Path(os.path.realpath(folder))
    if not here.is_relative_to(root):
        return Settings()
    for current in (here, *here.parents):
        found = _settings_in(current, root)
        if found is not None:
            return found
        if current == root:
            break
    return Settings()


def find_settings(start: Path) -> Settings:
    """The closest settings file at or above start (ruff's rule: the closest wins). The walk stops at
    the git work tree's root; a settings file there that is a link out of the work tree is refused."""
    here = start.resolve()
    if here.is_file():
        here = here.parent
    tree = next((f for f in (here, *here.parents) if os.path.lexists(f / ".git")), None)
    if (
        tree is not None
    ):  # the git work tree (as advisor.sources.boundary.find_work_tree, which imports this module)
        return load_settings(here, tree)
    for folder in (here, *here.parents):
        found = _settings_in(folder, folder)
        if found is not None:
            return found
    return Settings()


class SettingsScope:
    """The settings of one check, file by file (ruff's hierarchical configuration): a file is governed
    by the closest settings file above it, so a sub-folder's `ignore = ["ALL"]` silences that folder
    only, whatever the order of the paths. `top`, the settings of the checked paths' common folder,
    governs what belongs to the check as a whole: fail-on, baseline, extend-rules, allowed-roots.

    Files outside `roots` (the checked paths' projects) are governed by `top`: no settings file is
    looked for outside the project. `hierarchical=False` (settings given by the caller, as with ruff's
    --config) lets `top` govern every file."""

    def __init__(self, top: Settings, roots: tuple[Path, ...] = (), hierarchical: bool = True) -> None:
        self.top = top
        self.roots = tuple(Path(os.path.realpath(r)) for r in roots)
        self.hierarchical = hierarchical
        self._by_folder: dict[str, Settings] = {}
        self._met: dict[str, Settings] = {str(top.source): top}
        self._found: dict[str, Settings | SettingsError] = {}

    @classmethod
    def single(cls, settings: Settings) -> SettingsScope:
        return cls(settings, hierarchical=False)

    def governing(self, path: Path) -> Settings:
        """The settings for the file at `path` (raises SettingsError when they cannot be read)."""
        if not self.hierarchical:
            return self.top
        folder = os.path.dirname(os.path.realpath(path))
        found = self._by_folder.get(folder)
        if found is None:
            inside = any(Path(folder).is_relative_to(r) for r in self.roots)
            found = self.found_near(folder) if inside else self.top
            if found.source == self.top.source:
                found = self.top
            self._by_folder[folder] = found
            self._met.setdefault(str(found.source), found)
        return found

    def found_near(self, folder: str) -> Settings:
        """find_settings(folder), once per resolved folder in this check, whether the scope governs
        the folder or not (the check context's `settings_near` asks too); raises SettingsError."""
        key = os.path.realpath(folder)
        found = self._found.get(key)
        if found is None:
            try:
                found = find_settings(Path(key))
            except SettingsError as exc:
                found = exc
            self._found[key] = found
        if isinstance(found, SettingsError):
            raise found
        return found

    def met(self) -> list[Settings]:
        """Every settings looked up so far, `top` first (each settings file once)."""
        return list(self._met.values())


def _settings_in(folder: Path, root: Path) -> Settings | None:
    for name in SETTINGS_FILES:
        candidate = folder / name
        if candidate.is_file():
            try:
                return _parse_cached(read_settings_text(candidate, root), candidate)
            except LookupError:  # a pyproject.toml without [tool.gpu-advise]
                continue
    return None


# (path, text) -> Settings met in this process: a check looks the same settings file up once per folder
# and per step (scope, boundary, each run: five times on the bundled example), each a cache entry read
# and decoded again (~0.4 ms each). Keyed by the text just read, so an edited file is parsed anew.
_PARSED: dict[tuple[str, str], Settings] = {}


def _parse_cached(text: str, path: Path) -> Settings:
    """parse_settings through the on-disk cache (keyed by the text): start-up matters in hooks."""
    from advisor.core.cache import cached
    from advisor.core.datacodec import decode, encode

    memo = (str(path), text)
    found = _PARSED.get(memo)
    if found is None:
        found = cached(
            "settings",
            str(path),
            text,
            lambda: parse_settings(text, path),
            to_data=encode,
            from_data=lambda data: decode(Settings, data),
        )
        if len(_PARSED) < 64:  # a process that reads many settings files (tests) keeps the first few
            _PARSED[memo] = found
    return found


def settings_schema() -> dict[str, Any]:
    from advisor.sources.schema.settings import json_schema

    return json_schema()
