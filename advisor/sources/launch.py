"""Static reader for bash / sbatch launch scripts. Nothing in the script is ever executed.

The script is read the way bash reads it, as far as that can be done without running anything:
a small shell lexer (quotes, backslash continuations, comments, here-documents, `$(...)`,
backticks, `${...}`, `$((...))`, redirections and the `;`/`&&`/`||`/`|`/`&` operators) keeps the
file position of every character, then the commands are walked top to bottom with a table of the
variables the script assigns. A value that depends on something only known at run time (a command
substitution, a script argument, an environment variable the script does not set) stays unknown,
with the reason. Launch commands (accelerate, torchrun, deepspeed, python, llamafactory-cli, trl,
axolotl, and the vLLM server: `vllm serve`, `python -m vllm.entrypoints.openai.api_server`,
`trl vllm-serve`, launcher "vllm") are recognised through the usual wrappers (`srun`, `nohup`,
`env`, `bash -c`, ...) and their arguments are split into launcher flags, the training script
and the script's own flags.

Static approximations (documented, deliberate):
- Commands in `if`/`case`/loop bodies and after `&&`/`||` are read like any other command. An
  assignment there replaces the current value, except that it does not replace a known, non-empty
  value with an unknown one (`MODEL=default` ... `case $1 in -m) MODEL=$2` keeps `default`).
- `${X:-default}` for an X the script does not set gives the default: the script's own fallback.
- `#SBATCH` lines are read the way sbatch reads them: only before the first command.
"""

from __future__ import annotations

import bisect
import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from advisor.sources.document import Document, KeyPath, SourceProblem, Span

__all__ = ["LaunchCommand", "LaunchScript", "Word", "read_launch"]


# --------------------------------------------------------------------------------------------
# Public data
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Word:
    """One resolved shell word/value."""

    text: str | None  # the resolved value; None when it cannot be resolved statically
    raw: str  # as written, e.g. "${NUM_GPUS:-4}" or "$(nvidia-smi -L | wc -l)"
    span: Span  # 1-based position of the raw word in the file
    unknown: str | None = None  # why it is unknown


@dataclass(slots=True)
class LaunchCommand:
    # "accelerate" | "torchrun" | "deepspeed" | "python" | "llamafactory" | "trl" | "axolotl" | "vllm"
    launcher: str
    span: Span  # where the command starts
    env: dict[str, Word] = field(default_factory=dict)
    launcher_args: dict[str, Word] = field(default_factory=dict)
    script: Word | None = None
    module: bool = False
    script_args: dict[str, Word] = field(default_factory=dict)
    positional: list[Word] = field(default_factory=list)


@dataclass(slots=True)
class LaunchScript:
    commands: list[LaunchCommand] = field(default_factory=list)
    sbatch: dict[str, Word] = field(default_factory=dict)
    variables: dict[str, Word] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# Source text with positions
# --------------------------------------------------------------------------------------------

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


@dataclass(slots=True)
class _Lit:
    text: str
    idx: list[int]  # source index of each character
    quoted: bool
    pos: int  # source index where the part starts (for empty quoted strings)


@dataclass(slots=True)
class _Param:  # $NAME or ${...}
    a: int  # inner text [a, b)
    b: int
    ra: int  # raw text [ra, rb)
    rb: int
    quoted: bool


@dataclass(slots=True)
class _Cmd:  # $(...) or `...`
    ra: int
    rb: int
    quoted: bool


@dataclass(slots=True)
class _Arith:  # $((...))
    a: int
    b: int
    ra: int
    rb: int
    quoted: bool


@dataclass(slots=True)
class _Ph:  # an unknown value inside a re-read string
    k: int
    i: int
    quoted: bool


@dataclass(slots=True)
class _Arr:  # NAME=( ... )
    ra: int
    rb: int


_Part = _Lit | _Param | _Cmd | _Arith | _Ph | _Arr


@dataclass(slots=True)
class _Heredoc:
    delim: str
    strip_tabs: bool
    expand: bool
    a: int = -1
    b: int = -1


@dataclass(slots=True)
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


# --------------------------------------------------------------------------------------------
# Values with positions
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Piece:
    """A run of characters of an expanded value: known text with the file offset of each
    character, or an unknown value with the reason."""

    text: str | None
    raw: str
    offs: list[int] | None  # file offset of each character of text; None: all at start
    start: int
    reason: str | None = None
    split: bool = False  # subject to field splitting (the result of an unquoted expansion)

    def sub(self, a: int, b: int) -> _Piece:
        assert self.text is not None
        text = self.text[a:b]
        offs = self.offs[a:b] if self.offs is not None else None
        start = self.offs[a] if self.offs is not None and a < len(self.offs) else self.start
        return _Piece(text, text, offs, start, None, self.split)

    def off_at(self, k: int) -> int:
        if self.offs is not None and k < len(self.offs):
            return self.offs[k]
        if self.offs:
            return self.offs[-1] + 1
        return self.start


@dataclass(slots=True)
class _Field:
    """One word after expansion and field splitting."""

    pieces: list[_Piece]
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

    def split_eq(self) -> tuple[str, _Field] | None:
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
            return acc + p.text[:k], _Field(rest, raw, value_off)
        return None


def _first_reason(pieces: list[_Piece]) -> str | None:
    return next((p.reason or "unknown value" for p in pieces if p.text is None), None)


def _join_text(pieces: list[_Piece]) -> str | None:
    if any(p.text is None for p in pieces):
        return None
    return "".join(p.text for p in pieces)  # type: ignore[misc]


def _split_fields(pieces: list[_Piece]) -> list[_Field]:
    fields: list[_Field] = []
    cur: list[_Piece] = []
    for p in pieces:
        if not p.split or p.text is None:
            cur.append(p)
            continue
        for m in re.finditer(r"[^ \t\n]+|[ \t\n]+", p.text):
            if m.group()[0] in _WS:
                if cur:
                    fields.append(_Field(cur))
                    cur = []
            else:
                cur.append(p.sub(m.start(), m.end()))
    if cur:
        fields.append(_Field(cur))
    return fields


def _strip_pieces(pieces: list[_Piece]) -> list[_Piece]:
    out = list(pieces)
    while out and out[0].text is not None:
        s = out[0].text.lstrip(_WS)
        if s:
            out[0] = out[0].sub(len(out[0].text) - len(s), len(out[0].text))
            break
        out.pop(0)
    while out and out[-1].text is not None:
        s = out[-1].text.rstrip(_WS)
        if s:
            out[-1] = out[-1].sub(0, len(s))
            break
        out.pop()
    return out


def _cut_pieces(pieces: list[_Piece], ch: str) -> list[_Piece]:
    out = []
    for p in pieces:
        if p.text is not None and ch in p.text:
            k = p.text.index(ch)
            if k:
                out.append(p.sub(0, k))
            return out
        out.append(p)
    return out


@dataclass(slots=True)
class _Var:
    pieces: list[_Piece]
    word: Word
    key_off: int
    array: bool = False


@dataclass(slots=True)
class _Assign:
    name: str
    parts: list[_Part]
    raw: str
    off: int
    key_off: int
    append: bool
    array: bool
    src: _Src


class _Unknown(Exception):
    pass


class _TooLarge(Exception):
    pass


# --------------------------------------------------------------------------------------------
# Launcher flag tables
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Spec:
    bools: frozenset[str]
    values: frozenset[str]
    shorts: tuple[tuple[str, str], ...] = ()


