"""Values with positions: the pieces and fields that word expansion produces."""

from __future__ import annotations

import re

from advisor.core.records import record
from advisor.sources.shell.lexer import WS, Part, Src
from advisor.sources.shell.model import Word
from advisor.sources.shell.piece import Piece


@record(slots=True)
class Field:
    """One word after expansion and field splitting."""

    pieces: list[Piece]
    raw: str | None = None  # the word exactly as written, when the field is the whole word
    off: int | None = None

    @property
    def text(self) -> str | None:
        if any(p.text is None for p in self.pieces):
            return None
        return "".join(p.text for p in self.pieces)  # type: ignore[misc]

    @property
    def known_prefix(self) -> str:
        out = []
        for p in self.pieces:
            if p.text is None:
                break
            out.append(p.text)
        return "".join(out)

    @property
    def reason(self) -> str | None:
        return next((p.reason or "unknown value" for p in self.pieces if p.text is None), None)

    def offset(self) -> int:
        if self.off is not None:
            return self.off
        return self.pieces[0].off_at(0) if self.pieces else 0

    def raw_text(self) -> str:
        return self.raw if self.raw is not None else "".join(p.raw for p in self.pieces)

    def split_eq(self) -> tuple[str, Field] | None:
        """`--flag=value` -> ("--flag", value field)."""
        acc = ""
        for n, p in enumerate(self.pieces):
            if p.text is None:
                return None
            k = p.text.find("=")
            if k < 0:
                acc += p.text
                continue
            rest = [p.sub(k + 1, len(p.text))] if k + 1 < len(p.text) else []
            rest += self.pieces[n + 1 :]
            value_off = rest[0].off_at(0) if rest else p.off_at(k) + 1
            raw = None
            if self.raw is not None and "=" in self.raw:
                raw = self.raw[self.raw.index("=") + 1 :]
                value_off = p.off_at(k) + 1  # where the value is written, quotes included
            return acc + p.text[:k], Field(rest, raw, value_off)
        return None


def first_reason(pieces: list[Piece]) -> str | None:
    return next((p.reason or "unknown value" for p in pieces if p.text is None), None)


def join_text(pieces: list[Piece]) -> str | None:
    if any(p.text is None for p in pieces):
        return None
    return "".join(p.text for p in pieces)  # type: ignore[misc]


def split_fields(pieces: list[Piece]) -> list[Field]:
    fields: list[Field] = []
    cur: list[Piece] = []
    for p in pieces:
        if p.brk:
            if cur:
                fields.append(Field(cur))
                cur = []
            continue
        if not p.split or p.text is None:
            cur.append(p)
            continue
        for m in re.finditer(r"[^ \t\n]+|[ \t\n]+", p.text):
            if m.group()[0] in WS:
                if cur:
                    fields.append(Field(cur))
                    cur = []
            else:
                cur.append(p.sub(m.start(), m.end()))
    if cur:
        fields.append(Field(cur))
    return fields


def strip_pieces(pieces: list[Piece]) -> list[Piece]:
    out = list(pieces)
    while out and out[0].text is not None:
        s = out[0].text.lstrip(WS)
        if s:
            out[0] = out[0].sub(len(out[0].text) - len(s), len(out[0].text))
            break
        out.pop(0)
    while out and out[-1].text is not None:
        s = out[-1].text.rstrip(WS)
        if s:
            out[-1] = out[-1].sub(0, len(s))
            break
        out.pop()
    return out


def cut_pieces(pieces: list[Piece], ch: str) -> list[Piece]:
    out = []
    for p in pieces:
        if p.text is not None and ch in p.text:
            k = p.text.index(ch)
            if k:
                out.append(p.sub(0, k))
            return out
        out.append(p)
    return out


@record(slots=True)
class Var:
    pieces: list[Piece]
    word: Word
    key_off: int
    array: bool = False
    elements: list[list[Piece]] | None = None  # an indexed array whose words are known (arrays.py)


@record(slots=True)
class Assign:
    name: str
    parts: list[Part]
    raw: str
    off: int
    key_off: int
    append: bool
    array: bool
    src: Src


class Unknown(Exception):
    pass


class DivisionByZero(Unknown):
    """`$((512 / N))` with N known to be 0 (or set and empty, which arithmetic reads as 0): bash's "division
    by 0" expansion error, not an unknown value."""


class TooLarge(Exception):
    pass
