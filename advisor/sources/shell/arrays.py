"""Bash indexed arrays: `ARGS=(--nproc_per_node 4 --nnodes 1)` and their expansions.

An array keeps its elements as written (each element's pieces keep the file offsets where they
were written), so `torchrun "${ARGS[@]}" train.py` reads `--nproc_per_node 4` as two words whose
positions are in the assignment. What is not followed stays unknown with its reason: associative
arrays, `ARGS[3]=x`, a computed index, and operators applied to a whole array (`${A[@]/x/y}`)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from advisor.sources.shell.expand import Field
from advisor.sources.shell.lexer import Arr, Lexer, LexError, Src
from advisor.sources.shell.piece import Piece

if TYPE_CHECKING:
    from advisor.sources.shell.expand import Assign
    from advisor.sources.shell.protocol import ShellReader

Elements = list[list[Piece]]
_KEYED_RE = re.compile(r"\[[^\]]*\]\+?=")
_INDEX_RE = re.compile(r"\[([0-9]+)\]")


def array_elements(shell: ShellReader, a: Assign, before: Elements | None) -> Elements | None:
    """The elements a `NAME=( ... )` (or `NAME+=( ... )`) assignment leaves; None when it is not a
    plain list of words (then the array's value is unknown)."""
    if len(a.parts) != 1 or not isinstance(a.parts[0], Arr):
        return None
    arr, src = a.parts[0], a.src
    lo, hi = arr.ra + 1, arr.rb - 1
    if hi < lo:
        return None
    inner = Src(src.text[lo:hi], [src.off(k) for k in range(lo, hi + 1)], src.ph)
    errors: list[tuple[str, int]] = []
    try:
        toks = Lexer(inner).run(errors)
    except LexError:
        return None
    if errors:
        return None
    out: Elements = list(before) if a.append and before is not None else []
    if a.append and before is None:
        return None
    for tok in toks:
        if tok.kind != "word":
            if tok.value == "\n":
                continue
            return None  # an operator inside ( ... ): not a word list
        if _KEYED_RE.match(inner.text, tok.start):
            return None  # ([key]=value ...): an associative or sparse array
        out.extend(f.pieces for f in shell.fields(tok))
    return out


def element_pieces(elements: Elements, sub: str, quoted: bool, raw: str, off: int) -> list[Piece] | None:
    """`${A[@]}`, `${A[*]}`, `${A[N]}` of a known array; None when the index is not a literal."""
    if sub in ("[@]", "[*]"):
        if quoted and sub == "[*]":
            joined: list[Piece] = []
            for k, e in enumerate(elements):
                if k:
                    joined.append(Piece(" ", " ", None, off))
                joined.extend(e)
            return joined
        out: list[Piece] = []
        for k, e in enumerate(elements):
            if k:
                out.append(Piece("", "", None, off, brk=True))
            out.extend(Piece(p.text, p.raw, p.offs, p.start, p.reason, not quoted) for p in e)
        return out
    m = _INDEX_RE.fullmatch(sub)
    if m is None:
        return None
    index = int(m.group(1))
    if index >= len(elements):
        return [Piece("", raw, None, off)]
    return [Piece(p.text, p.raw, p.offs, p.start, p.reason, not quoted) for p in elements[index]]


def count_piece(elements: Elements, raw: str, off: int) -> Piece:
    """`${#A[@]}`: the number of elements."""
    return Piece(str(len(elements)), raw, None, off)


def first_element(elements: Elements) -> list[Piece]:
    """`$A` of an array is its first element."""
    return list(elements[0]) if elements else []


def as_fields(elements: Elements) -> list[Field]:
    return [Field(list(e)) for e in elements]
