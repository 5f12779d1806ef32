"""Apply fixes by position: every byte that no edit touches stays as it was.

A Fix is a list of Edits: set (or delete) one key of a YAML or JSON file, identified by its JSON
pointer, or replace one word of a launch script at a line and column. Each becomes a text edit
(a character range and its replacement), planned from the file as it is on disk:

(advisor/engine/textedits.py: YAML from PyYAML's composer marks, JSON and shell values from the readers'
spans, which carry where each value ends).

Edits of one round that overlap are not applied together: the first fix wins and the next round
reports what remains. Rounds run in memory (fix_until_stable: the re-check reads the planned bytes
through advisor.sources.read.overlay), so `--diff` shows exactly what `--fix` writes, and each file
is written once, at the end. Writing (write_fixed) goes to the real file behind a symlink (the link
stays), keeps mode and owner, writes a file with several hard links in place (a rename would split
them), refuses a read-only file or folder from its mode bits (root could write anyway), refuses a
file outside the project boundary, and compares the bytes and stat on disk with those the fixes
were planned from just before the rename: an edit made in between is never overwritten.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core.findings import Finding, Fix
from advisor.core.records import field, record
from advisor.core.safe_write import write_all
from advisor.engine.textedits import (
    JSON_SUFFIXES,
    SHELL_SUFFIXES,
    FixError,
    SourceFile,
    TextEdit,
    _check_json,
    _check_yaml,
    _encode,
    load_source,
    plan_edit,
)

if TYPE_CHECKING:
    from advisor.sources.boundary import ProjectBoundary

# The edits themselves are planned in advisor/engine/textedits.py (re-exported here for callers).
__all__ = [
    "JSON_SUFFIXES",
    "SHELL_SUFFIXES",
    "FixError",
    "SourceFile",
    "TextEdit",
    "apply_fixes",
    "fix_until_stable",
    "load_source",
    "plan_edit",
    "plan_fixes",
    "sarif_replacements",
]


def _apply(text: str, edits: list[TextEdit]) -> str:
    for e in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        text = text[: e.start] + e.text + text[e.end :]
    return text


def _overlaps(a: TextEdit, b: TextEdit) -> bool:
    a_point, b_point = a.start == a.end, b.start == b.end
    if a_point and b_point:
        return a.start == b.start
    if a_point:
        return b.start < a.start < b.end
    if b_point:
        return a.start < b.start < a.end
    return a.start < b.end and b.start < a.end


def _merge_inserts(edits: list[TextEdit]) -> list[TextEdit]:
    """One fix's insertions at the same point become one insertion, in the fix's order.

    Keys that come only through a YAML merge key (`<<: *defaults`) are not in the mapping's own
    entries, so a fix setting two of them (fp16: false, bf16: true) inserts both after the
    mapping's last entry. As two edits at one point they overlapped each other, the fix was
    skipped as "overlaps another fix; run --fix again", and the next run planned the same again:
    it never converged."""
    out: list[TextEdit] = []
    for e in edits:
        same = next(
            (
                i
                for i, o in enumerate(out)
                if o.start == o.end == e.start == e.end and o.file.resolve() == e.file.resolve()
            ),
            None,
        )
        if same is None:
            out.append(e)
        else:
            o = out[same]
            out[same] = TextEdit(o.file, o.start, o.end, o.text + e.text, o.also_changes or e.also_changes)
    return out


def eligible(fix: Fix | None, *, unsafe: bool) -> bool:
    return (
        fix is not None and (fix.safety == "safe" or (unsafe and fix.safety == "unsafe")) and bool(fix.edits)
    )


def _patch_lines(text: str) -> list[str]:
    """Lines as git and patch count them: ended by LF alone. str.splitlines also breaks at CR, NEL,
    U+2028 and other separators, which made hunks that `git apply` refuses."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


