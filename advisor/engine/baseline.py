"""Baselines: adopt gpu-advise in a repository that already has findings.

`gpu-advise baseline --output FILE` records every current finding as an entry keyed by rule, file
and key path (never a line number, so editing other lines does not make old findings "new");
`check --baseline FILE` then reports only findings that are not in it, and counts the entries
that no longer match anything so the baseline can be pruned as findings get fixed.

Files in the baseline are relative to the baseline file's folder, so the check can run from any
folder. An entry's fingerprint is `Finding.fingerprint` of that relative path, the same value as
the SARIF `partialFingerprints["gpuAdvise/v1"]`.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

from advisor.core.document import Document, pointer
from advisor.core.findings import Finding
from advisor.core.records import record, replace

VERSION = 1
DEFAULT_FILE = ".gpu-advise-baseline.json"
MAX_COUNT = 2**31 - 1  # how many findings one entry may hide; beyond it the file was not written by us


class BaselineError(Exception):
    """The baseline file cannot be used (exit code 2)."""


@record(slots=True)
class BaselineReport:
    path: Path
    entries: int  # entries in the file (with multiplicity)
    matched: int  # findings the baseline hid
    stale: int  # entries that matched no finding


def fill_keys(findings: list[Finding], documents: list[Document]) -> None:
    """Give a key path to findings located only by position (launch-script words, parse problems),
    by looking the position up among the document's key and value spans. Keys make fingerprints
    and key-ignores independent of line numbers."""
    by_path: dict[Path, Document] = {}
    for document in documents:
        by_path.setdefault(document.path.resolve(), document)
    index: dict[Path, dict[tuple[int, int], str]] = {}
    for f in findings:
        if f.location.key is not None:
            continue
        path = f.location.file.resolve()
        doc = by_path.get(path)
        if doc is None:
            continue
        if path not in index:
            deepest: dict[tuple[int, int], tuple[Any, ...]] = {}
            for table in (doc.key_spans, doc.value_spans):
                for keypath, span in table.items():
                    here = (span.line, span.col)
                    if keypath and len(keypath) > len(deepest.get(here, ())):
                        deepest[here] = keypath  # a nested mapping starts where its first key does
            index[path] = {pos: pointer(kp) for pos, kp in deepest.items()}
        key = index[path].get((f.location.line, f.location.col))
        if key is not None:
            f.location = replace(f.location, key=key)


def _relative_to(file: Path, folder: Path) -> str:
    resolved = file.resolve()
    try:
        return resolved.relative_to(folder.resolve()).as_posix()
    except ValueError:
        return Path(os.path.relpath(resolved, folder.resolve())).as_posix()


def entry_for(finding: Finding, folder: Path) -> dict[str, Any]:
    rel = _relative_to(finding.location.file, folder)
    return {
        "rule": finding.rule,
        "file": rel,
        "key": finding.location.key,
        "fingerprint": finding.fingerprint(rel),
    }


def render_baseline(findings: list[Finding], path: Path) -> str:
    folder = path.resolve().parent
    counts: Counter[tuple[str, str, str | None, str]] = Counter()
    for f in findings:
        e = entry_for(f, folder)
        counts[(e["rule"], e["file"], e["key"], e["fingerprint"])] += 1
    entries = []
    for (rule, file, key, fp), n in sorted(
        counts.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2] or "", kv[0][3])
    ):
        entry: dict[str, Any] = {"rule": rule, "file": file, "key": key, "fingerprint": fp}
        if n > 1:
            entry["count"] = n
        entries.append(entry)
    payload = {"version": VERSION, "tool": "gpu-advise", "entries": entries}
    # keys stay as they are (the file is data, read back by tools), but \u-escaped by strict JSON
    from advisor.core.escape import strict_json

    return strict_json(payload) + "\n"


def write_atomic(path: Path, text: str) -> None:
    """Write the baseline (advisor/core/safe_write.py: a random O_EXCL temporary, never a planted link)."""
    from advisor.core.safe_write import write_file

    write_file(path, text, parents=True)


def load_baseline(path: Path) -> Counter[str]:
    """Fingerprint -> how many findings it may hide. BaselineError names the file, line and column."""
    from advisor.sources.data_file import DataFileError, read_json_data

    if not os.path.lexists(path):
        raise BaselineError(f"{path}: baseline file not found (write one with `gpu-advise baseline`)")
    try:
        read = read_json_data(path, "a gpu-advise baseline")
    except DataFileError as exc:
        raise BaselineError(str(exc)) from None
    raw = read.data

    def fail(message: str, *keys: str | int) -> BaselineError:
        return BaselineError(f"{read.at(*keys)}: {message}")

    if not isinstance(raw, dict) or not isinstance(raw.get("entries"), list):
        raise fail("not a gpu-advise baseline (expected an object with 'entries')")
    if raw.get("version") != VERSION or isinstance(raw.get("version"), bool):
        shown = repr(raw.get("version"))[:40]
        raise fail(f"baseline version {shown} is not supported (expected {VERSION})", "version")
    counts: Counter[str] = Counter()
    for i, entry in enumerate(raw["entries"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("fingerprint"), str):
            raise fail(f"entry {i} has no fingerprint", "entries", i)
        n = entry.get("count", 1)
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_COUNT:
            raise fail(f"entry {i} has an invalid count {repr(n)[:40]}", "entries", i, "count")
        counts[entry["fingerprint"]] += n
    return counts


def apply_baseline(findings: list[Finding], path: Path) -> tuple[list[Finding], BaselineReport]:
    """Keep only findings the baseline does not hold."""
    remaining = load_baseline(path)
    total = sum(remaining.values())
    folder = path.resolve().parent
    kept: list[Finding] = []
    matched = 0
    for f in findings:
        fp = f.fingerprint(_relative_to(f.location.file, folder))
        if remaining.get(fp, 0) > 0:
            remaining[fp] -= 1
            matched += 1
        else:
            kept.append(f)
    return kept, BaselineReport(path, total, matched, sum(remaining.values()))


def describe(report: BaselineReport) -> str:
    from advisor.core.escape import escape_text
    from advisor.core.paths import relative

    hidden = f"{report.matched} finding{'s' if report.matched != 1 else ''}"
    text = f"baseline {escape_text(relative(report.path))}: {hidden} hidden"
    if report.stale:
        text += (
            f"; {report.stale} entr{'ies' if report.stale != 1 else 'y'} no longer match "
            "(run `gpu-advise baseline` again to prune them)"
        )
    return text