_TORCHRUN = _Spec(
    frozenset({"standalone", "no_python", "module", "run_path", "use_env", "virtual_local_rank", "help"}),
    frozenset(
        {
            "nnodes",
            "nproc_per_node",
            "node_rank",
            "master_addr",
            "master_port",
            "rdzv_backend",
            "rdzv_endpoint",
            "rdzv_id",
            "rdzv_conf",
            "max_restarts",
            "monitor_interval",
            "start_method",
            "role",
            "log_dir",
            "redirects",
            "tee",
            "local_ranks_filter",
            "numa_binding",
            "local_addr",
            "logs_specs",
            "event_log_handler",
            "log_line_prefix_template",
            "signals_to_handle",
        }
    ),
    (("m", "module"), ("r", "redirects"), ("t", "tee"), ("h", "help")),
)
_ACCELERATE = _Spec(
    frozenset(
        {
            "cpu",
            "multi_gpu",
            "tpu",
            "ipex",
            "mps",
            "use_deepspeed",
            "use_fsdp",
            "use_megatron_lm",
            "use_xpu",
            "module",
            "no_python",
            "debug",
            "quiet",
            "same_network",
            "enable_cpu_affinity",
            "downcast_bf16",
            "tpu_use_cluster",
            "tpu_use_sudo",
            "dynamo_use_fullgraph",
            "dynamo_use_dynamic",
            "dynamo_use_regional_compilation",
            "use_parallelism_config",
            "help",
            "use_mps_device",
        }
    ),
    frozenset(
        {
            "config_file",
            "num_processes",
            "num_machines",
            "machine_rank",
            "gpu_ids",
            "mixed_precision",
            "main_process_ip",
            "main_process_port",
            "rdzv_backend",
            "rdzv_conf",
            "num_cpu_threads_per_process",
            "dynamo_backend",
            "dynamo_mode",
            "deepspeed_config_file",
            "zero_stage",
            "offload_optimizer_device",
            "offload_param_device",
            "offload_optimizer_nvme_path",
            "offload_param_nvme_path",
            "gradient_accumulation_steps",
            "gradient_clipping",
            "zero3_init_flag",
            "zero3_save_16bit_model",
            "deepspeed_hostfile",
            "deepspeed_exclusion_filter",
            "deepspeed_inclusion_filter",
            "deepspeed_multinode_launcher",
            "deepspeed_moe_layer_cls_names",
            "fsdp_version",
            "fsdp_offload_params",
            "fsdp_min_num_params",
            "fsdp_sharding_strategy",
            "fsdp_reshard_after_forward",
            "fsdp_auto_wrap_policy",
            "fsdp_transformer_layer_cls_to_wrap",
            "fsdp_backward_prefetch",
            "fsdp_backward_prefetch_policy",
            "fsdp_state_dict_type",
            "fsdp_forward_prefetch",
            "fsdp_use_orig_params",
            "fsdp_cpu_ram_efficient_loading",
            "fsdp_sync_module_states",
            "fsdp_activation_checkpointing",
            "max_restarts",
            "monitor_interval",
            "tee",
            "log_dir",
            "role",
            "main_training_function",
            "fp8_backend",
            "fp8_use_autocast",
            "parallelism_config_dp_replicate_size",
            "parallelism_config_dp_shard_size",
            "parallelism_config_tp_size",
            "parallelism_config_cp_size",
            "parallelism_config_sp_size",
            "parallelism_config_cp_comm_strategy",
            "megatron_lm_tp_degree",
            "megatron_lm_pp_degree",
            "megatron_lm_num_micro_batches",
            "megatron_lm_sequence_parallelism",
            "megatron_lm_recompute_activations",
            "megatron_lm_use_distributed_optimizer",
            "megatron_lm_gradient_clipping",
            "accelerate_config",
        }
    ),
    (("m", "module"), ("q", "quiet"), ("h", "help")),
)
_DEEPSPEED = _Spec(
    frozenset(
        {
            "no_python",
            "no_local_rank",
            "no_ssh",
            "no_ssh_check",
            "force_multi",
            "save_pid",
            "bind_cores_to_rank",
            "module",
            "elastic_training",
            "help",
        }
    ),
    frozenset(
        {
            "hostfile",
            "include",
            "exclude",
            "num_nodes",
            "num_gpus",
            "num_accelerators",
            "min_elastic_nodes",
            "max_elastic_nodes",
            "master_port",
            "master_addr",
            "node_rank",
            "launcher",
            "launcher_args",
            "ssh_port",
            "comment",
            "bind_core_list",
            "venv_script",
            "enable_each_rank_log",
            "autotuning",
            "user_script",
        }
    ),
    (("H", "hostfile"), ("i", "include"), ("e", "exclude"), ("h", "help")),
)
_NO_FLAGS = _Spec(frozenset(), frozenset())
# accelerate flag names that are also TrainingArguments fields: under `trl <cmd>` they stay script flags.
_TRAINING_TOO = {
    "config",
    "gradient_accumulation_steps",
    "debug",
    "fsdp_min_num_params",
    "fsdp_transformer_layer_cls_to_wrap",
    "help",
}

_TRL_COMMANDS = {
    "sft",
    "dpo",
    "grpo",
    "kto",
    "reward",
    "rloo",
    "ppo",
    "orpo",
    "online_dpo",
    "xpo",
    "nash_md",
    "gkd",
    "bco",
    "cpo",
    "prm",
    "gspo",
}
# vLLM's server (`vllm serve MODEL`, `python -m vllm.entrypoints.openai.api_server`, `trl vllm-serve`):
# not a training run, but its parallel sizes say which GPUs it spreads over.
_VLLM_SHORTS = (
    ("tp", "tensor_parallel_size"),
    ("pp", "pipeline_parallel_size"),
    ("dp", "data_parallel_size"),
)
_VLLM_BOOLS = {
    "trust_remote_code",
    "enforce_eager",
    "enable_prefix_caching",
    "enable_chunked_prefill",
    "enable_lora",
    "disable_log_requests",
    "disable_log_stats",
    "enable_expert_parallel",
    "enable_auto_tool_choice",
    "headless",
    "help",
}
_VLLM_MODULES = {
    "vllm.entrypoints.openai.api_server",
    "vllm.entrypoints.api_server",
    "vllm.entrypoints.cli.main",
}
_PYTHON_RE = re.compile(r"python(?:[0-9]+(?:\.[0-9]+)?)?")
_PY_VALUE_OPTS = {"-W", "-X", "-Q"}

# Commands that run another command, and their options that take no value.
_WRAPPERS: dict[str, frozenset[str]] = {
    "srun": frozenset(
        {
            "-l",
            "--label",
            "-u",
            "--unbuffered",
            "--exclusive",
            "--overlap",
            "--pty",
            "-Q",
            "--quiet",
            "-v",
            "--verbose",
            "-X",
            "--disable-status",
            "--multi-prog",
            "-K",
            "--kill-on-bad-exit",
            "-k",
            "--no-kill",
            "-E",
            "--preserve-env",
            "-H",
            "--hold",
            "-O",
            "--overcommit",
            "-s",
            "--oversubscribe",
            "--exact",
            "--whole",
            "--spread-job",
            "--contiguous",
            "--test-only",
        }
    ),
    "numactl": frozenset({"-a", "--all", "-l", "--localalloc", "-H", "--hardware", "-s", "--show"}),
    "taskset": frozenset({"-a", "--all-tasks", "-c", "--cpu-list", "-p", "--pid"}),
    "timeout": frozenset({"--preserve-status", "--foreground", "-v", "--verbose"}),
    "nice": frozenset(),
    "ionice": frozenset({"-t"}),
    "stdbuf": frozenset(),
    "sudo": frozenset({"-E", "-H", "-n", "-S", "-b", "-i", "-s", "--preserve-env"}),
    "mpirun": frozenset(
        {"--allow-run-as-root", "--oversubscribe", "--tag-output", "-tag-output", "--bind-to-core"}
    ),
    "mpiexec": frozenset({"--allow-run-as-root", "--oversubscribe", "--tag-output"}),
    "xvfb-run": frozenset({"-a", "--auto-servernum"}),
}
_WRAPPER_POSITIONALS = {"timeout": 1, "taskset": 1}
_SIMPLE_WRAPPERS = {"nohup", "time", "exec", "command", "builtin", "caffeinate", "unbuffer"}
_RUNNERS = {"uv", "poetry", "pixi", "conda", "pipenv", "hatch", "rye", "micromamba", "mamba"}
_SHELLS = {"bash", "sh", "zsh", "dash", "ksh"}
_LAUNCHER_NAMES = {
    "accelerate",
    "accelerate-launch",
    "torchrun",
    "deepspeed",
    "llamafactory-cli",
    "lmf",
    "trl",
    "axolotl",
    "vllm",
}
_RESERVED_OPEN = {"if", "while", "until", "{"}
_RESERVED_CLOSE = {"fi", "done", "esac", "}"}
_RESERVED_SKIP = {"then", "do", "else", "elif", "!"}

