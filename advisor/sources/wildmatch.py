"""git's wildmatch (git/wildmatch.c, with WM_PATHNAME), the pattern language of .gitignore files.

`*` and `?` never match `/`, `[...]` is a bracket expression (`!` or `^` negates, ranges, `\\` escapes,
the twelve `[:class:]` names of the C locale) that never matches `/` either; `**` matches across
folders only as a whole segment: at the start or after `/`, and at the end or before `/` (`**/x`,
`a/**/b`, `a/**`), and is a plain `*` anywhere else. A backslash makes the next character literal.
A pattern wildmatch would abort on (an unclosed `[`, an unknown class, a trailing backslash)
matches nothing.

A .gitignore is written by whoever wrote the repository, so a pattern must not cost more than linear
time: a pattern with at most one wildcard run is a regular expression (no backtracking beyond one
scan), any other runs as the position automaton of advisor/sources/glob_automaton.py, which
advisor/sources/globs.py shares.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from advisor.core.records import record
from advisor.sources.glob_automaton import ANY, CLASS, LIT, ONE, SLASH_OPT, STAR, Automaton

MAX_PATTERN_CHARS = 4096  # git's own limit on a path; a longer pattern matches nothing

# wildmatch.c's character classes (ISASCII + the <ctype.h> test of the C locale)
_POSIX: dict[str, Callable[[str], bool]] = {
    "alnum": lambda c: c.isascii() and c.isalnum(),
    "alpha": lambda c: c.isascii() and c.isalpha(),
    "blank": lambda c: c in " \t",
    "cntrl": lambda c: ord(c) < 32 or ord(c) == 127,
    "digit": lambda c: "0" <= c <= "9",
    "graph": lambda c: 33 <= ord(c) <= 126,
    "lower": lambda c: "a" <= c <= "z",
    "print": lambda c: 32 <= ord(c) <= 126,
    "punct": lambda c: 33 <= ord(c) <= 126 and not c.isalnum(),
    "space": lambda c: c in " \t\n\r\f\v",
    "upper": lambda c: "A" <= c <= "Z",
    "xdigit": lambda c: c in "0123456789abcdefABCDEF",
}


@record(slots=True, eq=False)
class _Class:
    negated: bool
    ranges: list[tuple[str, str]]
    predicates: list[Callable[[str], bool]]

    def matches(self, c: str) -> bool:
        if c == "/":
            return False
        hit = any(lo <= c <= hi for lo, hi in self.ranges) or any(p(c) for p in self.predicates)
        return hit != self.negated


def _bracket(p: str, i: int) -> tuple[_Class, int] | None:
    """The bracket expression opening at p[i] == '[' and the index after it; None where wildmatch
    aborts. Follows wildmatch.c's loop: the first character (even `]`) is taken before a `]` can close."""
    n = len(p)
    j = i + 1
    negated = j < n and p[j] in "!^"
    if negated:
        j += 1
    ranges: list[tuple[str, str]] = []
    predicates: list[Callable[[str], bool]] = []
    prev: str | None = None
    first = True
    while True:
        if j >= n:
            return None
        ch = p[j]
        if ch == "]" and not first:
            return _Class(negated, ranges, predicates), j + 1
        first = False
        if ch == "\\":
            j += 1
            if j >= n:
                return None
            ranges.append((p[j], p[j]))
            prev = p[j]
        elif ch == "-" and prev is not None and j + 1 < n and p[j + 1] != "]":
            j += 1
            hi = p[j]
            if hi == "\\":
                j += 1
                if j >= n:
                    return None
                hi = p[j]
            ranges.append((prev, hi))
            prev = None
        elif ch == "[" and j + 1 < n and p[j + 1] == ":":
            s = j + 2
            k = s
            while k < n and p[k] != "]":
                k += 1
            if k >= n:
                return None
            if k - s - 1 < 0 or p[k - 1] != ":":
                ranges.append(("[", "["))  # no `:]`: an ordinary `[`, and the `:` is read next
                prev = "["
            else:
                test = _POSIX.get(p[s : k - 1])
                if test is None:
                    return None
                predicates.append(test)
                prev = None
                j = k
        else:
            ranges.append((ch, ch))
            prev = ch
        j += 1


def _elements(p: str) -> list[tuple[int, object]] | None:
    out: list[tuple[int, object]] = []
    i, n = 0, len(p)
    while i < n:
        c = p[i]
        if c == "\\":
            if i + 1 >= n:
                return None
            out.append((LIT, p[i + 1]))
            i += 2
        elif c == "*":
            j = i
            while j < n and p[j] == "*":
                j += 1
            at_start = i == 0 or p[i - 1] == "/"
            if j - i >= 2 and at_start and j == n:
                out.append((ANY, None))
            elif j - i >= 2 and at_start and p.startswith("/", j):
                out.append((SLASH_OPT, None))
                j += 1
            elif j - i >= 2 and at_start and p.startswith("\\/", j):
                out.append((SLASH_OPT, None))
                j += 2
            elif not (out and out[-1][0] == STAR):
                out.append((STAR, None))
            i = j
        elif c == "?":
            out.append((ONE, None))
            i += 1
        elif c == "[":
            parsed = _bracket(p, i)
            if parsed is None:
                return None
            out.append((CLASS, parsed[0]))
            i = parsed[1]
        else:
            out.append((LIT, c))
            i += 1
    return out


def _regex(elements: list[tuple[int, object]]) -> re.Pattern[str]:
    parts: list[str] = []
    for kind, arg in elements:
        if kind == LIT:
            parts.append(re.escape(str(arg)))
        elif kind == ONE:
            parts.append("[^/]")
        elif kind == STAR:
            parts.append("[^/]*")
        elif kind == ANY:
            parts.append(".*")
        elif kind == SLASH_OPT:
            parts.append("(?:.*/)?")
        else:  # a class: such patterns run as an automaton
            raise ValueError("a bracket expression has no regular-expression form here")
    return re.compile("".join(parts), re.S)


class Wildmatch:
    """One compiled pattern; `match(text)` is whether it matches the whole text."""

    __slots__ = ("_automaton", "_literal", "_never", "_regex", "_suffix")

    def __init__(self, pattern: str) -> None:
        self._never = False
        self._literal: str | None = None
        self._suffix: str | None = None
        self._regex: re.Pattern[str] | None = None
        self._automaton: Automaton | None = None
        elements = _elements(pattern) if len(pattern) <= MAX_PATTERN_CHARS else None
        if elements is None:
            self._never = True
            return
        kinds = [k for k, _ in elements]
        if all(k == LIT for k in kinds):
            self._literal = "".join(str(a) for _, a in elements)
        elif kinds[0] == STAR and all(k == LIT for k in kinds[1:]):
            self._suffix = "".join(str(a) for _, a in elements[1:])  # `*.pyc`, git's ENDSWITH
        elif sum(k in (STAR, ANY, SLASH_OPT) for k in kinds) <= 1 and CLASS not in kinds:
            self._regex = _regex(elements)  # one wildcard run: at most one scan back per start
        else:
            self._automaton = Automaton(elements)

    def match(self, text: str) -> bool:
        if self._literal is not None:
            return text == self._literal
        if self._suffix is not None:
            head = len(text) - len(self._suffix)
            return head >= 0 and text.endswith(self._suffix) and "/" not in text[:head]
        if self._regex is not None:
            return self._regex.fullmatch(text) is not None
        if self._automaton is not None:
            return self._automaton.match(text)
        return False
