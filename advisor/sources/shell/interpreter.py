"""TMP"""

from __future__ import annotations

import re

from advisor.records import replace
from advisor.sources.document import KeyPath, SourceProblem, Span
from advisor.sources.shell.arith import _ArithEval, _trim
from advisor.sources.shell.arrays import array_elements, count_piece, element_pieces, first_element
from advisor.sources.shell.commands import _is_cmd_name, _is_flag, _LauncherReading
from advisor.sources.shell.expand import (
    _Assign,
    _cut_pieces,
    _Field,
    _first_reason,
    _join_text,
    _Piece,
    _split_fields,
    _strip_pieces,
    _TooLarge,
    _Unknown,
    _Var,
)
from advisor.sources.shell.lexer import (
    _ASSIGN_RE,
    _BUDGET,
    _IDENT_RE,
    _MAX_PIECES,
    _MAX_PROBLEMS,
    _MAX_TOKENS,
    _MAX_VALUE,
    _PARAM_RE,
    _PH_BASE,
    _PH_LIMIT,
    _WS_RE,
    _Arith,
    _Arr,
    _Cmd,
    _Heredoc,
    _Lexer,
    _LexError,
    _Lit,
    _Param,
    _Part,
    _Ph,
    _raw_a,
    _raw_b,
    _Src,
    _Tok,
)
from advisor.sources.shell.model import LaunchCommand, Word
from advisor.sources.shell.substitution import command_substitution
from advisor.sources.shell.wrappers import (
    _RUNNERS,
    _SHELLS,
    _SIMPLE_WRAPPERS,
    _WRAPPER_POSITIONALS,
    _WRAPPERS,
)

_RESERVED_OPEN = {"if", "while", "until", "{"}
_RESERVED_CLOSE = {"fi", "done", "esac", "}"}
_RESERVED_SKIP = {"then", "do", "else", "elif", "!"}


class _Shell(_LauncherReading):
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

    def problem(self, message: str, off: int, severity: str | None = None) -> None:
        if len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(SourceProblem("launch-syntax", message, self.span(off), severity=severity))  # type: ignore[arg-type]
        elif len(self.problems) == _MAX_PROBLEMS:
            self.problems.append(
                SourceProblem(
                    "too-many-problems", "more problems in this file were not reported", self.span(off)
                )
            )

    # -- words ----------------------------------------------------------------------------------

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
                out.append(command_substitution(self, src, p))
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
                if var.elements is not None:
                    return True, first_element(var.elements), ""
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
        rest = inner[m.end() :]
        if sub is not None and var is not None and var.elements is not None:
            if pre == "#" and not rest and sub in ("[@]", "[*]"):
                return [count_piece(var.elements, raw, off)]
            got = None if (pre or rest) else element_pieces(var.elements, sub, p.quoted, raw, off)
            if got is None:
                return [self.unknown(raw, off, f"array expansion {raw} is not followed statically")]
            return got
        if sub is not None and ((var is not None and var.array) or sub not in ("[0]", "[@]", "[*]")):
            return [self.unknown(raw, off, f"array element {raw}")]
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
        elements: list[list[_Piece]] | None = None,
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
            self.vars[name] = _Var(pieces, word, key_off, array, elements)
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
        return pieces, Word(text, a.raw, self.raw_span(a.raw, a.off), reason)

    def do_assign(self, a: _Assign, *, export: bool = False) -> None:
        if a.array:
            old = self.vars.get(a.name)
            elements = array_elements(self, a, old.elements if old is not None else None)
            if elements is not None:
                texts = [_join_text(e) for e in elements]
                text = None if None in texts else " ".join(texts)  # type: ignore[arg-type]
                reason = None if text is not None else "an element is not known statically"
                word = Word(text, a.raw, self.raw_span(a.raw, a.off), reason)
                pieces = first_element(elements)
                self.set_var(a.name, pieces, word, a.key_off, array=True, export=export, elements=elements)
                return
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
            unread = None if text is not None else _first_reason(val)
            self.set_var(name, val, Word(text, raw, self.span(off), unread), key_off)

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
            if base == "eval":
                self.eval_words(fields[i + 1 :])
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

    def eval_words(self, fields: list[_Field]) -> None:
        """`eval "$run_cmd"`, `eval ${run_cmd}`: bash joins eval's arguments with spaces and runs the
        result as commands of this shell (bash manual, Bourne Shell Builtins: eval)."""
        if not fields or self.nest >= 3:
            return
        pieces: list[_Piece] = []
        for f in fields:
            if pieces:
                pieces.append(
                    _Piece(" ", " ", None, pieces[-1].off_at(max(len(pieces[-1].text or "") - 1, 0)))
                )
            pieces.extend(f.pieces)
        self.nest += 1
        try:
            self.run(self.synthetic(_Field(pieces)))
        finally:
            self.nest -= 1

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
