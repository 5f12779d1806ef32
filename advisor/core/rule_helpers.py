"""The only functions a rule expression can call, and the names it may not bind.

A leaf module shared by advisor.engine.rule_engine (which evaluates expressions) and
advisor.engine.rule_schema (which
checks a rule's names when it loads).
"""

from __future__ import annotations

from typing import Any

from advisor.core.expr import LIMITS, BudgetError, EvalError

# ---------------------------------------------------------------------------------------------------
# Helpers: the only functions an expression can call. They receive plain data (advisor/engine/evaluator.py)
# and
# bound what they build; the evaluator checks the size of what they return.


def _fmt_gib(x: Any) -> str:
    return "?" if x is None else f"{float(x):.1f} GiB"


def _join(items: Any, sep: str = ", ") -> str:
    if type(items) not in (list, tuple, str, dict):
        raise TypeError(f"join() needs a list, not {type(items).__name__}")
    if type(sep) is not str:
        raise TypeError("join() needs a string separator")
    out = _Text(LIMITS.string_chars, "join() would build")
    for i, item in enumerate(items):
        if i:
            out.add(sep)
        out.text(item)
    return out.result()


def plural(n: Any, word: str, many: str | None = None) -> str:
    """'1 GPU', '2 GPUs', '1 process', '3 processes' (or the plural `many` names)."""
    count = text_of(n)
    if n == 1:
        return f"{count} {text_of(word)}"
    if many:
        return f"{count} {text_of(many)}"
    word = text_of(word)
    return f"{count} {word}{'es' if word.endswith(('s', 'sh', 'ch', 'x')) else 's'}"


def _round(x: Any, ndigits: Any = None) -> Any:
    if ndigits is not None and (type(ndigits) is not int or abs(ndigits) > 100):
        raise ValueError("round() takes at most 100 digits")
    return round(x, ndigits)


def _sum(items: Any, start: Any = 0) -> Any:
    if type(items) not in (list, tuple) or any(type(v) not in (int, float, bool) for v in (start, *items)):
        raise TypeError("sum() adds a list of numbers")
    return sum(items, start)


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _isinstance_str(x: Any) -> bool:
    return isinstance(x, str)


def _lower(x: Any) -> str:
    return text_of(x).lower()


def _upper(x: Any) -> str:
    return text_of(x).upper()


def _str(*args: Any) -> str:
    if len(args) > 1:
        raise TypeError("str() takes one value")
    return text_of(args[0]) if args else ""


HELPERS: dict[str, Any] = {
    "len": len,
    "min": min,
    "max": max,
    "abs": abs,
    "round": _round,
    "int": int,
    "float": float,
    "str": _str,
    "bool": bool,
    "sorted": sorted,
    "sum": _sum,
    "any": any,
    "all": all,
    "list": list,
    "isinstance_str": _isinstance_str,
    "is_number": _is_number,
    "gib": _fmt_gib,
    "show": lambda x: show_text(x),
    "join": _join,
    "plural": plural,
    "lower": _lower,
    "upper": _upper,
}

# Names an expression reads that are not fact namespaces: a rule's `let` names may not take them.
RESERVED_NAMES = frozenset({"item", "True", "False", "None"})


# What a call costs before it runs, charged by advisor/engine/evaluator.py from the sizes of its arguments:
# "flat": bounded by itself (a number, a length, or text built piece by piece by _Text up to the string
# limit); "length": one step per element of its argument; "deep": every element and character of its
# arguments (the comparisons of min and max, the additions of sum); "sort": deep times log2 of the length.
HELPER_COSTS: dict[str, str] = {
    **{name: "flat" for name in HELPERS},
    **{"list": "length", "any": "length", "all": "length"},
    **{"min": "deep", "max": "deep", "sum": "deep", "sorted": "sort"},
}


def show_value(value: Any) -> str:
    """How a message template shows a value: None and booleans by name, floats with %g, lists joined by
    commas, anything else as str()."""
    return show_text(value)


def show_text(value: Any, limit: int = LIMITS.string_chars) -> str:
    """show_value, refused (BudgetError) once the text passes `limit` characters."""
    out = _Text(limit, "a message of")
    out.show(value)
    return out.result()


def text_of(value: Any, limit: int = LIMITS.string_chars) -> str:
    """str(value) of plain data, refused (BudgetError) once the text passes `limit` characters.

    Built piece by piece: str() of a 29,000-element list that repeats one 99,999-character string would
    build 2.9 GB before any size check could see it."""
    out = _Text(limit, "a string of")
    out.text(value)
    return out.result()


class _Text:
    """Text built piece by piece against a limit: each piece is refused before it is made when what is
    left cannot hold it. Python's str() and repr() of plain data (CPython Objects/listobject.c list_repr,
    tupleobject.c tuplerepr, dictobject.c dict_repr)."""

    __slots__ = ("left", "limit", "parts", "what")

    def __init__(self, limit: int, what: str) -> None:
        self.limit = limit
        self.left = limit
        self.parts: list[str] = []
        self.what = what

    def need(self, n: int) -> None:
        if n > self.left:
            raise BudgetError(f"{self.what} more than {self.limit:,} characters")

    def add(self, piece: str) -> None:
        self.need(len(piece))
        self.left -= len(piece)
        self.parts.append(piece)

    def result(self) -> str:
        return "".join(self.parts)

    def show(self, value: Any) -> None:
        try:
            self._show(value)
        except RecursionError:
            raise EvalError("a value nested too deeply to show") from None

    def text(self, value: Any) -> None:
        try:
            if type(value) is str:
                self.add(value)
            else:
                self._repr(value)
        except RecursionError:
            raise EvalError("a value nested too deeply to show") from None

    def _show(self, value: Any) -> None:
        if isinstance(value, bool) or value is None:
            self.add(str(value))
        elif isinstance(value, float):
            self.add(f"{value:g}")
        elif isinstance(value, list | tuple):
            for i, v in enumerate(value):
                if i:
                    self.add(",")
                self._show(v)
        elif type(value) is str:
            self.add(value)
        else:
            self._repr(value)

    def _int(self, value: int) -> None:
        # a decimal digit per 3.33 bits: refuse before str() builds what cannot fit
        self.need(int(value.bit_length() * 0.30102) - 1)
        try:
            self.add(str(value))
        except ValueError:  # sys.get_int_max_str_digits(): 4,300 digits by default
            raise EvalError(f"an integer of {value.bit_length():,} bits is too long to show") from None

    def _repr(self, value: Any) -> None:
        kind = type(value)
        if kind is str:
            self.need(len(value) + 2)  # the quotes; escapes only make it longer
            self.add(repr(value))
        elif kind is int:
            self._int(value)
        elif kind is list or kind is tuple:
            self.add("[" if kind is list else "(")
            for i, v in enumerate(value):
                if i:
                    self.add(", ")
                self._repr(v)
            self.add("]" if kind is list else ",)" if len(value) == 1 else ")")
        elif kind is dict:
            self.add("{")
            for i, (k, v) in enumerate(value.items()):
                if i:
                    self.add(", ")
                self._repr(k)
                self.add(": ")
                self._repr(v)
            self.add("}")
        else:  # floats, booleans, None, a fact namespace
            self.add(repr(value))
