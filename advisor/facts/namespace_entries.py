"""Reading one entry of a fact or plan namespace as a Value (None when it is not one), and the readers
of a written value the estimate inputs share: set by a file or flag, truth, a finite number of sane size."""

from __future__ import annotations

import math
from typing import Any

from advisor.core.document import Location
from advisor.core.provenance import Namespace, Value


def value_entry(ns: Namespace, key: str) -> Value | None:
    entry = ns.entry(key)
    return entry if isinstance(entry, Value) else None


def entry_origin(ns: Namespace, key: str) -> Location | None:
    v = value_entry(ns, key)
    return v.origin if v else None


def value_at(ns: Any, dotted: str) -> Value | None:
    return ns.value(dotted) if isinstance(ns, Namespace) else None


def written(ns: Any, *keys: str) -> Value | None:
    """The first key that a file or flag sets (not a built-in default), known or not."""
    for key in keys:
        v = value_at(ns, key)
        if v is not None and v.source != "default":
            return v
    return None


def truth(v: Value | None) -> bool | None:
    if v is None or not v.known:
        return None
    raw = v.value
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, int | float):
        return bool(raw)
    if isinstance(raw, str):
        low = raw.strip().lower()
        if low in {"true", "yes", "1", "on"}:
            return True
        # anything else is a mode name, e.g. axolotl gradient_checkpointing: unsloth / offload
        return low not in {"false", "no", "0", "off", "none", ""}
    return None


# Counts above this are not a configuration but a typo or an attack (1e400 steps, a 401-digit bucket size).
MAX_COUNT = 1e15


def number(v: Value | None) -> float | None:
    """A finite number of sane size, or None (non-finite and absurd values are unknown, not converted)."""
    if v is None or not v.known or isinstance(v.value, bool):
        return None
    raw = v.value
    try:
        if isinstance(raw, int | float):
            x = float(raw)
        elif isinstance(raw, str) and len(raw) <= 64:
            x = float(raw.strip())
        else:
            return None
    except (ValueError, OverflowError):
        return None
    return x if math.isfinite(x) and abs(x) <= MAX_COUNT else None


def integer(v: Value | None) -> int | None:
    x = number(v)
    return int(x) if x is not None and x.is_integer() else None


def absurd(v: Value | None) -> str | None:
    """Why a written number is unusable (for the reason), or None when it is fine or absent."""
    if v is not None and not v.known and v.source != "default":
        return v.unknown or "unknown"
    if v is None or not v.known or v.value is None or isinstance(v.value, bool):
        return None
    raw = v.value
    if isinstance(raw, str) and len(raw) <= 64:
        try:
            raw = float(raw.strip())  # "1e400" is a string to PyYAML (YAML 1.1) and inf to float()
        except (ValueError, OverflowError):
            return None
    if isinstance(raw, int | float) and number(Value(raw, None, "derived")) is None:
        shown = str(raw) if isinstance(raw, float) else f"a {len(str(abs(raw)))}-digit number"
        where = f" ({v.origin.file.name}:{v.origin.line})" if v.origin is not None else ""
        return f"{shown}{where} is not a finite number of sane size"
    return None


def first_origin(*values: Value | None) -> Location | None:
    for v in values:
        if v is not None and v.origin is not None:
            return v.origin
    return None
