"""Plain JSON data as Python literal source, for modules the build generates from JSON (advisor/core/cache.py
PREBUILT_MODULE): importing their compiled form is faster than decoding the JSON text.

Only what json.loads returns is accepted (dicts with string keys, lists, strings, finite numbers, booleans,
None), each written as the literal that evaluates to an equal value of the same type: `repr` of these types
is such a literal, except for floats that are not finite (`nan`, `inf` are names, not literals), refused.
"""

from __future__ import annotations

import math
from typing import Any


class NotPlainData(ValueError):
    """A value with no literal of the same type and value."""


def literal_source(value: Any) -> str:
    """`value` as a Python literal (raises NotPlainData for anything json.loads cannot return)."""
    _check(value, ())
    return repr(value)


def _check(value: Any, path: tuple[str | int, ...]) -> None:
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return
    if kind is float:
        if not math.isfinite(value):
            raise NotPlainData(f"{_where(path)}: {value!r} is not a finite number")
        return
    if kind is list:
        for i, item in enumerate(value):
            _check(item, (*path, i))
        return
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise NotPlainData(f"{_where(path)}: key {key!r} is not a string")
            _check(item, (*path, key))
        return
    raise NotPlainData(f"{_where(path)}: {kind.__name__} is not plain data")


def _where(path: tuple[str | int, ...]) -> str:
    return ".".join(str(p) for p in path) or "(top)"
