"""A run of characters of an expanded value, with its file positions: what the lexer's placeholders
and every expansion hold (its own module so that the lexer and the expansion import no circle)."""

from __future__ import annotations

from advisor.core.records import record


@record(slots=True)
class Piece:
    """A run of characters of an expanded value: known text with the file offset of each
    character, or an unknown value with the reason."""

    text: str | None
    raw: str
    offs: list[int] | None  # file offset of each character of text; None: all at start
    start: int
    reason: str | None = None
    split: bool = False  # subject to field splitting (the result of an unquoted expansion)
    brk: bool = False  # a word boundary that quoting does not remove ("${ARGS[@]}" between elements)

    def sub(self, a: int, b: int) -> Piece:
        assert self.text is not None
        text = self.text[a:b]
        offs = self.offs[a:b] if self.offs is not None else None
        start = self.offs[a] if self.offs is not None and a < len(self.offs) else self.start
        return Piece(text, text, offs, start, None, self.split, self.brk)

    def off_at(self, k: int) -> int:
        if self.offs is not None and k < len(self.offs):
            return self.offs[k]
        if self.offs:
            return self.offs[-1] + 1
        return self.start
