"""Facts: what follows from a plan, computed in Python. Rules read them by namespace name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from advisor.provenance import Namespace
from advisor.sources.document import Document, Location

FactBuilder = Callable[[Any, dict[str, Any]], Namespace]


def _builders() -> list[tuple[str, FactBuilder]]:
    from advisor.facts.baseline import baseline_facts
    from advisor.facts.batch import batch_facts
    from advisor.facts.data import data_facts
    from advisor.facts.estimates import estimates_facts
    from advisor.facts.hardware import hardware_facts
    from advisor.facts.placement import placement_facts
    from advisor.facts.precision import precision_facts
    from advisor.facts.run import run_facts
    from advisor.facts.training_script import script_facts

    return [
        ("batch", lambda plan, _: batch_facts(plan)),
        ("hardware", lambda plan, _: hardware_facts(plan)),
        ("data", data_facts),
        ("run", run_facts),
        ("placement", placement_facts),
        ("precision", precision_facts),
        ("script", script_facts),
        ("baseline", baseline_facts),
        ("estimates", estimates_facts),
    ]


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
