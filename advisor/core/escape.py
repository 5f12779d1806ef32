"""One escaping step for every string a user (or an attacker's pull request) controls.

Config keys and values, file names, run names and rule texts reach the reports. A raw ESC starts a
terminal escape sequence (retitle, clear the screen, fake a hyperlink), a raw newline starts a line
that GitHub Actions reads as a workflow command (`::error ...`), and bidi overrides make a line read
differently from its bytes; zero-width and other invisible characters (U+200B, a bidi mark, Unicode
tag characters U+E0000-U+E007F, a no-break space) make a fake key print exactly like the real one.
`escape_text` shows each such character as a visible escape (`\\x1b`, `\\n`, `\\u202e`,
`\\U000e0041`); `escape_result` applies it to every user string of a CheckResult before any reporter
sees it, so no format escapes ad hoc. Format-specific escaping (GitHub's `%0A`, JSON's
`\\u001b`) still happens in the reporter, on top of this.

`strict_json` is the other half: JSON we print is parsed by strict parsers, so NaN and Infinity
(which json.dumps writes by default) become null.
"""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path
from typing import Any

from advisor.core import records

# C0 controls (newline and tab included), DEL, C1 controls, and every character that prints as
# nothing or as a space other than U+0020: Unicode's format characters (Cf: zero-width space/joiners,
# bidi marks, embeddings, overrides and isolates, the BOM, tag characters), the other space
# separators (Zs: no-break and typographic spaces), the line/paragraph separators (Zl, Zp), lone
# surrogates (an undecodable file name under surrogateescape) and the rest of Unicode's
# Default_Ignorable_Code_Point set (DerivedCoreProperties.txt: Hangul fillers, variation selectors,
# the combining grapheme joiner, U+E0000-U+E0FFF), plus U+2800 (braille blank). Written as ranges,
# not looked up per character, for the start-up path; tests/security/test_output_escaping.py checks
# them against unicodedata.
_INVISIBLE = (
    "\xa0\xad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u115f\u1160\u1680"
    "\u17b4\u17b5\u180b-\u180f\u2000-\u200f\u2028-\u202f\u205f-\u206f\u2800\u3000\u3164"
    "\ud800-\udfff\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


@functools.cache
def _unsafe(keep_newlines: bool) -> re.Pattern[str]:
    """The characters escape_text shows as escapes (with keep_newlines, all but `\\n`). Compiled on first
    use: the class is large (~1 ms to compile each), and plain printable ASCII, most of what a check
    prints, never needs it."""
    low = "\x00-\x09\x0b-\x1f" if keep_newlines else "\x00-\x1f"
    return re.compile(f"[{low}\x7f-\x9f{_INVISIBLE}]")


# GitHub's runner (actions/runner src/Runner.Worker/ActionCommandManager.cs, TryProcessCommand) reads
# every log line as a workflow command when, after TrimStart, it starts with `::` (ActionCommand.cs,
# TryParseV2), or when it holds `##[` anywhere (ActionCommand.cs, TryParse, the legacy form). A user
# string may start one of our lines (a file name heading the text report, a model name), so its
# leading `::` and any `##[` are broken up too.
_LEGACY_COMMAND = "##["
_LINE_COMMAND = re.compile(r"^([^\S\n]*):(?=:)", re.MULTILINE)


def escape_text(text: str, *, keep_newlines: bool = False) -> str:
    """The text with every control, DEL, C1, bidi and invisible character shown as a visible escape, and
    nothing in it that a GitHub runner reads as a workflow command (`::` leading a line, `##[`).

    keep_newlines: for multi-line documentation (a rule's docs in SARIF help text), `\\n` stays."""
    # printable ASCII (U+0020-U+007E) holds none of the characters escaped: no pattern to run
    if not (text.isascii() and text.isprintable()):
        pattern = _unsafe(keep_newlines)
        if pattern.search(text):
            text = pattern.sub(_visible, text)
    if _LEGACY_COMMAND in text:
        text = text.replace(_LEGACY_COMMAND, "#\\x23[")
    if "::" in text:
        text = _LINE_COMMAND.sub(lambda m: m.group(1) + "\\x3a", text)
    return text


def guard_workflow_commands(text: str) -> str:
    """Text that must stay byte-exact (a patch) printed in a GitHub Actions log: wrapped in
    `::stop-commands::TOKEN` ... `::TOKEN::`, GitHub's own way to print untrusted lines, so none of
    them runs as a workflow command. The token is random, so the text cannot end the pause."""
    import secrets

    token = f"gpu-advise-{secrets.token_hex(16)}"
    body = text if not text or text.endswith("\n") else text + "\n"
    return f"::stop-commands::{token}\n{body}::{token}::\n"


def escape_value(value: Any) -> Any:
    """Strings escaped inside plain data (str, Path, list, tuple, dict); other values as they are."""
    if isinstance(value, str):
        return escape_text(value)
    if isinstance(value, Path):
        shown = str(value)
        safe = escape_text(shown)
        return value if safe == shown else Path(safe)
    if isinstance(value, list):
        return [escape_value(v) for v in value]
    if isinstance(value, tuple):
        return tuple(escape_value(v) for v in value)
    if isinstance(value, dict):
        return {escape_value(k): escape_value(v) for k, v in value.items()}
    return value


def _escape_location(loc: Any) -> Any:
    return records.replace(loc, file=escape_value(loc.file), key=escape_value(loc.key))


def _escape_fix(fix: Any) -> Any:
    # Edits keep their real file and value: SARIF turns them into artifact changes read from disk,
    # and JSON escapes their text; only the description is display text.
    if fix is None:
        return None
    return records.replace(fix, description=escape_text(fix.description or ""))


def escape_finding(finding: Any) -> Any:
    return records.replace(
        finding,
        name=escape_text(finding.name),
        message=escape_text(finding.message),
        location=_escape_location(finding.location),
        run=escape_value(finding.run),
        related=[_escape_location(r) for r in finding.related],
        fix=_escape_fix(finding.fix),
    )


def _escape_dataclass(obj: Any) -> Any:
    """A copy of a dataclass whose str/Path/list/dict fields are escaped (for RunSummary and the like)."""
    changes = {f.name: escape_value(getattr(obj, f.name)) for f in records.fields(obj)}
    return records.replace(obj, **changes)


def escape_result(result: Any) -> Any:
    """A shallow copy of a CheckResult whose findings, runs and errors are safe to print.

    Findings keep their order, so `zip(result.findings, escape_result(result).findings)` pairs each
    with its original (fingerprints are computed from the original: a baseline stores those)."""
    findings = [escape_finding(f) for f in result.findings]
    runs = [_escape_dataclass(r) if records.is_record(r) else r for r in result.runs]
    errors = [escape_text(str(e)) for e in result.errors]
    return records.replace(result, findings=findings, runs=runs, errors=errors)


def finite(value: Any) -> Any:
    """Plain data with NaN and +/-Infinity replaced by None (what strict JSON can carry)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def strict_json(payload: Any, *, indent: int | None = 2) -> str:
    """json.dumps that never writes NaN or Infinity (they become null) and stays ASCII."""
    return json.dumps(finite(_plain(payload)), indent=indent, allow_nan=False, ensure_ascii=True)


def _plain(value: Any) -> Any:
    """Objects json cannot encode become their (escaped) str, as `default=str` did, before `finite`."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return escape_text(str(value))
