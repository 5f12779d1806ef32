"""The `read` builtin fed by a here-string or a here-document: the one form whose value a static reader
can know (`read -r MODEL <<< "$line"`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.sources.shell.expand import cut_pieces, first_reason, join_text, strip_pieces
from advisor.sources.shell.lexer import IDENT_RE, Heredoc, Lexer, LexError, Src, Tok
from advisor.sources.shell.model import Word
from advisor.sources.shell.piece import Piece

if TYPE_CHECKING:
    from advisor.sources.shell.protocol import ShellReader


def read_builtin(shell: ShellReader, args: list[Tok], redirs: list[tuple[Tok, Tok | None]]) -> None:
    """`read NAME <<< "$x"`, `read -r NAME <<EOF`: NAME is the first line of what it reads, when that is
    known statically (a here-string or a here-document); anything else is read at run time."""
    names: list[tuple[str, int]] = []
    delim: str | None = "\n"
    array = False
    i = 0
    while i < len(args):
        t = shell.static_text(args[i])
        if t is None:
            i += 1
            continue
        if t.startswith("-") and len(t) > 1 and not names:
            opts = t[1:]
            for k, ch in enumerate(opts):
                if ch in "dpaunNti":
                    value = opts[k + 1 :]
                    if not value and i + 1 < len(args):
                        i += 1
                        value = shell.static_text(args[i]) or ""
                    if ch == "d":
                        delim = value[:1] if value else None
                    if ch == "a":
                        array = True
                        names.append((value, args[i].src.off(args[i].start)))
                    break
            i += 1
            continue
        names.append((t, args[i].src.off(args[i].start)))
        i += 1
    pieces: list[Piece] | None = None
    for op, tgt in redirs:
        if op.heredoc is not None and op.heredoc.a >= 0:
            pieces = heredoc_pieces(shell, op.src, op.heredoc)
        elif op.value == "<<<" and tgt is not None:
            pieces = shell.expand(tgt.parts, tgt.src, False)
    for name, key_off in names:
        if not IDENT_RE.fullmatch(name):
            continue
        if pieces is None or array or len(names) != 1:
            reason = f"${name} is an array" if array else f"${name} is read at run time"
            raw = f"read {name}"
            word = Word(None, raw, shell.span(key_off), reason)
            shell.set_var(name, [shell.unknown(raw, key_off, reason)], word, key_off, array=array)
            continue
        val = pieces if delim is None else cut_pieces(pieces, delim)
        val = strip_pieces(val)
        text = join_text(val)
        raw = "".join(p.raw for p in val)
        off = val[0].off_at(0) if val else key_off
        unread = None if text is not None else first_reason(val)
        shell.set_var(name, val, Word(text, raw, shell.span(off), unread), key_off)


def heredoc_pieces(shell: ShellReader, src: Src, h: Heredoc) -> list[Piece]:
    if not h.expand:
        text = src.text[h.a : h.b]
        return [Piece(text, text, [src.off(k) for k in range(h.a, h.b)], src.off(h.a))]
    try:
        parts, _ = Lexer(src).scan(h.a, "heredoc", h.b)
    except LexError as exc:
        return [shell.unknown(src.raw(h.a, h.b), src.off(h.a), exc.message)]
    return shell.expand(parts, src, False)