_SBATCH_SHORT = {
    "N": "nodes",
    "n": "ntasks",
    "c": "cpus_per_task",
    "G": "gpus",
    "t": "time",
    "p": "partition",
    "J": "job_name",
    "o": "output",
    "e": "error",
    "D": "chdir",
    "A": "account",
    "w": "nodelist",
    "x": "exclude",
    "C": "constraint",
    "q": "qos",
    "a": "array",
    "d": "dependency",
    "i": "input",
    "m": "distribution",
    "L": "licenses",
    "M": "clusters",
    "s": "oversubscribe",
    "k": "no_kill",
    "H": "hold",
    "O": "overcommit",
    "Q": "quiet",
    "v": "verbose",
    "W": "wait",
    "F": "nodefile",
    "S": "core_spec",
    "B": "extra_node_info",
    "b": "begin",
}
_SBATCH_BOOLS = {
    "exclusive",
    "requeue",
    "no_requeue",
    "hold",
    "overcommit",
    "oversubscribe",
    "contiguous",
    "no_kill",
    "wait",
    "test_only",
    "parsable",
    "quiet",
    "verbose",
    "spread_job",
    "use_min_nodes",
    "ignore_pbs",
    "get_user_env",
    "help",
    "usage",
    "reboot",
    "exact",
    "overlap",
}


def _is_cmd_name(text: str | None) -> bool:
    if not text:
        return False
    base = text.rsplit("/", 1)[-1]
    return bool(
        base in _LAUNCHER_NAMES
        or base in _WRAPPERS
        or base in _SIMPLE_WRAPPERS
        or base in _SHELLS
        or base in _RUNNERS
        or base == "env"
        or _PYTHON_RE.fullmatch(base)
    )


def _is_flag(f: _Field) -> bool:
    if not f.pieces or f.pieces[0].text is None:
        return False
    t = f.known_prefix
    if not t.startswith("-") or t == "-":
        return False
    return not _NEG_NUM_RE.match(t)


def _norm(name: str, shorts: tuple[tuple[str, str], ...] = ()) -> str:
    if name.startswith("--"):
        key = name[2:]
    else:
        key = name[1:]
        key = dict(shorts).get(key, key)
    return key.replace("-", "_")


def _looks_like_script(f: _Field) -> bool:
    t = f.text
    return (t is not None and t.endswith(".py")) or f.raw_text().rstrip("\"'").endswith(".py")


# --------------------------------------------------------------------------------------------
# The interpreter: walks the commands with a table of variables
# --------------------------------------------------------------------------------------------