@record(slots=True)
class FixOutcome:
    applied: list[Finding] = field(default_factory=list)
    skipped: list[tuple[Finding, str]] = field(default_factory=list)
    changes: dict[Path, tuple[str, str]] = field(default_factory=dict)  # path -> (before, after)
    written: list[Path] = field(default_factory=list)
    refused: list[tuple[Path, str]] = field(default_factory=list)  # files not written, and why
    widened: list[tuple[Finding, str]] = field(default_factory=list)  # applied, changing more than a key
    sources: dict[Path, SourceFile] = field(default_factory=dict, repr=False)

    def diff(self) -> str:
        from advisor.core.paths import relative

        out: list[str] = []
        from advisor.core.escape import escape_text

        for path, (before, after) in sorted(self.changes.items(), key=lambda kv: str(kv[0])):
            rel = escape_text(relative(path))  # a file name cannot add lines to the patch
            lines = difflib.unified_diff(_patch_lines(before), _patch_lines(after), f"a/{rel}", f"b/{rel}")
            for line in lines:
                out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        return "".join(out)

    def summary(self) -> str:
        files = len(self.changes)
        n = len(self.applied)
        return f"{n} fix{'es' if n != 1 else ''} in {files} file{'s' if files != 1 else ''}"


class _Planner:
    """Plans fixes against the files as they are now, and refuses files the check did not see."""

    def __init__(self, checked_texts: dict[Path, str] | None = None) -> None:
        self.checked = {p.resolve(): t for p, t in (checked_texts or {}).items() if t is not None}
        self.sources: dict[Path, SourceFile] = {}
        self.bad: dict[Path, str] = {}

    def source(self, path: Path) -> SourceFile:
        key = path.resolve()
        if key in self.bad:
            raise FixError(self.bad[key])
        if key not in self.sources:
            try:
                src = load_source(path)
            except FixError as exc:
                self.bad[key] = str(exc)
                raise
            seen = self.checked.get(key)
            if seen is not None and seen != src.text:
                self.bad[key] = "the file changed since it was checked; run the check again"
                raise FixError(self.bad[key])
            self.sources[key] = src
        return self.sources[key]

    def plan(self, fix: Fix) -> list[TextEdit]:
        return [plan_edit(e, self.source(e.file)) for e in fix.edits]


def plan_fixes(
    findings: list[Finding], *, unsafe: bool, checked_texts: dict[Path, str] | None = None
) -> FixOutcome:
    """Plan every eligible fix; the outcome's changes hold each file's text before and after."""
    planner = _Planner(checked_texts)
    outcome = FixOutcome()
    accepted: dict[Path, list[TextEdit]] = {}
    for f in findings:
        if not eligible(f.fix, unsafe=unsafe):
            continue
        assert f.fix is not None
        try:
            edits = planner.plan(f.fix)
        except FixError as exc:
            outcome.skipped.append((f, str(exc)))
            continue
        wider = next((e.also_changes for e in edits if e.also_changes), "")
        if wider and not unsafe:  # a fix that changes more than its key is unsafe, whatever its rule says
            outcome.skipped.append((f, f"{wider}: an unsafe fix (--unsafe-fixes applies it)"))
            continue
        if wider:
            outcome.widened.append((f, wider))
        by_file: dict[Path, list[TextEdit]] = {}
        for e in _merge_inserts(edits):
            by_file.setdefault(e.file.resolve(), []).append(e)
        conflict = any(
            _overlaps(e, other)
            for key, mine in by_file.items()
            for e in mine
            for other in accepted.get(key, [])
        ) or any(
            _overlaps(a, b) for mine in by_file.values() for i, a in enumerate(mine) for b in mine[i + 1 :]
        )
        if conflict:
            outcome.skipped.append((f, "overlaps another fix; run --fix again"))
            continue
        trial_ok = True
        for key, mine in by_file.items():
            src = planner.sources[key]
            after = _apply(src.text, accepted.get(key, []) + mine)
            suffix = src.path.suffix.lower()
            try:
                if suffix in JSON_SUFFIXES or (
                    suffix not in {".yaml", ".yml"} and src.text.lstrip().startswith("{")
                ):
                    _check_json(src.text, after)
                elif suffix in {".yaml", ".yml"}:
                    _check_yaml(after)
            except FixError as exc:
                outcome.skipped.append((f, str(exc)))
                trial_ok = False
                break
        if not trial_ok:
            continue
        for key, mine in by_file.items():
            accepted.setdefault(key, []).extend(mine)
        outcome.applied.append(f)
    for key, edits in accepted.items():
        src = planner.sources[key]
        after = _apply(src.text, edits)
        if after != src.text:
            outcome.changes[src.path] = (src.text, after)
    outcome.sources = planner.sources
    return outcome


