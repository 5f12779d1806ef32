"""JSON with positions, read as DeepSpeed reads it.

DeepSpeed loads its config with hjson, which tolerates comments, and rejects duplicate keys;
accelerate and the HF integration load the same file with strict `json`. So we accept comments
and trailing commas but report them, and report duplicates, each at its exact line and column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from advisor.sources.document import KeyPath, SourceProblem, Span

MAX_DEPTH = 64

_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_WS = re.compile(r"[ \t\r\n]*")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class JsonSyntaxError(Exception):
    def __init__(self, message: str, span: Span) -> None:
        super().__init__(message)
        self.message = message
        self.span = span


@dataclass(slots=True)
class JsonResult:
    data: Any
    key_spans: dict[KeyPath, Span] = field(default_factory=dict)
    value_spans: dict[KeyPath, Span] = field(default_factory=dict)
    problems: list[SourceProblem] = field(default_factory=list)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line_starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
        self.result = JsonResult(None)

    def span(self, pos: int | None = None) -> Span:
        pos = self.pos if pos is None else pos
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return Span(lo + 1, pos - self.line_starts[lo] + 1)

    def fail(self, message: str, pos: int | None = None) -> JsonSyntaxError:
        return JsonSyntaxError(message, self.span(pos))

    def skip(self) -> None:
        text = self.text
        while True:
            self.pos = _WS.match(text, self.pos).end()
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
        self.result.problems.append(
            SourceProblem(
                "GA001",
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
        if depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels")
        self.result.value_spans[path] = self.span()
        ch = self.text[self.pos : self.pos + 1]
        if ch == "{":
            return self.obj(path, depth)
        if ch == "[":
            return self.array(path, depth)
        if ch == '"':
            return self.string()
        m = _NUMBER.match(self.text, self.pos)
        if m and m.end() > self.pos:
            self.pos = m.end()
            token = m.group(0)
            return float(token) if m.group(2) or m.group(3) else int(token)
        for word, val in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return val
        if not ch:
            raise self.fail("unexpected end of file: a value is missing")
        raise self.fail(f"unexpected {ch!r}: expected a JSON value")

    def obj(self, path: KeyPath, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        self.pos += 1
        self.skip()
        if self.text.startswith("}", self.pos):
            self.pos += 1
            return out
        while True:
            self.skip()
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
                self.result.problems.append(
                    SourceProblem(
                        "GA001",
                        f"duplicate key '{key}': DeepSpeed refuses duplicate keys and json keeps the last",
                        self.span(key_pos),
                        child,
                    )
                )
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

    def array(self, path: KeyPath, depth: int) -> list[Any]:
        out: list[Any] = []
        self.pos += 1
        self.skip()
        if self.text.startswith("]", self.pos):
            self.pos += 1
            return out
        while True:
            self.skip()
            if self.text.startswith("]", self.pos):
                self._trailing_comma()
                self.pos += 1
                return out
            child = (*path, len(out))
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
        self.result.problems.append(
            SourceProblem(
                "GA001",
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