class _Shell:
    def __init__(self, text: str, problems: list[SourceProblem]) -> None:
        self.text = text
        self.problems = problems
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.vars: dict[str, _Var] = {}
        self.exported: dict[str, None] = {}
        self.commands: list[LaunchCommand] = []
        self.key_spans: dict[KeyPath, Span] = {}
        self.value_spans: dict[KeyPath, Span] = {}
        self.depth = 0
        self.case_pending = False
        self.cond = False
        self.nest = 0
        self.span_override: int | None = None
        self.budget = _BUDGET

    # -- positions ------------------------------------------------------------------------------

    def span(self, off: int) -> Span:
        off = max(0, min(off, len(self.text)))
        line = bisect.bisect_right(self.starts, off) - 1
        return Span(line + 1, off - self.starts[line] + 1)

    def problem(self, message: str, off: int, severity: str | None = None) -> None:
        if len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(SourceProblem("GA001", message, self.span(off), severity=severity))  # type: ignore[arg-type]
        elif len(self.problems) == _MAX_PROBLEMS:
            self.problems.append(
                SourceProblem("GA001", "more problems in this file were not reported", self.span(off))
            )

    # -- words ----------------------------------------------------------------------------------

    def word(self, f: _Field) -> Word:
        text = f.text
        return Word(text, f.raw_text(), self.span(f.offset()), None if text is not None else f.reason)

    def true_word(self, f: _Field) -> Word:
        return Word("true", f.raw_text(), self.span(f.offset()))

    def joined_word(self, fs: list[_Field]) -> Word:
        texts = [f.text for f in fs]
        text = None if any(t is None for t in texts) else " ".join(texts)  # type: ignore[arg-type]
        reason = next((f.reason for f in fs if f.text is None), None)
        return Word(text, " ".join(f.raw_text() for f in fs), self.span(fs[0].offset()), reason)

    # -- expansion ------------------------------------------------------------------------------

    def unknown(self, raw: str, off: int, reason: str) -> _Piece:
        return _Piece(None, raw, None, off, reason)

    def expand(self, parts: list[_Part], src: _Src, split: bool) -> list[_Piece]:
        out = self._expand(parts, src, split)
        size = sum(len(p.text or "") for p in out)
        self.budget -= size + len(out)
        if self.budget < 0:
            raise _TooLarge
        if len(out) > _MAX_PIECES or size > _MAX_VALUE:
            a, b = _raw_a(parts[0]), _raw_b(parts[-1])
            raw = src.raw(a, min(b, a + 200))
            return [self.unknown(raw, src.off(a), "value too large to follow statically")]
        return out

    def _expand(self, parts: list[_Part], src: _Src, split: bool) -> list[_Piece]:
        out: list[_Piece] = []
        for p in parts:
            if isinstance(p, _Lit):
                offs = p.idx if src.identity else [src.off(k) for k in p.idx]
                out.append(_Piece(p.text, p.text, offs, src.off(p.pos)))
            elif isinstance(p, _Param):
                out.extend(self.param(src, p, split and not p.quoted))
            elif isinstance(p, _Cmd):
                out.append(self.unknown(src.raw(p.ra, p.rb), src.off(p.ra), "command substitution"))
            elif isinstance(p, _Arith):
                out.append(self.arith(src, p))
            elif isinstance(p, _Ph):
                ph = src.ph[p.k] if p.k < len(src.ph) else self.unknown("?", src.off(p.i), "unknown value")
                out.append(replace(ph, split=False))
            else:  # _Arr
                out.append(self.unknown(src.raw(p.ra, p.rb), src.off(p.ra), "array"))
        return out

    def fields(self, tok: _Tok) -> list[_Field]:
        pieces = self.expand(tok.parts, tok.src, True)
        fs = _split_fields(pieces)
        splits = any(p.split and p.text and _WS_RE.search(p.text) for p in pieces)
        if len(fs) == 1 and not splits:
            fs[0].raw = tok.src.raw(tok.start, tok.end)
            fs[0].off = tok.src.off(tok.start)
        return fs

    def static_text(self, tok: _Tok) -> str | None:
        return _join_text(self.expand(tok.parts, tok.src, False))

    @staticmethod
    def plain(tok: _Tok) -> str | None:
        """The word's text when it is one unquoted literal (reserved words, builtins)."""
        if tok.kind == "word" and len(tok.parts) == 1:
            part = tok.parts[0]
            if isinstance(part, _Lit) and not part.quoted:
                return part.text
        return None

    def lookup(self, name: str) -> tuple[bool, list[_Piece], str]:
        """(is set, value pieces, why unknown when unset)."""
        var = self.vars.get(name)
        if var is not None:
            if var.array:
                return True, [self.unknown("", 0, f"${name} is an array")], ""
            return True, var.pieces, ""
        if name.isdigit() and name != "0":
            return False, [], f"${name} is a script argument"
        if name in ("@", "*"):
            return False, [], f"${name}: the script's arguments"
        if name == "0":
            return True, [self.unknown("", 0, "$0 is the script's name")], ""
        if name == "#":
            return True, [self.unknown("", 0, "$# is the number of script arguments")], ""
        if name in ("?", "$", "!", "-"):
            return True, [self.unknown("", 0, f"${name} is only known at run time")], ""
        return False, [], f"${name} is not set in the script"

    def shape(self, name: str | None, pieces: list[_Piece], raw: str, off: int, split: bool) -> list[_Piece]:
        """A variable's value at the place it is used: its own pieces when it holds several words
        (so each word keeps the position where it was written), else one piece at the use."""
        if any(p.text is not None and _WS_RE.search(p.text) for p in pieces):
            return [replace(p, split=split) for p in pieces]
        text = _join_text(pieces)
        reason = None
        if text is None:
            reason = _first_reason(pieces) or "unknown value"
            if name and not reason.startswith(f"${name}"):
                reason = f"${name}: {reason}"
        return [_Piece(text, raw, None, off, reason, split)]

    def pword(self, src: _Src, a: int, b: int) -> list[_Piece]:
        try:
            parts, _ = _Lexer(src)._scan(a, "pword", b)
        except _LexError as exc:
            return [self.unknown(src.raw(a, b), src.off(a), exc.message)]
        return self.expand(parts, src, False)

    def param(self, src: _Src, p: _Param, split: bool) -> list[_Piece]:
        raw = src.raw(p.ra, p.rb)
        off = src.off(p.ra)
        inner = src.text[p.a : p.b]
        if not src.text.startswith("${", p.ra):
            is_set, val, why = self.lookup(inner)
            if not is_set:
                return [self.unknown(raw, off, why)]
            return self.shape(inner, val, raw, off, split)
        m = _PARAM_RE.match(inner)
        if not m or m.group(2) is None:
            return [self.unknown(raw, off, f"unsupported parameter expansion {raw}")]
        pre, name, sub = m.group(1), m.group(2), m.group(3)
        if pre == "!":
            return [self.unknown(raw, off, "indirect expansion")]
        if pre == "#" and name == "#" and m.end() == len(inner):
            return [self.unknown(raw, off, "$# is the number of script arguments")]
        is_set, val, why = self.lookup(name)
        var = self.vars.get(name)
        if sub is not None and ((var is not None and var.array) or sub not in ("[0]", "[@]", "[*]")):
            return [self.unknown(raw, off, f"array element {raw}")]
        rest = inner[m.end() :]
        wa = p.a + m.end()
        if pre == "#":
            if rest:
                return [self.unknown(raw, off, f"unsupported parameter expansion {raw}")]
            if not is_set:
                return [self.unknown(raw, off, why)]
            text = _join_text(val)
            if text is None:
                return [self.unknown(raw, off, _first_reason(val) or "unknown value")]
            return [_Piece(str(len(text)), raw, None, off, None, split)]
        if not rest:
            return self.shape(name, val, raw, off, split) if is_set else [self.unknown(raw, off, why)]
        m2 = re.match(r":?[-=+?]|##?|%%?|//?|\^\^?|,,?|:", rest)
        if not m2:
            return [self.unknown(raw, off, f"unsupported parameter expansion {raw}")]
        op = m2.group()
        wa += len(op)
        vtext = _join_text(val) if is_set else None
        if op in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):
            colon, kind = op.startswith(":"), op[-1]
            null = is_set and vtext == ""
            use_word = (not is_set) or (colon and null)
            if kind in "-=":
                if not use_word:
                    return self.shape(name, val, raw, off, split)
                wp = self.pword(src, wa, p.b)
                if kind == "=" and _IDENT_RE.fullmatch(name):
                    word = Word(_join_text(wp), src.raw(wa, p.b), self.span(src.off(wa)), _first_reason(wp))
                    self.set_var(name, wp, word, off)
                return self.shape(None, wp, raw, off, split)
            if kind == "+":
                if use_word:
                    return [_Piece("", raw, None, off, None, split)]
                if is_set and vtext is None:
                    return [self.unknown(raw, off, f"${name}: " + (_first_reason(val) or "unknown value"))]
                return self.shape(None, self.pword(src, wa, p.b), raw, off, split)
            if use_word:
                return [self.unknown(raw, off, f"{raw}: ${name} must be given when the script runs")]
            return self.shape(name, val, raw, off, split)
        if not is_set:
            return [self.unknown(raw, off, why)]
        if vtext is None:
            return [self.unknown(raw, off, f"${name}: " + (_first_reason(val) or "unknown value"))]
        if op in ("#", "##", "%", "%%"):
            pat = _join_text(self.pword(src, wa, p.b))
            if pat is None:
                return [self.unknown(raw, off, f"{raw}: the pattern is not known")]
            return [_Piece(_trim(vtext, op, pat), raw, None, off, None, split)]
        if op in ("^^", "^"):
            out = vtext.upper() if op == "^^" else vtext[:1].upper() + vtext[1:]
            return [_Piece(out, raw, None, off, None, split)]
        if op in (",,", ","):
            out = vtext.lower() if op == ",," else vtext[:1].lower() + vtext[1:]
            return [_Piece(out, raw, None, off, None, split)]
        if op == ":":
            m3 = re.fullmatch(r"\s*(-?\s*[0-9]+)\s*(?::\s*(-?[0-9]+)\s*)?", src.text[wa : p.b])
            if m3:
                start = int(m3.group(1).replace(" ", ""))
                if start < 0:
                    start = max(0, len(vtext) + start)
                out = vtext[start:]
                if m3.group(2) is not None:
                    ln = int(m3.group(2))
                    out = out[:ln]
                return [_Piece(out, raw, None, off, None, split)]
        return [self.unknown(raw, off, f"unsupported parameter expansion {raw}")]

    def arith(self, src: _Src, p: _Arith) -> _Piece:
        raw = src.raw(p.ra, p.rb)
        off = src.off(p.ra)
        try:
            parts, _ = _Lexer(src)._scan(p.a, "heredoc", p.b)
        except _LexError as exc:
            return self.unknown(raw, off, exc.message)
        pieces = self.expand(parts, src, False)
        expr = _join_text(pieces)
        if expr is None:
            return self.unknown(raw, off, _first_reason(pieces) or "unknown value")
        try:
            value = _ArithEval(expr, self.arith_var).run()
        except _Unknown as exc:
            return self.unknown(raw, off, str(exc))
        return _Piece(str(value), raw, None, off)

    def arith_var(self, name: str, depth: int) -> int:
        is_set, val, why = self.lookup(name)
        if not is_set:
            raise _Unknown(why)
        text = _join_text(val)
        if text is None:
            raise _Unknown(f"${name}: " + (_first_reason(val) or "unknown value"))
        text = text.strip()
        if not text:
            return 0
        if depth > 8:
            raise _Unknown("arithmetic nested too deeply")
        return _ArithEval(text, self.arith_var, depth + 1).run()

    # -- variables ------------------------------------------------------------------------------

    def set_var(
        self,
        name: str,
        pieces: list[_Piece],
        word: Word,
        key_off: int,
        *,
        array: bool = False,
        export: bool = False,
    ) -> None:
        old = self.vars.get(name)
        conditional = self.cond or self.depth > 0
        keep = (
            conditional
            and old is not None
            and not old.array
            and old.word.text not in (None, "")
            and word.text is None
        )
        if not keep:
            self.vars[name] = _Var(pieces, word, key_off, array)
        if export:
            self.exported[name] = None

    def assignment(self, tok: _Tok) -> _Assign | None:
        parts = tok.parts
        if tok.kind != "word" or not parts or not isinstance(parts[0], _Lit) or parts[0].quoted:
            return None
        first = parts[0]
        m = _ASSIGN_RE.match(first.text)
        if not m:
            return None
        eq = first.idx[m.end() - 1]
        rest = first.text[m.end() :]
        vparts: list[_Part] = []
        if rest:
            vparts.append(_Lit(rest, first.idx[m.end() :], False, first.idx[m.end()]))
        vparts.extend(parts[1:])
        array = m.group(2) is not None or any(isinstance(p, _Arr) for p in vparts)
        src = tok.src
        return _Assign(
            m.group(1),
            vparts,
            src.raw(eq + 1, tok.end),
            src.off(eq) + 1,
            src.off(tok.start),
            bool(m.group(3)),
            array,
            src,
        )

    def assign_value(self, a: _Assign) -> tuple[list[_Piece], Word]:
        if a.array:
            piece = self.unknown(a.raw, a.off, f"${a.name} is an array")
            return [piece], Word(None, a.raw, self.span(a.off), piece.reason)
        pieces = self.expand(a.parts, a.src, False)
        if a.append and a.name in self.vars and not self.vars[a.name].array:
            pieces = self.vars[a.name].pieces + pieces
        text = _join_text(pieces)
        reason = None if text is not None else _first_reason(pieces)
        return pieces, Word(text, a.raw, self.span(a.off), reason)

    def do_assign(self, a: _Assign, *, export: bool = False) -> None:
        pieces, word = self.assign_value(a)
        self.set_var(a.name, pieces, word, a.key_off, array=a.array, export=export)

    def env_now(self) -> dict[str, _Var]:
        return {k: self.vars[k] for k in self.exported if k in self.vars and not self.vars[k].array}

    # -- the command walk -----------------------------------------------------------------------

    def run(self, src: _Src) -> None:
        errors: list[tuple[str, int]] = []
        lexer = _Lexer(src)
        toks = lexer.run(errors)
        for message, idx in errors:
            self.problem(message, src.off(idx))
        if lexer.truncated_at is not None:
            self.problem(
                f"more than {_MAX_TOKENS} words and operators: the rest of the script is not read",
                src.off(lexer.truncated_at),
                severity="warning",
            )
        self.walk(toks)

    def walk(self, toks: list[_Tok]) -> None:
        words: list[_Tok] = []
        redirs: list[tuple[_Tok, _Tok | None]] = []
        target: _Tok | None = None
        sep = "\n"
        i = 0
        while i < len(toks):
            tk = toks[i]
            if self.case_pending and not words and not redirs:
                if tk.kind == "op" and tk.value in ("\n", ";"):
                    i += 1
                    continue
                if self.plain(tk) == "esac":
                    self.case_pending = False
                    self.depth = max(0, self.depth - 1)
                    i += 1
                    continue
                while i < len(toks) and not (toks[i].kind == "op" and toks[i].value == ")"):
                    i += 1
                self.case_pending = False
                i += 1
                continue
            if tk.kind == "word":
                if target is not None:
                    redirs.append((target, tk))
                    target = None
                else:
                    words.append(tk)
            elif tk.kind == "redir":
                if tk.heredoc is not None:
                    redirs.append((tk, None))
                else:
                    target = tk
            else:
                self.finish(words, redirs, sep)
                words, redirs, target = [], [], None
                if tk.value in (";;", ";&", ";;&"):
                    self.case_pending = True
                sep = tk.value
            i += 1
        self.finish(words, redirs, sep)

    def finish(self, words: list[_Tok], redirs: list[tuple[_Tok, _Tok | None]], sep: str) -> None:
        if not words:
            return
        self.cond = sep in ("&&", "||")
        try:
            self.simple(words, redirs)
        except RecursionError:
            self.problem("launch script nested too deeply to read", words[0].src.off(words[0].start))
        finally:
            self.cond = False

    def simple(self, words: list[_Tok], redirs: list[tuple[_Tok, _Tok | None]]) -> None:
        while words:
            w = self.plain(words[0])
            if w in _RESERVED_OPEN:
                self.depth += 1
            elif w in _RESERVED_CLOSE:
                self.depth = max(0, self.depth - 1)
            elif w not in _RESERVED_SKIP and w != "function":
                break
            words = words[1:]
            if w == "function" and words:
                words = words[1:]
        if not words:
            return
        start_off = words[0].src.off(words[0].start)
        head = self.plain(words[0])
        if head in ("for", "select"):
            self.loop(words)
            return
        if head == "case":
            self.depth += 1
            self.case_pending = len(words) <= 3
            return

        assigns: list[_Assign] = []
        k = 0
        while k < len(words) and (a := self.assignment(words[k])) is not None:
            assigns.append(a)
            k += 1
        rest = words[k:]
        if not rest:
            for a in assigns:
                self.do_assign(a)
            return
        prefix: dict[str, _Var] = {}
        for a in assigns:
            pieces, word = self.assign_value(a)
            prefix[a.name] = _Var(pieces, word, a.key_off, a.array)
        head = self.plain(rest[0])
        if head is not None and self.builtin(head, rest[1:], redirs):
            return
        fields = [f for tok in rest for f in self.fields(tok)]
        env = self.env_now()
        env.update(prefix)
        self.dispatch(fields, env, start_off)

    def loop(self, words: list[_Tok]) -> None:
        self.depth += 1
        name = self.plain(words[1]) if len(words) > 1 else None
        if not name or not _IDENT_RE.fullmatch(name):
            return
        items = words[3:] if len(words) > 2 and self.plain(words[2]) == "in" else []
        fs = [f for tok in items for f in self.fields(tok)]
        key_off = words[1].src.off(words[1].start)
        if len(fs) == 1 and fs[0].text is not None:
            pieces = fs[0].pieces
            word = self.word(fs[0])
        else:
            raw = items[0].src.raw(items[0].start, items[-1].end) if items else ""
            off = items[0].src.off(items[0].start) if items else key_off
            reason = f"${name} is a loop variable"
            pieces = [self.unknown(raw, off, reason)]
            word = Word(None, raw, self.span(off), reason)
        saved, self.cond = self.cond, False
        depth, self.depth = self.depth, 0
        self.set_var(name, pieces, word, key_off)
        self.cond, self.depth = saved, depth

    def builtin(self, name: str, args: list[_Tok], redirs: list[tuple[_Tok, _Tok | None]]) -> bool:
        if name in ("export", "declare", "typeset", "local", "readonly"):
            export = name == "export"
            array = False
            for tok in args:
                a = self.assignment(tok)
                if a is not None:
                    if array:
                        a.array = True
                    self.do_assign(a, export=export)
                    continue
                t = self.plain(tok)
                if not t:
                    continue
                if t.startswith("-") and len(t) > 1:
                    export = export or "x" in t
                    array = array or "a" in t or "A" in t
                    if name == "export" and t == "-n":
                        export = False
                elif _IDENT_RE.fullmatch(t) and export:
                    self.exported[t] = None
            return True
        if name == "unset":
            if not (self.cond or self.depth > 0):
                for tok in args:
                    t = self.plain(tok)
                    if t and not t.startswith("-"):
                        self.vars.pop(t, None)
                        self.exported.pop(t, None)
            return True
        if name == "read":
            self.read(args, redirs)
            return True
        return False

    def read(self, args: list[_Tok], redirs: list[tuple[_Tok, _Tok | None]]) -> None:
        names: list[tuple[str, int]] = []
        delim: str | None = "\n"
        array = False
        i = 0
        while i < len(args):
            t = self.static_text(args[i])
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
                            value = self.static_text(args[i]) or ""
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
        pieces: list[_Piece] | None = None
        for op, tgt in redirs:
            if op.heredoc is not None and op.heredoc.a >= 0:
                pieces = self.heredoc_pieces(op.src, op.heredoc)
            elif op.value == "<<<" and tgt is not None:
                pieces = self.expand(tgt.parts, tgt.src, False)
        for name, key_off in names:
            if not _IDENT_RE.fullmatch(name):
                continue
            if pieces is None or array or len(names) != 1:
                reason = f"${name} is an array" if array else f"${name} is read at run time"
                raw = f"read {name}"
                word = Word(None, raw, self.span(key_off), reason)
                self.set_var(name, [self.unknown(raw, key_off, reason)], word, key_off, array=array)
                continue
            val = pieces if delim is None else _cut_pieces(pieces, delim)
            val = _strip_pieces(val)
            text = _join_text(val)
            raw = "".join(p.raw for p in val)
            off = val[0].off_at(0) if val else key_off
            reason = None if text is not None else _first_reason(val)
            self.set_var(name, val, Word(text, raw, self.span(off), reason), key_off)

    def heredoc_pieces(self, src: _Src, h: _Heredoc) -> list[_Piece]:
        if not h.expand:
            text = src.text[h.a : h.b]
            return [_Piece(text, text, [src.off(k) for k in range(h.a, h.b)], src.off(h.a))]
        try:
            parts, _ = _Lexer(src)._scan(h.a, "heredoc", h.b)
        except _LexError as exc:
            return [self.unknown(src.raw(h.a, h.b), src.off(h.a), exc.message)]
        return self.expand(parts, src, False)

    # -- commands -------------------------------------------------------------------------------

    def dispatch(self, fields: list[_Field], env: dict[str, _Var], start_off: int) -> None:
        i = 0
        n = len(fields)
        while i < n:
            name = fields[i].text
            if name is None:
                return
            base = name.rsplit("/", 1)[-1]
            if base in _SIMPLE_WRAPPERS:
                i += 1
                while i < n and base in ("time", "exec") and (fields[i].text or "").startswith("-"):
                    i += 1
                continue
            if base == "env":
                i = self.env_wrapper(fields, i + 1, env)
                continue
            if base in _WRAPPERS:
                i = self.skip_wrapper(fields, i + 1, base)
                continue
            if base in _RUNNERS:
                if i + 1 < n and fields[i + 1].text == "run":
                    i = self.skip_wrapper(fields, i + 2, base)
                    continue
                return
            if base in _SHELLS:
                self.shell_c(fields, i + 1, env, start_off)
                return
            break
        if i >= n:
            return
        self.launcher(fields, i, env, start_off)

    def env_wrapper(self, fields: list[_Field], i: int, env: dict[str, _Var]) -> int:
        n = len(fields)
        while i < n:
            f = fields[i]
            t = f.text if f.text is not None else f.known_prefix
            if t in ("-i", "--ignore-environment", "-"):
                env.clear()
                i += 1
            elif t in ("-u", "--unset") and i + 1 < n:
                env.pop(fields[i + 1].text or "", None)
                i += 2
            elif t.startswith("--unset="):
                env.pop(t.split("=", 1)[1], None)
                i += 1
            elif t in ("-C", "--chdir", "-S", "--split-string") and i + 1 < n:
                i += 2
            elif t.startswith("-") and len(t) > 1:
                i += 1
            else:
                sp = f.split_eq()
                if sp is None or not _IDENT_RE.fullmatch(sp[0]):
                    break
                value = sp[1]
                env[sp[0]] = _Var(value.pieces, self.word(value), f.offset())
                i += 1
        return i

    def skip_wrapper(self, fields: list[_Field], i: int, base: str) -> int:
        bools = _WRAPPERS.get(base, frozenset())
        need = _WRAPPER_POSITIONALS.get(base, 0)
        n = len(fields)
        while i < n:
            f = fields[i]
            t = f.text
            if t is None:
                if f.known_prefix.startswith("-") or (f.raw_text().startswith("$") and not need):
                    i += 1  # an option, or options held in a variable (`srun $SRUN_ARGS cmd`)
                    continue
                break
            if t == "--":
                return i + 1
            if t.startswith("-") and len(t) > 1:
                if "=" in t or t in bools or (base == "stdbuf" and len(t) > 2):
                    i += 1
                    continue
                nxt = fields[i + 1] if i + 1 < n else None
                if nxt is not None and not _is_flag(nxt) and not _is_cmd_name(nxt.text):
                    i += 2
                else:
                    i += 1
                continue
            if need > 0:
                need -= 1
                i += 1
                continue
            break
        return i

    def shell_c(self, fields: list[_Field], i: int, env: dict[str, _Var], start_off: int) -> None:
        """`bash -c "string"`: read the string as a script run by a child shell."""
        n = len(fields)
        while i < n:
            t = fields[i].text
            if t is None or not t.startswith("-"):
                return  # `bash script.sh`: another file, not followed
            if "c" in t[1:] and not t.startswith("--"):
                break
            i += 1
        if i + 1 >= n or self.nest >= 3:
            return
        src = self.synthetic(fields[i + 1])
        saved = (self.vars, self.exported, self.depth, self.case_pending, self.cond, self.span_override)
        self.vars = dict(env)
        self.exported = dict.fromkeys(env)
        self.depth, self.case_pending, self.cond = 0, False, False
        self.span_override = start_off if self.span_override is None else self.span_override
        self.nest += 1
        try:
            self.run(src)
        finally:
            self.nest -= 1
            self.vars, self.exported, self.depth, self.case_pending, self.cond, self.span_override = saved

    def synthetic(self, f: _Field) -> _Src:
        chars: list[str] = []
        org: list[int] = []
        ph: list[_Piece] = []
        for p in f.pieces:
            if p.text is None:
                if len(ph) < _PH_LIMIT - _PH_BASE:
                    chars.append(chr(_PH_BASE + len(ph)))
                    org.append(p.start)
                    ph.append(p)
                continue
            chars.append(p.text)
            exact = p.offs is not None and len(p.offs) == len(p.text)
            org.extend(p.offs if exact else [p.start] * len(p.text))  # type: ignore[arg-type]
        return _Src("".join(chars), org, ph)

    # -- launchers ------------------------------------------------------------------------------

    def launcher(self, fields: list[_Field], i: int, env: dict[str, _Var], start_off: int) -> None:
        name = fields[i].text or ""
        base = name.rsplit("/", 1)[-1]
        nxt = fields[i + 1].text if i + 1 < len(fields) else None
        cmd: LaunchCommand | None = None
        koffs: dict[str, int] = {}
        if base == "accelerate" and nxt == "launch":
            cmd, koffs = self.spec_launch("accelerate", _ACCELERATE, fields, i + 2)
        elif base == "accelerate-launch":
            cmd, koffs = self.spec_launch("accelerate", _ACCELERATE, fields, i + 1)
        elif base == "torchrun":
            cmd, koffs = self.spec_launch("torchrun", _TORCHRUN, fields, i + 1)
        elif base == "deepspeed":
            cmd, koffs = self.spec_launch("deepspeed", _DEEPSPEED, fields, i + 1)
        elif _PYTHON_RE.fullmatch(base):
            cmd, koffs = self.python(fields, i + 1)
        elif base in ("llamafactory-cli", "lmf") and nxt == "train":
            cmd, koffs = self.subcommand("llamafactory", fields, i + 1, _NO_FLAGS)
        elif (base, nxt) in (("vllm", "serve"), ("trl", "vllm-serve")):
            cmd, koffs = self.vllm(fields, i + 2)
        elif base == "trl" and nxt in _TRL_COMMANDS:
            cmd, koffs = self.subcommand("trl", fields, i + 1, _ACCELERATE)
        elif base == "axolotl" and nxt == "train":
            cmd, koffs = self.subcommand("axolotl", fields, i + 1, _NO_FLAGS)
        if cmd is None:
            return
        off = self.span_override if self.span_override is not None else start_off
        if len(self.commands) >= _MAX_COMMANDS:
            if len(self.commands) == _MAX_COMMANDS:
                self.problem(
                    f"more than {_MAX_COMMANDS} launch commands: the rest are not read",
                    off,
                    severity="warning",
                )
                self.commands.append(cmd)  # a sentinel, removed when the script is done
            return
        cmd.span = self.span(off)
        cmd.env = {k: v.word for k, v in env.items()}
        idx = len(self.commands)
        self.commands.append(cmd)
        base_path: KeyPath = ("commands", idx)
        self.key_spans[base_path] = cmd.span
        self.value_spans[(*base_path, "launcher")] = self.span(fields[i].offset())
        for k, v in env.items():
            self.key_spans[(*base_path, "env", k)] = self.span(v.key_off)
            self.value_spans[(*base_path, "env", k)] = v.word.span
        for group in ("launcher_args", "script_args"):
            for k, w in getattr(cmd, group).items():
                self.value_spans[(*base_path, group, k)] = w.span
                if (group, k) in koffs:
                    self.key_spans[(*base_path, group, k)] = self.span(koffs[(group, k)])
        if cmd.script is not None:
            self.value_spans[(*base_path, "script")] = cmd.script.span
        for j, w in enumerate(cmd.positional):
            self.value_spans[(*base_path, "positional", j)] = w.span

    def flags(
        self, fields: list[_Field], i: int, spec: _Spec, group: str, koffs: dict, args: dict[str, Word]
    ) -> tuple[int, bool]:
        """Launcher flags from i up to the first word that is not a flag or a flag's value."""
        module = False
        n = len(fields)
        while i < n:
            f = fields[i]
            if not _is_flag(f):
                break
            if f.text == "--":
                i += 1
                break
            sp = f.split_eq()
            if sp is not None:
                key = _norm(sp[0], spec.shorts)
                args[key] = self.word(sp[1])
                koffs[(group, key)] = f.offset()
                i += 1
                continue
            key = _norm(f.text if f.text is not None else f.known_prefix, spec.shorts)
            koffs[(group, key)] = f.offset()
            if key in spec.bools:
                args[key] = self.true_word(f)
                module = module or key == "module"
                i += 1
                continue
            nxt = fields[i + 1] if i + 1 < n else None
            if nxt is None or _is_flag(nxt) or (key not in spec.values and _looks_like_script(nxt)):
                args[key] = self.true_word(f)
                i += 1
                continue
            args[key] = self.word(nxt)
            i += 2
        return i, module

    def script_flags(
        self, fields: list[_Field], i: int, cmd: LaunchCommand, koffs: dict, spec: _Spec | None = None
    ) -> None:
        """Flags and positional words after the script. With spec, the launcher's own flags
        (trl: accelerate's) go to launcher_args."""
        n = len(fields)
        after = False
        while i < n:
            f = fields[i]
            if after or not _is_flag(f):
                cmd.positional.append(self.word(f))
                i += 1
                continue
            if f.text == "--":
                if cmd.launcher == "axolotl":  # axolotl passes what follows `--` to its launcher
                    chosen = cmd.launcher_args.get("launcher")
                    torch = chosen is not None and chosen.text == "torchrun"
                    spec_after = _TORCHRUN if torch else _ACCELERATE
                    self.flags(fields, i + 1, spec_after, "launcher_args", koffs, cmd.launcher_args)
                    return
                after = True
                i += 1
                continue
            sp = f.split_eq()
            if sp is not None:
                name, value = sp[0], [sp[1]]
                j = i + 1
            else:
                name = f.text if f.text is not None else f.known_prefix
                value = []
                j = i + 1
                while j < n and not _is_flag(fields[j]) and fields[j].text != "--":
                    value.append(fields[j])
                    j += 1
            key = _norm(name)
            group = "script_args"
            target = cmd.script_args
            if spec is not None and (key in spec.values or key in spec.bools) and key not in _TRAINING_TOO:
                group, target = "launcher_args", cmd.launcher_args
            if cmd.launcher == "axolotl" and key == "launcher":
                group, target = "launcher_args", cmd.launcher_args
            koffs[(group, key)] = f.offset()
            if not value:
                target[key] = self.true_word(f)
            elif len(value) == 1:
                target[key] = self.word(value[0])
            else:
                target[key] = self.joined_word(value)
            i = j

    def spec_launch(
        self,
        launcher: str,
        spec: _Spec,
        fields: list[_Field],
        i: int,
    ) -> tuple[LaunchCommand, dict]:
        cmd = LaunchCommand(launcher, Span(1, 1))
        koffs: dict = {}
        i, module = self.flags(fields, i, spec, "launcher_args", koffs, cmd.launcher_args)
        if launcher == "deepspeed" and "no_python" in cmd.launcher_args:
            module = False
        if i < len(fields):
            cmd.script = self.word(fields[i])
            cmd.module = module
            self.script_flags(fields, i + 1, cmd, koffs)
        return cmd, koffs

    def subcommand(
        self,
        launcher: str,
        fields: list[_Field],
        i: int,
        spec: _Spec,
    ) -> tuple[LaunchCommand, dict]:
        cmd = LaunchCommand(launcher, Span(1, 1))
        koffs: dict = {}
        cmd.script = self.word(fields[i])
        self.script_flags(fields, i + 1, cmd, koffs, spec if launcher == "trl" else None)
        return cmd, koffs

    def vllm(self, fields: list[_Field], i: int) -> tuple[LaunchCommand, dict]:
        """A vLLM server: every flag goes to launcher_args (dashes as underscores, -tp/-pp/-dp
        spelled out), the model (a positional word or --model) to launcher_args["model"]. There is
        no training script and no TrainingArguments."""
        cmd = LaunchCommand("vllm", Span(1, 1))
        koffs: dict = {}
        n = len(fields)
        while i < n:
            f = fields[i]
            if not _is_flag(f):
                word = self.word(f)
                if "model" not in cmd.launcher_args and not cmd.positional:
                    cmd.launcher_args["model"] = word
                    koffs[("launcher_args", "model")] = f.offset()
                cmd.positional.append(word)
                i += 1
                continue
            sp = f.split_eq()
            if sp is not None:
                key = _norm(sp[0], _VLLM_SHORTS)
                koffs[("launcher_args", key)] = f.offset()
                cmd.launcher_args[key] = self.word(sp[1])
                i += 1
                continue
            key = _norm(f.text if f.text is not None else f.known_prefix, _VLLM_SHORTS)
            koffs[("launcher_args", key)] = f.offset()
            nxt = fields[i + 1] if i + 1 < n else None
            if nxt is None or _is_flag(nxt) or key in _VLLM_BOOLS or key.startswith("no_"):
                cmd.launcher_args[key] = self.true_word(f)
                i += 1
            else:
                cmd.launcher_args[key] = self.word(nxt)
                i += 2
        return cmd, koffs

    def python(self, fields: list[_Field], i: int) -> tuple[LaunchCommand | None, dict]:
        n = len(fields)
        pyargs: dict[str, Word] = {}
        koffs: dict = {}
        module: _Field | None = None
        while i < n:
            f = fields[i]
            t = f.text
            if t is None or not t.startswith("-") or t == "-":
                break
            if t == "-m" or (t.startswith("-m") and not t.startswith("--")):
                if t == "-m":
                    if i + 1 >= n:
                        return None, {}
                    module = fields[i + 1]
                    i += 2
                else:
                    module = _Field([p for p in f.pieces], None, None)
                    first = module.pieces[0]
                    module.pieces[0] = first.sub(2, len(first.text or "")) if first.text else first
                    i += 1
                break
            if t.startswith("-c"):
                return None, {}  # python -c '...': inline code, not a training script
            if t in _PY_VALUE_OPTS and i + 1 < n:
                key = t[1:]
                pyargs[key] = self.word(fields[i + 1])
                koffs[("launcher_args", key)] = f.offset()
                i += 2
                continue
            key = t.lstrip("-").replace("-", "_")
            pyargs[key] = self.true_word(f)
            koffs[("launcher_args", key)] = f.offset()
            i += 1
        if module is None:
            if i >= n:
                return None, {}
            cmd = LaunchCommand("python", Span(1, 1), launcher_args=pyargs)
            cmd.script = self.word(fields[i])
            self.script_flags(fields, i + 1, cmd, koffs)
            return cmd, koffs
        mod = module.text
        if mod in ("torch.distributed.run", "torch.distributed.launch"):
            return self.spec_launch("torchrun", _TORCHRUN, fields, i)
        if mod == "accelerate.commands.launch":
            return self.spec_launch("accelerate", _ACCELERATE, fields, i)
        if mod == "deepspeed.launcher.runner":
            return self.spec_launch("deepspeed", _DEEPSPEED, fields, i)
        if mod in _VLLM_MODULES:
            if mod == "vllm.entrypoints.cli.main" and (i >= n or fields[i].text != "serve"):
                return None, {}
            return self.vllm(fields, i + (1 if mod == "vllm.entrypoints.cli.main" else 0))
        launcher = "axolotl" if mod is not None and mod.startswith("axolotl.cli.train") else "python"
        cmd = LaunchCommand(launcher, Span(1, 1), launcher_args=pyargs if launcher == "python" else {})
        cmd.script = self.word(module)
        cmd.module = True
        self.script_flags(fields, i, cmd, koffs)
        return cmd, koffs


