"""A bash lexer that keeps the file offset of every character: quotes, continuations, comments,
here-documents, substitutions, parameter and arithmetic expansions, redirections and operators."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from advisor.records import field, record

if TYPE_CHECKING:
    from advisor.sources.shell.expand import _Piece


_PH_BASE = 0xF0000  # placeholder characters for unknown values inside a re-read `bash -c` string
_PH_LIMIT = 0xFFFFD
_WS = " \t\n"
_WS_RE = re.compile(r"[ \t\n]")
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?)=")
_PARAM_RE = re.compile(r"([#!]?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(\[[^\]]*\])?")
_NEG_NUM_RE = re.compile(r"-\.?[0-9]")
_JUNK_RE = re.compile("[\x00-\x08\x0e-\x1f\x7f\ufffd]")
_MAX_PROBLEMS = 20
_MAX_PIECES = 20_000  # a value that expands past these limits (A="$A $A" in a loop) becomes unknown
_MAX_VALUE = 1_000_000
_BUDGET = 50_000_000  # characters of expanded text per file, so that no input can make reading slow
# Limits that keep a 1 MB script under a second, each reported where it is hit: tokens lexed (a real
# launch script has a few thousand), launch commands read (each becomes a run that is planned and
# judged: 14,000 torchrun lines took 21 s), and ${...} nesting (each level is scanned again when it is
# expanded: 100,000 nested ${A:-...} took 14 s).
_MAX_TOKENS = 30_000
_MAX_COMMANDS = 32
_MAX_BRACE_DEPTH = 32


class _Src:
    """Text to lex plus, for every character, its offset in the file (a `bash -c` string is a
    synthetic text whose characters come from many places)."""

    __slots__ = ("identity", "org", "ph", "text")

    def __init__(self, text: str, org: list[int] | None = None, ph: list[_Piece] | None = None) -> None:
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
            self.ph[ord(c) - _PH_BASE].raw if _PH_BASE <= ord(c) < _PH_BASE + len(self.ph) else c for c in s
        )


class _LexError(Exception):
    def __init__(self, message: str, idx: int) -> None:
        super().__init__(message)
        self.message = message
        self.idx = idx


# Syntactic parts of a word --------------------------------------------------------------------


@record(slots=True)
class _Lit:
    text: str
    idx: list[int]  # source index of each character
    quoted: bool
    pos: int  # source index where the part starts (for empty quoted strings)


@record(slots=True)
class _Param:  # $NAME or ${...}
    a: int  # inner text [a, b)
    b: int
    ra: int  # raw text [ra, rb)
    rb: int
    quoted: bool


@record(slots=True)
class _Cmd:  # $(...) or `...`
    ra: int
    rb: int
    quoted: bool


@record(slots=True)
class _Arith:  # $((...))
    a: int
    b: int
    ra: int
    rb: int
    quoted: bool


@record(slots=True)
class _Ph:  # an unknown value inside a re-read string
    k: int
    i: int
    quoted: bool


@record(slots=True)
class _Arr:  # NAME=( ... )
    ra: int
    rb: int


_Part = _Lit | _Param | _Cmd | _Arith | _Ph | _Arr


@record(slots=True)
class _Heredoc:
    delim: str
    strip_tabs: bool
    expand: bool
    a: int = -1
    b: int = -1


@record(slots=True)
class _Tok:
    kind: str  # "word" | "op" | "redir"
    value: str
    start: int
    end: int
    src: _Src
    parts: list[_Part] = field(default_factory=list)
    heredoc: _Heredoc | None = None


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


class _Lexer:
    def __init__(self, src: _Src) -> None:
        self.s = src
        self.t = src.text
        self.n = len(src.text)
        self.truncated_at: int | None = None  # where _MAX_TOKENS stopped the lexer

    # -- tokens ---------------------------------------------------------------------------------

    def run(self, errors: list[tuple[str, int]]) -> list[_Tok]:
        t, n = self.t, self.n
        toks: list[_Tok] = []
        pending: list[_Heredoc] = []
        i = 0
        while i < n:
            if len(toks) >= _MAX_TOKENS:
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
                    toks.append(_Tok("op", "\n", i, i + 1, self.s))
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
                        tok = _Tok("redir", op, start, i, self.s)
                        if op in ("<<", "<<-"):
                            while i < n and t[i] in " \t":
                                i += 1
                            parts, j = self._scan(i, "word")
                            delim = "".join(
                                p.text if isinstance(p, _Lit) else t[_raw_a(p) : _raw_b(p)] for p in parts
                            )
                            expand = all(isinstance(p, _Lit) and not p.quoted for p in parts)
                            tok.heredoc = _Heredoc(delim, op == "<<-", expand)
                            tok.end = j
                            pending.append(tok.heredoc)
                            i = j
                        toks.append(tok)
                    else:
                        toks.append(_Tok("op", op, start, i, self.s))
                    continue
                i = start
                parts, j = self._scan(i, "word")
                if j == i:  # a lone character the scanner does not take: keep going
                    i += 1
                    continue
                toks.append(_Tok("word", "", i, j, self.s, parts))
                i = j
            except _LexError as exc:
                errors.append((exc.message, exc.idx))
                while toks and not (toks[-1].kind == "op" and toks[-1].value in ("\n", ";")):
                    toks.pop()
                j = t.find("\n", max(exc.idx, i))
                i = n if j < 0 else j
                pending = []
        return toks

    def _heredoc_bodies(self, i: int, pending: list[_Heredoc]) -> int:
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

    def _scan(self, i: int, mode: str, end: int | None = None) -> tuple[list[_Part], int]:
        """Parts of one word from i. Modes: word (stops at a metacharacter), dq (inside double
        quotes; stops at the closing quote), heredoc (expansions only), pword (a ${X:-word})."""
        t = self.t
        n = self.n if end is None else end
        parts: list[_Part] = []
        buf: list[str] = []
        bidx: list[int] = []
        bq = False
        inq = mode in ("dq", "heredoc")

        def flush() -> None:
            if buf:
                parts.append(_Lit("".join(buf), bidx[:], bq, bidx[0]))
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
                if c == "(" and not parts and not bq and _ASSIGN_RE.fullmatch("".join(buf)):
                    j = self._paren_end(i + 1, n, i)
                    flush()
                    parts.append(_Arr(i, j))
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
                    raise _LexError("unterminated single quote: the shell reads to the end of the file", i)
                flush()
                parts.append(_Lit(t[i + 1 : j], list(range(i + 1, j)), True, i))
                i = j + 1
                continue
            if c == "$" and mode in ("word", "pword") and i + 1 < n and t[i + 1] == "'":
                j, text = self._ansi_c(i + 2, n, i)
                flush()
                parts.append(_Lit(text, [i] * len(text), True, i))
                i = j
                continue
            if (c == '"' and mode in ("word", "pword")) or (
                c == "$" and mode in ("word", "pword") and i + 1 < n and t[i + 1] == '"'
            ):
                q = i if c == '"' else i + 1
                flush()
                sub, j = self._scan(q + 1, "dq", end)
                if j >= n or t[j] != '"':
                    raise _LexError("unterminated double quote: the shell reads to the end of the file", q)
                parts.extend(sub if sub else [_Lit("", [], True, q)])
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
                parts.append(_Cmd(i, j, inq))
                i = j
                continue
            if _PH_BASE <= ord(c) <= _PH_LIMIT and self.s.ph:
                flush()
                parts.append(_Ph(ord(c) - _PH_BASE, i, inq))
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
        raise _LexError("unterminated $'...' string: the shell reads to the end of the file", start)

    def _dollar(self, i: int, quoted: bool, n: int) -> tuple[_Part | None, int]:
        t = self.t
        nx = t[i + 1] if i + 1 < n else ""
        if nx == "(":
            if i + 2 < n and t[i + 2] == "(":
                j = self._arith_end(i + 3, n)
                if j > 0:
                    return _Arith(i + 3, j - 2, i, j, quoted), j
            j = self._paren_end(i + 2, n, i)
            return _Cmd(i, j, quoted), j
        if nx == "{":
            j = self._brace_end(i + 2, n, i)
            return _Param(i + 2, j - 1, i, j, quoted), j
        if nx and (nx.isalpha() or nx == "_") and nx.isascii():
            m = _IDENT_RE.match(t, i + 1, n)
            assert m is not None
            return _Param(i + 1, m.end(), i, m.end(), quoted), m.end()
        if nx and nx in "0123456789@*#?$!-":
            return _Param(i + 1, i + 2, i, i + 2, quoted), i + 2
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
        raise _LexError("unterminated $( command substitution: no closing parenthesis", start)

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
                if depth > _MAX_BRACE_DEPTH:
                    raise _LexError(
                        f"${{...}} nested deeper than {_MAX_BRACE_DEPTH} levels: not followed", start
                    )
                i += 2
                continue
            if c == "}":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        raise _LexError("unterminated ${ parameter expansion: no closing brace", start)

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
        raise _LexError("unterminated ` command substitution: no closing backtick", i)


def _raw_a(p: _Part) -> int:
    if isinstance(p, _Lit):
        return p.pos
    if isinstance(p, _Ph):
        return p.i
    return p.ra


def _raw_b(p: _Part) -> int:
    if isinstance(p, _Lit):
        return (p.idx[-1] + 1) if p.idx else p.pos
    if isinstance(p, _Ph):
        return p.i + 1
    return p.rb
