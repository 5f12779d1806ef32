"""Recorded measurements the change adds: each entry replaces a static finding of its run (GA701 in place
of GA101), and its digest is computed from the run's files, so anyone can write one that applies.

The pull request's `.gpu-advise-verify.json` against the base revision's: an entry with a digest that
the base's file does not hold for the same run is new, reported at its digest in the pull request's file
(GA805). An entry without a digest never applies (advisor/pipeline/probe/recorded.py) and is not a relaxation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.core.document import Location

from .baseline_diff import position

MAX_ITEMS = 25


def _entries(path: Path | None) -> tuple[list[dict[str, Any]], list[str]]:
    """The runs of a recorded file and its lines ([] when absent or unreadable: the check itself reports
    a broken file)."""
    from advisor.core.errors import CheckError
    from advisor.pipeline.probe.recorded import read_recorded
    from advisor.sources.read import ReadRefused, read_text_file

    if path is None or not path.is_file():
        return [], []
    try:
        _, runs = read_recorded(path)
        text = read_text_file(path)
    except (CheckError, ReadRefused, OSError, ValueError):
        return [], []
    return [r for r in runs if isinstance(r.get("digest"), str)], text.splitlines()


def _run(entry: dict[str, Any]) -> str:
    return str(entry.get("name") or entry.get("path") or "")


def added_measurements(pr_file: Path | None, base_file: Path | None) -> list[dict[str, Any]]:
    entries, lines = _entries(pr_file)
    if not entries or pr_file is None:
        return []
    had = {(_run(e), e["digest"]) for e in _entries(base_file)[0]}
    out: list[dict[str, Any]] = []
    for entry in entries:
        run, digest = _run(entry), entry["digest"]
        if (run, digest) in had or len(out) >= MAX_ITEMS:
            continue
        line, col = position(lines, digest)
        out.append(
            {"run": run, "digest": digest, "file": pr_file.name, "location": Location(pr_file, line, col)}
        )
    return out
