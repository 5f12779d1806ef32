"""The only functions a rule expression can call, and the names it may not bind.

A leaf module shared by advisor.engine (which evaluates expressions) and advisor.schema.rules (which
checks a rule's names when it loads).
"""

from __future__ import annotations

from typing import Any

from advisor.expr import LIMITS, BudgetError

# ---------------------------------------------------------------------------------------------------
# Helpers: the only functions an expression can call. They receive plain data (advisor/evaluator.py) and
# bound what they build; the evaluator checks the size of what they return.


def _fmt_gib(x: Any) -> str:
    return "?" if x is None else f"{float(x):.1f} GiB"


def _join(items: Any, sep: str = ", ") -> str:
    if type(items) not in (list, tuple, str, dict):
        raise TypeError(f"join() needs a list, not {type(items).__name__}")
    if type(sep) is not str:
        raise TypeError("join() needs a string separator")
    pieces: list[str] = []
    total = 0
    for item in items:
        piece = str(item)
        total += len(piece) + len(sep)
        if total > LIMITS.string_chars:
            raise BudgetError(f"join() would build a string of more than {LIMITS.string_chars:,} characters")
        pieces.append(piece)
    return sep.join(pieces)


def plural(n: Any, word: str, many: str | None = None) -> str:
    """'1 GPU', '2 GPUs', '1 process', '3 processes' (or the plural `many` names)."""
    if n == 1:
        return f"{n} {word}"
    return f"{n} {many or word + ('es' if word.endswith(('s', 'sh', 'ch', 'x')) else 's')}"


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
    return str(x).lower()


def _upper(x: Any) -> str:
    return str(x).upper()


HELPERS: dict[str, Any] = {
    "len": len,
    "min": min,
    "max": max,
    "abs": abs,
    "round": _round,
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "sorted": sorted,
    "sum": _sum,
    "any": any,
    "all": all,
    "list": list,
    "isinstance_str": _isinstance_str,
    "is_number": _is_number,
    "gib": _fmt_gib,
    "show": lambda x: show_value(x),
    "join": _join,
    "plural": plural,
    "lower": _lower,
    "upper": _upper,
}

# Names an expression reads that are not fact namespaces: a rule's `let` names may not take them.
RESERVED_NAMES = frozenset({"item", "True", "False", "None"})


def show_value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return ",".join(show_value(v) for v in value)
    return str(value)
