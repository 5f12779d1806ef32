"""Strict mode: a fact a builder sets must be declared in the catalogue, with a value of its type.

Importing this module installs `declared_problem` as provenance's fact check (advisor/facts/__init__.py
imports it); Namespace.set calls it when GPU_ADVISE_STRICT_FACTS is set (the test suite sets it), so a
builder that sets an undeclared fact, a value of another type or a list item with an undeclared key
fails the test that built it.
"""

from __future__ import annotations

from advisor.facts.catalogue import by_name
from advisor.provenance import Namespace, Value, install_fact_check

_PLAIN: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (int, float),
    "number": (int, float),
    "bool": (bool,),
    "str": (str,),
    "dict": (dict,),
    "list": (list, tuple),
}


def _type_problem(type_: str, items: tuple[str, ...], value: object) -> str | None:
    """Why `value` is not of the declared type (None when it is)."""
    for alternative in type_.split("|"):
        if alternative == "any":
            return None
        base, _, element = alternative.partition("[")
        kinds = _PLAIN.get(base, ())
        if not isinstance(value, kinds) or (base in ("int", "float", "number") and isinstance(value, bool)):
            continue
        if base != "list" or not element:
            return None
        want = _PLAIN.get(element.rstrip("]"), ())
        elements = list(value)  # type: ignore[call-overload]
        if all(isinstance(e, want) and not (want == (int,) and isinstance(e, bool)) for e in elements):
            if want == (dict,) and items:
                extra = sorted({k for e in elements for k in e if isinstance(k, str)} - set(items))
                if extra:
                    return f"its items have undeclared keys {', '.join(extra)}"
            return None
    return f"a {type(value).__name__} is not {type_}"


def declared_problem(namespace: str, key: str, value: object) -> str | None:
    """Why setting `namespace.key` to `value` breaks the catalogue (strict mode), or None."""
    root = namespace.split(".")[0]
    decl = by_name().get(root)
    if decl is None:
        return f"namespace {root!r} is not declared in advisor/facts/catalogue.py"
    if decl.dynamic:
        return None
    where = f"{namespace}.{key}"
    if namespace != root:
        return f"{where}: {root} declares no child namespaces"
    fact = decl.fact(key)
    if fact is None:
        return f"{where} is set by a builder but not declared in advisor/facts/catalogue.py"
    if isinstance(value, Namespace):
        return f"{where} is declared {fact.type}, not a namespace"
    if isinstance(value, Value) and value.known and value.value is not None:
        problem = _type_problem(fact.type, fact.items, value.value)
        if problem is not None:
            return f"{where}: {problem} (declared in advisor/facts/catalogue.py)"
    return None


install_fact_check(declared_problem)
