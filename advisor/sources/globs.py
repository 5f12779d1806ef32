"""The settings' path globs (`per-file-ignores`, `key-ignores`), matched in linear time.

A glob is gitignore-like: `*` and `?` stay inside one folder, `**` crosses folders, `**/` is zero or
more folders, `[...]` is a character class as fnmatch reads it. Translated to a backtracking regex,
`*a*a*a...aX` took minutes per path (issue 17 item 5), so the glob runs as the position automaton of
advisor/sources/glob_automaton.py instead: linear in the path whatever the pattern is.
"""

from __future__ import annotations

from functools import cache

from advisor.sources.glob_automaton import ANY, CLASS, LIT, ONE, SLASH_OPT, STAR, Automaton

MAX_GLOB_CHARS = 1024  # a settings glob longer than this is a settings error (advisor/sources/settings.py)


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


def _elements(pattern: str) -> list[tuple[int, object]]:
    out: list[tuple[int, object]] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append((SLASH_OPT, ""))
            i += 3
        elif pattern.startswith("**", i):
            out.append((ANY, ""))
            i += 2
        elif pattern[i] == "*":
            out.append((STAR, ""))
            i += 1
        elif pattern[i] == "?":
            out.append((ONE, ""))
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 1)) > i + 1:
            out.append((CLASS, _Class(pattern[i + 1 : end])))
            i = end + 1
        else:
            out.append((LIT, pattern[i]))
            i += 1
    # consecutive stars are one star (the automaton would accept the same paths either way)
    merged: list[tuple[int, object]] = []
    for element in out:
        if element[0] == STAR and merged and merged[-1][0] == STAR:
            continue
        merged.append(element)
    return merged


@cache
def compile_glob(pattern: str) -> Automaton:
    """The compiled glob; its `match(text)` is whether it matches the whole text."""
    return Automaton(_elements(pattern))


def glob_match(pattern: str, text: str) -> bool:
    """Whether the glob matches the whole text (linear in the text's length)."""
    return compile_glob(pattern).match(text)
