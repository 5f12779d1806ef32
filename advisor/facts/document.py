"""Facts about one file on its own: what reading it found."""

from __future__ import annotations

from typing import Any

from advisor.provenance import Namespace, Value
from advisor.sources.document import Document, Location, pointer


def problem_items(doc: Document, code: str) -> list[dict[str, Any]]:
    return [
        {
            "location": Location(doc.path, p.span.line, p.span.col, pointer(p.key) or None),
            "message": p.message,
            "severity": p.severity,
        }
        for p in doc.problems
        if p.code == code
    ]


def document_facts(doc: Document) -> Namespace:
    ns = Namespace("document")
    ns.set("kind", Value(doc.kind, None, "derived"))
    ns.set("dialect", Value(doc.dialect, None, "derived"))
    ns.set("path", Value(str(doc.path), None, "derived"))
    for code in ("GA001", "GA003"):
        ns.set(f"problems_{code}", Value(problem_items(doc, code), None, "derived"))
    from advisor.facts.keys import key_items

    for name, items in key_items(doc).items():
        ns.set(name, Value(items, None, "derived"))
    return ns
