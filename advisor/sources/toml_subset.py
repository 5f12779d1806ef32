"""The plain TOML that settings files are written in, read without importing tomllib.

Importing tomllib costs ~4.6 ms of CPU (paired, `python -S -c "import re, datetime, json, typing, enum"`
with and without tomllib, n=25: tomllib/_re.py compiles its number and date patterns at import), paid by a
cold `gpu-advise check` whose cache is empty (a fresh CI runner). A `.gpu-advise.toml` is almost always
comments, `[table]` / `[[runs]]` headers with one bare key, and `key = value` lines whose values are strings
without escapes, decimal numbers, booleans and arrays of those. `loads` reads exactly that and returns None
for anything else (a dotted or quoted key, an inline table, an escape, a date, an exponent, `_` in a number,
CR line ends, a repeated key or table, a control character, ...), and the caller hands that text to tomllib,
whose result and error messages are then the answer. On what it accepts its result is tomllib's
(tests/sources/test_toml_subset.py compares the two on the repository's settings files and on generated and
mutated documents).
"""

from __future__ import annotations

import re
from typing import Any

# TOML 1.0 forbids these (everything below U+0020 but tab and LF, and DEL) in comments and strings;
# CR is left to tomllib too, which reads CRLF line ends.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_HEADER = re.compile(r"(\[\[?)([A-Za-z0-9_-]+)(\]\]?)")
_KEY_EQUALS = re.compile(r"([A-Za-z0-9_-]+)[ \t]*=[ \t]*")
# tomllib: int() of the digits, float() of the text (tomllib/_parser.py parse_value, match_to_number);
# at most 18 digits so that no int() is ever slow or refused.
_NUMBER = re.compile(r"[+-]?(?:0|[1-9][0-9]{0,17})(\.[0-9]{1,18})?")
_BASIC = re.compile(r'"([^"\\\n]*)"')
_LITERAL = re.compile(r"'([^'\n]*)'")
_BLANK = re.compile(r"[ \t]*(?:#[^\n]*)?")


class _NotPlain(Exception):
    """The text is outside what this module reads: tomllib decides."""


def loads(text: str) -> dict[str, Any] | None:
    """tomllib.loads(text) for the plain subset described above, else None."""
    if _CONTROL.search(text):
        return None
    try:
        return _Reader(text).document()
    except _NotPlain:
        return None


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def document(self) -> dict[str, Any]:
        root: dict[str, Any] = {}
        table_arrays: set[str] = set()  # keys made by [[key]]: the only ones another [[key]] may extend
        current = root
        text = self.text
        while True:
            self._between()
            if self.pos >= len(text):
                return root
            header = _HEADER.match(text, self.pos)
            if header:
                opening, key, closing = header.groups()
                if len(opening) != len(closing):
                    raise _NotPlain
                self.pos = header.end()
                if opening == "[[":
                    if key not in root:
                        root[key] = []
                        table_arrays.add(key)
                    elif key not in table_arrays:
                        raise _NotPlain
                    current = {}
                    root[key].append(current)
                else:
                    if key in root:
                        raise _NotPlain
                    current = root[key] = {}
                self._line_end()
                continue
            pair = _KEY_EQUALS.match(text, self.pos)
            if not pair or pair.group(1) in current:
                raise _NotPlain
            self.pos = pair.end()
            current[pair.group(1)] = self._value()
            self._line_end()

    def _blank(self) -> None:
        m = _BLANK.match(self.text, self.pos)  # always matches, if only ""
        if m:
            self.pos = m.end()

    def _line_end(self) -> None:
        """After a header or a key's value: blanks and a comment, then a line end or the end of the text."""
        text = self.text
        self._blank()
        if self.pos < len(text):
            if text[self.pos] != "\n":
                raise _NotPlain
            self.pos += 1

    def _between(self) -> None:
        """Blanks, comments and line ends (between statements, and between an array's items)."""
        text = self.text
        while True:
            self._blank()
            if self.pos < len(text) and text[self.pos] == "\n":
                self.pos += 1
                continue
            return

    def _value(self) -> Any:
        text = self.text
        pos = self.pos
        if text.startswith("[", pos):
            self.pos += 1
            items: list[Any] = []
            while True:
                self._between()
                if text.startswith("]", self.pos):
                    self.pos += 1
                    return items
                items.append(self._value())
                self._between()
                if text.startswith(",", self.pos):
                    self.pos += 1
                elif not text.startswith("]", self.pos):
                    raise _NotPlain
        for pattern in (_BASIC, _LITERAL):
            m = pattern.match(text, pos)
            if m:
                self.pos = m.end()
                return self._ended(m.group(1))
        for word, value in (("true", True), ("false", False)):
            if text.startswith(word, pos):
                self.pos = pos + len(word)
                return self._ended(value)
        m = _NUMBER.match(text, pos)
        if m:
            self.pos = m.end()
            return self._ended(float(m.group()) if m.group(1) else int(m.group()))
        raise _NotPlain

    def _ended(self, value: Any) -> Any:
        """A value must be followed by blanks, a comment, a line end, `,`, `]` or the end: `1979-05-27`,
        `1e5`, `1_000`, a triple quote or `truex` are not read as a prefix."""
        if self.pos < len(self.text) and self.text[self.pos] not in " \t\n#,]":
            raise _NotPlain
        return value
