"""What the helper modules (arrays, sbatch, substitution) use of the interpreter, as a protocol: they
import no interpreter module, so the shell reader has no import circle, not even for the type checker."""

from __future__ import annotations

from typing import Protocol

from advisor.core.document import KeyPath, Span
from advisor.sources.shell.expand import Field
from advisor.sources.shell.lexer import Part, Src, Tok
from advisor.sources.shell.model import Word
from advisor.sources.shell.piece import Piece


class ShellReader(Protocol):
    """The interpreter (advisor/sources/shell/interpreter.py Shell) as its helpers see it."""

    key_spans: dict[KeyPath, Span]
    value_spans: dict[KeyPath, Span]

    def span(self, off: int, end: int | None = None) -> Span: ...

    def expand(self, parts: list[Part], src: Src, split: bool) -> list[Piece]: ...

    def fields(self, tok: Tok) -> list[Field]: ...

    def unknown(self, raw: str, off: int, reason: str) -> Piece: ...

    def static_text(self, tok: Tok) -> str | None: ...

    def set_var(
        self,
        name: str,
        pieces: list[Piece],
        word: Word,
        key_off: int,
        *,
        array: bool = False,
        export: bool = False,
        elements: list[list[Piece]] | None = None,
    ) -> None: ...
