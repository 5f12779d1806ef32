"""GA101's reference run (the `baseline` namespace): the same run at `--base REV`, or what the project
settings declare for it. Not the findings baseline of advisor/engine/baseline.py."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.core.provenance import Value
from advisor.facts.declare import NUMBER, FactNamespace, fact

if TYPE_CHECKING:
    from advisor.facts.batch import BatchFacts
    from advisor.plan.run_plan import RunPlan


class BaselineFacts(
    FactNamespace,
    name="baseline",
    doc="The same run at --base REV, or what the project settings declare for it.",
):
    source = fact(str, "where the baseline comes from (a revision, the project settings)")
    effective_batch = fact(int, "the baseline's effective batch", unit="samples")
    accumulation = fact(int, "the baseline's gradient accumulation", unit="steps")
    per_device = fact(int, "the baseline's micro batch", unit="samples")
    world_size = fact(int, "the baseline's world size", unit="processes")
    dp_size = fact(int, "the baseline's data-parallel size", unit="processes")
    learning_rate = fact(NUMBER, "the baseline's learning rate")
    formula = fact(str, "how the baseline's effective batch was reached")
    missing = fact(str, "why --base found no twin for the run (no name, command or config in common)")
    batch_ratio = fact(float, "the run's effective batch / the baseline's (2 dp)")
    step_ratio = fact(float, "the baseline's effective batch / the run's: optimizer steps per epoch (2 dp)")
    accumulation_to_keep = fact(
        int,
        (
            "the accumulation that keeps the baseline's effective batch at the run's micro batch and "
            "data-parallel size (None when no whole number does)"
        ),
        unit="steps",
    )
    scaled_learning_rate = fact(float, "the run's learning rate scaled linearly to its effective batch")


def baseline_facts(plan: RunPlan, batch: BatchFacts) -> BaselineFacts:
    ns = _declared(plan)
    _compare(ns, batch, plan.training.learning_rate)
    return ns


def _whole(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x > 0


def _compare(ns: BaselineFacts, batch: Any, learning_rate: Any) -> None:
    """GA101's arithmetic: how the run's effective batch compares with the baseline's, and what keeps it."""
    base, new = ns.effective_batch, batch.effective_batch
    if not (isinstance(base, int) and isinstance(new, int) and _whole(base) and _whole(new)):
        return
    ns.batch_ratio = Value(round(new / base, 2), None, "derived")
    ns.step_ratio = Value(round(base / new, 2), None, "derived")
    per_step = batch.per_device * batch.dp_size if _whole(batch.per_device) and _whole(batch.dp_size) else 0
    if per_step and base % per_step == 0:
        ns.accumulation_to_keep = Value(base // per_step, None, "derived")
    if isinstance(learning_rate, int | float) and not isinstance(learning_rate, bool):
        # linear scaling (Goyal et al. 2017): the learning rate grows with the batch
        ns.scaled_learning_rate = Value(round(learning_rate * new / base, 10), None, "derived")


def _declared(plan: RunPlan) -> BaselineFacts:
    ns = BaselineFacts()
    base = plan.baseline
    if base is not None:
        for key, value in base.values.items():
            ns.set(key, Value(value, None, "baseline", note=base.source))
        ns.source = Value(base.source, None, "baseline")
        return ns
    settings = plan.settings
    if settings is not None and settings.effective_batch is not None:
        ns.effective_batch = Value(
            settings.effective_batch, None, "settings", note="declared in the project settings"
        )
        ns.source = Value("the project settings", None, "settings")
        if settings.learning_rate is not None:
            ns.learning_rate = Value(settings.learning_rate, None, "settings")
    return ns
