"""Resolved words and their spans: where each value starts and, when it is written in one piece,
where it ends (so --fix replaces exactly the written value, without scanning the shell text again)."""

from __future__ import annotations

import bisect

from advisor.core.document import Span
from advisor.sources.shell.expand import Field
from advisor.sources.shell.model import Word


class Words:
    """Needs `text` (the script as read) and `starts` (the offset of each line) from the interpreter."""

    text: str
    starts: list[int]

    def span(self, off: int, end: int | None = None) -> Span:
        off = max(0, min(off, len(self.text)))
        line = bisect.bisect_right(self.starts, off) - 1
        if end is None or end < off:
            return Span(line + 1, off - self.starts[line] + 1)
        end = min(end, len(self.text))
        end_line = bisect.bisect_right(self.starts, end) - 1
        if end > off and end_line > line and self.starts[end_line] == end:
            end_line -= 1  # a value ending at a line's end stays on that line
        return Span(
            line + 1, off - self.starts[line] + 1, end_line + 1, end - self.starts[end_line] + 1, off, end
        )

    def raw_span(self, raw: str, off: int) -> Span:
        """The span of text written as `raw` at off (an assignment's value), with its end when it is."""
        return self.span(off, off + len(raw) if raw and self.text.startswith(raw, off) else None)

    def field_end(self, f: Field) -> int | None:
        """Just after the field's last character when the field is written in one piece in the file:
        its raw text is there (a `bash -c` string's word is too, when the string holds it unchanged),
        or its characters come from one contiguous run (a variable's or array's value)."""
        off = f.offset()
        if f.raw is not None:
            return off + len(f.raw) if self.text.startswith(f.raw, off) else None
        offs: list[int] = []
        for p in f.pieces:
            if p.text is None or p.offs is None or len(p.offs) != len(p.text):
                return None
            offs.extend(p.offs)
        if offs and offs[0] == off and offs[-1] - off == len(offs) - 1:
            return offs[-1] + 1
        return None

    def field_span(self, f: Field) -> Span:
        return self.span(f.offset(), self.field_end(f))

    def word(self, f: Field) -> Word:
        text = f.text
        return Word(text, f.raw_text(), self.field_span(f), None if text is not None else f.reason)

    def true_word(self, f: Field) -> Word:
        return Word("true", f.raw_text(), self.field_span(f))

    def joined_word(self, fs: list[Field]) -> Word:
        texts = [f.text for f in fs]
        text = None if any(t is None for t in texts) else " ".join(texts)  # type: ignore[arg-type]
        reason = next((f.reason for f in fs if f.text is None), None)
        end = self.field_end(fs[-1]) if self.field_end(fs[0]) is not None else None
        return Word(text, " ".join(f.raw_text() for f in fs), self.span(fs[0].offset(), end), reason)