def sarif_replacements(finding: Finding, cache: dict[Path, SourceFile]) -> list[dict[str, Any]] | None:
    """The fix of one finding as SARIF artifactChanges (regions in the file as it is), or None."""
    if finding.fix is None or finding.fix.safety == "display" or not finding.fix.edits:
        return None
    changes: dict[Path, list[dict[str, Any]]] = {}
    try:
        for edit in finding.fix.edits:
            key = edit.file.resolve()
            if key not in cache:
                cache[key] = load_source(edit.file)
            src = cache[key]
            te = plan_edit(edit, src)
            sl, sc = src.position(te.start)
            el, ec = src.position(te.end)
            changes.setdefault(edit.file, []).append(
                {
                    "deletedRegion": {"startLine": sl, "startColumn": sc, "endLine": el, "endColumn": ec},
                    "insertedContent": {"text": te.text},
                }
            )
    except FixError:
        return None
    return [{"file": path, "replacements": reps} for path, reps in changes.items()]


# ---------------------------------------------------------------- writing


@record(frozen=True, slots=True)
class WriteTarget:
    """The real file a fix writes (symlinks followed) and what it looked like when it was read."""

    path: Path  # as the finding names it (what the user sees)
    real: Path  # symlinks resolved: the file whose bytes change; a link stays a link
    raw: bytes
    stat: os.stat_result


def _writable(st: os.stat_result, path: Path) -> bool:
    """From the mode bits, not from EACCES: root may write anything, but a file its owner made
    read-only is refused all the same."""
    if os.geteuid() != 0:
        return os.access(path, os.W_OK, follow_symlinks=True)
    return bool(st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def write_target(path: Path, raw: bytes, boundary: ProjectBoundary | None = None) -> WriteTarget:
    """Where a fix of `path` may be written, or FixError with a one-line reason."""
    real = Path(os.path.realpath(path))
    if boundary is not None:
        reason = boundary.outside_reason(real)
        if reason is not None:
            raise FixError(reason.replace("; not read", "; --fix writes only inside the project"))
    try:
        st = os.stat(real)
    except OSError as exc:
        raise FixError(f"cannot stat it: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise FixError("not a regular file")
    if not _writable(st, real):
        raise FixError("the file is read-only; not rewritten (make it writable to apply the fix)")
    return WriteTarget(path, real, raw, st)


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino, a.st_size, a.st_mtime_ns) == (b.st_dev, b.st_ino, b.st_size, b.st_mtime_ns)


def _unchanged(target: WriteTarget) -> str | None:
    """None when the real file still holds exactly the bytes the fixes were planned from."""
    from advisor.sources.read import ReadRefused, read_bytes

    try:
        now = os.stat(target.real)
        current = read_bytes(target.real)
    except (OSError, ReadRefused) as exc:
        return f"cannot read it again: {getattr(exc, 'reason', None) or exc}"
    if current != target.raw or not _same_file(now, target.stat):
        return "changed while the fixes were planned; not overwritten"
    return None


def before_replace(target: WriteTarget) -> None:
    """Called just before the final check and the rename (a seam for tests of a concurrent edit)."""


def write_fixed(target: WriteTarget, data: bytes) -> None:
    """Write `data` to the real file, keeping links, mode and owner. Raises FixError (one line).

    A file with one name is replaced atomically: a temporary file in its folder (same mode and
    owner), fsync, then rename over it. A file with several hard links is written in place
    (truncate and write the same inode after the checks), because a rename would leave the other
    names with the old bytes; the same in-place write serves a file whose owner we cannot give to a
    new file (not root, someone else's file we may write). Either way the bytes on disk are
    compared with the bytes the fixes were planned from just before the write."""
    folder = target.real.parent
    in_place = target.stat.st_nlink > 1 or (
        os.geteuid() != 0 and (target.stat.st_uid, target.stat.st_gid) != (os.geteuid(), os.getegid())
    )
    if in_place:
        _write_in_place(target, data)
        return
    try:
        folder_st = os.stat(folder)
    except OSError as exc:
        raise FixError(f"cannot stat its folder: {exc.strerror or exc}") from None
    if not _writable(folder_st, folder):
        raise FixError(f"its folder {folder} is read-only; not rewritten")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.real.name}.", suffix=".gpu-advise.tmp", dir=folder)
    except OSError as exc:
        raise FixError(f"cannot write in its folder: {exc.strerror or exc}") from None
    tmp = Path(tmp_name)
    try:
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fchmod(fh.fileno(), stat.S_IMODE(target.stat.st_mode))
                if os.geteuid() == 0:
                    os.fchown(fh.fileno(), target.stat.st_uid, target.stat.st_gid)
                os.fsync(fh.fileno())
            before_replace(target)
            changed = _unchanged(target)
            if changed:
                raise FixError(changed)
            os.replace(tmp, target.real)
        except OSError as exc:
            raise FixError(f"cannot write it: {exc.strerror or exc}") from None
    finally:
        if tmp.exists():
            tmp.unlink()


