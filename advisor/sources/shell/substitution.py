"""`$(...)` whose output a static reader can know: `expr` over integers it knows. ms-swift's examples
write `--gradient_accumulation_steps $(expr 16 / $nproc_per_node)` (ms-swift @3602360a
examples/train/multi-gpu/*); any other command substitution stays unknown, with its reason.

expr (GNU coreutils expr.c) evaluates `+ - * / %` on integers with `* / %` binding tighter, left to
right, and truncates division toward zero; `*` must reach it quoted (`\\*` or `'*'`): a bare `*` is a
glob the shell expands first, so it is not read."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from advisor.sources.shell.expand import join_text
from advisor.sources.shell.lexer import Cmd, Lexer, LexError, Src
from advisor.sources.shell.piece import Piece

if TYPE_CHECKING:
    from advisor.sources.shell.protocol import ShellReader

_INT = re.compile(r"[+-]?\d{1,18}")
_TIMES = {"\\*", "'*'", '"*"'}


def command_substitution(shell: ShellReader, src: Src, part: Cmd) -> Piece:
    """The substitution's output when it is `expr` over known integers, else an unknown piece."""
    raw = src.raw(part.ra, part.rb)
    off = src.off(part.ra)
    unknown = shell.unknown(raw, off, "command substitution")
    start = part.ra + (2 if raw.startswith("$(") else 1)
    try:
        parts, _ = Lexer(src).scan(start, "heredoc", part.rb - 1)
    except LexError:
        return unknown
    text = join_text(shell.expand(parts, src, False))
    words = text.split() if text is not None else []
    if len(words) < 2 or words[0] != "expr":
        return unknown
    value = expr_value([_unquoted(w) for w in words[1:]])
    return unknown if value is None else Piece(str(value), raw, None, off)


def _unquoted(word: str) -> str:
    """`"$n"` / `'16'` as expr receives them (the substitution is read as text, quotes kept); the quoted
    `'*'` / `"*"` stay as they are: they are multiplication, not a glob."""
    if word in _TIMES or len(word) < 2 or word[0] != word[-1] or word[0] not in "'\"":
        return word
    return word[1:-1]


def expr_value(words: list[str]) -> int | None:
    """`expr`'s result for integer arithmetic words, or None for anything else (a comparison, a string
    operation, a glob, division by zero)."""
    terms: list[int] = []
    ops: list[str] = []
    term: int | None = None
    pending: str | None = None
    for i, word in enumerate(words):
        if i % 2 == 0:
            if not _INT.fullmatch(word):
                return None
            value = int(word)
            if pending is None:
                term = value
            else:
                if term is None:
                    return None
                if pending == "*":
                    term *= value
                elif value == 0:
                    return None
                else:
                    quotient = abs(term) // abs(value)
                    truncated = quotient if (term >= 0) == (value > 0) else -quotient
                    term = truncated if pending == "/" else term - truncated * value
                pending = None
        elif word in ("+", "-"):
            if term is None:
                return None
            terms.append(term)
            ops.append(word)
            term = None
        elif word in _TIMES or word in ("/", "%"):
            pending = "*" if word in _TIMES else word
        else:
            return None
    if term is None or pending is not None:
        return None
    if not terms:
        return term
    total = terms[0]
    for op, value in zip(ops, [*terms[1:], term], strict=True):
        total = total + value if op == "+" else total - value
    return total
