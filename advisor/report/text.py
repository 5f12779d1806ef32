"""Human output: findings grouped by file, then one summary line per run.

Plain text with ANSI colours when asked for: this runs on every commit as a pre-commit hook, so it
avoids rich's start-up cost here (rich serves the estimate tables and the verify progress bar).
"""

from __future__ import annotations

from collections import Counter
from itertools import groupby

from advisor.check import CheckResult, RunSummary
from advisor.report import relative
from advisor.report.escape import escape_result, escape_text

_CODES = {"error": "1;31", "warning": "33", "info": "36", "bold": "1", "dim": "2", "green": "32", "red": "31"}


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, style: str, text: str) -> str:
        return f"\x1b[{_CODES[style]}m{text}\x1b[0m" if self.color else text


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


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
        detail = ", ".join(_plural(counts[k], k) for k in ("error", "warning", "info") if counts[k])
        out.append(
            f"Found {_plural(len(result.findings), 'finding')} ({detail}) "
            f"in {_plural(len(result.runs), 'run')}."
        )
    else:
        out.append(f"{s('green', 'No findings')} in {_plural(len(result.runs), 'run')}.")
    out.extend(f"{s('red', 'internal error')}: {err}" for err in result.errors)
    return "\n".join(out) + "\n"
