"""The training script of a run, as facts: side effects outside a main-process guard, device_map."""

from __future__ import annotations

from functools import cache
from typing import Any

from advisor.facts.script import ScriptFacts, analyse_script
from advisor.provenance import Namespace, Value
from advisor.sources.document import Location


@cache
def _analyse(text: str) -> ScriptFacts:
    return analyse_script(text)


def script_facts(plan: Any, names: dict[str, Any]) -> Namespace:
    ns = Namespace("script")
    doc = plan.spec.script
    if doc is None or doc.text is None:
        return ns
    facts = _analyse(doc.text)
    ns.set("path", Value(str(doc.path), Location(doc.path, 1, 1), "script"))
    ns.set("uses_trainer", Value(facts.uses_trainer, None, "script"))
    ns.set(
        "unguarded_side_effects",
        Value(
            [
                {"location": Location(doc.path, s.line, s.col), "call": s.call, "kind": s.kind,
                 "function": s.function}
                for s in facts.side_effects
                if not s.guarded
            ],
            None,
            "script",
        ),
    )
    ns.set(
        "device_map_auto",
        Value([{"location": Location(doc.path, line, col)} for line, col in facts.device_map_auto], None, "script"),
    )
    if facts.syntax_error is not None:
        message, line, col = facts.syntax_error
        ns.set("syntax_error", Value({"location": Location(doc.path, line, col), "message": message}, None, "script"))
    return ns
