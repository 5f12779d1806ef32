"""The run's baseline: the same run at `--base REV`, or what the project settings declare for it."""

from __future__ import annotations

from typing import Any

from advisor.provenance import Namespace, Value


def baseline_facts(plan: Any, names: dict[str, Any]) -> Namespace:
    ns = Namespace("baseline")
    base = plan.baseline
    if base is not None:
        for key, value in base.values.items():
            ns.set(key, Value(value, None, "baseline", note=base.source))
        ns.set("source", Value(base.source, None, "baseline"))
        return ns
    settings = plan.settings
    if settings is not None and settings.effective_batch is not None:
        ns.set(
            "effective_batch",
            Value(settings.effective_batch, None, "settings", note="declared in the project settings"),
        )
        ns.set("source", Value("the project settings", None, "settings"))
        if settings.learning_rate is not None:
            ns.set("learning_rate", Value(settings.learning_rate, None, "settings"))
    return ns
