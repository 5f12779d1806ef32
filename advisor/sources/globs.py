"""The settings' path globs (`per-file-ignores`, `key-ignores`), matched in linear time.

A glob is gitignore-like: `*` and `?` stay inside one folder, `**` crosses folders, `**/` is zero or
more folders, `[...]` is a character class as fnmatch reads it. Translated to a backtracking regex,
`*a*a*a...aX` took minutes per path (issue 17 item 5), so the glob runs as a position automaton over
bit sets instead: each character of the path costs a few integer operations whatever the pattern is.
"""

from __future__ import annotations

from functools import cache

MAX_GLOB_CHARS = 1024  # a settings glob longer than this is a settings error (advisor/settings.py)

# element kinds
_LIT, _ONE, _CLASS, _STAR, _ANY, _SLASH_OPT, _FILLER = range(7)


class _Class:
    __slots__ = ("negate", "ranges")

    def __init__(self, body: str) -> None:
        self.negate = body[:1] == "!"
        body = body[1:] if self.negate else body
        ranges: list[tuple[str, str]] = []
        i = 0
        while i < len(body):
            if i + 2 < len(body) and body[i + 1] == "-":
                ranges.append((body[i], body[i + 2]))
                i += 3
            else:
                ranges.append((body[i], body[i]))
                i += 1
        self.ranges = ranges

    def matches(self, c: str) -> bool:
        return any(a <= c <= b for a, b in self.ranges) != self.negate


class Glob:
    """A compiled glob; `match(text)` is whether it matches the whole text."""

    __slots__ = ("_any", "_classes", "_eps1", "_eps3", "_final", "_lits", "_one", "_star", "_step_cache")

    def __init__(self, pattern: str) -> None:
        elements = _elements(pattern)
        self._lits: dict[str, int] = {}
        self._one = self._star = self._any = self._eps1 = self._eps3 = 0
        self._classes: list[tuple[int, _Class]] = []
        for k, (kind, arg) in enumerate(elements):
            bit = 1 << k
            if kind == _LIT:
                self._lits[arg] = self._lits.get(arg, 0) | bit
            elif kind == _ONE:
                self._one |= bit
            elif kind == _CLASS:
                self._classes.append((bit, _Class(arg)))
            elif kind == _STAR:
                self._star |= bit
                self._eps1 |= bit
            elif kind == _ANY:
                self._any |= bit
                self._eps1 |= bit
            elif kind == _SLASH_OPT:  # `**/`: an entry that skips to an _ANY, then a `/`, or past both
                self._eps1 |= bit | (bit << 1)
                self._eps3 |= bit
                self._any |= bit << 1
                self._lits["/"] = self._lits.get("/", 0) | (bit << 2)
        self._final = 1 << len(elements)
        self._step_cache: dict[str, int] = {}

    def _closure(self, states: int) -> int:
        while True:
            grown = states | ((states & self._eps1) << 1) | ((states & self._eps3) << 3)
            if grown == states:
                return states
            states = grown

    def _consumers(self, c: str) -> int:
        """The elements that consume c and move on to the next one."""
        mask = self._step_cache.get(c)
        if mask is None:
            mask = self._lits.get(c, 0)
            if c != "/":
                mask |= self._one
            for bit, klass in self._classes:
                if klass.matches(c):
                    mask |= bit
            if len(self._step_cache) < 4096:
                self._step_cache[c] = mask
        return mask

    def match(self, text: str) -> bool:
        states = self._closure(1)
        for c in text:
            stay = states & (self._any | (self._star if c != "/" else 0))
            states = stay | ((states & self._consumers(c)) << 1)
            if not states:
                return False
            states = self._closure(states)
        return bool(states & self._final)


def _elements(pattern: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append((_SLASH_OPT, ""))
            i += 3
        elif pattern.startswith("**", i):
            out.append((_ANY, ""))
            i += 2
        elif pattern[i] == "*":
            out.append((_STAR, ""))
            i += 1
        elif pattern[i] == "?":
            out.append((_ONE, ""))
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 1)) > i + 1:
            out.append((_CLASS, pattern[i + 1 : end]))
            i = end + 1
        else:
            out.append((_LIT, pattern[i]))
            i += 1
    # consecutive stars are one star (the automaton would accept the same paths either way)
    merged: list[tuple[int, str]] = []
    for element in out:
        if element[0] == _STAR and merged and merged[-1][0] == _STAR:
            continue
        merged.append(element)
    # a `**/` takes three positions of the automaton: its entry, its `**` and its `/` (set by Glob from the
    # entry; the entry is never returned to, so the skip past both is taken only before a character)
    placed: list[tuple[int, str]] = []
    for kind, arg in merged:
        placed.append((kind, arg))
        if kind == _SLASH_OPT:
            placed.extend(((_FILLER, ""), (_FILLER, "")))
    return placed


@cache
def compile_glob(pattern: str) -> Glob:
    return Glob(pattern)


def glob_match(pattern: str, text: str) -> bool:
    """Whether the glob matches the whole text (linear in the text's length)."""
    return compile_glob(pattern).match(text)
