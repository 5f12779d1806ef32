"""The position automaton both glob languages run as (advisor/sources/globs.py for the settings' globs,
advisor/sources/wildmatch.py for .gitignore patterns): each parses its own syntax into elements, this
matches them in linear time. A pattern is written by whoever wrote the repository, and translated to a
backtracking regex `*a*a*a...aX` took minutes per path (issue 17 item 5); over bit sets each character
of the path costs a few integer operations whatever the pattern is.

Elements: LIT (one character), ONE (`?`: any character but `/`), CLASS (an object with `matches(c)`),
STAR (`*`: any run without `/`), ANY (`**`: any run), SLASH_OPT (`**/`: zero or more folders).
"""

from __future__ import annotations

from typing import Protocol

LIT, ONE, CLASS, STAR, ANY, SLASH_OPT = range(6)
_FILLER = 6


class CharClass(Protocol):
    def matches(self, c: str) -> bool: ...


class Automaton:
    """`match(text)`: whether the elements match the whole text."""

    __slots__ = ("_any", "_classes", "_eps1", "_eps3", "_final", "_lits", "_one", "_star", "_step_cache")

    def __init__(self, elements: list[tuple[int, object]]) -> None:
        # a `**/` takes three positions: its entry, its `**` and its `/` (the entry is never returned to,
        # so the skip past both is taken only before a character)
        placed: list[tuple[int, object]] = []
        for kind, arg in elements:
            placed.append((kind, arg))
            if kind == SLASH_OPT:
                placed.extend(((_FILLER, None), (_FILLER, None)))
        self._lits: dict[str, int] = {}
        self._one = self._star = self._any = self._eps1 = self._eps3 = 0
        self._classes: list[tuple[int, CharClass]] = []
        for k, (kind, arg) in enumerate(placed):
            bit = 1 << k
            if kind == LIT:
                self._lits[str(arg)] = self._lits.get(str(arg), 0) | bit
            elif kind == ONE:
                self._one |= bit
            elif kind == CLASS:
                self._classes.append((bit, arg))  # type: ignore[arg-type]  # the parsers give CharClass
            elif kind == STAR:
                self._star |= bit
                self._eps1 |= bit
            elif kind == ANY:
                self._any |= bit
                self._eps1 |= bit
            elif kind == SLASH_OPT:  # skip to the `**` then a `/`, or past both
                self._eps1 |= bit | (bit << 1)
                self._eps3 |= bit
                self._any |= bit << 1
                self._lits["/"] = self._lits.get("/", 0) | (bit << 2)
        self._final = 1 << len(placed)
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
