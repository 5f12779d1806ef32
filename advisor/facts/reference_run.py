"""GA101's reference run (the `baseline` namespace): the same run at `--base REV`, or what the project
settings declare for it. Not the findings baseline of advisor/baseline.py."""

from __future__ import annotations

from typing import Any

from advisor.provenance import Namespace, Value


def baseline_facts(plan: Any, names: dict[str, Any]) -> Namespace:
    ns = _declared(plan)
    _compare(ns, names["batch"], plan.training.learning_rate)
    return ns


def _whole(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x > 0


def _compare(ns: Namespace, batch: Any, learning_rate: Any) -> None:
    """GA101's arithmetic: how the run's effective batch compares with the baseline's, and what keeps it."""
    base, new = ns.effective_batch, batch.effective_batch
    if not (_whole(base) and _whole(new)):
        return
    ns.set("batch_ratio", Value(round(new / base, 2), None, "derived"))
    ns.set("step_ratio", Value(round(base / new, 2), None, "derived"))
    per_step = batch.per_device * batch.dp_size if _whole(batch.per_device) and _whole(batch.dp_size) else 0
    if per_step and base % per_step == 0:
        ns.set("accumulation_to_keep", Value(base // per_step, None, "derived"))
    if isinstance(learning_rate, int | float) and not isinstance(learning_rate, bool):
        # linear scaling (Goyal et al. 2017): the learning rate grows with the batch
        ns.set("scaled_learning_rate", Value(round(learning_rate * new / base, 10), None, "derived"))


def _declared(plan: Any) -> Namespace:
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
