"""Counts of processes, nodes, accumulation steps and batches, read the way their consumers read them.

A leaf module: the batch facts and the generation-batch facts both use it, and neither imports the other
at module level through it.
"""

from __future__ import annotations

import re
from typing import Any

from advisor.core.provenance import Value

__all__ = ["count", "count_value", "strict_int"]


def count(v: Value | None) -> int | None:
    """A process, node, accumulation or batch count: a whole number >= 1, else None.

    Accepts an int (not a bool) or a string of digits; rejects 1.5, "1e3", 8.0, 0 and negatives
    (argparse's type=int and accelerate's config reader reject them too)."""
    if v is None or not v.known:
        return None
    val = v.value
    if isinstance(val, bool):
        return None
    if isinstance(val, str) and re.fullmatch(r"\s*\d+\s*", val):
        val = int(val)
    if isinstance(val, int) and val >= 1:
        return val
    return None


def count_value(v: Value, what: str) -> Value:
    """v as a count (a copy with an int value), or unknown with a reason that names the value.
    Unknown values pass through unchanged; the plan's Value is never mutated."""
    if not v.known:
        return v
    n = count(v)
    if n is None:
        return Value(
            None,
            v.origin,
            v.source,
            related=list(v.related),
            unknown=f"{what} {v.value!r} is not a positive whole number",
        )
    if n == v.value and type(v.value) is int:
        return v
    return Value(n, v.origin, v.source, related=list(v.related), note=v.note)


def strict_int(value: Any) -> int | None:
    """A JSON/YAML number that is a whole number (not a bool, not a string)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None
