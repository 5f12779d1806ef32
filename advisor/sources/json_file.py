"""JSON with positions, read as DeepSpeed reads it.

DeepSpeed loads its config with hjson, which tolerates comments, and rejects duplicate keys;
accelerate and the HF integration load the same file with strict `json`. So we accept comments
and trailing commas but report them, and report duplicates, each at its exact line and column.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

from advisor.core.document import MAX_INT, KeyPath, SourceProblem, Span, refused_number
from advisor.core.records import field, record

MAX_DEPTH = 64
# Positions cost ~10 us and ~300 bytes a value in this parser: a 9.8 MB array of numbers took 29 s and
# 1.6 GB. Positions are kept for the first POSITION_BUDGET values; past it, each remaining container
# is decoded by the C json decoder (a finding at a later value points at the nearest value that kept
# its position). What the C decoder refuses (comments, trailing commas, NaN, numbers we refuse,
# duplicate keys) is read here again, without positions, up to MAX_VALUES values in all.
POSITION_BUDGET = 20_000
MAX_VALUES = 100_000
MAX_PROBLEMS = 100

_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_WS = re.compile(r"[ \t\r\n]*")

_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _skip_ws(text: str, pos: int) -> int:
    match = _WS.match(text, pos)  # `*`: matches everywhere, possibly empty
    return match.end() if match else pos


class JsonSyntaxError(Exception):
    def __init__(self, message: str, span: Span) -> None:
        super().__init__(message)
        self.message = message
        self.span = span


@record(slots=True)
class JsonResult:
    data: Any
    key_spans: dict[KeyPath, Span] = field(default_factory=dict)
    value_spans: dict[KeyPath, Span] = field(default_factory=dict)
    problems: list[SourceProblem] = field(default_factory=list)


class _Refused(ValueError):
    """A number the fast decoder hands back to the position-keeping parser, which reports it."""


def _checked_int(token: str) -> int:
    if len(token) > 18 and (len(token) > sys.get_int_max_str_digits() or abs(int(token)) > MAX_INT):
        raise _Refused(token)
    return int(token)


def _checked_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value) or abs(value) > MAX_INT:
        raise _Refused(token)
    return value


def _no_constant(token: str) -> Any:
    raise _Refused(token)  # NaN / Infinity: not JSON, and neither DeepSpeed nor json.loads(strict) agree


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Refused("duplicate key")  # json keeps the last silently; read here again to report it
    return out


_DECODER = json.JSONDecoder(
    object_pairs_hook=_unique_keys,
    parse_int=_checked_int,
    parse_float=_checked_float,
    parse_constant=_no_constant,
)
_MISS = object()


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line_starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
        self.result = JsonResult(None)
        self.values = 0  # values read by this parser (the fast decoder's are not counted)

    @property
    def keeping(self) -> bool:
        return self.values < POSITION_BUDGET

    def problem(self, problem: SourceProblem) -> None:
        problems = self.result.problems
        if len(problems) < MAX_PROBLEMS:
            problems.append(problem)
        elif len(problems) == MAX_PROBLEMS:
            problems.append(
                SourceProblem(
                    "too-many-problems",
                    f"more than {MAX_PROBLEMS} problems in this file: the rest are not reported",
                    problem.span,
                    severity="warning",
                )
            )

    def fast(self, opener: str = "") -> Any:
        """The value at self.pos (or, with ``opener``, the rest of the open container) decoded by the C
        decoder; _MISS when it refuses, and then nothing has moved."""
        try:
            if not opener:
                value, end = _DECODER.raw_decode(self.text, self.pos)
                self.pos = end
                return value
            rest = opener + self.text[self.pos :]  # one copy, made once per open container
            value, end = _DECODER.raw_decode(rest, 0)
            self.pos += end - 1
            return value
        except (ValueError, RecursionError):
            return _MISS

    def span(self, pos: int | None = None) -> Span:
        pos = self.pos if pos is None else pos
        line = self._line(pos)
        return Span(line + 1, pos - self.line_starts[line] + 1)

    def _line(self, pos: int) -> int:
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def value_span(self, start: int, end: int) -> Span:
        """A value's span with its end (just after its last character), for --fix."""
        a, b = self._line(start), self._line(end)
        return Span(a + 1, start - self.line_starts[a] + 1, b + 1, end - self.line_starts[b] + 1, start, end)

    def fail(self, message: str, pos: int | None = None) -> JsonSyntaxError:
        return JsonSyntaxError(message, self.span(pos))

    def skip(self) -> None:
        text = self.text
        while True:
            self.pos = _skip_ws(text, self.pos)
            if text.startswith("//", self.pos) or text.startswith("#", self.pos):
                self._comment(self.pos)
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif text.startswith("/*", self.pos):
                self._comment(self.pos)
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.fail("unterminated /* comment")
                self.pos = end + 2
            else:
                return

    def _comment(self, pos: int) -> None:
        self.problem(
            SourceProblem(
                "json-comment",
                "comment in JSON: DeepSpeed (hjson) accepts it but accelerate and the HF Trainer read "
                "this file with strict json and fail",
                self.span(pos),
                severity="warning",
            )
        )

    def parse(self) -> JsonResult:
        self.skip()
        if self.pos >= len(self.text):
            raise self.fail("empty JSON document")
        self.result.data = self.value((), 0)
        self.skip()
        if self.pos < len(self.text):
            raise self.fail(f"unexpected {self.text[self.pos]!r} after the end of the JSON document")
        return self.result

    def value(self, path: KeyPath, depth: int) -> Any:
        start = self.pos
        value = self._value(path, depth)
        if self.keeping:  # the span set before the children is kept in place, now with its end
            self.result.value_spans[path] = self.value_span(start, self.pos)
        return value

    def _value(self, path: KeyPath, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels")
        ch = self.text[self.pos : self.pos + 1]
        if not self.keeping and ch in ("{", "["):
            fast = self.fast()
            if fast is not _MISS:
                return fast
        self.values += 1
        if self.values > MAX_VALUES:
            raise self.fail(
                f"more than {MAX_VALUES} values in a file that strict JSON cannot read: not read as a config"
            )
        if self.keeping:
            self.result.value_spans[path] = self.span()
        if ch == "{":
            return self.obj(path, depth)
        if ch == "[":
            return self.array(path, depth)
        if ch == '"':
            return self.string()
        m = _NUMBER.match(self.text, self.pos)
        if m and m.end() > self.pos:
            return self.number(m, path)
        for word, val in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return val
        if not ch:
            raise self.fail("unexpected end of file: a value is missing")
        raise self.fail(f"unexpected {ch!r}: expected a JSON value")

    def number(self, m: re.Match[str], path: KeyPath) -> int | float:
        start, token = self.pos, m.group(0)
        if m.group(2) or m.group(3):
            value: int | float = float(token)
        elif len(token) > sys.get_int_max_str_digits():
            raise self.fail(
                f"an integer of {len(token)} digits is too large to read (Python's json refuses integers "
                f"of more than {sys.get_int_max_str_digits()} digits)"
            )
        else:
            value = int(token)
        self.pos = m.end()
        refusal = refused_number(value)
        if refusal is not None:
            self.problem(
                SourceProblem("refused-number", refusal, self.span(start), path, detail="refused-number")
            )
        return value

    def obj(self, path: KeyPath, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        self.pos += 1
        self.skip()
        if self.text.startswith("}", self.pos):
            self.pos += 1
            return out
        tried_fast = False  # the C decoder is tried once per container: a refusal stands for its rest
        while True:
            self.skip()
            if not self.keeping and not tried_fast and self.text.startswith('"', self.pos):
                tried_fast, rest_at = True, self.pos
                rest = self.fast("{")
                if rest is not _MISS:
                    for key, value in rest.items():
                        if key in out:
                            self._duplicate(key, (*path, key), rest_at)
                        out[key] = value
                    return out
            if self.text.startswith("}", self.pos):  # trailing comma
                self._trailing_comma()
                self.pos += 1
                return out
            if not self.text.startswith('"', self.pos):
                raise self.fail("expected a quoted key")
            key_pos = self.pos
            key = self.string()
            child = (*path, key)
            if key in out:
                self._duplicate(key, child, key_pos)
            if self.keeping:
                self.result.key_spans[child] = self.span(key_pos)
            self.skip()
            if not self.text.startswith(":", self.pos):
                raise self.fail(f"expected ':' after key '{key}'")
            self.pos += 1
            self.skip()
            out[key] = self.value(child, depth + 1)
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if self.text.startswith("}", self.pos):
                self.pos += 1
                return out
            raise self.fail("expected ',' or '}' (a missing comma?)")

    def _duplicate(self, key: str, child: KeyPath, pos: int) -> None:
        self.problem(
            SourceProblem(
                "duplicate-key",
                f"duplicate key '{key}': DeepSpeed refuses duplicate keys and json keeps the last",
                self.span(pos),
                child,
            )
        )

    def array(self, path: KeyPath, depth: int) -> list[Any]:
        out: list[Any] = []
        self.pos += 1
        self.skip()
        if self.text.startswith("]", self.pos):
            self.pos += 1
            return out
        tried_fast = False
        while True:
            self.skip()
            if not self.keeping and not tried_fast and not self.text.startswith("]", self.pos):
                tried_fast = True
                rest = self.fast("[")
                if rest is not _MISS:
                    out.extend(rest)
                    return out
            if self.text.startswith("]", self.pos):
                self._trailing_comma()
                self.pos += 1
                return out
            child = (*path, len(out))
            if self.keeping:
                self.result.key_spans[child] = self.span()
            out.append(self.value(child, depth + 1))
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if self.text.startswith("]", self.pos):
                self.pos += 1
                return out
            raise self.fail("expected ',' or ']' (a missing comma?)")

    def _trailing_comma(self) -> None:
        self.problem(
            SourceProblem(
                "trailing-comma",
                "trailing comma: strict json (accelerate, the HF Trainer) rejects it",
                self.span(),
                severity="warning",
            )
        )

    def string(self) -> str:
        start = self.pos
        self.pos += 1
        parts: list[str] = []
        text = self.text
        while True:
            end = self.pos
            while end < len(text) and text[end] not in '"\\\n':
                end += 1
            parts.append(text[self.pos : end])
            if end >= len(text) or text[end] == "\n":
                raise self.fail("unterminated string", start)
            if text[end] == '"':
                self.pos = end + 1
                return "".join(parts)
            esc = text[end + 1 : end + 2]
            if esc == "u":
                hexdigits = text[end + 2 : end + 6]
                if not re.fullmatch(r"[0-9a-fA-F]{4}", hexdigits):
                    raise self.fail("invalid \\u escape", end)
                parts.append(chr(int(hexdigits, 16)))
                self.pos = end + 6
            elif esc in _ESCAPES:
                parts.append(_ESCAPES[esc])
                self.pos = end + 2
            else:
                raise self.fail(f"invalid escape \\{esc}", end)


def parse_json(text: str) -> JsonResult:
    """Parse JSON (comments and trailing commas tolerated, reported). Raises JsonSyntaxError."""
    return _Parser(text).parse()
