"""Human output: findings grouped by file, then one summary line per run.

Plain text with ANSI colours when asked for: this runs on every commit as a pre-commit hook, so it
avoids rich's start-up cost here (rich serves the estimate tables and the verify progress bar).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from itertools import groupby

from advisor.core.escape import escape_result, escape_text
from advisor.core.lazy_pattern import LazyPattern
from advisor.core.rule_helpers import plural
from advisor.engine.rule_engine import error_label
from advisor.report import relative
from advisor.report.results import CheckResult, RunSummary

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
_SENTENCE_END = LazyPattern(r"(?<=[.!?])\s+(?=[A-Z`(])")


def first_sentence(message: str) -> str:
    text = " ".join(message.split())
    return _SENTENCE_END.split(text, maxsplit=1)[0]


def render_concise(result: CheckResult, *, color: bool | None = None, quiet: bool = False) -> str:
    """`--format concise`: one line per finding, `file:line:col: CODE message` with the message's first
    sentence (ruff's concise format; what pre-commit logs and editors' problem matchers read). With
    colour, as ruff's: the file in bold, the code in its severity's colour."""
    s = _Style(bool(color))
    result = escape_result(result)
    out = [
        f"{s('bold', escape_text(relative(f.location.file)))}:{f.location.line}:{f.location.col}: "
        f"{s(f.severity, f.rule)} {first_sentence(f.message)}"
        for f in result.findings
    ]
    if not quiet:
        out.append(f"Found {plural(len(result.findings), 'finding')}." if result.findings else "No findings.")
    out.extend(f"{s('red', error_label(err, result.rules))}: {err}" for err in result.errors)
    return "\n".join(out) + "\n" if out else ""


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
        card = getattr(run, "hardware_card", None)
        parts.append(f"on {run.hardware}" + (f" ({card})" if card else ""))
    return ", ".join(parts)


# Runs listed one by one up to this many; beyond it only runs with findings are (a large repository had 226
# summary lines under its findings)
MAX_LISTED_RUNS = 10
NOT_A_TTY_WIDTH = 100  # the width messages wrap at when the output is no terminal (a log, a file)
_INDENT = " " * 10  # where related locations, fixes and wrapped message lines start


def output_width(*, isatty: bool) -> int:
    """The terminal's width (COLUMNS when set), else NOT_A_TTY_WIDTH; at least 60."""
    if not isatty:
        return NOT_A_TTY_WIDTH
    import shutil

    return max(60, shutil.get_terminal_size((NOT_A_TTY_WIDTH, 24)).columns)


# textwrap's whitespace (Lib/textwrap.py, _whitespace): after tabs are expanded each becomes a space
_TO_SPACE = str.maketrans("\t\n\x0b\x0c\r", "     ")
_SPACES = re.compile("( +)")  # wordsep_simple_re once only spaces are left


def wrap_words(text: str, width: int, initial_indent: str = "", subsequent_indent: str = "") -> list[str]:
    """textwrap.wrap(text, width, initial_indent=..., subsequent_indent=..., break_long_words=False,
    break_on_hyphens=False), its other options at their defaults, without importing textwrap: its import
    compiles TextWrapper's word-splitting patterns, ~1 ms of a check whose messages wrap. The steps are
    CPython 3.11's Lib/textwrap.py: _munge_whitespace (tabs to 8 columns, whitespace to spaces), _split
    with wordsep_simple_re (words and runs of spaces, empty pieces dropped), _wrap_chunks (whitespace
    dropped at a line's end and at a later line's start, as `.strip() == ''` sees it) and, without
    break_long_words, _handle_long_word (a word wider than the line is a line of its own)."""
    if width <= 0:
        raise ValueError(f"invalid width {width!r} (must be > 0)")
    text = text.expandtabs(8).translate(_TO_SPACE)
    chunks = [c for c in _SPACES.split(text) if c]
    chunks.reverse()
    lines: list[str] = []
    while chunks:
        line: list[str] = []
        used = 0
        indent = subsequent_indent if lines else initial_indent
        room = width - len(indent)
        if lines and chunks[-1].strip() == "":
            del chunks[-1]
        while chunks and used + len(chunks[-1]) <= room:
            used += len(chunks[-1])
            line.append(chunks.pop())
        if chunks and not line and len(chunks[-1]) > room:
            line.append(chunks.pop())
        if line and line[-1].strip() == "":
            del line[-1]
        if line:
            lines.append(indent + "".join(line))
    return lines


