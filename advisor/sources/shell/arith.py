"""Arithmetic expansion ($((...))) and the ${X%pat} family of trims, statically."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable

from advisor.sources.shell.expand import DivisionByZero, Unknown


def trim(value: str, op: str, pat: str) -> str:
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


class ArithEval:
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
                raise Unknown(f"unsupported arithmetic: {text}")
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
            raise Unknown("unsupported arithmetic")
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
                    raise DivisionByZero("division by 0")
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
                raise Unknown("unsupported exponent")
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
            raise Unknown("unsupported arithmetic")
        kind, text = self.toks[self.k]
        self.k += 1
        if kind == "num":
            if text[:2].lower() == "0x":
                return int(text, 16)
            if len(text) > 1 and text.startswith("0"):
                try:
                    return int(text, 8)
                except ValueError as exc:
                    raise Unknown(f"invalid number {text}") from exc
            return int(text)
        if kind == "name":
            return self.var(text, self.depth)
        if text == "(":
            v = self.expr()
            if self.peek() != ")":
                raise Unknown("unbalanced parentheses in arithmetic")
            self.k += 1
            return v
        raise Unknown("unsupported arithmetic")
