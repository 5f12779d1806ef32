"""Facts: what follows from a plan, computed in Python. Rules read them by namespace name.

Each namespace is a class declared in the module that builds it (advisor/facts/declare.py); the run's
builders are listed once in advisor/facts/registry.py, which orders them by the namespaces they read."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.core.document import Document, Location

if TYPE_CHECKING:
    from advisor.plan.context import CheckContext
    from advisor.plan.run_plan import RunPlan


def run_names(plan: RunPlan) -> dict[str, Any]:
    """Every namespace a run-scoped rule can read."""
    from advisor.facts.registry import BUILD_ORDER
    from advisor.facts.stage_namespaces import MeasuredFacts

    names: dict[str, Any] = dict(plan.namespaces())
    for builder in BUILD_ORDER:
        names[builder.name] = builder(plan, names)
    names["settings"] = plan.settings
    names["thresholds"] = _thresholds(plan)
    names["measured"] = MeasuredFacts()  # nothing measured: the verify stage fills it
    return names


def _thresholds(plan: RunPlan) -> Any:
    from advisor.sources.settings import Thresholds

    return getattr(plan.project, "thresholds", None) or Thresholds()


def document_names(doc: Document, context: CheckContext) -> dict[str, Any]:
    """The namespaces a document-scoped rule reads, under the check's context."""
    from advisor.facts.document import document_facts

    return {"document": document_facts(doc, context)}


def document_fallback(doc: Document) -> Location:
    return Location(doc.path, 1, 1)
