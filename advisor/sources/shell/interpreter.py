"""The command walk: variables, expansions, builtins and wrappers, top to bottom (see __init__.py)."""

from __future__ import annotations

import re

from advisor.core.document import KeyPath, SourceProblem, Span
from advisor.core.lazy_pattern import LazyPattern
from advisor.core.records import replace
from advisor.sources.shell.arith import ArithEval, trim
from advisor.sources.shell.arrays import array_elements, count_piece, element_pieces, first_element
from advisor.sources.shell.commands import LauncherReading, is_cmd_name, is_flag
from advisor.sources.shell.expand import (
    Assign,
    DivisionByZero,
    Field,
    TooLarge,
    Unknown,
    Var,
    first_reason,
    join_text,
    split_fields,
)
from advisor.sources.shell.lexer import (
    ASSIGN_RE,
    BUDGET,
    IDENT_RE,
    MAX_PIECES,
    MAX_PROBLEMS,
    MAX_TOKENS,
    MAX_VALUE,
    PARAM_RE,
    PH_BASE,
    PH_LIMIT,
    WS_RE,
    Arith,
    Arr,
    Cmd,
    Lexer,
    LexError,
    Lit,
    Param,
    Part,
    Ph,
    Src,
    Tok,
    bad_substitution,
    raw_a,
    raw_b,
    valid_after_name,
)
from advisor.sources.shell.model import LaunchCommand, Word, WrittenFile
from advisor.sources.shell.piece import Piece
from advisor.sources.shell.read_builtin import read_builtin
from advisor.sources.shell.substitution import command_substitution
from advisor.sources.shell.workdir import DirTracker
from advisor.sources.shell.wrappers import (
    RUNNERS,
    SHELLS,
    SIMPLE_WRAPPERS,
    WRAPPER_POSITIONALS,
    WRAPPERS,
)
from advisor.sources.shell.written import written_files

