"""GA801's threshold item names the rules that read the threshold (advisor/pipeline/policy/settings_diff.py
THRESHOLDS): every rule file whose expressions read `thresholds.NAME` must be among them. The table had
named GA202 alone for workers-per-process while GA201 reads it too."""

from __future__ import annotations

from typing import Any

from advisor.core.expr import references
from advisor.engine.rule_engine import load_catalog
from advisor.pipeline.policy.settings_diff import THRESHOLDS


def _reads(rule: Any, name: str) -> bool:
    return any(
        ref.kind == "name" and not ref.bound and tuple(ref.path[:2]) == ("thresholds", name)
        for _field, expr in rule.expressions()
        for ref in references(expr)
    )


def test_every_rule_reading_a_threshold_is_named_with_it() -> None:
    rules = load_catalog()
    for name, (_key, listed, _direction) in THRESHOLDS.items():
        readers = {r.code for r in rules if _reads(r, name)}
        assert readers, f"no rule reads thresholds.{name}"
        assert readers <= set(listed.split(", ")), (name, sorted(readers), listed)
    assert not any(_reads(r, "no_such_threshold") for r in rules)