def _trim(value: str, op: str, pat: str) -> str:
    n = len(value)
    if op == "#":
        rng = range(n + 1)
    elif op == "##" or op == "%":
        rng = range(n, -1, -1)
    else:
        rng = range(n + 1)
    for k in rng:
        if op.startswith("#"):
            if fnmatch.fnmatchcase(value[:k], pat):
                return value[k:]
        elif fnmatch.fnmatchcase(value[k:], pat):
            return value[:k]
    return value


class _ArithEval:
    """Integer arithmetic of $((...)): + - * / % ** and parentheses over known values."""

    _TOKEN = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|[0-9]+)|([A-Za-z_][A-Za-z0-9_]*)|(\*\*|[-+*/%()]))")

    def __init__(self, text: str, var: Callable[[str, int], int], depth: int = 0) -> None:
        self.toks: list[tuple[str, str]] = []
        self.var = var
        self.depth = depth
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = self._TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise _Unknown(f"unsupported arithmetic: {text}")
            if m.group(1):
                self.toks.append(("num", m.group(1)))
            elif m.group(2):
                self.toks.append(("name", m.group(2)))
            else:
                self.toks.append(("op", m.group(3)))
            pos = m.end()
            while pos < len(text) and text[pos].isspace():
                pos += 1
        self.k = 0

    def run(self) -> int:
        if not self.toks:
            return 0
        v = self.expr()
        if self.k != len(self.toks):
            raise _Unknown("unsupported arithmetic")
        return v

    def peek(self) -> str | None:
        return self.toks[self.k][1] if self.k < len(self.toks) and self.toks[self.k][0] == "op" else None

    def expr(self) -> int:
        v = self.term()
        while self.peek() in ("+", "-"):
            op = self.toks[self.k][1]
            self.k += 1
            r = self.term()
            v = v + r if op == "+" else v - r
        return v

    def term(self) -> int:
        v = self.power()
        while self.peek() in ("*", "/", "%"):
            op = self.toks[self.k][1]
            self.k += 1
            r = self.power()
            if op == "*":
                v = v * r
            else:
                if r == 0:
                    raise _Unknown("division by zero")
                q = abs(v) // abs(r)
                q = q if (v >= 0) == (r >= 0) else -q
                v = q if op == "/" else v - r * q
        return v

    def power(self) -> int:
        v = self.unary()
        if self.peek() == "**":
            self.k += 1
            e = self.power()
            if e < 0 or e > 256:
                raise _Unknown("unsupported exponent")
            v = v**e
        return v

    def unary(self) -> int:
        op = self.peek()
        if op in ("+", "-"):
            self.k += 1
            v = self.unary()
            return -v if op == "-" else v
        return self.atom()

    def atom(self) -> int:
        if self.k >= len(self.toks):
            raise _Unknown("unsupported arithmetic")
        kind, text = self.toks[self.k]
        self.k += 1
        if kind == "num":
            if text[:2].lower() == "0x":
                return int(text, 16)
            if len(text) > 1 and text.startswith("0"):
                try:
                    return int(text, 8)
                except ValueError as exc:
                    raise _Unknown(f"invalid number {text}") from exc
            return int(text)
        if kind == "name":
            return self.var(text, self.depth)
        if text == "(":
            v = self.expr()
            if self.peek() != ")":
                raise _Unknown("unbalanced parentheses in arithmetic")
            self.k += 1
            return v
        raise _Unknown("unsupported arithmetic")