_RESERVED_OPEN = {"if", "while", "until", "{"}
_VAR_USE_RE = LazyPattern(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")
_RESERVED_CLOSE = {"fi", "done", "esac", "}"}
_RESERVED_SKIP = {"then", "do", "else", "elif", "!"}
_LEADING = _RESERVED_OPEN | _RESERVED_SKIP


class Shell(LauncherReading):
    def __init__(self, text: str, problems: list[SourceProblem]) -> None:
        self.text = text
        self.problems = problems
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.vars: dict[str, Var] = {}
        self.exported: dict[str, None] = {}
        self.commands: list[LaunchCommand] = []
        self.written: list[WrittenFile] = []
        self.key_spans: dict[KeyPath, Span] = {}
        self.value_spans: dict[KeyPath, Span] = {}
        self.depth = 0
        self.case_pending = False
        self.cond = False
        self.nest = 0
        self.span_override: int | None = None
        self.budget = BUDGET
        self.dirs = DirTracker()
        self.bad_substitutions = 0  # `${x*2}` met so far: bash runs no command or assignment holding one

    # -- positions ------------------------------------------------------------------------------

    def problem(self, message: str, off: int, severity: str | None = None) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(SourceProblem("launch-syntax", message, self.span(off), severity=severity))  # type: ignore[arg-type]
        elif len(self.problems) == MAX_PROBLEMS:
            self.problems.append(
                SourceProblem(
                    "too-many-problems", "more problems in this file were not reported", self.span(off)
                )
            )

    # -- words ----------------------------------------------------------------------------------

    # -- expansion ------------------------------------------------------------------------------

    def unknown(self, raw: str, off: int, reason: str) -> Piece:
        return Piece(None, raw, None, off, reason)

    def expand(self, parts: list[Part], src: Src, split: bool) -> list[Piece]:
        out = self._expand(parts, src, split)
        size = sum(len(p.text or "") for p in out)
        self.budget -= size + len(out)
        if self.budget < 0:
            raise TooLarge
        if len(out) > MAX_PIECES or size > MAX_VALUE:
            a, b = raw_a(parts[0]), raw_b(parts[-1])
            raw = src.raw(a, min(b, a + 200))
            return [self.unknown(raw, src.off(a), "value too large to follow statically")]
        return out

    def _expand(self, parts: list[Part], src: Src, split: bool) -> list[Piece]:
        out: list[Piece] = []
        for p in parts:
            if isinstance(p, Lit):
                offs = p.idx if src.identity else [src.off(k) for k in p.idx]
                out.append(Piece(p.text, p.text, offs, src.off(p.pos)))
            elif isinstance(p, Param):
                out.extend(self.param(src, p, split and not p.quoted))
            elif isinstance(p, Cmd):
                out.append(command_substitution(self, src, p))
            elif isinstance(p, Arith):
                out.append(self.arith(src, p))
            elif isinstance(p, Ph):
                ph = src.ph[p.k] if p.k < len(src.ph) else self.unknown("?", src.off(p.i), "unknown value")
                out.append(replace(ph, split=False))
            else:  # Arr
                out.append(self.unknown(src.raw(p.ra, p.rb), src.off(p.ra), "array"))
        return out

    def fields(self, tok: Tok) -> list[Field]:
        pieces = self.expand(tok.parts, tok.src, True)
        fs = split_fields(pieces)
        splits = any(p.split and p.text and WS_RE.search(p.text) for p in pieces)
        if len(fs) == 1 and not splits:
            fs[0].raw = tok.src.raw(tok.start, tok.end)
            fs[0].off = tok.src.off(tok.start)
        return fs

    def static_text(self, tok: Tok) -> str | None:
        return join_text(self.expand(tok.parts, tok.src, False))

    @staticmethod
    def plain(tok: Tok) -> str | None:
        """The word's text when it is one unquoted literal (reserved words, builtins)."""
        if tok.kind == "word" and len(tok.parts) == 1:
            part = tok.parts[0]
            if isinstance(part, Lit) and not part.quoted:
                return part.text
        return None

    def lookup(self, name: str) -> tuple[bool, list[Piece], str]:
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

    def shape(self, name: str | None, pieces: list[Piece], raw: str, off: int, split: bool) -> list[Piece]:
        """A variable's value at the place it is used: its own pieces when it holds several words
        (so each word keeps the position where it was written), else one piece at the use."""
        if any(p.text is not None and WS_RE.search(p.text) for p in pieces):
            return [replace(p, split=split) for p in pieces]
        text = join_text(pieces)
        reason = None
        if text is None:
            reason = first_reason(pieces) or "unknown value"
            if name and not reason.startswith(f"${name}"):
                reason = f"${name}: {reason}"
        return [Piece(text, raw, None, off, reason, split)]

    def pword(self, src: Src, a: int, b: int) -> list[Piece]:
        try:
            parts, _ = Lexer(src).scan(a, "pword", b)
        except LexError as exc:
            return [self.unknown(src.raw(a, b), src.off(a), exc.message)]
        return self.expand(parts, src, False)

    def param(self, src: Src, p: Param, split: bool) -> list[Piece]:
        raw = src.raw(p.ra, p.rb)
        off = src.off(p.ra)
        inner = src.text[p.a : p.b]
        if not src.text.startswith("${", p.ra):
            is_set, val, why = self.lookup(inner)
            if not is_set:
                return [self.unknown(raw, off, why)]
            return self.shape(inner, val, raw, off, split)
        m = PARAM_RE.match(inner)
        if not m or m.group(2) is None or not valid_after_name(inner, m.end()):
            if bad_substitution(inner, m):
                return [self.expansion_error(raw, off, f"{raw}: bad substitution")]
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
            text = join_text(val)
            if text is None:
                return [self.unknown(raw, off, first_reason(val) or "unknown value")]
            return [Piece(str(len(text)), raw, None, off, None, split)]
        if not rest:
            return self.shape(name, val, raw, off, split) if is_set else [self.unknown(raw, off, why)]
        m2 = re.match(r":?[-=+?]|##?|%%?|//?|\^\^?|,,?|:", rest)
        if not m2:
            return [self.unknown(raw, off, f"unsupported parameter expansion {raw}")]
        op = m2.group()
        wa += len(op)
        vtext = join_text(val) if is_set else None
        if op in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):
            colon, kind = op.startswith(":"), op[-1]
            null = is_set and vtext == ""
            use_word = (not is_set) or (colon and null)
            if kind in "-=":
                if not use_word:
                    return self.shape(name, val, raw, off, split)
                wp = self.pword(src, wa, p.b)
                if kind == "=" and IDENT_RE.fullmatch(name):
                    word = Word(join_text(wp), src.raw(wa, p.b), self.span(src.off(wa)), first_reason(wp))
                    self.set_var(name, wp, word, off)
                return self.shape(None, wp, raw, off, split)
            if kind == "+":
                if use_word:
                    return [Piece("", raw, None, off, None, split)]
                if is_set and vtext is None:
                    return [self.unknown(raw, off, f"${name}: " + (first_reason(val) or "unknown value"))]
                return self.shape(None, self.pword(src, wa, p.b), raw, off, split)
            if use_word:
                return [self.unknown(raw, off, f"{raw}: ${name} must be given when the script runs")]
            return self.shape(name, val, raw, off, split)
        if not is_set:
            return [self.unknown(raw, off, why)]
        if vtext is None:
            return [self.unknown(raw, off, f"${name}: " + (first_reason(val) or "unknown value"))]
        if op in ("#", "##", "%", "%%"):
            pat = join_text(self.pword(src, wa, p.b))
            if pat is None:
                return [self.unknown(raw, off, f"{raw}: the pattern is not known")]
            return [Piece(trim(vtext, op, pat), raw, None, off, None, split)]
        if op in ("^^", "^"):
            out = vtext.upper() if op == "^^" else vtext[:1].upper() + vtext[1:]
            return [Piece(out, raw, None, off, None, split)]
        if op in (",,", ","):
            out = vtext.lower() if op == ",," else vtext[:1].lower() + vtext[1:]
            return [Piece(out, raw, None, off, None, split)]
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
                return [Piece(out, raw, None, off, None, split)]
        return [self.unknown(raw, off, f"unsupported parameter expansion {raw}")]

    def expansion_error(self, raw: str, off: int, what: str) -> Piece:
        """An expansion bash fails on: `${batch_size*2}` ("bad substitution", bash subst.c
        parameter_brace_expand) or `$((512/0))` (bash 5: "division by 0 (error token is ...)"). bash abandons
        the simple command holding it (an assignment is not made: the variable keeps its old value, unset in
        a fresh shell) and reads on: reported at its line."""
        self.bad_substitutions += 1
        message = (
            f"{what}: bash stops with this error and does not run the command or the assignment it is in"
        )
        span = self.span(off)
        if not any(p.message == message and p.span == span for p in self.problems):
            self.problem(message, off)
        return self.unknown(raw, off, what)

    def arith(self, src: Src, p: Arith) -> Piece:
        raw = src.raw(p.ra, p.rb)
        off = src.off(p.ra)
        try:
            parts, _ = Lexer(src).scan(p.a, "heredoc", p.b)
        except LexError as exc:
            return self.unknown(raw, off, exc.message)
        pieces = self.expand(parts, src, False)
        expr = join_text(pieces)
        if expr is None:
            return self.unknown(raw, off, first_reason(pieces) or "unknown value")
        try:
            value = ArithEval(expr, self.arith_var).run()
        except DivisionByZero:
            if self.cond or self.depth > 0:  # under an `if`, a loop or `&&`: it may not run
                return self.unknown(raw, off, f"{expr}: division by 0 when it runs")
            return self.expansion_error(raw, off, f"{raw} is {expr}: division by 0")
        except Unknown as exc:
            return self.unknown(raw, off, str(exc))
        return Piece(str(value), raw, None, off)

    def arith_var(self, name: str, depth: int) -> int:
        is_set, val, why = self.lookup(name)
        if not is_set:
            raise Unknown(why)
        text = join_text(val)
        if text is None:
            raise Unknown(f"${name}: " + (first_reason(val) or "unknown value"))
        text = text.strip()
        if not text:
            return 0
        if depth > 8:
            raise Unknown("arithmetic nested too deeply")
        return ArithEval(text, self.arith_var, depth + 1).run()

    # -- variables ------------------------------------------------------------------------------

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
            self.vars[name] = Var(pieces, word, key_off, array, elements)
        if export:
            self.exported[name] = None

    def assignment(self, tok: Tok) -> Assign | None:
        parts = tok.parts
        if tok.kind != "word" or not parts or not isinstance(parts[0], Lit) or parts[0].quoted:
            return None
        first = parts[0]
        m = ASSIGN_RE.match(first.text)
        if not m:
            return None
        eq = first.idx[m.end() - 1]
        rest = first.text[m.end() :]
        vparts: list[Part] = []
        if rest:
            vparts.append(Lit(rest, first.idx[m.end() :], False, first.idx[m.end()]))
        vparts.extend(parts[1:])
        array = m.group(2) is not None or any(isinstance(p, Arr) for p in vparts)
        src = tok.src
        return Assign(
            m.group(1),
            vparts,
            src.raw(eq + 1, tok.end),
            src.off(eq) + 1,
            src.off(tok.start),
            bool(m.group(3)),
            array,
            src,
        )

    def assign_value(self, a: Assign) -> tuple[list[Piece], Word]:
        if a.array:
            piece = self.unknown(a.raw, a.off, f"${a.name} is an array")
            return [piece], Word(None, a.raw, self.span(a.off), piece.reason)
        pieces = self.expand(a.parts, a.src, False)
        if a.append and a.name in self.vars and not self.vars[a.name].array:
            pieces = self.vars[a.name].pieces + pieces
        text = join_text(pieces)
        reason = None if text is not None else first_reason(pieces)
        return pieces, Word(text, a.raw, self.raw_span(a.raw, a.off), reason)

    def do_assign(self, a: Assign, *, export: bool = False) -> None:
        if a.array:
            old = self.vars.get(a.name)
            elements = array_elements(self, a, old.elements if old is not None else None)
            if elements is not None:
                texts = [join_text(e) for e in elements]
                text = None if None in texts else " ".join(texts)  # type: ignore[arg-type]
                reason = None if text is not None else "an element is not known statically"
                word = Word(text, a.raw, self.raw_span(a.raw, a.off), reason)
                pieces = first_element(elements)
                self.set_var(a.name, pieces, word, a.key_off, array=True, export=export, elements=elements)
                return
        before = self.bad_substitutions
        pieces, word = self.assign_value(a)
        if self.bad_substitutions == before:
            self.set_var(a.name, pieces, word, a.key_off, array=a.array, export=export)

    def env_now(self) -> dict[str, Var]:
        return {k: self.vars[k] for k in self.exported if k in self.vars and not self.vars[k].array}

    # -- the command walk -----------------------------------------------------------------------

    def run(self, src: Src) -> None:
        errors: list[tuple[str, int]] = []
        lexer = Lexer(src)
        toks = lexer.run(errors)
        for message, idx in errors:
            self.problem(message, src.off(idx))
        if lexer.truncated_at is not None:
            self.problem(
                f"more than {MAX_TOKENS} words and operators: the rest of the script is not read",
                src.off(lexer.truncated_at),
                severity="warning",
            )
        self.walk(toks)

    def walk(self, toks: list[Tok]) -> None:
        words: list[Tok] = []
        redirs: list[tuple[Tok, Tok | None]] = []
        target: Tok | None = None
        sep = "\n"
        fn_paren = False
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
                # a `(` that starts a command (after nothing but reserved words: `do (cd x; ...)`)
                opens = tk.value == "(" and not redirs and all(self.plain(w) in _LEADING for w in words)
                self.finish(words, redirs, sep)
                if opens:
                    self.dirs.open_subshell()  # `( cd x && ... )`: its cd ends at its `)`
                elif tk.value == ")":
                    self.dirs.function_pending = fn_paren or not self.dirs.close_subshell()
                fn_paren = tk.value == "(" and not opens  # `name() {`: a function's parentheses
                words, redirs, target = [], [], None
                if tk.value in (";;", ";&", ";;&"):
                    self.case_pending = True
                sep = tk.value
            i += 1
        self.finish(words, redirs, sep)

    def finish(self, words: list[Tok], redirs: list[tuple[Tok, Tok | None]], sep: str) -> None:
        if not words:
            return
        self.cond = sep in ("&&", "||")
        try:
            self.simple(words, redirs)
        except RecursionError:
            self.problem("launch script nested too deeply to read", words[0].src.off(words[0].start))
        finally:
            self.cond = False

    def simple(self, words: list[Tok], redirs: list[tuple[Tok, Tok | None]]) -> None:
        body, self.dirs.function_pending = self.dirs.function_pending, False  # after `name()`
        while words:
            w = self.plain(words[0])
            if w in _RESERVED_OPEN:
                self.depth += 1
                if w == "{" and body:
                    self.dirs.enter_function(self.depth)
            elif w in _RESERVED_CLOSE:
                self.depth = max(0, self.depth - 1)
                self.dirs.leave_functions(self.depth)
            elif w not in _RESERVED_SKIP and w != "function":
                break
            body = False
            words = words[1:]
            if w == "function" and words:
                words, body = words[1:], True
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

        assigns: list[Assign] = []
        k = 0
        while k < len(words) and (a := self.assignment(words[k])) is not None:
            assigns.append(a)
            k += 1
        rest = words[k:]
        if not rest:
            for a in assigns:
                self.do_assign(a)
            return
        self.written += written_files(self, rest, redirs, self.dirs.current)
        before = self.bad_substitutions
        prefix: dict[str, Var] = {}
        for a in assigns:
            pieces, word = self.assign_value(a)
            prefix[a.name] = Var(pieces, word, a.key_off, a.array)
        head = self.plain(rest[0])
        if head in ("cd", "pushd", "popd"):
            self.change_dir(head, rest[1:], start_off)
            return
        if head is not None and self.builtin(head, rest[1:], redirs):
            return
        fields = [f for tok in rest for f in self.fields(tok)]
        if self.bad_substitutions != before:
            return  # bash does not run a command whose words hold a bad substitution
        env = self.env_now()
        env.update(prefix)
        self.dispatch(fields, env, start_off)

    def change_dir(self, name: str, args: list[Tok], off: int) -> None:
        """`cd DIR`, `pushd DIR`, `popd`: where the next commands' relative paths resolve. The words are
        given with the values of the variables they use, for `cd "$SCRIPT_DIR"` (its `$(dirname "$0")`)."""
        words = []
        for tok in args:
            raw = tok.src.raw(tok.start, tok.end)
            for _ in range(2):
                raw = _VAR_USE_RE.sub(lambda m: self._raw_value(m), raw)
            words.append((self.static_text(tok), raw))
        self.dirs.command(name, words, self.span(off))

    def _raw_value(self, m: re.Match[str]) -> str:
        var = self.vars.get(m.group(1))
        return var.word.raw if var is not None and len(var.word.raw) < 400 else m.group(0)

    def loop(self, words: list[Tok]) -> None:
        self.depth += 1
        name = self.plain(words[1]) if len(words) > 1 else None
        if not name or not IDENT_RE.fullmatch(name):
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

    def builtin(self, name: str, args: list[Tok], redirs: list[tuple[Tok, Tok | None]]) -> bool:
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
                elif IDENT_RE.fullmatch(t) and export:
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
            read_builtin(self, args, redirs)
            return True
        return False

    # -- commands -------------------------------------------------------------------------------

    def dispatch(self, fields: list[Field], env: dict[str, Var], start_off: int) -> None:
        i = 0
        n = len(fields)
        while i < n:
            name = fields[i].text
            if name is None:
                return
            base = name.rsplit("/", 1)[-1]
            if base in SIMPLE_WRAPPERS:
                i += 1
                while i < n and base in ("time", "exec") and (fields[i].text or "").startswith("-"):
                    i += 1
                continue
            if base == "env":
                i = self.env_wrapper(fields, i + 1, env)
                continue
            if base in WRAPPERS:
                i = self.skip_wrapper(fields, i + 1, base)
                continue
            if base in RUNNERS:
                if i + 1 < n and fields[i + 1].text == "run":
                    i = self.skip_wrapper(fields, i + 2, base)
                    continue
                return
            if base in SHELLS:
                self.shell_c(fields, i + 1, env, start_off)
                return
            if base == "eval":
                self.eval_words(fields[i + 1 :])
                return
            break
        if i >= n:
            return
        self.launcher(fields, i, env, start_off)

    def env_wrapper(self, fields: list[Field], i: int, env: dict[str, Var]) -> int:
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
                if sp is None or not IDENT_RE.fullmatch(sp[0]):
                    break
                value = sp[1]
                env[sp[0]] = Var(value.pieces, self.word(value), f.offset())
                i += 1
        return i

    def skip_wrapper(self, fields: list[Field], i: int, base: str) -> int:
        bools = WRAPPERS.get(base, frozenset())
        need = WRAPPER_POSITIONALS.get(base, 0)
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
                if nxt is not None and not is_flag(nxt) and not is_cmd_name(nxt.text):
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

    def shell_c(self, fields: list[Field], i: int, env: dict[str, Var], start_off: int) -> None:
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
        self.dirs.open_subshell()  # a child shell: its cd does not change this one's folder
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
            self.dirs.close_subshell()

    def eval_words(self, fields: list[Field]) -> None:
        """`eval "$run_cmd"`, `eval ${run_cmd}`: bash joins eval's arguments with spaces and runs the
        result as commands of this shell (bash manual, Bourne Shell Builtins: eval)."""
        if not fields or self.nest >= 3:
            return
        pieces: list[Piece] = []
        for f in fields:
            if pieces:
                pieces.append(
                    Piece(" ", " ", None, pieces[-1].off_at(max(len(pieces[-1].text or "") - 1, 0)))
                )
            pieces.extend(f.pieces)
        self.nest += 1
        try:
            self.run(self.synthetic(Field(pieces)))
        finally:
            self.nest -= 1

    def synthetic(self, f: Field) -> Src:
        chars: list[str] = []
        org: list[int] = []
        ph: list[Piece] = []
        for p in f.pieces:
            if p.text is None:
                if len(ph) < PH_LIMIT - PH_BASE:
                    chars.append(chr(PH_BASE + len(ph)))
                    org.append(p.start)
                    ph.append(p)
                continue
            chars.append(p.text)
            exact = p.offs is not None and len(p.offs) == len(p.text)
            org.extend(p.offs if exact else [p.start] * len(p.text))  # type: ignore[arg-type]
        return Src("".join(chars), org, ph)
