"""Reading one entry of a fact or plan namespace as a Value (None when it is not one)."""

from __future__ import annotations

from advisor.provenance import Namespace, Value
from advisor.sources.document import Location


def value_entry(ns: Namespace, key: str) -> Value | None:
    entry = ns.entry(key)
    return entry if isinstance(entry, Value) else None


def entry_origin(ns: Namespace, key: str) -> Location | None:
    v = value_entry(ns, key)
    return v.origin if v else None