def _write_in_place(target: WriteTarget, data: bytes) -> None:
    before_replace(target)
    changed = _unchanged(target)
    if changed:
        raise FixError(changed)
    try:
        fd = os.open(target.real, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise FixError(f"cannot open it for writing: {exc.strerror or exc}") from None
    try:
        if not os.path.samestat(os.fstat(fd), target.stat):
            raise FixError("changed while the fixes were planned; not overwritten")
        os.ftruncate(fd, 0)
        write_all(fd, data)
        os.fsync(fd)
    except OSError as exc:
        raise FixError(f"cannot write it: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _write_changes(
    outcome: FixOutcome, originals: dict[Path, SourceFile], boundary: ProjectBoundary | None
) -> None:
    """Write each changed file; a file that cannot be written is refused with its reason and its
    fixes no longer count as applied."""
    for path, (_, after) in list(outcome.changes.items()):
        src = originals[path.resolve()]
        try:
            target = write_target(path, src.raw, boundary)
            write_fixed(target, _encode(src, after))
        except FixError as exc:
            outcome.refused.append((path, str(exc)))
            continue
        outcome.written.append(path)
    if outcome.refused:
        refused = {p.resolve() for p, _ in outcome.refused}
        for path in list(outcome.changes):
            if path.resolve() in refused:
                del outcome.changes[path]
        outcome.applied = [
            f
            for f in outcome.applied
            if not any(e.file.resolve() in refused for e in (f.fix.edits if f.fix else ()))
        ]


def apply_fixes(
    findings: list[Finding],
    *,
    unsafe: bool = False,
    write: bool = True,
    checked_texts: dict[Path, str] | None = None,
    boundary: ProjectBoundary | None = None,
) -> FixOutcome:
    """Plan one round of fixes and (unless write is False) write them. A file that changed on disk
    since it was read for planning is not overwritten."""
    outcome = plan_fixes(findings, unsafe=unsafe, checked_texts=checked_texts)
    if write:
        _write_changes(outcome, outcome.sources, boundary)
    return outcome


def fix_until_stable(
    result: Any,
    recheck: Callable[[], Any],
    *,
    unsafe: bool,
    rounds: int = 5,
    write: bool = True,
    boundary: ProjectBoundary | None = None,
    final: Callable[[], Any] | None = None,
) -> tuple[Any, FixOutcome]:
    """Plan fixes, check the planned text again, and repeat while fixes change it (a fix may
    uncover another), all in memory; then write each file once, or with write=False only report.
    So `--diff` shows exactly what `--fix` writes, and a second `--fix` changes nothing.

    `recheck` runs the check; during the rounds it reads the planned bytes (advisor.sources.read
    overlay). After writing, `final` (default: recheck) checks the files as they are on disk; its
    result is returned. With write=False the files are as they were, and so is the result returned
    (the first one: `--diff` exits as the check of the unchanged files does)."""
    from advisor.sources.read import overlay

    planned: dict[Path, bytes] = {}  # resolved path -> bytes after the rounds so far
    originals: dict[Path, SourceFile] = {}  # resolved path -> the file as first read from disk
    total = FixOutcome()
    first = result
    for _ in range(rounds):
        texts = {d.path: d.text for d in result.documents if getattr(d, "text", None) is not None}
        with overlay(planned):
            outcome = plan_fixes(result.findings, unsafe=unsafe, checked_texts=texts)
        for key, src in outcome.sources.items():
            originals.setdefault(key, src)
        total.applied.extend(outcome.applied)
        total.skipped = outcome.skipped
        total.widened.extend(outcome.widened)
        if not outcome.changes:
            break
        for path, (_, after) in outcome.changes.items():
            planned[path.resolve()] = _encode(outcome.sources[path.resolve()], after)
        with overlay(planned):
            result = recheck()
    for key, data in planned.items():
        src = originals[key]
        after = data.decode("utf-8")[1 if src.bom else 0 :]
        if after != src.text:
            total.changes[src.path] = (src.text, after)
    total.sources = originals
    if not write:
        return first, total
    _write_changes(total, originals, boundary)
    if total.written or total.refused or final is not None:
        result = (final or recheck)()
    return result, total
