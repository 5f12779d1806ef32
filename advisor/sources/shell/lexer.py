"""A bash lexer that keeps the file offset of every character: quotes, continuations, comments,
here-documents, substitutions, parameter and arithmetic expansions, redirections and operators."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from advisor.core.records import field, record

if TYPE_CHECKING:
    from advisor.sources.shell.piece import Piece


PH_BASE = 0xF0000  # placeholder characters for unknown values inside a re-read `bash -c` string
PH_LIMIT = 0xFFFFD
WS = " \t\n"
WS_RE = re.compile(r"[ \t\n]")
IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ASSIGN_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?)=")
PARAM_RE = re.compile(r"([#!]?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(\[[^\]]*\])?")
NEG_NUM_RE = re.compile(r"-\.?[0-9]")
JUNK_RE = re.compile("[\x00-\x08\x0e-\x1f\x7f\ufffd]")
MAX_PROBLEMS = 20
MAX_PIECES = 20_000  # a value that expands past these limits (A="$A $A" in a loop) becomes unknown
MAX_VALUE = 1_000_000
BUDGET = 50_000_000  # characters of expanded text per file, so that no input can make reading slow
# Limits that keep a 1 MB script under a second, each reported where it is hit: tokens lexed (a real
# launch script has a few thousand), launch commands read (each becomes a run that is planned and
# judged: 14,000 torchrun lines took 21 s), and ${...} nesting (each level is scanned again when it is
# expanded: 100,000 nested ${A:-...} took 14 s).
MAX_TOKENS = 30_000
MAX_COMMANDS = 32
MAX_BRACE_DEPTH = 32
# what may follow the name in `${name...}`: the end, a subscript, or an operator (bash manual, Shell
# Parameter Expansion); anything else is bash's "bad substitution"
_AFTER_NAME = frozenset(":-=+?#%/^,@[")


def valid_after_name(inner: str, end: int) -> bool:
    """Whether `${inner}` may go on after its name at `end` (an operator, a subscript or the end)."""
    return end >= len(inner) or inner[end] in _AFTER_NAME


def bad_substitution(inner: str, m: re.Match[str] | None) -> bool:
    """Whether bash itself refuses `${inner}` (m: PARAM_RE's match of it): an empty name, or a name
    followed by a character that starts no operator (`${batch_size*2}`). Forms bash accepts but this
    reader does not follow are not this."""
    if m is None or m.group(2) is None:
        return inner == "" or inner[:1] in "*/%^,}"
    return not valid_after_name(inner, m.end())


class Src:
    """Text to lex plus, for every character, its offset in the file (a `bash -c` string is a
    synthetic text whose characters come from many places)."""

    __slots__ = ("identity", "org", "ph", "text")

    def __init__(self, text: str, org: list[int] | None = None, ph: list[Piece] | None = None) -> None:
        self.text = text
        self.identity = org is None
        self.org = org if org is not None else range(len(text) + 1)
        self.ph = ph or []

    def off(self, i: int) -> int:
        if i < len(self.org):
            return self.org[i]
        return (self.org[-1] + 1) if len(self.org) else 0

    def raw(self, a: int, b: int) -> str:
        s = self.text[a:b]
        if not self.ph:
            return s
        return "".join(
            self.ph[ord(c) - PH_BASE].raw if PH_BASE <= ord(c) < PH_BASE + len(self.ph) else c for c in s
        )


class LexError(Exception):
    def __init__(self, message: str, idx: int) -> None:
        super().__init__(message)
        self.message = message
        self.idx = idx


# Syntactic parts of a word --------------------------------------------------------------------


@record(slots=True)
class Lit:
    text: str
    idx: list[int]  # source index of each character
    quoted: bool
    pos: int  # source index where the part starts (for empty quoted strings)


@record(slots=True)
class Param:  # $NAME or ${...}
    a: int  # inner text [a, b)
    b: int
    ra: int  # raw text [ra, rb)
    rb: int
    quoted: bool


@record(slots=True)
class Cmd:  # $(...) or `...`
    ra: int
    rb: int
    quoted: bool


@record(slots=True)
class Arith:  # $((...)) and $[...]
    a: int
    b: int
    ra: int
    rb: int
    quoted: bool


@record(slots=True)
class Ph:  # an unknown value inside a re-read string
    k: int
    i: int
    quoted: bool


@record(slots=True)
class Arr:  # NAME=( ... )
    ra: int
    rb: int


Part = Lit | Param | Cmd | Arith | Ph | Arr


@record(slots=True)
class Heredoc:
    delim: str
    strip_tabs: bool
    expand: bool
    a: int = -1
    b: int = -1


@record(slots=True)
class Tok:
    kind: str  # "word" | "op" | "redir"
    value: str
    start: int
    end: int
    src: Src
    parts: list[Part] = field(default_factory=list)
    heredoc: Heredoc | None = None


_OPS = sorted(
    [
        "&&",
        "||",
        ";;&",
        ";;",
        ";&",
        "|&",
        "&>>",
        "&>",
        ">>",
        "<<<",
        "<<-",
        "<<",
        "<>",
        ">&",
        "<&",
        ">|",
        ";",
        "&",
        "|",
        "(",
        ")",
        "<",
        ">",
    ],
    key=len,
    reverse=True,
)
_REDIRS = {"<", ">", ">>", "<<", "<<-", "<<<", "<>", ">&", "<&", ">|", "&>", "&>>"}
_META = set(" \t\n;&|()<>")
_OP_START = set(";&|()<>")
# Runs of characters with no special meaning (fast path of the word scanner).
_PLAIN = re.compile("[^ \t\n;&|()<>'\"\\\\$`\U000f0000-\U000ffffd]+")
_PLAIN_Q = re.compile('[^"\\\\$`\U000f0000-\U000ffffd]+')
_FD_RE = re.compile(r"[0-9]+(?=[<>])")


class Lexer:
    def __init__(self, src: Src) -> None:
        self.s = src
        self.t = src.text
        self.n = len(src.text)
        self.truncated_at: int | None = None  # where MAX_TOKENS stopped the lexer

    # -- tokens ---------------------------------------------------------------------------------

    def run(self, errors: list[tuple[str, int]]) -> list[Tok]:
        t, n = self.t, self.n
        toks: list[Tok] = []
        pending: list[Heredoc] = []
        i = 0
        while i < n:
            if len(toks) >= MAX_TOKENS:
                self.truncated_at = i
                break
            c = t[i]
            try:
                if c in " \t":
                    i += 1
                    continue
                if c == "\\" and i + 1 < n and t[i + 1] == "\n":
                    i += 2
                    continue
                if c == "\n":
                    toks.append(Tok("op", "\n", i, i + 1, self.s))
                    i += 1
                    if pending:
                        i = self._heredoc_bodies(i, pending)
                        pending = []
                    continue
                if c == "#":
                    j = t.find("\n", i)
                    i = n if j < 0 else j
                    continue
                start = i
                if c.isdigit():
                    m = _FD_RE.match(t, i)
                    if m:
                        i = m.end()
                op = next((o for o in _OPS if t.startswith(o, i)), None) if t[i] in _OP_START else None
                if op is not None:
                    i += len(op)
                    if op in _REDIRS:
                        tok = Tok("redir", op, start, i, self.s)
                        if op in ("<<", "<<-"):
                            while i < n and t[i] in " \t":
                                i += 1
                            parts, j = self.scan(i, "word")
                            delim = "".join(
                                p.text if isinstance(p, Lit) else t[raw_a(p) : raw_b(p)] for p in parts
                            )
                            expand = all(isinstance(p, Lit) and not p.quoted for p in parts)
                            tok.heredoc = Heredoc(delim, op == "<<-", expand)
                            tok.end = j
                            pending.append(tok.heredoc)
                            i = j
                        toks.append(tok)
                    else:
                        toks.append(Tok("op", op, start, i, self.s))
                    continue
                i = start
                parts, j = self.scan(i, "word")
                if j == i:  # a lone character the scanner does not take: keep going
                    i += 1
                    continue
                toks.append(Tok("word", "", i, j, self.s, parts))
                i = j
            except LexError as exc:
                errors.append((exc.message, exc.idx))
                while toks and not (toks[-1].kind == "op" and toks[-1].value in ("\n", ";")):
                    toks.pop()
                j = t.find("\n", max(exc.idx, i))
                i = n if j < 0 else j
                pending = []
        return toks

    def _heredoc_bodies(self, i: int, pending: list[Heredoc]) -> int:
        t, n = self.t, self.n
        for h in pending:
            start = i
            while True:
                j = t.find("\n", i)
                line = t[i : n if j < 0 else j]
                cmp = line.lstrip("\t") if h.strip_tabs else line
                if cmp == h.delim or cmp.rstrip() == h.delim:
                    h.a, h.b = start, i
                    i = n if j < 0 else j + 1
                    break
                if j < 0:
                    h.a, h.b = start, n
                    i = n
                    break
                i = j + 1
        return i

    # -- words ----------------------------------------------------------------------------------

    def scan(self, i: int, mode: str, end: int | None = None) -> tuple[list[Part], int]:
        """Parts of one word from i. Modes: word (stops at a metacharacter), dq (inside double
        quotes; stops at the closing quote), heredoc (expansions only), pword (a ${X:-word})."""
        t = self.t
        n = self.n if end is None else end
        parts: list[Part] = []
        buf: list[str] = []
        bidx: list[int] = []
        bq = False
        inq = mode in ("dq", "heredoc")

        def flush() -> None:
            if buf:
                parts.append(Lit("".join(buf), bidx[:], bq, bidx[0]))
                buf.clear()
                bidx.clear()

        def lit(ch: str, k: int, quoted: bool) -> None:
            nonlocal bq
            if buf and bq != quoted:
                flush()
            bq = quoted
            buf.append(ch)
            bidx.append(k)

        plain_re = _PLAIN_Q if inq else _PLAIN
        while i < n:
            m = plain_re.match(t, i, n)
            if m:
                j = m.end()
                if buf and bq != inq:
                    flush()
                bq = inq
                buf.append(t[i:j])
                bidx.extend(range(i, j))
                i = j
                continue
            c = t[i]
            if mode == "word" and c in _META:
                if c == "(" and not parts and not bq and ASSIGN_RE.fullmatch("".join(buf)):
                    j = self._paren_end(i + 1, n, i)
                    flush()
                    parts.append(Arr(i, j))
                    i = j
                    continue
                break
            if mode == "dq" and c == '"':
                flush()
                return parts, i
            if c == "\\":
                nx = t[i + 1] if i + 1 < n else ""
                if nx == "\n":
                    i += 2
                    continue
                if mode in ("word", "pword"):
                    if nx:
                        lit(nx, i + 1, True)
                        i += 2
                    elif mode == "word" and i + 1 == len(t):
                        i += 1  # bash drops a backslash that ends the script (`--seed 0 \` at EOF)
                    else:
                        lit("\\", i, False)
                        i += 1
                    continue
                if nx in ("$", "`", "\\") or (nx == '"' and mode == "dq"):
                    lit(nx, i + 1, True)
                    i += 2
                    continue
                lit("\\", i, True)
                i += 1
                continue
            if c == "'" and mode in ("word", "pword"):
                j = t.find("'", i + 1, n)
                if j < 0:
                    raise LexError("unterminated single quote: the shell reads to the end of the file", i)
                flush()
                parts.append(Lit(t[i + 1 : j], list(range(i + 1, j)), True, i))
                i = j + 1
                continue
            if c == "$" and mode in ("word", "pword") and i + 1 < n and t[i + 1] == "'":
                j, text = self._ansi_c(i + 2, n, i)
                flush()
                parts.append(Lit(text, [i] * len(text), True, i))
                i = j
                continue
            if (c == '"' and mode in ("word", "pword")) or (
                c == "$" and mode in ("word", "pword") and i + 1 < n and t[i + 1] == '"'
            ):
                q = i if c == '"' else i + 1
                flush()
                sub, j = self.scan(q + 1, "dq", end)
                if j >= n or t[j] != '"':
                    raise LexError("unterminated double quote: the shell reads to the end of the file", q)
                parts.extend(sub if sub else [Lit("", [], True, q)])
                i = j + 1
                continue
            if c == "$":
                part, j = self._dollar(i, inq, n)
                if part is None:
                    lit("$", i, inq)
                    i += 1
                    continue
                flush()
                parts.append(part)
                i = j
                continue
            if c == "`":
                j = self._backtick_end(i, n)
                flush()
                parts.append(Cmd(i, j, inq))
                i = j
                continue
            if PH_BASE <= ord(c) <= PH_LIMIT and self.s.ph:
                flush()
                parts.append(Ph(ord(c) - PH_BASE, i, inq))
                i += 1
                continue
            lit(c, i, inq)
            i += 1
        if mode == "dq":
            flush()
            return parts, n
        flush()
        return parts, i

    def _ansi_c(self, i: int, n: int, start: int) -> tuple[int, str]:
        t = self.t
        out: list[str] = []
        esc = {
            "n": "\n",
            "t": "\t",
            "r": "\r",
            "\\": "\\",
            "'": "'",
            '"': '"',
            "a": "\a",
            "b": "\b",
            "e": "\x1b",
            "E": "\x1b",
            "f": "\f",
            "v": "\v",
            "?": "?",
        }
        while i < n:
            c = t[i]
            if c == "'":
                return i + 1, "".join(out)
            if c == "\\" and i + 1 < n:
                nx = t[i + 1]
                if nx in esc:
                    out.append(esc[nx])
                    i += 2
                    continue
                m = re.match(r"x([0-9A-Fa-f]{1,2})|([0-7]{1,3})", t[i + 1 : i + 4])
                if m:
                    out.append(chr(int(m.group(1), 16) if m.group(1) else int(m.group(2), 8)))
                    i += 1 + m.end()
                    continue
                out.append("\\")
                i += 1
                continue
            out.append(c)
            i += 1
        raise LexError("unterminated $'...' string: the shell reads to the end of the file", start)

    def _dollar(self, i: int, quoted: bool, n: int) -> tuple[Part | None, int]:
        t = self.t
        nx = t[i + 1] if i + 1 < n else ""
        if nx == "(":
            if i + 2 < n and t[i + 2] == "(":
                j = self._arith_end(i + 3, n)
                if j > 0:
                    return Arith(i + 3, j - 2, i, j, quoted), j
            j = self._paren_end(i + 2, n, i)
            return Cmd(i, j, quoted), j
        if nx == "[":
            # `$[ expr ]`, the old arithmetic form bash still expands like `$(( expr ))` (bash
            # subst.c param_expand: case LBRACK, "$[ ... ]" is arithmetic)
            j = self._bracket_end(i + 2, n)
            if j > 0:
                return Arith(i + 2, j - 1, i, j, quoted), j
        if nx == "{":
            j = self._brace_end(i + 2, n, i)
            return Param(i + 2, j - 1, i, j, quoted), j
        if nx and (nx.isalpha() or nx == "_") and nx.isascii():
            m = IDENT_RE.match(t, i + 1, n)
            assert m is not None
            return Param(i + 1, m.end(), i, m.end(), quoted), m.end()
        if nx and nx in "0123456789@*#?$!-":
            return Param(i + 1, i + 2, i, i + 2, quoted), i + 2
        return None, i + 1

    def _skip_quoted(self, i: int, n: int) -> int:
        """i at a quote character; returns the index after its closing quote (-1: none)."""
        t = self.t
        q = t[i]
        j = i + 1
        while j < n:
            c = t[j]
            if c == "\\" and q == '"':
                j += 2
                continue
            if c == q:
                return j + 1
            j += 1
        return -1

    def _paren_end(self, i: int, n: int, start: int) -> int:
        t = self.t
        depth = 1
        while i < n:
            c = t[i]
            if c == "\\":
                i += 2
                continue
            if c in "'\"":
                j = self._skip_quoted(i, n)
                if j < 0:
                    break
                i = j
                continue
            if c == "`":
                i = self._backtick_end(i, n)
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        raise LexError("unterminated $( command substitution: no closing parenthesis", start)

    def _bracket_end(self, i: int, n: int) -> int:
        """The index after the `]` that closes `$[` (nested brackets counted), -1 when none does."""
        t = self.t
        depth = 0
        while i < n:
            c = t[i]
            if c == "[":
                depth += 1
            elif c == "]":
                if depth == 0:
                    return i + 1
                depth -= 1
            elif c == "\n":
                return -1
            i += 1
        return -1

    def _arith_end(self, i: int, n: int) -> int:
        t = self.t
        depth = 0
        while i < n:
            c = t[i]
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0:
                    return i + 2 if i + 1 < n and t[i + 1] == ")" else -1
                depth -= 1
            elif c == "\n" and depth < 0:
                return -1
            i += 1
        return -1

    def _brace_end(self, i: int, n: int, start: int) -> int:
        t = self.t
        depth = 1
        while i < n:
            c = t[i]
            if c == "\\":
                i += 2
                continue
            if c in "'\"":
                i = self._skip_quoted(i, n)
                if i < 0:
                    break
                continue
            if c == "$" and i + 1 < n and t[i + 1] == "{":
                depth += 1
                if depth > MAX_BRACE_DEPTH:
                    raise LexError(
                        f"${{...}} nested deeper than {MAX_BRACE_DEPTH} levels: not followed", start
                    )
                i += 2
                continue
            if c == "}":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        raise LexError("unterminated ${ parameter expansion: no closing brace", start)

    def _backtick_end(self, i: int, n: int) -> int:
        t = self.t
        j = i + 1
        while j < n:
            if t[j] == "\\":
                j += 2
                continue
            if t[j] == "`":
                return j + 1
            j += 1
        raise LexError("unterminated ` command substitution: no closing backtick", i)


def raw_a(p: Part) -> int:
    if isinstance(p, Lit):
        return p.pos
    if isinstance(p, Ph):
        return p.i
    return p.ra


def raw_b(p: Part) -> int:
    if isinstance(p, Lit):
        return (p.idx[-1] + 1) if p.idx else p.pos
    if isinstance(p, Ph):
        return p.i + 1
    return p.rb