# --------------------------------------------------------------------------------------------
# #SBATCH
# --------------------------------------------------------------------------------------------


def _sbatch_tokens(line: str, base: int) -> list[tuple[str, str, int]]:
    """(text, raw, column offset) of each option word; stops at a # comment."""
    out = []
    i, n = 0, len(line)
    while i < n:
        while i < n and line[i] in " \t":
            i += 1
        if i >= n or line[i] == "#":
            break
        start = i
        text = []
        while i < n and line[i] not in " \t":
            c = line[i]
            if c in "'\"":
                j = line.find(c, i + 1)
                if j < 0:
                    j = n
                text.append(line[i + 1 : j])
                i = j + 1
                continue
            text.append(c)
            i += 1
        out.append(("".join(text), line[start:i], base + start))
    return out


def _read_sbatch(shell: _Shell, text: str, script: LaunchScript) -> None:
    pos = 0
    for line in text.split("\n"):
        line_start = pos
        pos += len(line) + 1
        s = line.strip()
        if not s:
            continue
        if not s.startswith("#"):
            break  # sbatch reads no #SBATCH directive after the first command
        m = re.match(r"\s*#SBATCH\s", line)
        if not m:
            continue
        toks = _sbatch_tokens(line[m.end() :], line_start + m.end())
        k = 0
        while k < len(toks):
            t, raw, off = toks[k]
            k += 1
            if not t.startswith("-") or t == "-":
                continue
            value: tuple[str, str, int] | None = None
            if t.startswith("--"):
                if "=" in t:
                    name, v = t[2:].split("=", 1)
                    e = raw.find("=") + 1
                    value = (v, raw[e:], off + e)
                else:
                    name = t[2:]
            else:
                letter = t[1:2]
                name = _SBATCH_SHORT.get(letter, letter)
                if len(t) > 2:
                    value = (t[2:].lstrip("="), raw[2:].lstrip("="), off + 2 + (1 if raw[2:3] == "=" else 0))
            key = name.replace("-", "_")
            takes_next = k < len(toks) and not toks[k][0].startswith("-")
            if value is None and key not in _SBATCH_BOOLS and takes_next:
                value = toks[k]
                k += 1
            if value is None:
                word = Word("true", raw, shell.span(off))
            else:
                word = Word(value[0], value[1], shell.span(value[2]))
            script.sbatch[key] = word
            shell.key_spans[("sbatch", key)] = shell.span(off)
            shell.value_spans[("sbatch", key)] = word.span


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def read_launch(path: Path, text: str) -> Document:
    """Read a bash/sbatch launch script statically. Never raises for bad content."""
    problems: list[SourceProblem] = []
    doc = Document(path, "launch", data=LaunchScript(), text=text, problems=problems)
    try:
        _read(text, doc, problems)
    except Exception as exc:  # a reader must never crash the tool; say what happened instead
        message = f"launch script could not be read: {type(exc).__name__}: {exc}"
        problems.append(SourceProblem("GA001", message, Span(1, 1)))
    return doc


def _read(text: str, doc: Document, problems: list[SourceProblem]) -> None:
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n")
    shell = _Shell(text, problems)

    # Lines with binary junk are reported and blanked, so the rest of the file is still read.
    lines = text.split("\n")
    cleaned = []
    pos = 0
    for line in lines:
        m = _JUNK_RE.search(line)
        if m:
            what = f"U+{ord(m.group()):04X}"
            shell.problem(f"line contains binary data ({what}); the line is skipped", pos + m.start())
            line = " " * len(line)
        cleaned.append(line)
        pos += len(line) + 1
    text = "\n".join(cleaned)
    shell.text = text

    script: LaunchScript = doc.data
    _read_sbatch(shell, text, script)
    try:
        shell.run(_Src(text))
    except _TooLarge:
        shell.problem("the script expands to too much text to follow statically; the rest is not read", 0)
    script.commands = shell.commands[:_MAX_COMMANDS]
    script.variables = {k: v.word for k, v in shell.vars.items()}
    for k, v in shell.vars.items():
        shell.key_spans[("variables", k)] = shell.span(v.key_off)
        shell.value_spans[("variables", k)] = v.word.span
    doc.key_spans = shell.key_spans
    doc.value_spans = shell.value_spans
