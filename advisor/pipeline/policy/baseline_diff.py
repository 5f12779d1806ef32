"""Baseline entries the change adds: each one hides a finding, and a fingerprint is easy to compute.

The pull request's baseline file against the base revision's (the same file, or the one the base's
settings name): an entry whose fingerprint the base holds fewer times is new, reported at its line in
the pull request's file. Items of `policy.baseline` (GA804); past MAX_ITEMS entries one item counts
the rest.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from advisor.core.document import Location

MAX_ITEMS = 25


def _entries(path: Path | None) -> tuple[list[dict[str, Any]], list[str]]:
    """The entries of a baseline file and its lines ([] when absent or not a baseline: the check itself
    reports a broken baseline)."""
    from advisor.sources.read import ReadRefused, read_text_file

    if path is None or not path.is_file():
        return [], []
    try:
        text = read_text_file(path)
        raw = json.loads(text)
    except (ReadRefused, OSError, ValueError, RecursionError):
        return [], []
    entries = raw.get("entries") if isinstance(raw, dict) else None
    if not isinstance(entries, list):
        return [], []
    kept = [e for e in entries if isinstance(e, dict) and isinstance(e.get("fingerprint"), str)]
    return kept, text.splitlines()


def _count(entry: dict[str, Any]) -> int:
    n = entry.get("count", 1)
    return n if isinstance(n, int) and 0 < n < 1 << 31 else 1


def added_entries(pr_file: Path | None, base_file: Path | None) -> list[dict[str, Any]]:
    entries, lines = _entries(pr_file)
    if not entries or pr_file is None:
        return []
    had: Counter[str] = Counter()
    for e in _entries(base_file)[0]:
        had[e["fingerprint"]] += _count(e)
    out: list[dict[str, Any]] = []
    rest = 0
    for entry in entries:
        fingerprint = entry["fingerprint"]
        n = _count(entry)
        new = max(0, n - had[fingerprint])
        had[fingerprint] = max(0, had[fingerprint] - n)
        if not new:
            continue
        if len(out) >= MAX_ITEMS:
            rest += new
            continue
        line, col = position(lines, fingerprint)
        out.append(
            {
                "kind": "entry",
                "rule": str(entry.get("rule")),
                "file": str(entry.get("file")),
                "key": str(entry.get("key")) if entry.get("key") is not None else "",
                "count": new,
                "location": Location(pr_file, line, col),
            }
        )
    if rest:
        top = Location(pr_file, 1, 1)
        out.append({"kind": "more", "rule": "", "file": "", "key": "", "count": rest, "location": top})
    return out


def position(lines: list[str], value: str) -> tuple[int, int]:
    """The line and column of the first JSON string `value` (an entry's fingerprint or digest)."""
    for number, line in enumerate(lines, 1):
        col = line.find(f'"{value}"')
        if col >= 0:
            return number, col + 1
    return 1, 1