def _wrapped(head: str, body: str, width: int, indent: str = _INDENT) -> list[str]:
    """`head` then `body`, wrapped at `width` with continuation lines at _INDENT (words never split, so
    a path or a key stays whole even when it alone is wider)."""
    lines = wrap_words(body, width, " " * len(head), indent)
    if not lines:
        return [head.rstrip()]
    return [head + lines[0][len(head) :], *lines[1:]]


def _frame(line: str, col: int, width: int) -> list[str]:
    """ruff's code frame: the source line under its number and a caret under the column; a line wider
    than the output is cut around the column."""
    text = line.rstrip("\n").rstrip("\r")
    shown = escape_text(text)
    at = len(escape_text(text[: max(col - 1, 0)]))
    room = max(width - 20, 20)
    if len(shown) > room:
        start = max(0, min(at - room // 2, len(shown) - room))
        cut = shown[start : start + room]
        prefix = "..." if start > 0 else ""
        suffix = "..." if start + room < len(shown) else ""
        shown, at = prefix + cut + suffix, at - start + len(prefix)
    return [shown, " " * at + "^"]


def _sources(result: CheckResult) -> dict[str, list[str]]:
    """The text of every file the check read, by path, as lines (what a code frame shows)."""
    out: dict[str, list[str]] = {}
    for doc in getattr(result, "documents", None) or []:
        text = getattr(doc, "text", None)
        if isinstance(text, str):
            out[os.path.abspath(doc.path)] = text.splitlines()
    return out


def _runs_shown(result: CheckResult) -> tuple[list[RunSummary], int]:
    """The runs to list, and how many are left out: every run when there are few, else only the runs
    with findings."""
    if len(result.runs) <= MAX_LISTED_RUNS:
        return list(result.runs), 0
    with_findings = {f.run for f in result.findings if f.run}
    shown = [r for r in result.runs if r.name in with_findings]
    return shown, len(result.runs) - len(shown)


def render_text(
    result: CheckResult, *, color: bool | None = None, quiet: bool = False, width: int = NOT_A_TTY_WIDTH
) -> str:
    """The full format: findings grouped by file, each with its source line and a caret under the column
    (ruff's full format), messages wrapped at `width`; then the runs and a summary line. `quiet`:
    the findings and errors only."""
    s = _Style(bool(color))
    sources = _sources(result)
    result = escape_result(result)
    out: list[str] = []
    for file, group in groupby(result.findings, key=lambda f: str(f.location.file)):
        out.append(s("bold", escape_text(relative(file))))
        lines = sources.get(os.path.abspath(file), [])
        for f in group:
            where = f"{f.location.line}:{f.location.col}"
            head = f"  {where:<7} {f.rule} {f.severity}  "
            measured = "(measured) " if f.evidence == "measured" else ""
            body = f"{f.message}  {measured}({f.name})"
            wrapped = _wrapped(head, body, width)
            styled = f"  {where:<7} {s(f.severity, f.rule)} {s('dim', f.severity)}  "
            wrapped[0] = styled + wrapped[0][len(head) :]
            last = wrapped[-1]
            cut = last.rfind(f"({f.name})")
            if cut >= 0:
                tail = s("dim", f"({f.name})")
                if measured and last[:cut].endswith(measured):
                    tail = s("green", measured) + tail
                    cut -= len(measured)
                wrapped[-1] = last[:cut] + tail
            out.extend(wrapped)
            if 1 <= f.location.line <= len(lines):
                number = str(f.location.line)
                source, caret = _frame(lines[f.location.line - 1], f.location.col, width)
                out.append(f"{_INDENT}{s('dim', number + ' |')} {source}")
                out.append(f"{_INDENT}{' ' * len(number)} {s('dim', '|')} {s(f.severity, caret)}")
            for r in f.related:
                where = f"{escape_text(relative(r.file))}:{r.line}:{r.col}"
                out.append(f"{_INDENT}{s('dim', f'related: {where}')}")
            if f.fix is not None and f.fix.description:
                out.append(f"{_INDENT}{s('green', 'fix')} ({f.fix.safety}): {f.fix.description}")
    if quiet:
        out.extend(f"{s('red', error_label(err, result.rules))}: {err}" for err in result.errors)
        return "\n".join(out) + "\n" if out else ""
    if result.findings:
        out.append("")
    shown, hidden = _runs_shown(result)
    for run in shown:
        out.extend(s("dim", line) for line in _wrapped("", _run_line(run), width, "    "))
        for note in run.notes:
            out.extend(s("dim", line) for line in _wrapped("  note: ", note, width, "        "))
    if hidden:
        out.append(
            s(
                "dim",
                f"{plural(hidden, 'other run')} without findings not listed (--format json lists every run)",
            )
        )
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
