"""Facts: what follows from a plan, computed in Python. Rules read them by namespace name."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from advisor.facts import strict as _strict  # noqa: F401  installs strict mode's check into Namespace.set
from advisor.provenance import Namespace
from advisor.sources.document import Document, Location

FactBuilder = Callable[[Any, dict[str, Any]], Namespace]


@cache
def _builders() -> list[tuple[str, FactBuilder]]:
    """Each run-scoped namespace's builder, in the order their declared `requires` give
    (advisor/facts/catalogue.py): a builder runs after every namespace it reads."""
    from importlib import import_module

    from advisor.facts.catalogue import build_order

    out: list[tuple[str, FactBuilder]] = []
    for decl in build_order():
        module, _, function = decl.builder.partition(":")
        out.append((decl.name, _call_with_names(getattr(import_module(module), function))))
    return out


def _call_with_names(builder: Callable[..., Namespace]) -> FactBuilder:
    """batch and hardware read the plan only; the others the plan and the namespaces built so far.
    (Builders are plain functions: their code's argument count says which; inspect costs ~4 ms.)"""
    if builder.__code__.co_argcount == 1:
        return lambda plan, _: builder(plan)
    return builder


def run_names(plan: Any) -> dict[str, Any]:
    """Every namespace a run-scoped rule can read."""
    names: dict[str, Any] = dict(plan.namespaces())
    for key, builder in _builders():
        names[key] = builder(plan, names)
    names["settings"] = plan.settings
    names["thresholds"] = _thresholds(plan)
    names["measured"] = Namespace("measured")  # nothing measured: the verify stage fills it
    return names


def _thresholds(plan: Any) -> Any:
    from advisor.settings import Thresholds

    return getattr(plan.project, "thresholds", None) or Thresholds()


def document_names(doc: Document) -> dict[str, Any]:
    from advisor.facts.document import document_facts

    return {"document": document_facts(doc)}


def document_fallback(doc: Document) -> Location:
    return Location(doc.path, 1, 1)
