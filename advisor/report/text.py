"""Human output: findings grouped by file, then one summary line per run.

Plain text with ANSI colours when asked for: this runs on every commit as a pre-commit hook, so it
avoids rich's start-up cost here (rich serves the estimate tables and the verify progress bar).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from itertools import groupby

from advisor.engine import error_label
from advisor.report import relative
from advisor.report.escape import escape_result, escape_text
from advisor.results import CheckResult, RunSummary
from advisor.rule_helpers import plural

_CODES = {"error": "1;31", "warning": "33", "info": "36", "bold": "1", "dim": "2", "green": "32", "red": "31"}


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, style: str, text: str) -> str:
        return f"\x1b[{_CODES[style]}m{text}\x1b[0m" if self.color else text


def color_enabled(when: str | None, *, isatty: bool) -> bool:
    """Whether to colour output: `--color always|never` decides; with `auto` (the default) NO_COLOR
    (no-color.org: any non-empty value) turns it off, then FORCE_COLOR (non-empty, not "0") turns it
    on, then TERM=dumb turns it off, else colour exactly when the output is a terminal."""
    if when in ("always", "never"):
        return when == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    return isatty


# the first sentence ends at '.', '!' or '?' followed by a space and a capital or a backtick (not
# inside "2.0e-4", "1.5x" or "e.g. foo"), or at the end of the message
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(])")


def first_sentence(message: str) -> str:
    text = " ".join(message.split())
    return _SENTENCE_END.split(text, maxsplit=1)[0]


def render_concise(result: CheckResult) -> str:
    """`--format concise`: one line per finding, `file:line:col: CODE message` with the message's first
    sentence (ruff's concise format; what pre-commit logs and editors' problem matchers read)."""
    result = escape_result(result)
    out = [
        f"{escape_text(relative(f.location.file))}:{f.location.line}:{f.location.col}: "
        f"{f.rule} {first_sentence(f.message)}"
        for f in result.findings
    ]
    out.append(f"Found {plural(len(result.findings), 'finding')}." if result.findings else "No findings.")
    out.extend(f"{error_label(err, result.rules)}: {err}" for err in result.errors)
    return "\n".join(out) + "\n"


def _run_line(run: RunSummary) -> str:
    parts = [f"run {run.name}"]
    if run.launcher:
        parts.append(run.launcher)
    parts.append(f"world size {run.world_size if run.world_size is not None else '?'}")
    if run.effective_batch is not None:
        parts.append(f"effective batch {run.effective_batch} ({run.effective_batch_formula})")
    else:
        parts.append("effective batch ?")
    if run.strategy:
        parts.append(run.strategy)
    if run.peak_vram_gib is not None and run.gpu_memory_gib is not None:
        parts.append(f"peak {run.peak_vram_gib:.1f} of {run.gpu_memory_gib:.1f} GiB per GPU")
    if run.est_hours_single_gpu is not None:
        parts.append(f"~{run.est_hours_single_gpu:.1f} h on one GPU")
    if run.hardware:
        parts.append(f"on {run.hardware}")
    return ", ".join(parts)


def render_text(result: CheckResult, *, color: bool | None = None) -> str:
    s = _Style(bool(color))
    result = escape_result(result)
    out: list[str] = []
    for file, group in groupby(result.findings, key=lambda f: str(f.location.file)):
        out.append(s("bold", escape_text(relative(file))))
        for f in group:
            where = f"{f.location.line}:{f.location.col}"
            out.append(
                f"  {where:<7} {s(f.severity, f.rule)} {s('dim', f.severity)}  {f.message}  "
                + (s("green", "(measured) ") if f.evidence == "measured" else "")
                + s("dim", f"({f.name})")
            )
            for r in f.related:
                where = f"{escape_text(relative(r.file))}:{r.line}:{r.col}"
                out.append(f"          {s('dim', f'related: {where}')}")
            if f.fix is not None and f.fix.description:
                out.append(f"          {s('green', 'fix')} ({f.fix.safety}): {f.fix.description}")
    if result.findings:
        out.append("")
    for run in result.runs:
        out.append(s("dim", _run_line(run)))
        out.extend(s("dim", f"  note: {note}") for note in run.notes)
    counts = Counter(f.severity for f in result.findings)
    if result.findings:
        detail = ", ".join(plural(counts[k], k) for k in ("error", "warning", "info") if counts[k])
        out.append(
            f"Found {plural(len(result.findings), 'finding')} ({detail}) "
            f"in {plural(len(result.runs), 'run')}."
        )
    else:
        out.append(f"{s('green', 'No findings')} in {plural(len(result.runs), 'run')}.")
    out.extend(f"{s('red', error_label(err, result.rules))}: {err}" for err in result.errors)
    return "\n".join(out) + "\n"
