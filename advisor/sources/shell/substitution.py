"""`$(...)` whose output a static reader can know: `expr` over integers it knows, and counting the items
of a known list. ms-swift's examples write `--gradient_accumulation_steps $(expr 16 / $nproc_per_node)`
(ms-swift @3602360a examples/train/multi-gpu/*); GPU lists are counted with
`NUMGPUS=$(echo $DEVICES | awk -F',' '{print NF}')` (hkust-nlp/deita @b279f2c examples/train/sft.sh:8) or
`$(echo $CUDA_VISIBLE_DEVICES | tr ',' '\n' | wc -l)`. Any other command substitution stays unknown, with
its reason.

Counting follows the tools: `echo` joins its operands with one space and ends the line; awk with a
one-character `-F` splits the line at each separator, and an empty line has NF 0 (POSIX awk, "Fields");
`tr A '\n'` turns each separator into a newline and `wc -l` counts newlines, so an empty list counts 1.

expr (GNU coreutils expr.c) evaluates `+ - * / %` on integers with `* / %` binding tighter, left to
right, and truncates division toward zero; `*` must reach it quoted (`\\*` or `'*'`): a bare `*` is a
glob the shell expands first, so it is not read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.core.lazy_pattern import LazyPattern
from advisor.sources.shell.expand import join_text
from advisor.sources.shell.lexer import Cmd, Lexer, LexError, Src
from advisor.sources.shell.piece import Piece

if TYPE_CHECKING:
    from advisor.sources.shell.protocol import ShellReader

_INT = LazyPattern(r"[+-]?\d{1,18}")
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
    if len(words) >= 2 and words[0] == "expr":
        value = expr_value([_unquoted(w) for w in words[1:]])
    else:
        value = list_count(text) if text is not None else None
    return unknown if value is None else Piece(str(value), raw, None, off)


def list_count(text: str) -> int | None:
    """`echo LIST | awk -F'C' '{print NF}'` or `echo LIST | tr 'C' '\\n' | wc -l` over a known LIST: the count
    those commands print, else None."""
    import shlex  # only for a substitution that is not `expr` (~0.2 ms of start-up otherwise)

    try:
        stages = [shlex.split(stage) for stage in text.split("|")]
    except ValueError:
        return None
    if len(stages) < 2 or not stages[0] or stages[0][0] != "echo" or "-e" in stages[0][1:2]:
        return None
    operands = stages[0][1:]
    if operands[:1] == ["-n"]:
        operands = operands[1:]
    line = " ".join(operands)
    if len(stages) == 2 and _awk_nf(stages[1]) is not None:
        sep = _awk_nf(stages[1])
        if sep == " ":  # awk's default: runs of blanks separate, leading and trailing ones do not count
            return len(line.split())
        return 0 if line == "" else len(line.split(sep))
    if len(stages) == 3 and len(stages[1]) == 3 and stages[1][0] == "tr" and stages[2] == ["wc", "-l"]:
        old, new = stages[1][1], stages[1][2]
        if len(old) == 1 and new in ("\\n", "\n"):
            return line.count(old) + (0 if stages[0][1:2] == ["-n"] else 1)
    return None


def _awk_nf(argv: list[str]) -> str | None:
    """The separator of `awk -F'C' '{print NF}'` (one character; " " with no -F), else None."""
    if not argv or argv[0] != "awk" or argv[-1].replace(" ", "") != "{printNF}":
        return None
    opts = argv[1:-1]
    if not opts:
        return " "
    if len(opts) == 1 and opts[0].startswith("-F"):
        sep: str | None = opts[0][2:]
    elif len(opts) == 2 and opts[0] == "-F":
        sep = opts[1]
    else:
        sep = None
    return sep if sep is not None and len(sep) == 1 and sep != " " else None


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
