"""The `policy` namespace (scope `policy`): the relaxations GA801-GA805 report, one list per kind."""

from __future__ import annotations

from typing import Any

from advisor.core.provenance import Namespace, Value


def policy_facts(
    base: str,
    settings: list[dict[str, Any]],
    rules: list[dict[str, Any]],
    suppressions: list[dict[str, Any]],
    baseline: list[dict[str, Any]],
    measurements: list[dict[str, Any]],
) -> Namespace:
    from advisor.facts.stage_namespaces import PolicyFacts

    ns = PolicyFacts()  # its sets are checked against the declared facts
    ns.set("base", Value(base, None, "derived"))
    for name, items in (
        ("settings", settings),
        ("rules", rules),
        ("suppressions", suppressions),
        ("baseline", baseline),
        ("measurements", measurements),
    ):
        ns.set(name, Value(items, None, "derived"))
    return ns
